// Flow-level what-if (docs/model.md, "Flow-level"): every job's collectives
// as flows, max-min fair sharing of the fabric with a drain applied, per-job
// comm and iteration times before and after, hot links and who shares them.
//
// Model in one paragraph. The workload (flow_workload.h) turns each job's
// collectives into NIC-to-NIC flows. All flows of all jobs start at t = 0
// (the conservative case: every job communicates at once). A flow's route is
// fixed by the routing mode (`spray`: even split per hop over the
// shortest-path DAG; `spray-path`: even over all shortest paths; `hash`: one
// ECMP path per flow from a seeded per-hop hash; `adaptive`: spray-path, then
// the routes crossing a full link re-split over their shortest paths to
// balance the load, sim/flow_route_adaptive.cpp). Rates are max-min fair with
// those fixed split fractions and recomputed whenever flows finish. A job's
// bandwidth time is when its last flow finishes; its comm time adds the
// alpha-beta step latency (steps x (2 x hops x per-hop latency + overhead):
// one round trip over the step's path plus the per-message overhead); its
// iteration time is compute + (1 - overlap) x comm.
//
// A job is `connected = false` when any of its flows has no path left (a
// host lost every NIC, or no route between its NICs remains); it then has no
// comm time and none of its flows take capacity.
//
// Units: bits per second, bytes, seconds.
//
// Thread safety: everything here is pure. A FlowSimulator is immutable once
// built and its Simulate() may run concurrently on many drains.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "model/drain.h"
#include "model/error.h"
#include "model/ids.h"
#include "model/snapshot.h"
#include "sim/task_runner.h"

namespace drainwise::sim {

enum class FlowRouting : uint8_t {
  kSpray,          // per-hop even split (adaptive routing / packet spraying)
  kSprayPath,      // even over all equal-cost end-to-end paths
  kHashResilient,  // one hashed ECMP path per flow; a drain moves only flows on removed paths
  kHashRehash,     // one hashed ECMP path per flow; a drain re-hashes every flow
  kAdaptive,       // congestion-aware: each route's split over its shortest paths balances the load
};

// The names used on the command line (`--routing`), in the API and in
// documents: "spray", "spray-path", "hash" (resilient hashing), "hash-rehash",
// "adaptive".
std::string_view FlowRoutingName(FlowRouting routing);
// Those names, and "hash-resilient" (an older name of "hash").
std::optional<FlowRouting> ParseFlowRouting(std::string_view name);

struct FlowOptions {
  // The default is spray-path (docs/model.md, "Which routing by default"):
  // per-hop spray over-predicted core-switch drains by 15-27% against a
  // packet-level run, spray-path stayed within 4%.
  FlowRouting routing = FlowRouting::kSprayPath;
  // Where `routing` came from, reported as is: "default", "config",
  // "topology" (the fabric's declared load balancing) or "request".
  std::string routing_source = "default";
  int hash_seeds = 8;  // hash modes: K seeds; results give the mean and the worst
  uint64_t seed = 1;   // hash modes: seeds are seed, seed + 1, ..., seed + K - 1

  // Fidelity (issue 9). Defaults are for 400G RoCEv2 with 4 KiB MTU.
  // Share of line rate the transport delivers as payload (headers, ACKs,
  // retransmissions): applied to every capacity.
  double goodput = 0.95;
  double per_hop_latency_s = 1e-6;       // per link of a path, one way (switch + serialization + wire);
                                         // a step pays it twice per link (a round trip)
  double per_message_overhead_s = 5e-6;  // per step: NIC + NCCL launch/sync
  // Links whose utilisation at t = 0 reaches `overload_threshold` lose a
  // further `overload_penalty` of their capacity (congestion, retransmissions)
  // and the fluid model is run again. 0 = off.
  double overload_threshold = 0.95;
  double overload_penalty = 0.0;
  // Ring phase drift (sim/flow_ring_phase.h, docs/model.md): up to this
  // share of a drained all-ring job's step latency hides the congestion the
  // drain adds (edges out of phase use the link while others wait). 0 = off
  // (the all-in-phase fluid model, the default: golden numbers unchanged);
  // 0.5 fits the packet level (docs/validation.md).
  double ring_phase_overlap = 0.0;

  // Bits per second already used on each directed link (sim/routing.h's
  // DirectedLinkId) by traffic outside the modelled jobs; empty = none.
  // Subtracted from the capacity (never below 1% of it).
  std::vector<double> background_bps;

  // Solver: false re-solves a whole coupled component at every completion
  // batch (the previous solver, kept as the reference of the exactness
  // tests); true re-fills only the flows a batch can speed up. Same results.
  bool incremental_solver = true;
  // Hash modes: the drained run of every seed routes and solves only the
  // baseline components the drain touches, and takes the others from that
  // seed's baseline (sim/flow_partial.cpp; the report takes what it reads
  // of them from the first baseline); false routes every demand (the
  // reference of the tests). Same results.
  bool partial_drained_runs = true;

  int hot_links = 10;  // how many hot links to report
  // Hot links among switch-to-switch links only: a host's NIC is full in the
  // all-start-at-once model by construction, so it says nothing about a drain.
  bool hot_links_fabric_only = true;
  int bottlenecks_per_job = 3;  // bottleneck links reported per job
  int jobs_per_link = 16;       // jobs listed per reported link (the count is always complete)

  // The pure fluid model of the exactness contract: goodput 1, no latency.
  static FlowOptions Exact() {
    FlowOptions o;
    o.goodput = 1.0;
    o.per_hop_latency_s = 0;
    o.per_message_overhead_s = 0;
    return o;
  }
};

// `options` with the fabric's declared load balancing (the topology
// document's "load_balancing") applied: its routing and, when declared, its
// hash seeds; routing_source "topology". Unchanged when nothing is declared
// or the declared name is unknown (the codec refuses those).
FlowOptions WithDeclaredLoadBalancing(FlowOptions options, const model::LoadBalancing& declared);

// Checks ranges: goodput in (0, 1], latencies >= 0, 1 <= hash_seeds <= 1024,
// penalty in [0, 1), background sized to the topology's directed links.
Status ValidateFlowOptions(const FlowOptions& options, const model::Topology& topology);

// One side (baseline or drained) of a job's result.
struct FlowJobSide {
  bool connected = true;
  double comm_s = 0;        // bandwidth_s + latency_s (hash modes: mean over seeds)
  double bandwidth_s = 0;   // when the job's last flow finishes (drained: less the ring phase credit)
  double latency_s = 0;     // steps x (2 x max_hops x per_hop_latency_s + per_message_overhead_s)
  double iteration_s = 0;   // compute_s + (1 - overlap) * comm_s
  double comm_s_worst = 0;  // hash modes: worst seed; otherwise = comm_s
  double iteration_s_worst = 0;
  int max_hops = 0;  // links on the longest path any of its flows takes
};

// A directed link with its utilisation at t = 0 and the jobs crossing it.
struct FlowLinkUse {
  uint32_t directed_link = 0;  // DirectedLinkId
  double utilisation = 0;      // (load + background) / (capacity x goodput)
  double load_bps = 0;
  std::vector<model::JobId> jobs;  // ascending, at most options.jobs_per_link
  size_t job_count = 0;            // all jobs crossing it
};

struct FlowJobResult {
  model::JobId job;
  uint64_t flows = 0;  // inter-host rank-level flows of one iteration
  FlowJobSide baseline;
  FlowJobSide drained;
  // drained.iteration_s / baseline.iteration_s - 1, in percent; empty when
  // the job is disconnected on either side.
  std::optional<double> slowdown_pct;
  std::optional<double> slowdown_pct_worst;  // hash modes: worst seed
  // Drained, at t = 0: the links that fixed the rates of the job's flows, the
  // one limiting its last-finishing flow first.
  std::vector<FlowLinkUse> bottlenecks;
};

struct FlowModelInfo {
  FlowRouting routing = FlowRouting::kSprayPath;
  std::string routing_source;  // FlowOptions::routing_source
  int seeds = 1;
  double goodput = 1;
  double per_hop_latency_s = 0;
  double per_message_overhead_s = 0;
  double overload_threshold = 0;
  double overload_penalty = 0;
  double ring_phase_overlap = 0;  // FlowOptions::ring_phase_overlap
  bool background = false;
  size_t links_penalised = 0;  // drained run
  uint64_t flows = 0;          // rank-level flows
  size_t demands = 0;          // after merging identical flows of a collective
  size_t aggregates = 0;       // drained run (first seed): weighted flows given to the solver
  size_t route_classes = 0;    // drained run: distinct leaf-to-leaf routes
  size_t tight_links = 0;      // drained run: links that can saturate
  size_t redundant_links = 0;  // drained run: loaded links proven unable to saturate (left out of the solve)
  size_t components_solved = 0;
  size_t components_reused = 0;  // drained components copied from the baseline
  // Drained runs, summed over the seeds: aggregates routed and given to the
  // solver (a drained hash seed routes only what the drain touches).
  size_t aggregates_routed = 0;
  size_t classes_adapted = 0;  // adaptive, drained run: route classes whose split the balancing moved
  size_t events = 0;           // completion batches
  double simulated_s = 0;      // latest finish, drained run
};

struct FlowReport {
  std::vector<FlowJobResult> jobs;  // in JobId order
  // Per directed link (DirectedLinkId): usable capacity (capacity x goodput,
  // minus background) and the load at t = 0, baseline and drained (hash
  // modes: mean over seeds).
  std::vector<double> capacity_bps;
  std::vector<double> baseline_load_bps;
  std::vector<double> drained_load_bps;
  std::vector<double> background_bps;  // empty when none
  std::vector<uint8_t> link_down;      // drained
  std::vector<FlowLinkUse> hot_links;  // drained, highest utilisation first
  FlowModelInfo model;
};

// The workload and the baseline of one snapshot under one set of options,
// computed once; Simulate() then only re-solves what the drain changes.
class FlowSimulator {
 public:
  // Errors: kInvalidArgument for bad options, kCancelled when `stop` fires.
  // Every run here uses `runner` for the independent components of its
  // flow problem; hash modes run their seeds one after another, each also
  // routing its demands in two ranges at once through it.
  static Result<std::shared_ptr<const FlowSimulator>> Create(model::SnapshotPtr snapshot, FlowOptions options,
                                                             std::stop_token stop = {}, const TaskRunner& runner = {});
  ~FlowSimulator();

  // Baseline (no drain) and `drain` applied. Errors: kCancelled. Hash modes
  // run the seeds as `runner`'s tasks, the first last; when it is the only
  // seed or must route every demand (partial runs off) it runs alone
  // afterwards instead (its components and routing through `runner`, as in
  // Create).
  // A drained seed's flow problem lives only while its run does (the first
  // seed's until the report is built). The cached baselines keep each seed's
  // routes and solution (32k-moe, hash, 8 seeds: ~10 B per aggregate, as
  // baseline_memory() counts), not its flow problem.
  Result<FlowReport> Simulate(const model::Drain& drain, std::stop_token stop = {},
                              const TaskRunner& runner = {}) const;

  const FlowOptions& options() const;
  const model::Snapshot& snapshot() const;

  // What the cached baselines hold between calls: bytes (the capacities of
  // their arrays: routes, solutions, per-demand arrays) and aggregates,
  // summed over the seeds.
  struct BaselineMemory {
    size_t bytes = 0;
    size_t aggregates = 0;
  };
  BaselineMemory baseline_memory() const;

  struct State;  // implementation

 private:
  explicit FlowSimulator(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// One-shot: Create + Simulate. `snapshot` must stay alive for the call.
Result<FlowReport> SimulateFlows(const model::Snapshot& snapshot, const model::Drain& drain, const FlowOptions& options,
                                 std::stop_token stop = {}, const TaskRunner& runner = {});

}  // namespace drainwise::sim
