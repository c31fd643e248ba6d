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

void BM_TaskYear32k(benchmark::State& state) {
  const model::SnapshotPtr snapshot = bench::PresetSnapshot("32k");
  sim::SyntheticTraceOptions so;
  so.seed = 1;
  so.total_hosts = static_cast<int>(snapshot->topology->hosts().size());
  const std::vector<sim::TaskJob> trace = sim::GenerateSyntheticTrace(so);
  sim::TaskOptions o;  // one year, default reliability, seed 1
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
BENCHMARK(BM_TaskYear32k)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

}  // namespace
}  // namespace drainwise

BENCHMARK_MAIN();
