// The JSON and table renderings of a job-level what-if (src/report/job_report.h).
#include "report/job_report.h"

#include <doctest/doctest.h>

#include "testing/fabrics.h"

namespace drainwise::report {
namespace {

using nlohmann::json;

json TwoJobs() {
  return {{"format", "drainwise.jobs/v1"},
          {"jobs",
           {{{"id", "cross"}, {"hosts", {"h0", "h2"}}, {"tenant", "research"}}, {{"id", "local"}, {"hosts", {"h1"}}}}}};
}

TEST_CASE("job assessment JSON: fields, names, nulls, order") {
  auto snap = testing::SnapshotFromJson(testing::TwoByTwo(), TwoJobs());
  sim::JobSimIndex index(snap);
  // TwoByTwo with spine0 drained: h0 -> h2 keeps 1 of 2 paths; bandwidth
  // stays 100G (NIC-bound); half the traffic crossed spine0. spine0's two
  // 100G leaf links are removed from the 400G leaf-spine tier.
  model::Drain drain = testing::DrainOf(*snap->topology, {{"switches", {"spine0"}}});
  auto a = sim::AssessJobs(index, drain);
  REQUIRE(a);
  json doc = JobAssessmentToJson(*a, *snap, drain);
  CHECK(doc["drain"]["switches"] == json::array({"spine0"}));
  CHECK(doc["summary"]["jobs"] == 2);
  CHECK(doc["summary"]["jobs_affected"] == 1);
  REQUIRE(doc["jobs"].size() == 2);
  const json& j = doc["jobs"][0];  // affected first
  CHECK(j["id"] == "cross");
  CHECK(j["tenant"] == "research");
  CHECK(j["affected"] == true);
  CHECK(j["connected"] == true);
  CHECK(j["path_fraction"].get<double>() == doctest::Approx(0.5));
  CHECK(j["min_paths_after"] == 1);
  CHECK(j["bandwidth_fraction"].get<double>() == doctest::Approx(1));
  CHECK(j["crossing"]["switches"] == json::array({"spine0"}));
  CHECK(j["crossing"]["share"].get<double>() == doctest::Approx(0.5));
  CHECK(doc["jobs"][1]["id"] == "local");
  CHECK(doc["jobs"][1]["min_paths_after"].is_null());
  const json& cap = doc["fabric"]["capacity"];
  REQUIRE(cap.size() == 1);
  CHECK(cap[0]["tier"] == "leaf-spine");
  CHECK(cap[0]["removed_bps"].get<double>() == doctest::Approx(200e9));
  CHECK(cap[0]["removed_fraction"].get<double>() == doctest::Approx(0.5));
  CHECK(doc["fabric"]["single_uplink_leaves"].size() == 2);

  JobJsonOptions only;
  only.include_unaffected = false;
  CHECK(JobAssessmentToJson(*a, *snap, drain, only)["jobs"].size() == 1);
}

TEST_CASE("job assessment table: affected jobs first, fabric losses") {
  auto snap = testing::SnapshotFromJson(testing::TwoByTwo(), TwoJobs());
  sim::JobSimIndex index(snap);
  model::Drain drain = testing::DrainOf(*snap->topology, {{"switches", {"leaf1"}}});
  auto a = sim::AssessJobs(index, drain);
  REQUIRE(a);
  std::string table = JobAssessmentTable(*a, *snap, drain);
  CHECK(table.find("1 of 2 jobs affected") != std::string::npos);
  CHECK(table.find("1 left disconnected") != std::string::npos);
  CHECK(table.find("cross") != std::string::npos);
  CHECK(table.find("NO") != std::string::npos);     // not connected
  CHECK(table.find("local") == std::string::npos);  // unaffected jobs are only counted
  CHECK(table.find("hosts cut off: h2, h3") != std::string::npos);
}

TEST_CASE("drain candidates JSON is ranked and names switches") {
  auto snap = testing::SnapshotFromJson(testing::TwoByTwo(), TwoJobs());
  sim::JobSimIndex index(snap);
  sim::JobSimWorkspace ws;
  auto leaves = sim::SwitchesOfTier(*snap->topology, "leaf");
  auto c = sim::SweepDrainCandidates(index, leaves, ws);
  REQUIRE(c);
  json doc = DrainCandidatesToJson(*c, *snap);
  // Either leaf cuts off "cross" (h0 on leaf0, h2 on leaf1): a tie broken by name.
  REQUIRE(doc["candidates"].size() == 2);
  CHECK(doc["candidates"][0]["rank"] == 1);
  CHECK(doc["candidates"][0]["switch"] == "leaf0");
  CHECK(doc["candidates"][0]["gpus_disconnected"] == 2);
  CHECK(doc["candidates"][0]["affected_jobs"] == json::array({"cross"}));
  CHECK(DrainCandidatesTable(*c, *snap).find("leaf1") != std::string::npos);
}

}  // namespace
}  // namespace drainwise::report
