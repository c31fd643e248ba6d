// Retention through the real daemon: store.keep_versions from the config
// file; the topology version a stored assessment was made on outlives the
// pruning, so the assessment can still show its snapshot.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "testing/daemon.h"

using namespace drainwise;
using nlohmann::json;

namespace {

std::set<int> TopologyVersions(testing::Daemon& d) {
  std::set<int> out;
  json snapshots = d.Get("/v1/snapshots?limit=1000").Json();
  for (const auto& v : snapshots["versions"]) {
    if (v["kind"] == "topology") out.insert(v["version"].get<int>());
  }
  return out;
}

}  // namespace

TEST_CASE("keep_versions = 2 from the config keeps the topology an assessment was made on") {
  std::string dir = testing::MakeTempDir();
  std::ofstream(dir + "/c.json") << R"({"store":{"keep_versions":2}})";
  testing::Daemon d({"--config", dir + "/c.json"}, dir);
  REQUIRE_MESSAGE(d.started(), d.log());
  auto a = d.Call("POST", "/v1/assessments", R"({"drain":{"switches":["p0-spine1"]}})");
  REQUIRE(a.status == 201);
  CHECK(a.Json()["topology_version"] == 1);
  // Four more topology versions (the demo under other names).
  json topo = d.Get("/v1/topology").Json();
  for (int i = 2; i <= 5; ++i) {
    topo["name"] = "demo-" + std::to_string(i);
    auto put = d.Call("PUT", "/v1/topology", topo.dump());
    REQUIRE(put.status == 201);
    CHECK(put.Json()["version"] == i);
  }
  // The newest two and the assessment's.
  CHECK(TopologyVersions(d) == std::set<int>{1, 4, 5});
  std::filesystem::remove_all(dir);
}

TEST_CASE("config check refuses bad store settings, naming the field") {
  std::string dir = testing::MakeTempDir();
  std::string out, err;
  std::ofstream(dir + "/neg.json") << R"({"store":{"keep_versions":-1}})";
  CHECK(testing::RunDrainwise({"config", "check", dir + "/neg.json"}, &out, &err) == 1);
  CHECK(err.find("store.keep_versions: must be >= 0") != std::string::npos);
  std::ofstream(dir + "/ttl.json") << R"({"store":{"idempotency_ttl_s":0}})";
  CHECK(testing::RunDrainwise({"config", "check", dir + "/ttl.json"}, &out, &err) == 1);
  CHECK(err.find("store.idempotency_ttl_s: must be between 1 and 315360000") != std::string::npos);
  std::ofstream(dir + "/typo.json") << R"({"store":{"keep_version":3}})";
  CHECK(testing::RunDrainwise({"config", "check", dir + "/typo.json"}, &out, &err) == 1);
  CHECK(err.find("keep_version") != std::string::npos);
  std::filesystem::remove_all(dir);
}
