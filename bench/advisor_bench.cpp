// The advisor on the 32k preset: verdict and ranked recommendations for a
// drain that affects about 20 jobs (issue: <= 2 s on 2 cores). Run on demand:
//   build/bench/advisor_bench --benchmark_min_time=1
// Figures are recorded in docs/performance.md ("Advisor").
#include <algorithm>
#include <chrono>
#include <memory>

#include <benchmark/benchmark.h>

#include "advisor/advisor.h"
#include "bench/preset.h"
#include "fabric/generator.h"
#include "model/snapshot.h"
#include "policies/policy.h"

namespace drainwise {
namespace {

struct Fixture {
  model::SnapshotPtr snapshot;
  model::Drain drain;
  policies::Policy policy;
  int jobs_affected = 0;
};

// The default policy plus a strict rule, so that rule breakers exist and
// the migration search really runs: priority >= 50 jobs must keep 95% of
// their bandwidth.
policies::Policy StrictPolicy() {
  auto doc = nlohmann::json::parse(policies::DefaultPolicyText());
  doc["job_rules"].push_back({{"name", "bench-bandwidth"},
                              {"action", "deny"},
                              {"select", {{"priority_at_least", 50}}},
                              {"min_bandwidth_fraction", 0.95}});
  return *policies::ParsePolicy(doc);
}

const Fixture& Get() {
  static const Fixture f = [] {
    Fixture f;
    f.snapshot = bench::PresetSnapshot("32k");
    const auto& topo = f.snapshot->topology;
    f.policy = StrictPolicy();
    // Rail-0 leaves of successive leaf groups, from the last pod backwards
    // (where the mix's many small multi-host jobs are), until about 20 jobs
    // are hit. Most jobs of the preset are single-host and never touch the
    // network, so it takes a few leaves.
    sim::JobSimIndex index(f.snapshot);
    for (int p = 7; p >= 0 && f.jobs_affected < 20; --p) {
      for (int g = 15; g >= 0 && f.jobs_affected < 20; --g) {
        auto leaf = topo->FindNode("p" + std::to_string(p) + "-leaf" + std::to_string(g) + "-r0");
        if (!leaf) continue;
        f.drain.switches.push_back(*leaf);
        f.jobs_affected = sim::AssessJobs(index, f.drain)->jobs_affected;
      }
    }
    std::sort(f.drain.switches.begin(), f.drain.switches.end());
    return f;
  }();
  return f;
}

void BM_AdviseDrain(benchmark::State& state) {
  const Fixture& f = Get();
  advisor::Request req;
  req.drain = f.drain;
  req.flow = state.range(0) != 0;
  advisor::Context ctx{f.snapshot, {}, 1796083200, nullptr, nullptr};
  size_t recommendations = 0, migrations = 0;
  std::string verdict;
  for (auto _ : state) {
    // A fresh advisor each time: nothing cached from the previous iteration
    // (the daemon would have the per-snapshot index warm already).
    advisor::Advisor adv({});
    auto a = adv.Assess(ctx, req, f.policy);
    if (!a) {
      state.SkipWithError(a.error().message.c_str());
      return;
    }
    recommendations = a->recommendations.size();
    migrations = 0;
    for (const auto& r : a->recommendations) migrations += r.kind == advisor::RecommendationKind::kMigrate;
    verdict = std::string(policies::DecisionName(a->scenario.verdict.decision));
  }
  state.counters["jobs_affected"] = f.jobs_affected;
  state.counters["switches"] = static_cast<double>(f.drain.switches.size());
  state.counters["recommendations"] = static_cast<double>(recommendations);
  state.counters["migrations"] = static_cast<double>(migrations);
  state.SetLabel("verdict " + verdict);
}
BENCHMARK(BM_AdviseDrain)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_AdviseDrainWarm(benchmark::State& state) {
  // As the daemon runs it: the advisor (and its per-snapshot caches) lives on.
  const Fixture& f = Get();
  advisor::Request req;
  req.drain = f.drain;
  req.flow = true;
  advisor::Context ctx{f.snapshot, {}, 1796083200, nullptr, nullptr};
  static advisor::Advisor adv({});
  for (auto _ : state) {
    auto a = adv.Assess(ctx, req, f.policy);
    benchmark::DoNotOptimize(a);
  }
}
BENCHMARK(BM_AdviseDrainWarm)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace drainwise

// main(): bench_main.cpp.
