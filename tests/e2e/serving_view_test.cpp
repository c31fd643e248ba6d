// One serving view, against the real daemon: a connector refreshing the
// topology from a file while clients PUT /v1/jobs. Neither update may be
// lost: once a PUT is answered, no later read serves older jobs, and the
// daemon ends on the last topology written and the last jobs PUT.
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "testing/daemon.h"
#include "testing/fabrics.h"

using namespace drainwise;
using nlohmann::json;

namespace {
void WriteTopology(const std::string& path, int i) {
  json t = testing::TwoByTwo();
  t["name"] = "fabric-" + std::to_string(i);
  std::ofstream(path + ".tmp") << t.dump();
  std::filesystem::rename(path + ".tmp", path);  // the source never reads half a file
}
json JobsNumbered(int i) {
  return {{"format", "drainwise.jobs/v1"}, {"jobs", {{{"id", "put-" + std::to_string(i)}, {"hosts", {"h0", "h2"}}}}}};
}
int Suffix(const std::string& s) { return std::stoi(s.substr(s.rfind('-') + 1)); }
}  // namespace

TEST_CASE("concurrent PUT /v1/jobs and a connector refresh never lose either update") {
  std::string dir = testing::MakeTempDir();
  std::string topo_path = dir + "/topology.json";
  WriteTopology(topo_path, 0);
  json cfg = {{"sources", {{{"name", "fabric"}, {"kind", "native"}, {"path", topo_path}, {"refresh_s", 0.05}}}}};
  std::ofstream(dir + "/config.json") << cfg.dump();
  testing::Daemon d({"--config", dir + "/config.json"}, dir);
  REQUIRE_MESSAGE(d.started(), d.log());
  REQUIRE_MESSAGE(testing::Eventually([&] { return d.Get("/v1/topology").status == 200; }), d.log());

  constexpr int kRounds = 40;
  std::thread connector_feed([&] {
    for (int i = 1; i <= kRounds; ++i) {
      WriteTopology(topo_path, i);
      std::this_thread::sleep_for(std::chrono::milliseconds(60));
    }
  });
  int lost = 0;
  for (int i = 1; i <= kRounds; ++i) {
    auto put = d.Call("PUT", "/v1/jobs", JobsNumbered(i).dump());
    REQUIRE_MESSAGE(put.status == 201, put.body);
    auto jobs = d.Get("/v1/jobs").Json();
    REQUIRE(jobs["jobs"].size() == 1);
    int served = Suffix(jobs["jobs"][0]["id"].get<std::string>());
    if (served < i) {
      ++lost;
      MESSAGE("after PUT put-" << i << " the daemon serves put-" << served);
    }
  }
  connector_feed.join();
  CHECK(lost == 0);
  // The connector's last topology lands, and the last PUT jobs with it.
  CHECK_MESSAGE(
      testing::Eventually([&] { return d.Get("/v1/topology").Json()["name"] == "fabric-" + std::to_string(kRounds); },
                          std::chrono::seconds(10)),
      d.log());
  CHECK(d.Get("/v1/jobs").Json()["jobs"][0]["id"] == "put-" + std::to_string(kRounds));
  auto snaps = d.Get("/v1/snapshots").Json();
  CHECK(snaps["current"]["jobs"] == 1);
  CHECK(d.Stop() == 0);
  std::filesystem::remove_all(dir);
}
