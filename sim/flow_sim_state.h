// The flow-level simulator's state (internal to sim/): one routed and solved
// scenario per (mask, seed), the per-snapshot state a FlowSimulator keeps
// (workload, capacities, baseline scenarios), and the steps of a run:
// routing (flow_route_spray.cpp, flow_route_hash.cpp), solving
// (flow_scenario.cpp) and the report (flow_sim_report.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <stop_token>
#include <vector>

#include "model/drain.h"
#include "model/error.h"
#include "model/snapshot.h"
#include "sim/flow_routes.h"
#include "sim/flow_sim.h"
#include "sim/flow_solver.h"
#include "sim/flow_workload.h"
#include "sim/routing.h"

namespace drainwise::sim {

// One routed and solved scenario (a mask, a seed).
struct Scenario {
  RouteTable table;
  FluidProblem problem;
  FluidSolution solution;
  std::vector<uint32_t> agg_demand;     // aggregate -> demand
  std::vector<uint16_t> demand_hops;    // per demand: longest path (links); 0 when cut off
  std::vector<uint8_t> demand_changed;  // spray: differs from the baseline scenario
  std::vector<uint8_t> job_connected;
  std::vector<double> capacity_bps;     // usable, after penalties
  size_t links_penalised = 0;
};

struct FlowSimulator::State {
  model::SnapshotPtr snapshot;
  FlowOptions options;
  std::unique_ptr<RoutingIndex> index;
  Workload workload;
  std::vector<double> capacity_bps;  // usable: raw x goodput - background
  std::vector<Scenario> baseline;    // one per seed (spray modes: one)

  const model::Topology& topo() const { return *snapshot->topology; }
  bool hash() const {
    return options.routing == FlowRouting::kHashResilient || options.routing == FlowRouting::kHashRehash;
  }

  // Registers the routes (switch pairs, or the host pair of an explicit
  // flow) demand `d` can use under `mask`.
  void RegisterDemand(const FlowDemand& d, const model::DrainMask& mask, RouteTable& table,
                      std::vector<int16_t>& src_nics, std::vector<int16_t>& dst_nics) const {
    if (d.src_nic == kAllNics) {
      table.Register(RouteTable::HostKey(d.src, d.dst), d.src, kAllNics, d.dst, kAllNics);
      return;
    }
    UsableNics(topo(), mask, d.src, d.src_nic, src_nics);
    UsableNics(topo(), mask, d.dst, d.dst_nic, dst_nics);
    for (int16_t s : src_nics) {
      for (int16_t t : dst_nics) {
        uint32_t a = NicSwitch(topo(), d.src, s), b = NicSwitch(topo(), d.dst, t);
        if (a != b) table.Register(RouteTable::SwitchKey(a, b), d.src, s, d.dst, t);
      }
    }
  }

  // What a run may start from: `reuse` is a scenario whose unchanged routes
  // and solved components are taken over (the baseline of the same seed,
  // or another seed's run under the same mask); `routes`, a table computed
  // under the same mask to borrow routes from instead; `previous_paths`, the
  // baseline whose hashed paths resilient hashing keeps.
  struct RunFrom {
    const Scenario* reuse = nullptr;
    const RouteTable* routes = nullptr;
    const Scenario* previous_paths = nullptr;
  };
  void RouteSpray(const model::DrainMask& mask, const RunFrom& from, Scenario& sc) const;
  void RouteHash(const model::DrainMask& mask, const RunFrom& from, uint64_t seed, Scenario& sc) const;
  Result<Scenario> Run(const model::DrainMask& mask, const RunFrom& from, uint64_t seed, std::stop_token stop) const;
  std::vector<uint32_t> ReuseMap(const Scenario& base, const Scenario& sc) const;
};

// Per job of one scenario: when its last flow finishes and its step latency.
struct JobTimes {
  bool connected = true;
  double bandwidth_s = 0;
  double latency_s = 0;
  int max_hops = 0;
};

std::vector<JobTimes> TimesOf(const Workload& w, const Scenario& sc, const FlowOptions& o, size_t jobs);

inline double Iteration(const model::Job& job, double comm_s) {
  return job.iteration.compute_s + (1.0 - job.iteration.overlap) * comm_s;
}

// The report of a drained run: per-job sides and slowdowns over the seeds,
// loads, hot links, bottlenecks and the jobs crossing them.
FlowReport BuildFlowReport(const FlowSimulator::State& st, const model::DrainMask& mask,
                           const std::vector<Scenario>& drained);

}  // namespace drainwise::sim
