// The flow-level simulator's state (internal to sim/): one routed and solved
// scenario per (mask, seed), the per-snapshot state a FlowSimulator keeps
// (workload, capacities, baseline scenarios), and the steps of a run:
// routing (flow_route_spray.cpp, flow_route_hash.cpp), solving
// (flow_scenario.cpp) and the report (flow_sim_report.cpp).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <stop_token>
#include <utility>
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
  std::vector<uint32_t> agg_demand;  // aggregate -> demand (a cached hash baseline: empty, see demand_aggs)
  // A cached hash baseline: demand i's aggregates are [demand_aggs[i],
  // demand_aggs[i + 1]) (aggregates come in demand order); 4 B per demand
  // instead of 4 B per aggregate.
  std::vector<uint32_t> demand_aggs;
  std::vector<uint16_t> demand_hops;  // per demand: longest path (links); 0 when cut off
  // Per demand: its routes differ from the baseline's (another NIC, or a
  // route class the drain touches). Unchanged demands have the baseline's
  // aggregates in spray modes, and in hash modes under the same seed.
  std::vector<uint8_t> demand_changed;
  std::vector<uint8_t> demand_seed_free;  // hash: no hashed choice (both NICs on one switch)
  // A cached hash baseline: what its components use
  // (flow_partial.cpp); empty when the partial drained runs are off or it
  // would be too large.
  ComponentFootprint footprint;
  // The first seed's cached hash baseline, when drained runs may be
  // partial: what the report needs of the aggregates a partial first seed
  // leaves in the baseline (flow_sim_report.cpp). Per aggregate its flow
  // count; per component c, job_links[job_links_off[c] ..
  // job_links_off[c + 1]) the (job, directed link) pairs that its
  // aggregates carrying bits cross, each once, by job.
  PackedDoubles agg_weight;
  std::vector<uint32_t> job_links_off;
  std::vector<std::pair<uint32_t, uint32_t>> job_links;
  bool report_ready() const { return !footprint.empty() && !job_links_off.empty(); }
  // A partial drained run (flow_partial.cpp): the demands it routed (the
  // others keep the baseline's aggregates and solution), the baseline
  // components they make up, and per job the latest finish of its
  // aggregates left in the baseline. All empty after a full run.
  std::vector<uint8_t> routed, routed_components;
  std::vector<double> outside_job_finish;
  uint64_t seed = 0;  // hash modes
  std::vector<uint8_t> job_connected;
  std::vector<double> capacity_bps;  // usable, after penalties
  size_t links_penalised = 0;
  // adaptive (flow_route_adaptive.cpp): the split of every class whose
  // traffic the balancing moved (indexed like table.classes; an empty span
  // keeps the spray-path shares of the table), and the spray-path solution
  // it started from when any class moved (otherwise `solution` is it).
  std::vector<std::span<const LinkShare>> adapted;
  std::deque<std::vector<LinkShare>> adapted_shares;
  FluidSolution spray_solution;
  bool any_adapted = false;
  const FluidSolution& SpraySolution() const { return any_adapted ? spray_solution : solution; }
  // Bytes held by the arrays of everything but `problem` (the cached
  // baselines have none); a route table's borrowed routes are its owner's.
  size_t bytes() const;
};

// Per job of one scenario: when its last flow finishes and its step latency.
struct JobTimes {
  bool connected = true;
  double bandwidth_s = 0;
  double latency_s = 0;
  int max_hops = 0;
};

// What the report needs of one seed's run once its scenario is freed.
struct SeedOutcome {
  std::vector<JobTimes> times;    // per job
  std::vector<double> load0_bps;  // per directed link
  size_t components_solved = 0;
  size_t components_reused = 0;
  size_t events = 0;
  size_t aggregates = 0;  // routed and given to the solver
  double makespan_s = 0;
};

struct FlowSimulator::State {
  model::SnapshotPtr snapshot;
  FlowOptions options;
  std::unique_ptr<RoutingIndex> index;
  Workload workload;
  std::vector<double> capacity_bps;  // usable: raw x goodput - background
  // One per seed (spray modes: one). Once summarised, a baseline keeps only
  // what drained runs take from it: routes, the per-demand flags and the
  // solution; its FluidProblem is freed (ReuseMap needs no aggregate). Hash
  // modes keep per-demand aggregate ranges instead of agg_demand, finish
  // times, t = 0 rates and component ids packed (FluidSolution::Pack), and
  // seeds after the first no bottleneck0 (the report reads the first seed's
  // only).
  std::vector<Scenario> baseline;
  std::vector<SeedOutcome> baseline_outcomes;  // one per seed

  const model::Topology& topo() const { return *snapshot->topology; }
  bool hash() const {
    return options.routing == FlowRouting::kHashResilient || options.routing == FlowRouting::kHashRehash;
  }
  // Whether drained runs may be partial (flow_partial.cpp): hash modes,
  // unless switched off or overloaded links are penalised (a penalised link
  // may lie in a component the run would leave out, which would then need
  // solving again). Baselines keep footprints only then.
  bool partial_runs() const { return hash() && options.partial_drained_runs && options.overload_penalty == 0; }

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

  // Aggregates a hash run routes apart from its problem (RouteHash: a
  // range of demands after the first), until they join it: two private
  // links each, and fabric links [term_end[k - 1], term_end[k]).
  struct HashRangeArrays {
    std::vector<double> weight, bits;
    std::vector<uint32_t> private_links, links, term_end, agg_demand;
    void Clear() {
      weight.clear();
      bits.clear();
      private_links.clear();
      links.clear();
      term_end.clear();
      agg_demand.clear();
    }
  };
  // A free list shared by the seeds of one call, guarded by a mutex.
  template <class T>
  class FreeList {
   public:
    T Take() {
      std::lock_guard<std::mutex> lock(mu_);
      if (free_.empty()) return T{};
      T v = std::move(free_.back());
      free_.pop_back();
      return v;
    }
    void Give(T v) {
      std::lock_guard<std::mutex> lock(mu_);
      free_.push_back(std::move(v));
    }
    // Frees all but `n` of the values kept.
    void Trim(size_t n) {
      std::lock_guard<std::mutex> lock(mu_);
      if (free_.size() > n) free_.resize(n);
    }

   private:
    std::mutex mu_;
    std::vector<T> free_;
  };
  // Flow problems whose arrays a finished run handed back, for the next
  // run to fill (hash modes): seeds run one after another on a thread then
  // write into memory already faulted in instead of fresh pages (on the 32k
  // MoE case, zeroing fresh pages was ~15 % of the CPU time); the solver's
  // working arrays likewise. Lives for one Create or Simulate call; holds at
  // most one problem per thread (Create's seeds run one at a time: one).
  class ProblemPool {
   public:
    FluidProblem Take() { return problems_.Take(); }
    void Give(FluidProblem p) {
      p.Clear();
      problems_.Give(std::move(p));
    }
    // A two-range hash run's second range's aggregates (RouteHash).
    HashRangeArrays TakeRange() { return ranges_.Take(); }
    void GiveRange(HashRangeArrays r) {
      r.Clear();
      ranges_.Give(std::move(r));
    }
    // ReuseMap's output, for the next run's.
    std::vector<uint32_t> TakeIndex() { return indices_.Take(); }
    void GiveIndex(std::vector<uint32_t> v) { indices_.Give(std::move(v)); }
    SolverScratch TakeScratch() { return scratch_.Take(); }
    void GiveScratch(SolverScratch s) { scratch_.Give(std::move(s)); }
    // A summarised run's per-aggregate solution arrays, for the next
    // run's solve to fill (FluidOptions::storage).
    FluidSolution::Columns TakeColumns() { return columns_.Take(); }
    void GiveColumns(FluidSolution::Columns c) { columns_.Give(std::move(c)); }
    // Keeps one of each: what a single run next needs.
    void TrimToOne() {
      problems_.Trim(1);
      ranges_.Trim(1);
      indices_.Trim(1);
      scratch_.Trim(1);
      columns_.Trim(1);
    }
    // Frees everything kept.
    void Clear() {
      problems_.Trim(0);
      ranges_.Trim(0);
      indices_.Trim(0);
      scratch_.Trim(0);
      columns_.Trim(0);
    }

   private:
    FreeList<FluidProblem> problems_;
    FreeList<HashRangeArrays> ranges_;
    FreeList<std::vector<uint32_t>> indices_;
    FreeList<SolverScratch> scratch_;
    FreeList<FluidSolution::Columns> columns_;
  };

  // Hash modes: a demand's route choices under a mask (HashChoice).
  struct HashPairChoice {
    int16_t s, t;                // source and destination NICs
    const RouteTable::Class* c;  // their switches' class; null when both are on one switch
  };
  struct HashChoiceScratch {
    std::vector<int16_t> src_nics, dst_nics;
    std::vector<HashPairChoice> pairs;
    const RouteTable::Class* host_class = nullptr;
  };
  // Demand i's choices in `table` (computed under `mask`): its class (a
  // host-level demand, r.host_class) or its usable (source NIC,
  // destination NIC, class) pairs (r.pairs); false when it has no route.
  // `changed`: another NIC, or a route the drain touches (an unchanged
  // demand hashes as in the baseline of the same seed).
  bool HashChoice(const model::DrainMask& mask, const RouteTable& table, size_t i, HashChoiceScratch& r,
                  uint8_t& changed) const;
  // Every demand's HashChoice, as a partial drained run first needs them:
  // the same for every seed under one mask and table (Simulate makes them
  // once and lends them to the seeds' runs).
  struct HashChoices {
    std::vector<uint8_t> routable, changed;  // per demand
    std::vector<uint8_t> job_connected;      // per job: no demand of it without a route
  };
  void ChooseAll(const model::DrainMask& mask, const RouteTable& table, const TaskRunner* runner,
                 HashChoices& out) const;

  // What a run may start from: `reuse` is a scenario whose unchanged routes
  // and solved components are taken over (the baseline of the same seed,
  // or another seed's run under the same mask); `routes`, a table computed
  // under the same mask to borrow routes from instead; `previous_paths`, the
  // baseline whose hashed paths resilient hashing keeps; `pool`, where a
  // hash run's problem arrays and solver scratch come from; `runner`,
  // where the solver may solve components at once (never set for a run
  // that is itself a runner's task).
  struct RunFrom {
    const Scenario* reuse = nullptr;
    const RouteTable* routes = nullptr;
    // A table registered from the workload's demands under the same mask
    // (another seed's): its classes are registered, not every demand again.
    // `routes`, when set, is one.
    const RouteTable* same_keys = nullptr;
    const Scenario* previous_paths = nullptr;
    ProblemPool* pool = nullptr;  // hash modes: where sc.problem's arrays come from
    const TaskRunner* runner = nullptr;
    // Nothing reads the run's problem but its summary and, for the first
    // seed, the report, which takes what the run leaves out from
    // `reuse` (Scenario::report_ready): a hash run may route only the
    // components of `reuse` that the drain touches.
    bool summary_only = false;
    // Keep the solution's footprint (a hash baseline, whose
    // drained runs may then be partial): sc.footprint, computed by the solve.
    bool footprint = false;
    // Hash modes: ChooseAll under the run's mask and `routes` (made once
    // for every seed of a drained call), or null.
    const HashChoices* choices = nullptr;
    // The summary of `reuse` (a baseline's), or null.
    const SeedOutcome* reuse_outcome = nullptr;
  };
  // Registers every demand's routes under `mask` in `table` (or the classes
  // of `from.routes` or `from.same_keys`) and computes them, borrowing from
  // `from.routes` (same mask) or `from.reuse`'s table (the baseline) where
  // the drain leaves them alone: every mode's first step.
  void RouteClasses(const model::DrainMask& mask, const RunFrom& from, bool per_path, bool sort_by_from,
                    bool keep_links, RouteTable& table) const;
  void RouteSpray(const model::DrainMask& mask, const RunFrom& from, Scenario& sc) const;
  // `partial`: the baseline (with a footprint) whose untouched components
  // the run leaves out, when it may; null routes every demand.
  void RouteHash(const model::DrainMask& mask, const RunFrom& from, uint64_t seed, const Scenario* partial,
                 Scenario& sc) const;
  // Partial drained runs (flow_partial.cpp). PartialDemands: which demands
  // of `sc` (flags and job states known, nothing routed yet) to route,
  // given the baseline `base` of the same seed: those the drain changes
  // and every demand of the baseline components they are in; false when
  // that is over 90 % of the problem. The untouched components' sums:
  struct Outside {
    std::vector<double> side0, side1, load;  // per directed link
    std::vector<uint8_t> used;
    size_t components = 0;
  };
  bool PartialDemands(const Scenario& base, const std::vector<uint8_t>& routable, Scenario& sc) const;
  // Gives sc.problem the untouched components' sides; false when a link
  // the routed part can fill is one they use (they are coupled: route all).
  bool AddOutside(const Scenario& base, Scenario& sc, Outside& out) const;
  // After the solve: the untouched components' loads, finishes and hops,
  // and the links only they use in the solution's tight and redundant counts.
  // `base_outcome`: the baseline's summary, or null (every aggregate left
  // out is then read).
  void FinishPartial(const Scenario& base, const SeedOutcome* base_outcome, const Outside& out, Scenario& sc) const;
  // The first seed's baseline, before its problem is freed: what a partial
  // first drained seed's report needs (Scenario::agg_weight, job_links).
  void KeepReportData(Scenario& sc, const TaskRunner& runner) const;
  // adaptive: `sc` routed and solved spray-path; moves the traffic of the
  // classes crossing a link full at t = 0 onto their less loaded shortest
  // paths and solves again (reusing `base`'s adapted components), keeping
  // the spray-path solution when that carries more at t = 0.
  Status Adapt(const Scenario* base, Scenario& sc, const TaskRunner* runner, std::stop_token stop) const;
  Result<Scenario> Run(const model::DrainMask& mask, const RunFrom& from, uint64_t seed, std::stop_token stop) const;
  // Into `out` (its memory reused); the two halves of the demands at once
  // through `runner` when given.
  void ReuseMap(const Scenario& base, const Scenario& sc, const TaskRunner* runner, std::vector<uint32_t>& out) const;
};

std::vector<JobTimes> TimesOf(const Workload& w, const Scenario& sc, const FlowOptions& o, size_t jobs,
                              const TaskRunner& runner = {});

inline double Iteration(const model::Job& job, double comm_s) {
  return job.iteration.compute_s + (1.0 - job.iteration.overlap) * comm_s;
}

// `runner`: threads the summary may use (none when it is itself a task).
SeedOutcome Summarize(const FlowSimulator::State& st, const Scenario& sc, const TaskRunner& runner = {});

// The report of a drained run: per-job sides and slowdowns over the seeds
// (baseline_outcomes and `drained`, one per seed), loads, hot links, and from
// the first seed's drained scenario `d0` the bottlenecks and the jobs
// crossing them.
FlowReport BuildFlowReport(const FlowSimulator::State& st, const model::DrainMask& mask, const Scenario& d0,
                           const std::vector<SeedOutcome>& drained);

}  // namespace drainwise::sim
