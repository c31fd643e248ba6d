// A maintenance campaign on the 32k preset: 40 spines over 7 days (issue 15:
// <= 10 s on 2 cores), the default policy, at most 4 spines at once, one
// 8-hour blackout. Job level only, and with the flow-level verification of
// every batch. Run on demand:
//   build/bench/campaign_bench --benchmark_repetitions=3
// Figures are recorded in docs/performance.md ("Campaigns").
#include <memory>
#include <string>

#include <benchmark/benchmark.h>

#include "advisor/advisor.h"
#include "advisor/campaign.h"
#include "bench/preset.h"
#include "policies/policy.h"

namespace drainwise {
namespace {

struct Fixture {
  model::SnapshotPtr snapshot;
  advisor::CampaignRequest request;
  policies::Policy policy;
  int64_t now = 0;
};

const Fixture& Get() {
  static const Fixture f = [] {
    Fixture f;
    f.snapshot = bench::PresetSnapshot("32k");
    f.policy = *policies::DefaultPolicy();
    f.now = fabric::FindPreset("32k")->jobs.now;
    const auto& topo = *f.snapshot->topology;
    // 40 spines: the 32 of pod 0 and the first 8 of pod 1.
    for (int k = 0; k < 40; ++k) {
      std::string name = k < 32 ? "p0-spine" + std::to_string(k) : "p1-spine" + std::to_string(k - 32);
      auto id = topo.FindNode(name);
      if (!id) std::abort();
      advisor::CampaignItem item;
      item.drain.switches = {*id};
      item.duration_s = 3600;
      f.request.items.push_back(item);
    }
    f.request.window = {f.now, f.now + 7 * 86400};
    f.request.max_concurrent = 4;
    f.request.blackouts = {{f.now + 86400 + 9 * 3600, f.now + 86400 + 17 * 3600}};
    return f;
  }();
  return f;
}

void Run(benchmark::State& state, bool flow) {
  const auto& f = Get();
  auto request = f.request;
  request.flow = flow;
  for (auto _ : state) {
    advisor::Advisor adv({});  // cold: the index and flow caches are built inside the timing
    auto c = adv.PlanCampaign(advisor::Context{f.snapshot, {}, f.now}, request, f.policy);
    if (!c) {
      state.SkipWithError(c.error().message.c_str());
      return;
    }
    benchmark::DoNotOptimize(c);
    state.counters["batches"] = static_cast<double>(c->chosen.batches.size());
    int migrations = 0, waits = 0;
    for (const auto& b : c->chosen.batches) {
      for (const auto& a : b.actions) (a.kind == advisor::CampaignActionKind::kMigrate ? migrations : waits)++;
    }
    state.counters["migrations"] = migrations;
    state.counters["waits"] = waits;
    state.counters["gpu_hours"] = c->chosen.gpu_hours();
    state.counters["unscheduled"] = static_cast<double>(c->chosen.unscheduled.size());
  }
}

void BM_Campaign40Spines7Days_Job(benchmark::State& state) { Run(state, false); }
void BM_Campaign40Spines7Days_Flow(benchmark::State& state) { Run(state, true); }
BENCHMARK(BM_Campaign40Spines7Days_Job)
    ->Unit(benchmark::kSecond)
    ->Iterations(1)
    ->MeasureProcessCPUTime()
    ->UseRealTime();
BENCHMARK(BM_Campaign40Spines7Days_Flow)
    ->Unit(benchmark::kSecond)
    ->Iterations(1)
    ->MeasureProcessCPUTime()
    ->UseRealTime();

}  // namespace
}  // namespace drainwise

// main(): bench_main.cpp.
