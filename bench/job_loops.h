// The job-level benchmarks' loops, shared by job_bench (32k) and scale_bench
// (128k): one assessment per iteration, and a drain-candidates sweep split
// over threads as the server's worker pool does.
#pragma once

#include <iterator>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>

#include "model/drain.h"
#include "model/topology.h"
#include "sim/job_sim.h"

namespace drainwise::bench {

// The switch named `name` drained alone.
inline model::Drain SwitchDrain(const model::Topology& t, const char* name) {
  return model::Drain{{*t.FindNode(name)}, {}};
}

// AssessJobs(index, drain) once per iteration; counters: jobs affected and
// class-pair routes.
inline void AssessLoop(benchmark::State& state, const sim::JobSimIndex& index, const model::Drain& drain) {
  sim::JobSimWorkspace ws;
  int affected = 0;
  int64_t routes = 0;
  for (auto _ : state) {
    auto a = sim::AssessJobs(index, drain, ws);
    affected = a->jobs_affected;
    routes = a->pair_routes;
    benchmark::DoNotOptimize(a);
  }
  state.counters["jobs_affected"] = affected;
  state.counters["pair_routes"] = static_cast<double>(routes);
}

// `switches` as single-switch drain candidates on `threads` threads (strided
// parts, one workspace each), merged and ranked; counter: candidates.
inline void SweepLoop(benchmark::State& state, const sim::JobSimIndex& index, const model::Topology& t,
                      const std::vector<model::NodeId>& switches, int threads) {
  std::vector<std::vector<model::NodeId>> parts(threads);
  for (size_t i = 0; i < switches.size(); ++i) parts[i % threads].push_back(switches[i]);
  size_t candidates = 0;
  for (auto _ : state) {
    std::vector<std::vector<sim::DrainCandidate>> results(threads);
    std::vector<std::thread> pool;
    for (int k = 0; k < threads; ++k) {
      pool.emplace_back([&, k] {
        sim::JobSimWorkspace ws;
        auto r = sim::SweepDrainCandidates(index, parts[k], ws);
        if (r) results[k] = std::move(*r);
      });
    }
    for (auto& th : pool) th.join();
    std::vector<sim::DrainCandidate> all;
    for (auto& r : results) all.insert(all.end(), std::make_move_iterator(r.begin()), std::make_move_iterator(r.end()));
    sim::RankCandidates(t, all);
    candidates = all.size();
    benchmark::DoNotOptimize(all);
  }
  state.counters["candidates"] = static_cast<double>(candidates);
}

}  // namespace drainwise::bench
