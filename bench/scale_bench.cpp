// The `128k` preset (16,384 hosts x 8 GPUs = 131,072 GPUs, 32 pods, about
// 4,000 jobs; docs/performance.md "128k"), generated in-process. Run on demand:
//   scale_bench --benchmark_filter=Generate      the generator and the model build
//   scale_bench --benchmark_filter=JobLevel      one job-level assessment (index cached)
//   scale_bench --benchmark_filter=SweepSpines   drain candidates of the spine tier (job level)
//   scale_bench --benchmark_filter=Flow          cold flow-level runs (Create + Simulate), per routing mode
#include <chrono>
#include <memory>
#include <thread>

#include <benchmark/benchmark.h>

#include "bench/job_loops.h"
#include "bench/preset.h"
#include "fabric/generator.h"
#include "model/snapshot.h"
#include "sim/flow_sim.h"
#include "sim/job_sim.h"

namespace drainwise {
namespace {

const model::SnapshotPtr& Snapshot128k() {
  static const model::SnapshotPtr snap = bench::PresetSnapshot("128k");
  return snap;
}

struct JobFixture {
  std::unique_ptr<sim::JobSimIndex> index;
  double index_s = 0;
};

const JobFixture& Index128k() {
  static const JobFixture f = [] {
    JobFixture f;
    auto t0 = std::chrono::steady_clock::now();
    f.index = std::make_unique<sim::JobSimIndex>(Snapshot128k());
    f.index_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return f;
  }();
  return f;
}

// GenerateFabric + GenerateJobs + BuildTopology + ResolveJobs + MakeSnapshot.
void BM_128k_Generate(benchmark::State& state) {
  size_t links = 0, jobs = 0;
  for (auto _ : state) {
    auto snap = bench::PresetSnapshot("128k");
    links = snap->topology->link_count();
    jobs = snap->jobs->size();
    benchmark::DoNotOptimize(snap);
  }
  state.counters["links"] = static_cast<double>(links);
  state.counters["jobs"] = static_cast<double>(jobs);
}

void JobLevel(benchmark::State& state, const char* sw) {
  const JobFixture& f = Index128k();
  bench::AssessLoop(state, *f.index, bench::SwitchDrain(*Snapshot128k()->topology, sw));
  state.counters["index_build_s"] = f.index_s;
}
void BM_128k_JobLevel_Spine(benchmark::State& s) { JobLevel(s, "p0-spine0"); }
void BM_128k_JobLevel_Leaf(benchmark::State& s) { JobLevel(s, "p0-leaf0-r0"); }
void BM_128k_JobLevel_Superspine(benchmark::State& s) { JobLevel(s, "ss0-0"); }

// Every spine as a single-switch drain candidate, on state.range(0) threads
// (strided parts, one workspace each, merged and ranked), as
// GET /v1/drain-candidates?tier=spine does.
void BM_128k_SweepSpines(benchmark::State& state) {
  const JobFixture& f = Index128k();
  const model::Topology& t = *Snapshot128k()->topology;
  bench::SweepLoop(state, *f.index, t, sim::SwitchesOfTier(t, "spine"), static_cast<int>(state.range(0)));
  state.counters["index_build_s"] = f.index_s;
}

void Flow(benchmark::State& state, sim::FlowRouting routing) {
  const model::SnapshotPtr& snap = Snapshot128k();
  model::Drain drain = bench::SwitchDrain(*snap->topology, "p0-spine0");
  sim::FlowOptions o;
  o.routing = routing;
  sim::FlowReport last;
  for (auto _ : state) {
    auto sim = sim::FlowSimulator::Create(snap, o);
    if (!sim) {
      state.SkipWithError(sim.error().message.c_str());
      return;
    }
    auto rep = (*sim)->Simulate(drain);
    if (!rep) {
      state.SkipWithError(rep.error().message.c_str());
      return;
    }
    last = std::move(*rep);
    benchmark::DoNotOptimize(last);
  }
  state.counters["flows"] = static_cast<double>(last.model.flows);
  state.counters["demands"] = static_cast<double>(last.model.demands);
  state.counters["classes"] = static_cast<double>(last.model.route_classes);
  state.counters["events"] = static_cast<double>(last.model.events);
  state.counters["adapted"] = static_cast<double>(last.model.classes_adapted);
}
void BM_128k_Flow_Spray(benchmark::State& s) { Flow(s, sim::FlowRouting::kSpray); }
void BM_128k_Flow_SprayPath(benchmark::State& s) { Flow(s, sim::FlowRouting::kSprayPath); }
void BM_128k_Flow_Adaptive(benchmark::State& s) { Flow(s, sim::FlowRouting::kAdaptive); }

BENCHMARK(BM_128k_Generate)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_128k_JobLevel_Spine)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_128k_JobLevel_Leaf)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_128k_JobLevel_Superspine)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_128k_SweepSpines)->Arg(1)->Arg(2)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_128k_Flow_Spray)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_128k_Flow_SprayPath)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_128k_Flow_Adaptive)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
}  // namespace drainwise

// main(): bench_main.cpp.
