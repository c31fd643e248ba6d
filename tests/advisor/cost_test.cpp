// The cost model (advisor/cost.h) and how assessments rank and pick by it.
#include <doctest/doctest.h>

#include <algorithm>

#include "advisor/advisor.h"
#include "advisor/cost.h"
#include "codec/json_reader.h"
#include "testing/fabrics.h"

using namespace drainwise;
using nlohmann::json;

namespace {

constexpr int64_t kNow = 1796083200;  // 2026-12-01T00:00:00Z

// Three leaves, two spines, 8-GPU hosts, 400G everywhere:
//   leaf0: h0 h1    leaf1: h2 h3    leaf2: h4 h5 (free)
json EightGpuLeaves() {
  json nodes = json::array({{{"id", "spine0"}, {"kind", "switch"}, {"tier", "spine"}},
                            {{"id", "spine1"}, {"kind", "switch"}, {"tier", "spine"}}});
  json links = json::array();
  for (int l = 0; l < 3; ++l) {
    std::string leaf = "leaf" + std::to_string(l);
    nodes.push_back({{"id", leaf}, {"kind", "switch"}, {"tier", "leaf"}});
    for (auto spine : {"spine0", "spine1"}) links.push_back({{"a", leaf}, {"b", spine}, {"gbps", 400}});
    for (int h = 0; h < 2; ++h) {
      std::string host = "h" + std::to_string(2 * l + h);
      nodes.push_back({{"id", host}, {"kind", "host"}, {"gpus", 8}});
      links.push_back({{"a", host}, {"b", leaf}, {"gbps", 400}});
    }
  }
  return {{"format", "drainwise.topology/v1"}, {"name", "eight-gpu-leaves"}, {"nodes", nodes}, {"links", links}};
}

// One priority-100 job on h0 + h2 (16 GPUs), checkpoint every 30 minutes,
// 5-minute restart, started 45 minutes ago: 15 minutes since its last
// checkpoint. Moving it now costs (300 + 900) s x 16 GPUs = 5.33 GPU-hours.
json CriticalJob(int64_t ends_in_s) {
  json iteration = {{"compute_ms", 100}, {"collectives", {{{"kind", "allreduce"}, {"bytes", 1e9}}}}};
  return {{"format", "drainwise.jobs/v1"},
          {"jobs",
           {{{"id", "critical"},
             {"priority", 100},
             {"hosts", {"h0", "h2"}},
             {"iteration", iteration},
             {"started_at", codec::FormatRfc3339(kNow - 2700)},
             {"expected_end", codec::FormatRfc3339(kNow + ends_in_s)},
             {"checkpoint", {{"interval_s", 1800}, {"restart_cost_s", 300}}}}}}};
}

advisor::Assessment AssessLeaf0(const model::SnapshotPtr& snap, std::optional<advisor::TimeWindow> window = {}) {
  advisor::Advisor adv({});
  advisor::Request req;
  req.drain = testing::DrainOf(*snap->topology, {{"switches", {"leaf0"}}});
  req.window = window;
  auto p = policies::DefaultPolicy();
  REQUIRE(p.has_value());
  auto a = adv.Assess(advisor::Context{snap, {}, kNow}, req, *p);
  REQUIRE(a.has_value());
  return std::move(*a);
}

}  // namespace

TEST_CASE("cost model: checkpoint phase, restart, slowdown and delay in GPU-hours") {
  advisor::AdvisorOptions o;
  auto snap = testing::SnapshotFromJson(EightGpuLeaves(), CriticalJob(600));
  const auto& job = snap->jobs->jobs().front();
  CHECK(advisor::JobGpus(job, *snap->topology) == 16);
  // 2700 s after the start, 1800 s interval: 900 s since the last checkpoint.
  CHECK(advisor::LostWorkSeconds(job, kNow, o) == doctest::Approx(900));
  CHECK(advisor::RestartGpuHours(job, *snap->topology, kNow, o) == doctest::Approx(1200.0 * 16 / 3600));
  // The next checkpoint is at start + 2 x 1800 = now + 900; one exactly on it stays.
  CHECK(advisor::NextCheckpoint(job, kNow) == kNow + 900);
  CHECK(advisor::NextCheckpoint(job, kNow + 900) == kNow + 900);
  CHECK(advisor::LostWorkSeconds(job, kNow + 900, o) == doctest::Approx(0));
  // 16 GPUs 25 % slower for 2 hours: 8 GPU-hours. Delay: 8 GPU-hours an hour.
  CHECK(advisor::SlowdownGpuHours(16, 25, 7200) == doctest::Approx(8));
  CHECK(advisor::DelayGpuHours(600, o) == doctest::Approx(8.0 / 6));
  CHECK(advisor::DelayGpuHours(-5, o) == 0);
}

TEST_CASE("a job ending in 10 minutes: waiting (1.33 GPU-h) is recommended first and picked by allow_after") {
  auto snap = testing::SnapshotFromJson(EightGpuLeaves(), CriticalJob(600));
  auto a = AssessLeaf0(snap);
  CHECK(a.scenario.verdict.decision == policies::Decision::kDeny);
  REQUIRE(a.recommendations.size() == 2);
  const auto& first = a.recommendations[0];
  const auto& second = a.recommendations[1];
  REQUIRE(first.kind == advisor::RecommendationKind::kWait);
  // 10 minutes x 8 GPU-hours per hour of delay.
  CHECK(first.cost_gpu_hours == doctest::Approx(8.0 / 6));
  CHECK(first.wait_until == kNow + 600);
  CHECK(first.predicted.decision == policies::Decision::kAllow);
  REQUIRE(second.kind == advisor::RecommendationKind::kMigrate);
  CHECK(second.cost_gpu_hours == doctest::Approx(1200.0 * 16 / 3600));  // 5.33
  CHECK(second.predicted.decision == policies::Decision::kAllow);
  CHECK(a.allow_after == std::vector<int>{0});
  CHECK(a.allow_after_cost_gpu_hours == doctest::Approx(8.0 / 6));
  REQUIRE(a.allow_after_predicted.has_value());
  CHECK(a.allow_after_predicted->decision == policies::Decision::kAllow);
}

TEST_CASE("a job ending in 3 days: migrating (5.33 GPU-h) beats waiting (576 GPU-h)") {
  auto snap = testing::SnapshotFromJson(EightGpuLeaves(), CriticalJob(3 * 86400));
  auto a = AssessLeaf0(snap);
  REQUIRE(a.recommendations.size() == 2);
  CHECK(a.recommendations[0].kind == advisor::RecommendationKind::kMigrate);
  CHECK(a.recommendations[1].kind == advisor::RecommendationKind::kWait);
  CHECK(a.recommendations[1].cost_gpu_hours == doctest::Approx(72.0 * 8));
  CHECK(a.allow_after == std::vector<int>{0});
  CHECK(a.allow_after_cost_gpu_hours == doctest::Approx(1200.0 * 16 / 3600));
}

TEST_CASE("a wait that would leave the change window is shown but never picked") {
  // The window closes 5 minutes from now: the 10-minute wait plus the
  // default hour of drain does not fit, so the migration is picked.
  auto snap = testing::SnapshotFromJson(EightGpuLeaves(), CriticalJob(600));
  auto a = AssessLeaf0(snap, advisor::TimeWindow{kNow, kNow + 300});
  auto wait = std::find_if(a.recommendations.begin(), a.recommendations.end(),
                           [](const auto& r) { return r.kind == advisor::RecommendationKind::kWait; });
  REQUIRE(wait != a.recommendations.end());
  CHECK_FALSE(wait->within_window);
  REQUIRE(a.allow_after.size() == 1);
  CHECK(a.recommendations[a.allow_after[0]].kind == advisor::RecommendationKind::kMigrate);
  // Delay is counted from the window's start when that is later than now.
  auto later = AssessLeaf0(snap, advisor::TimeWindow{kNow + 300, kNow + 86400});
  auto w2 = std::find_if(later.recommendations.begin(), later.recommendations.end(),
                         [](const auto& r) { return r.kind == advisor::RecommendationKind::kWait; });
  REQUIRE(w2 != later.recommendations.end());
  CHECK(w2->cost_gpu_hours == doctest::Approx(8.0 * 300 / 3600));
}
