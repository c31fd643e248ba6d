// Flow-level what-if on the 32k preset (docs/performance.md, "Flow-level").
//
//   flow_bench --benchmark_filter=Ring       ring/all-reduce-heavy default mix
//   flow_bench --benchmark_filter=AllToAll   all-to-all-heavy mix (alltoall_share 0.8)
//
// Each "Full" iteration is what a cold assessment costs: workload, routes and
// baseline (FlowSimulator::Create) plus the drained run; "Drained" reuses a
// cached baseline. Counters: rank-level flows, solver aggregates, completion
// batches, and simulated seconds per wall second.
#include <chrono>
#include <map>
#include <memory>
#include <string>

#include <benchmark/benchmark.h>

#include "fabric/generator.h"
#include "model/drain.h"
#include "model/snapshot.h"
#include "sim/flow_sim.h"

namespace {

using namespace drainwise;

model::SnapshotPtr Snapshot32k(double alltoall_share) {
  static std::map<double, model::SnapshotPtr> cache;
  auto it = cache.find(alltoall_share);
  if (it != cache.end()) return it->second;
  auto preset = *fabric::FindPreset("32k");
  preset.jobs.alltoall_share = alltoall_share;
  if (alltoall_share >= 0.5) preset.jobs.pipeline_share = std::max(0.0, std::min(preset.jobs.pipeline_share, 1 - alltoall_share));
  auto spec = fabric::GenerateFabric(preset.fabric);
  auto topo = std::make_shared<const model::Topology>(*model::BuildTopology(spec));
  auto jobs = fabric::GenerateJobs(spec, preset.fabric, preset.jobs);
  auto snap = model::MakeSnapshot(topo, 1, jobs, 1);
  cache[alltoall_share] = snap;
  return snap;
}

model::Drain DrainOf(const model::Topology& t, const std::string& kind) {
  model::DrainSpec spec;
  if (kind == "spine") spec.switches = {"p0-spine0"};
  if (kind == "superspine") spec.switches = {"ss0-0"};
  if (kind == "leaf") spec.switches = {"p0-leaf0-r0"};
  return *model::ResolveDrain(spec, t);
}

void Report(benchmark::State& state, const sim::FlowReport& rep, double wall_s) {
  state.counters["flows"] = static_cast<double>(rep.model.flows);
  state.counters["demands"] = static_cast<double>(rep.model.demands);
  state.counters["aggregates"] = static_cast<double>(rep.model.aggregates);
  state.counters["classes"] = static_cast<double>(rep.model.route_classes);
  state.counters["events"] = static_cast<double>(rep.model.events);
  state.counters["reused"] = static_cast<double>(rep.model.components_reused);
  state.counters["solved"] = static_cast<double>(rep.model.components_solved);
  state.counters["sim_s"] = rep.model.simulated_s;
  state.counters["sim_per_wall"] = wall_s > 0 ? rep.model.simulated_s / wall_s : 0;
}

void RunFull(benchmark::State& state, double a2a, const std::string& drain, sim::FlowRouting routing) {
  auto snap = Snapshot32k(a2a);
  model::Drain d = DrainOf(*snap->topology, drain);
  sim::FlowOptions o;
  o.routing = routing;
  sim::FlowReport last;
  double wall = 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    auto sim = sim::FlowSimulator::Create(snap, o);
    if (!sim) {
      state.SkipWithError(sim.error().message.c_str());
      return;
    }
    auto rep = (*sim)->Simulate(d);
    if (!rep) {
      state.SkipWithError(rep.error().message.c_str());
      return;
    }
    wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    last = std::move(*rep);
    benchmark::DoNotOptimize(last);
  }
  Report(state, last, wall);
}

void RunDrained(benchmark::State& state, double a2a, const std::string& drain) {
  auto snap = Snapshot32k(a2a);
  model::Drain d = DrainOf(*snap->topology, drain);
  auto sim = sim::FlowSimulator::Create(snap, sim::FlowOptions{});
  if (!sim) {
    state.SkipWithError(sim.error().message.c_str());
    return;
  }
  sim::FlowReport last;
  double wall = 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    auto rep = (*sim)->Simulate(d);
    wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    last = std::move(*rep);
    benchmark::DoNotOptimize(last);
  }
  Report(state, last, wall);
}

void BM_Ring32k_Full_Spine(benchmark::State& s) { RunFull(s, 0.2, "spine", sim::FlowRouting::kSpray); }
void BM_Ring32k_Full_Superspine(benchmark::State& s) { RunFull(s, 0.2, "superspine", sim::FlowRouting::kSpray); }
void BM_Ring32k_Full_Leaf(benchmark::State& s) { RunFull(s, 0.2, "leaf", sim::FlowRouting::kSpray); }
void BM_Ring32k_Full_SprayPath(benchmark::State& s) { RunFull(s, 0.2, "spine", sim::FlowRouting::kSprayPath); }
void BM_Ring32k_Full_Hash8(benchmark::State& s) { RunFull(s, 0.2, "spine", sim::FlowRouting::kHashResilient); }
void BM_Ring32k_Drained_Spine(benchmark::State& s) { RunDrained(s, 0.2, "spine"); }
void BM_AllToAll32k_Full_Spine(benchmark::State& s) { RunFull(s, 0.8, "spine", sim::FlowRouting::kSpray); }
void BM_AllToAll32k_Full_Leaf(benchmark::State& s) { RunFull(s, 0.8, "leaf", sim::FlowRouting::kSpray); }
void BM_AllToAll32k_Drained_Spine(benchmark::State& s) { RunDrained(s, 0.8, "spine"); }
// Every job expert-parallel: the largest all-to-all volume the preset makes.
void BM_AllToAllOnly32k_Full_Spine(benchmark::State& s) { RunFull(s, 1.0, "spine", sim::FlowRouting::kSpray); }
void BM_AllToAllOnly32k_Full_Leaf(benchmark::State& s) { RunFull(s, 1.0, "leaf", sim::FlowRouting::kSpray); }
void BM_AllToAll32k_Full_Hash8(benchmark::State& s) { RunFull(s, 0.8, "spine", sim::FlowRouting::kHashResilient); }

BENCHMARK(BM_Ring32k_Full_Spine)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Ring32k_Full_Superspine)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Ring32k_Full_Leaf)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Ring32k_Full_SprayPath)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Ring32k_Full_Hash8)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Ring32k_Drained_Spine)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AllToAll32k_Full_Spine)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AllToAll32k_Full_Leaf)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AllToAll32k_Drained_Spine)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AllToAllOnly32k_Full_Spine)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AllToAllOnly32k_Full_Leaf)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_AllToAll32k_Full_Hash8)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
