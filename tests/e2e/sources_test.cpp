// The daemon fed by connectors only: a loopback HTTP server plays NetBox
// (paged), slurmrestd and a node_exporter; the daemon polls them and serves
// the combined snapshot without any push; then slurmrestd returns garbage
// and the daemon keeps the last good jobs and reports the source stale.
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "connectors/loopback_http_server.h"
#include "connectors/test_data.h"
#include "testing/daemon.h"

using namespace drainwise;
using connectors::testdata::ReadText;
using nlohmann::json;

namespace {

json Source(const json& s, const std::string& name) {
  for (const auto& x : s["sources"]) {
    if (x["name"] == name) return x;
  }
  return json();
}

}  // namespace

TEST_CASE("NetBox + slurmrestd + node_exporter sources bring the daemon to a full snapshot; garbage goes stale") {
  connectors::loopback::LoopbackHttpServer server;
  connectors::loopback::ServeNetboxPages(server);
  json squeue = json::parse(ReadText("fixtures/squeue.json"));
  squeue["jobs"][0]["nodes"] = "gpu[001-002]";  // the hosts this NetBox knows
  server.Set("/slurm/v0.0.42/jobs", {200, squeue.dump()});
  server.Set("/metrics", {200, ReadText("connectors/node_exporter_t1.prom"), "text/plain"});

  std::string dir = testing::MakeTempDir();
  {
    std::ofstream token(dir + "/netbox.token");
    token << "0123456789abcdef\n";
    std::ofstream jwt(dir + "/slurm.jwt");
    jwt << "eyJhbGciOi.test\n";
    json cfg = {{"sources",
                 {{{"name", "netbox"},
                   {"kind", "netbox"},
                   {"url", server.base_url() + "/"},
                   {"refresh_s", 0.3},
                   {"timeout_s", 5},
                   {"token_file", dir + "/netbox.token"},
                   {"options", {{"page_size", 2}}}},
                  {{"name", "slurm"},
                   {"kind", "slurm"},
                   {"url", server.base_url() + "/slurm/v0.0.42/jobs"},
                   {"refresh_s", 0.3},
                   {"timeout_s", 5},
                   {"token_file", dir + "/slurm.jwt"},
                   {"options", {{"user", "drainwise"}, {"id_prefix", "slurm:"}}}},
                  {{"name", "nodes"},
                   {"kind", "prometheus"},
                   {"url", server.base_url() + "/metrics"},
                   {"refresh_s", 0.3},
                   {"timeout_s", 5}}}}};
    std::ofstream(dir + "/config.json") << cfg.dump(2);
  }
  testing::Daemon d({"--config", dir + "/config.json"}, dir);
  REQUIRE_MESSAGE(d.started(), d.log());

  // No push: the snapshot comes from the sources.
  REQUIRE_MESSAGE(testing::Eventually([&] {
                    auto j = d.Get("/v1/jobs");
                    return j.status == 200 && !j.Json()["jobs"].empty();
                  }),
                  d.log());
  auto topo = d.Get("/v1/topology").Json();
  std::set<std::string> nodes;
  for (const auto& n : topo["nodes"]) nodes.insert(n["id"].get<std::string>());
  CHECK(nodes.count("spine-01") == 1);
  CHECK(nodes.count("gpu001") == 1);
  CHECK(nodes.count("gpu003") == 0);  // uncabled in NetBox: ignored
  auto jobs = d.Get("/v1/jobs").Json();
  REQUIRE(jobs["jobs"].size() == 1);
  CHECK(jobs["jobs"][0]["id"] == "slurm:481516");
  CHECK(jobs["jobs"][0]["profile_source"] == "default");  // nobody mistakes a guess for a measurement
  auto snaps = d.Get("/v1/snapshots").Json();
  CHECK(snaps["versions"][0]["source"].get<std::string>().rfind("source:", 0) == 0);
  CHECK(testing::Eventually([&] {
    auto s = d.Get("/v1/sources").Json();
    return s["sources"].size() == 3 && !Source(s, "netbox")["stale"].get<bool>() &&
           !Source(s, "slurm")["stale"].get<bool>() && !Source(s, "nodes")["stale"].get<bool>();
  }));
  CHECK(d.Get("/readyz").Json()["status"] == "ready");

  // A second scrape gives rates: gpu001's NIC link shows up with telemetry.
  server.Set("/metrics", {200, ReadText("connectors/node_exporter_t2.prom"), "text/plain"});
  CHECK(testing::Eventually([&] {
    auto l = d.Get("/v1/links").Json();
    return l["links"].size() >= 1 && l["links"][0]["has_rates"] == true;
  }));
  auto paths = d.Get("/v1/jobs/slurm:481516/paths");
  CHECK(paths.status == 200);
  CHECK(paths.Json()["links"].size() >= 2);

  // slurmrestd breaks: stale, reported, last good jobs kept, no new version.
  int64_t jobs_version = d.Get("/v1/snapshots").Json()["current"]["jobs_version"];
  server.Set("/slurm/v0.0.42/jobs", {200, "<html>502 Bad Gateway</html>", "text/html"});
  REQUIRE(testing::Eventually([&] { return Source(d.Get("/v1/sources").Json(), "slurm")["stale"] == true; }));
  auto slurm = Source(d.Get("/v1/sources").Json(), "slurm");
  CHECK_FALSE(slurm["last_error"].get<std::string>().empty());
  auto ready = d.Get("/readyz").Json();
  CHECK(ready["status"] == "degraded");
  CHECK(ready["detail"].get<std::string>().find("slurm") != std::string::npos);
  CHECK(d.Get("/v1/jobs").Json()["jobs"].size() == 1);
  CHECK(d.Get("/v1/snapshots").Json()["current"]["jobs_version"] == jobs_version);
  auto metrics = d.Get("/metrics").body;
  CHECK(metrics.find("drainwise_source_stale{source=\"slurm\"} 1") != std::string::npos);
  // The token never reaches the logs.
  CHECK(d.log().find("0123456789abcdef") == std::string::npos);
  d.Stop();
  std::filesystem::remove_all(dir);
}
