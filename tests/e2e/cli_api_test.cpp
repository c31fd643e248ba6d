// The CLI and the daemon give the same numbers for the same documents.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "testing/daemon.h"

using namespace drainwise;
using nlohmann::json;

TEST_CASE("drainwise simulate and POST /v1/assessments agree, job and flow level") {
  testing::Daemon d;
  REQUIRE_MESSAGE(d.started(), d.log());
  std::string dir = testing::MakeTempDir();
  std::ofstream(dir + "/topology.json") << d.Get("/v1/topology").body;
  std::ofstream(dir + "/jobs.json") << d.Get("/v1/jobs").body;
  std::ofstream(dir + "/drain.json") << R"({"switches":["p0-leaf3-r0"]})";

  auto api = d.Call("POST", "/v1/assessments", R"({"drain":{"switches":["p0-leaf3-r0"]},"modes":["job","flow"]})");
  REQUIRE(api.status == 201);
  const json assessed = api.Json();
  std::map<std::string, json> by_id;
  for (const auto& j : assessed["jobs"]) by_id[j["id"]] = j;
  REQUIRE(by_id.size() >= 2);

  std::string out, err;
  REQUIRE(testing::RunDrainwise({"simulate", "--topology", dir + "/topology.json", "--jobs", dir + "/jobs.json",
                                 "--drain", dir + "/drain.json", "--mode", "job", "--format", "json"},
                                &out, &err) == 0);
  auto job = json::parse(out);
  int compared = 0;
  for (const auto& j : job["jobs"]) {
    auto it = by_id.find(j["id"]);
    if (it == by_id.end()) continue;
    CAPTURE(j["id"]);
    ++compared;
    CHECK(it->second["connected"] == j["connected"]);
    CHECK(it->second["path_fraction"].get<double>() == doctest::Approx(j["path_fraction"].get<double>()).epsilon(1e-3));
    CHECK(it->second["bandwidth_fraction"].get<double>() ==
          doctest::Approx(j["bandwidth_fraction"].get<double>()).epsilon(1e-3));
    CHECK(it->second["min_paths_after"] == j["min_paths_after"]);
  }
  CHECK(compared == static_cast<int>(by_id.size()));

  REQUIRE(testing::RunDrainwise({"simulate", "--topology", dir + "/topology.json", "--jobs", dir + "/jobs.json",
                                 "--drain", dir + "/drain.json", "--mode", "flow", "--format", "json"},
                                &out, &err) == 0);
  auto flow = json::parse(out);
  compared = 0;
  for (const auto& j : flow["jobs"]) {
    auto it = by_id.find(j["id"]);
    if (it == by_id.end() || !it->second.contains("drained")) continue;
    CAPTURE(j["id"]);
    ++compared;
    CHECK(it->second["drained"]["connected"] == j["drained"]["connected"]);
    if (j["drained"]["connected"] == true) {
      CHECK(it->second["drained"]["comm_s"].get<double>() == doctest::Approx(j["drained"]["comm_s"].get<double>()));
      CHECK(it->second["slowdown_pct"].get<double>() == doctest::Approx(j["slowdown_pct"].get<double>()).epsilon(1e-2));
    }
  }
  CHECK(compared >= 1);
  std::filesystem::remove_all(dir);
}
