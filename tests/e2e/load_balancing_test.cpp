// The fabric's declared load balancing through the real daemon and CLI: a
// topology PUT with `load_balancing` is kept, served, used by flow-level
// assessments (under a request's own routing) and reported with its source.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "testing/daemon.h"
#include "testing/fabrics.h"

using namespace drainwise;
using nlohmann::json;

TEST_CASE("load_balancing: PUT with the topology, served, used and reported by assessments and the CLI") {
  testing::Daemon d;
  REQUIRE_MESSAGE(d.started(), d.log());
  json topo = testing::TwoByTwo();
  topo["load_balancing"] = {{"mode", "hash"}, {"rehash", true}, {"hash_seeds", 3}};
  REQUIRE(d.Call("PUT", "/v1/topology", topo.dump()).status == 201);
  json jobs = {{"format", "drainwise.jobs/v1"},
               {"jobs",
                {{{"id", "train-1"},
                  {"hosts", {"h0", "h3"}},
                  {"iteration", {{"compute_ms", 10}, {"collectives", {{{"kind", "allreduce"}, {"bytes", 1e8}}}}}}}}}};
  REQUIRE(d.Call("PUT", "/v1/jobs", jobs.dump()).status == 201);
  CHECK(d.Get("/v1/topology").Json()["load_balancing"] ==
        json({{"mode", "hash"}, {"rehash", true}, {"hash_seeds", 3}}));

  auto a = d.Call("POST", "/v1/assessments", R"({"drain":{"switches":["spine1"]},"modes":["job","flow"]})");
  REQUIRE(a.status == 201);
  json model = a.Json()["model"];
  CHECK(model["routing"] == "hash-rehash");
  CHECK(model["routing_source"] == "topology");
  CHECK(model["seeds"] == 3);

  auto b = d.Call("POST", "/v1/assessments",
                  R"({"drain":{"switches":["spine1"]},"modes":["job","flow"],"routing":"adaptive"})");
  REQUIRE(b.status == 201);
  CHECK(b.Json()["model"]["routing"] == "adaptive");
  CHECK(b.Json()["model"]["routing_source"] == "request");

  auto bad = d.Call("PUT", "/v1/topology", [&] {
    json t = topo;
    t["load_balancing"] = {{"mode", "ecmp"}};
    return t.dump();
  }());
  CHECK(bad.status == 400);
  CHECK(bad.Json()["detail"].get<std::string>().find("load_balancing.mode") != std::string::npos);

  // The CLI reads the same declaration from the file.
  std::string dir = testing::MakeTempDir();
  std::ofstream(dir + "/topology.json") << d.Get("/v1/topology").body;
  std::ofstream(dir + "/jobs.json") << d.Get("/v1/jobs").body;
  std::ofstream(dir + "/drain.json") << R"({"switches":["spine1"]})";
  std::string out, err;
  REQUIRE(testing::RunDrainwise({"simulate", "--topology", dir + "/topology.json", "--jobs", dir + "/jobs.json",
                                 "--drain", dir + "/drain.json", "--mode", "flow", "--format", "json"},
                                &out, &err) == 0);
  json cli = json::parse(out)["model"];
  CHECK(cli["routing"] == "hash-rehash");
  CHECK(cli["routing_source"] == "topology");
  CHECK(cli["seeds"] == 3);
  std::filesystem::remove_all(dir);
}
