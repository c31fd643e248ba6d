// Job-level what-if on the 32k preset (4,096 hosts x 8 GPUs, 8 rails, 3
// tiers, ~1,000 jobs), generated in-process. Run on demand:
//   build/bench/job_bench --benchmark_repetitions=5
// Figures are recorded in docs/performance.md.
#include <chrono>
#include <memory>
#include <thread>

#include <benchmark/benchmark.h>

#include "bench/job_loops.h"
#include "bench/preset.h"
#include "fabric/generator.h"
#include "model/snapshot.h"
#include "sim/job_sim.h"

namespace drainwise {
namespace {

struct Fixture {
  model::SnapshotPtr snapshot;
  std::unique_ptr<sim::JobSimIndex> index;
  double index_ms = 0;
};

const Fixture& Get32k() {
  static const Fixture f = [] {
    Fixture f;
    f.snapshot = bench::PresetSnapshot("32k");
    auto start = std::chrono::steady_clock::now();
    f.index = std::make_unique<sim::JobSimIndex>(f.snapshot);
    f.index_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return f;
  }();
  return f;
}

void Assess(benchmark::State& state, const char* sw) {
  const Fixture& f = Get32k();
  bench::AssessLoop(state, *f.index, bench::SwitchDrain(*f.snapshot->topology, sw));
  state.counters["index_build_ms"] = f.index_ms;
}

// p0-spine0 carries traffic of every multi-group job in pod 0, including the
// 1,024-host job that spans pods 0 and 1.
void BM_AssessSingleSpine(benchmark::State& state) { Assess(state, "p0-spine0"); }
// A rail-0 leaf of the first host group of pod 0.
void BM_AssessSingleLeaf(benchmark::State& state) { Assess(state, "p0-leaf0-r0"); }
void BM_AssessSuperspine(benchmark::State& state) { Assess(state, "ss0-0"); }

void BM_IndexBuild(benchmark::State& state) {
  const Fixture& f = Get32k();
  for (auto _ : state) {
    sim::JobSimIndex index(f.snapshot);
    benchmark::DoNotOptimize(index);
  }
}

// The drain-candidates sweep over every switch (leaves, spines,
// superspines), on state.range(0) threads: each thread sweeps a strided part
// with its own workspace, then the parts are merged and ranked, as the
// server's worker pool would do.
void BM_SweepAllSwitches(benchmark::State& state) {
  const Fixture& f = Get32k();
  const model::Topology& t = *f.snapshot->topology;
  bench::SweepLoop(state, *f.index, t, {t.switches().begin(), t.switches().end()}, static_cast<int>(state.range(0)));
}

BENCHMARK(BM_AssessSingleSpine)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AssessSingleLeaf)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AssessSuperspine)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_IndexBuild)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_SweepAllSwitches)->Arg(1)->Arg(2)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

}  // namespace
}  // namespace drainwise

// main(): bench_main.cpp.
