// Task-level simulation: one year of the 32k preset (4,096 hosts x 8 GPUs,
// 8 rails, 3 tiers; 5,632 nodes, 81,920 links) with the default failure
// rates (sim::DefaultReliability) and a synthetic trace at 85 % offered load,
// seed 1. Run on demand:
//   build/bench/task_bench --benchmark_repetitions=3
// Figures are recorded in docs/performance.md ("Task-level"). Goal: <= 60 s.
#include <chrono>
#include <memory>

#include <benchmark/benchmark.h>

#include "bench/preset.h"
#include "sim/task_sim.h"

namespace drainwise {
namespace {

// One run of `o` on the 32k preset with the synthetic trace of seed 1.
void Run(benchmark::State& state, const sim::TaskOptions& o) {
  const model::SnapshotPtr snapshot = bench::PresetSnapshot("32k");
  sim::SyntheticTraceOptions so;
  so.seed = 1;
  so.horizon_s = o.horizon_s;
  so.total_hosts = static_cast<int>(snapshot->topology->hosts().size());
  const std::vector<sim::TaskJob> trace = sim::GenerateSyntheticTrace(so);
  sim::TaskReport last;
  for (auto _ : state) {
    auto r = sim::SimulateTasks(snapshot->topology, trace, o);
    if (!r) {
      state.SkipWithError(r.error().message.c_str());
      return;
    }
    last = std::move(*r);
  }
  state.counters["jobs"] = static_cast<double>(trace.size());
  state.counters["events"] = static_cast<double>(last.events);
  state.counters["network_passes"] = static_cast<double>(last.network_passes);
  state.counters["interruptions"] = static_cast<double>(last.failure.interruptions);
  state.counters["gpu_availability"] = last.gpu_availability;
  state.counters["useful_share"] = last.useful_gpu_h / last.total_gpu_h;
}

// The goal's case: one year, default reliability, seed 1.
void BM_TaskYear32k(benchmark::State& state) { Run(state, sim::TaskOptions{}); }
BENCHMARK(BM_TaskYear32k)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

// The fixed cost: device tables, attachment classes and the probe index
// (8,256 two-host probe jobs), with a 1-second horizon.
void BM_TaskSetup32k(benchmark::State& state) {
  sim::TaskOptions o;
  o.horizon_s = 1;
  Run(state, o);
}
BENCHMARK(BM_TaskSetup32k)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

// Every device failing 10x as often: more events and network passes.
void BM_TaskYear32kFailuresX10(benchmark::State& state) {
  sim::TaskOptions o;
  for (const char* kind : {"host", "link", "leaf", "spine", "superspine"}) {
    sim::Reliability r = sim::DefaultReliability(kind);
    r.mtbf_h /= 10;
    o.reliability[kind] = r;
  }
  Run(state, o);
}
BENCHMARK(BM_TaskYear32kFailuresX10)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

}  // namespace
}  // namespace drainwise

// main(): bench_main.cpp.
