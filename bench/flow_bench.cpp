// Flow-level what-if on the 32k preset (docs/performance.md, "Flow-level").
//
//   flow_bench --benchmark_filter=Ring       ring/all-reduce-heavy default mix
//   flow_bench --benchmark_filter=AllToAll   all-to-all-heavy mix (alltoall_share 0.8)
//   flow_bench --benchmark_filter=Moe32k2to1 the same on `32k-moe-2to1` (leaf uplinks 2:1)
//   flow_bench --benchmark_filter=Moe32k     the `32k-moe` preset: cross-pod all-to-all
//                                            (4.1 M rank-level flows), one run per
//                                            routing mode; hash modes take the seed
//                                            count and threads as arguments
//                                            (Moe32k_Full_Hash/8/2: 8 seeds, 2 threads),
//                                            the other modes the threads
//                                            (Moe32k_Full_Spray/2);
//                                            Moe32k_Drained_Hash/8/2/1 times the
//                                            drained runs alone (last argument 0:
//                                            every seed routes every demand);
//                                            Moe32k_Drained_Spray/2/15 spray's
//                                            drained run alone, 15 s idle before each
//
// Each "Full" iteration is what a cold assessment costs: workload, routes and
// baseline (FlowSimulator::Create) plus the drained run; "Drained" reuses a
// cached baseline; "Warm" is a Full run after an untimed one in the same
// process (the allocator's memory reused, as in a daemon). Counters: rank-level flows, solver aggregates, completion
// batches, and simulated seconds per wall second.
#include <sys/resource.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>

#include "bench/peak_rss.h"
#include "bench/preset.h"
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
  if (alltoall_share >= 0.5)
    preset.jobs.pipeline_share = std::max(0.0, std::min(preset.jobs.pipeline_share, 1 - alltoall_share));
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
  state.counters["routed"] = static_cast<double>(rep.model.aggregates_routed);
  state.counters["adapted"] = static_cast<double>(rep.model.classes_adapted);
  state.counters["sim_s"] = rep.model.simulated_s;
  state.counters["sim_per_wall"] = wall_s > 0 ? rep.model.simulated_s / wall_s : 0;
}

// The process's CPU time so far (every thread's), user and system.
struct CpuTimes {
  double user = 0, sys = 0;
};
CpuTimes ProcessCpu() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
  return {s(u.ru_utime), s(u.ru_stime)};
}

// With `warm`, one untimed run first: the timed ones then reuse the memory
// the allocator kept, as a daemon's later assessments do (a cold run in a
// fresh process also pays the first touch of every page).
void RunFullOn(benchmark::State& state, const model::SnapshotPtr& snap, const std::string& drain,
               const sim::FlowOptions& o, int threads = 1, bool warm = false) {
  const sim::TaskRunner runner = sim::ThreadsRunner(threads);  // the benchmark's thread and threads - 1 more
  model::Drain d = DrainOf(*snap->topology, drain);
  sim::FlowReport last;
  double wall = 0;
  sim::FlowSimulator::BaselineMemory kept;
  if (warm) {
    auto sim = sim::FlowSimulator::Create(snap, o, {}, runner);
    if (sim) benchmark::DoNotOptimize((*sim)->Simulate(d, {}, runner));
  }
  // Peak resident memory of each phase (the last iteration's), where the
  // kernel can say: Create's from the resident size when it starts,
  // Simulate's from the size Create left.
  std::optional<double> create_peak, simulate_peak;
  double create_s = 0;  // of the last iteration: Create's wall time (the rest of `wall` is Simulate's)
  CpuTimes cpu;         // of the last iteration: every thread's CPU time
  for (auto _ : state) {
    const bool phases = bench::ResetPeakRss();
    const CpuTimes cpu0 = ProcessCpu();
    auto t0 = std::chrono::steady_clock::now();
    auto sim = sim::FlowSimulator::Create(snap, o, {}, runner);
    if (!sim) {
      state.SkipWithError(sim.error().message.c_str());
      return;
    }
    create_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (phases) create_peak = bench::PeakRssMB();
    const bool simulate_phase = phases && bench::ResetPeakRss();
    auto rep = (*sim)->Simulate(d, {}, runner);
    if (!rep) {
      state.SkipWithError(rep.error().message.c_str());
      return;
    }
    if (simulate_phase) simulate_peak = bench::PeakRssMB();
    wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const CpuTimes cpu1 = ProcessCpu();
    cpu = {cpu1.user - cpu0.user, cpu1.sys - cpu0.sys};
    last = std::move(*rep);
    kept = (*sim)->baseline_memory();
    benchmark::DoNotOptimize(last);
  }
  Report(state, last, wall);
  // What the simulator keeps between calls, in all and per cached aggregate.
  state.counters["baseline_MB"] = static_cast<double>(kept.bytes) / 1e6;
  state.counters["create_s"] = create_s;
  state.counters["simulate_s"] = wall - create_s;
  // Every thread's CPU time over the timed call: (user + sys) / wall says how
  // busy the threads were.
  state.counters["user_s"] = cpu.user;
  state.counters["sys_s"] = cpu.sys;
  if (create_peak) state.counters["create_peak_MB"] = *create_peak;
  if (simulate_peak) state.counters["simulate_peak_MB"] = *simulate_peak;
  if (kept.aggregates > 0) {
    state.counters["baseline_B_per_agg"] = static_cast<double>(kept.bytes) / static_cast<double>(kept.aggregates);
  }
}

void RunFull(benchmark::State& state, double a2a, const std::string& drain, sim::FlowRouting routing) {
  sim::FlowOptions o;
  o.routing = routing;
  RunFullOn(state, Snapshot32k(a2a), drain, o);
}

// The `32k-moe` preset, one spine drained: `seeds` and `threads` only matter
// in hash modes.
void RunMoe(benchmark::State& state, sim::FlowRouting routing, int seeds, int threads, bool incremental = true,
            bool oversubscribed = false, bool warm = false) {
  static const model::SnapshotPtr moe = bench::PresetSnapshot("32k-moe");
  static model::SnapshotPtr moe_2to1;
  if (oversubscribed && !moe_2to1) moe_2to1 = bench::PresetSnapshot("32k-moe-2to1");
  const model::SnapshotPtr& snap = oversubscribed ? moe_2to1 : moe;
  sim::FlowOptions o;
  o.routing = routing;
  o.hash_seeds = seeds;
  o.incremental_solver = incremental;
  RunFullOn(state, snap, "spine", o, threads, warm);
}

// Times Simulate alone on `sim`, a simulator whose baseline is cached,
// `pause_s` idle (untimed) before each call, as between a daemon's
// assessments. Counter sys_s: the process's system CPU time in the last
// timed call (on this VM, mostly the kernel zeroing pages it hands out).
void TimeDrained(benchmark::State& state, const sim::FlowSimulator& sim, const model::Drain& d,
                 const sim::TaskRunner& runner = {}, int pause_s = 0) {
  sim::FlowReport last;
  double wall = 0, sys = 0;
  for (auto _ : state) {
    if (pause_s > 0) {
      state.PauseTiming();
      std::this_thread::sleep_for(std::chrono::seconds(pause_s));
      state.ResumeTiming();
    }
    const double sys0 = ProcessCpu().sys;
    auto t0 = std::chrono::steady_clock::now();
    auto rep = sim.Simulate(d, {}, runner);
    if (!rep) {
      state.SkipWithError(rep.error().message.c_str());
      return;
    }
    wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    sys = ProcessCpu().sys - sys0;
    last = std::move(*rep);
    benchmark::DoNotOptimize(last);
  }
  Report(state, last, wall);
  state.counters["sys_s"] = sys;
}

void RunDrained(benchmark::State& state, double a2a, const std::string& drain) {
  auto snap = Snapshot32k(a2a);
  model::Drain d = DrainOf(*snap->topology, drain);
  auto sim = sim::FlowSimulator::Create(snap, sim::FlowOptions{});
  if (!sim) {
    state.SkipWithError(sim.error().message.c_str());
    return;
  }
  TimeDrained(state, **sim, d);
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

// Spray modes, argument: threads (a second one solves components at once).
int ThreadsArg(const benchmark::State& s) { return static_cast<int>(s.range(0)); }
void BM_Moe32k_Full_Spray(benchmark::State& s) { RunMoe(s, sim::FlowRouting::kSpray, 1, ThreadsArg(s)); }
void BM_Moe32k_Full_SprayPath(benchmark::State& s) { RunMoe(s, sim::FlowRouting::kSprayPath, 1, ThreadsArg(s)); }

// Arguments: seeds, threads.
void BM_Moe32k_Full_Hash(benchmark::State& s) {
  RunMoe(s, sim::FlowRouting::kHashResilient, static_cast<int>(s.range(0)), static_cast<int>(s.range(1)));
}
// The previous solver (whole component re-filled at every completion batch).
void BM_Moe32k_Full_HashFullRefill(benchmark::State& s) {
  RunMoe(s, sim::FlowRouting::kHashResilient, static_cast<int>(s.range(0)), 1, false);
}
void BM_Moe32k_Full_HashRehash(benchmark::State& s) {
  RunMoe(s, sim::FlowRouting::kHashRehash, static_cast<int>(s.range(0)), static_cast<int>(s.range(1)));
}

// Drained runs only on `32k-moe`, on a cached baseline (FlowSimulator::Create
// untimed): what each of a daemon's assessments costs once its sim cache
// holds the snapshot.
void TimeMoeDrained(benchmark::State& state, const sim::FlowOptions& o, int threads, int pause_s = 0) {
  static const model::SnapshotPtr moe = bench::PresetSnapshot("32k-moe");
  const sim::TaskRunner runner = sim::ThreadsRunner(threads);
  model::Drain d = DrainOf(*moe->topology, "spine");
  auto sim = sim::FlowSimulator::Create(moe, o, {}, runner);
  if (!sim) {
    state.SkipWithError(sim.error().message.c_str());
    return;
  }
  TimeDrained(state, **sim, d, runner, pause_s);
}

// Hash. Arguments: seeds, threads, partial drained runs (1, the default) or
// every demand routed in every seed (0).
void BM_Moe32k_Drained_Hash(benchmark::State& state) {
  sim::FlowOptions o;
  o.routing = sim::FlowRouting::kHashResilient;
  o.hash_seeds = static_cast<int>(state.range(0));
  o.partial_drained_runs = state.range(2) != 0;
  TimeMoeDrained(state, o, static_cast<int>(state.range(1)));
}

// Spray's drained run alone on a cached baseline (a daemon's spray
// assessment). Arguments: threads, seconds idle before each call (0: back
// to back). On this VM the host takes back guest memory left free for a
// few seconds, and touching it again is slow; the drained run allocates
// little that is new, so it barely pays that (docs/performance.md, "Cold
// and warm pages").
void BM_Moe32k_Drained_Spray(benchmark::State& state) {
  sim::FlowOptions o;
  o.routing = sim::FlowRouting::kSpray;
  TimeMoeDrained(state, o, static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
}

void BM_Moe32k_Full_Adaptive(benchmark::State& s) { RunMoe(s, sim::FlowRouting::kAdaptive, 1, ThreadsArg(s)); }
// The same after one untimed run in the process (memory reused).
void BM_Moe32k_Warm_Spray(benchmark::State& s) {
  RunMoe(s, sim::FlowRouting::kSpray, 1, ThreadsArg(s), true, false, true);
}
void BM_Moe32k_Warm_SprayPath(benchmark::State& s) {
  RunMoe(s, sim::FlowRouting::kSprayPath, 1, ThreadsArg(s), true, false, true);
}
void BM_Moe32k_Warm_Adaptive(benchmark::State& s) {
  RunMoe(s, sim::FlowRouting::kAdaptive, 1, ThreadsArg(s), true, false, true);
}
// `32k-moe-2to1`: leaf uplinks at 200G (2:1), so fabric links fill.
void BM_Moe32k2to1_Full_Spray(benchmark::State& s) { RunMoe(s, sim::FlowRouting::kSpray, 1, 1, true, true); }
void BM_Moe32k2to1_Full_SprayPath(benchmark::State& s) { RunMoe(s, sim::FlowRouting::kSprayPath, 1, 1, true, true); }
void BM_Moe32k2to1_Full_Adaptive(benchmark::State& s) { RunMoe(s, sim::FlowRouting::kAdaptive, 1, 1, true, true); }
void BM_Moe32k2to1_Full_Hash(benchmark::State& s) {
  RunMoe(s, sim::FlowRouting::kHashResilient, static_cast<int>(s.range(0)), static_cast<int>(s.range(1)), true, true);
}

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
// One iteration each: a cold 32k-moe run is seconds to minutes (hash).
BENCHMARK(BM_Moe32k_Full_Spray)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK(BM_Moe32k_Full_SprayPath)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK(BM_Moe32k_Full_Hash)
    ->Args({1, 1})
    ->Args({8, 1})
    ->Args({8, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);
BENCHMARK(BM_Moe32k_Drained_Hash)
    ->Args({8, 2, 1})
    ->Args({8, 2, 0})
    ->Args({8, 1, 1})
    ->Args({8, 1, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(2);
BENCHMARK(BM_Moe32k_Drained_Spray)
    ->Args({2, 0})
    ->Args({2, 15})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);
BENCHMARK(BM_Moe32k_Full_Adaptive)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK(BM_Moe32k_Warm_Spray)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_Moe32k_Warm_SprayPath)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_Moe32k_Warm_Adaptive)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);
BENCHMARK(BM_Moe32k2to1_Full_Spray)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_Moe32k2to1_Full_SprayPath)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_Moe32k2to1_Full_Adaptive)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_Moe32k2to1_Full_Hash)
    ->Args({1, 1})
    ->Args({8, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);
BENCHMARK(BM_Moe32k_Full_HashFullRefill)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);
BENCHMARK(BM_Moe32k_Full_HashRehash)
    ->Args({1, 1})
    ->Args({8, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);

}  // namespace

// main(): bench_main.cpp.
