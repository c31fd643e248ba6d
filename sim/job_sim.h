// Job-level what-if: which jobs lose connectivity, ECMP paths or bandwidth
// when a drain is applied, and what the drain removes from the fabric.
//
// Routing follows sim/routing.h (hop-count ECMP, hosts never transit, per-hop
// spray); docs/model.md defines every metric. In short, for each job, over
// the ordered pairs (a, b) of its hosts, comparing the fabric with the drain
// applied ("after") to the same snapshot undrained ("before"):
//   connected          every pair still has a path after the drain;
//   path_fraction      min of paths_after / paths_before (0 when cut off);
//   min_paths_after    min of paths_after over the pairs whose count the
//                      drain reduced (nullopt when it reduced none);
//   bandwidth_fraction min of spray_after / spray_before, where spray is the
//                      single-flow per-hop spray throughput of the pair
//                      (min over links of capacity / share);
//   crossed_*          drained switches / named drained links on a shortest
//                      path of some pair before the drain;
//   crossing_share     mean over the job's ordered host pairs of the share of
//                      the pair's traffic that crossed a drained element.
// Pairs that were already disconnected before the drain count towards
// `connected` (false) but not towards the fractions.
//
// Speed. A JobSimIndex is built once per Snapshot: attachment classes (hosts
// wired to the same leaves with the same capacities share every answer),
// per-class shortest-path trees, and the before metrics of every class pair
// any job uses. An assessment then only routes the class pairs whose
// shortest paths contain a drained element (an O(1) test per pair and
// element), caching results across jobs; the passes of the pairs towards one
// destination class are run one after another and share what follows the
// first level at which they agree bit for bit (results are unchanged by it).
//
// Thread safety. JobSimIndex is immutable and safe for concurrent const use.
// A JobSimWorkspace is per-thread scratch. The functions here do no I/O, no
// logging and start no threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <vector>

#include "model/drain.h"
#include "model/error.h"
#include "model/ids.h"
#include "model/snapshot.h"
#include "sim/routing.h"

namespace drainwise::sim {

// Capacity (per direction) of the links of one tier pair in one pod.
struct CapacityChange {
  std::string tier;  // "<lower>-<upper>" from the endpoint tiers: "host-leaf", "leaf-spine"...
  std::string pod;   // pod of the lower endpoint (else the upper's); "" when none
  double removed_bps = 0;
  double total_bps = 0;
};

struct LeafUplinks {
  model::NodeId leaf;
  int uplinks_before = 0;  // links to higher-level switches
  int uplinks_after = 0;   // of those, still up
};

// One failure domain value shared by drained switches.
struct DomainTouch {
  std::string key;  // a key of Node::domains ("rack", "power"...), or "plane"
  std::string value;
  std::vector<model::NodeId> switches;  // drained switches in it, ascending
};

struct FabricImpact {
  int switches_drained = 0;
  int links_down = 0;  // named links plus the links of drained switches
  // Tier/pod groups that lose capacity, in (tier level, pod) order.
  std::vector<CapacityChange> capacity;
  // Live leaves the drain leaves with at most one live uplink (that had more).
  std::vector<LeafUplinks> single_uplink_leaves;
  std::vector<model::NodeId> hosts_cut_off;   // no live NIC link left, ascending
  std::vector<model::NodeId> hosts_degraded;  // lost some but not all NIC links
  std::vector<DomainTouch> domains;           // sorted by key, value
};

struct JobImpact {
  model::JobId job;
  bool affected = false;  // some pair's traffic crossed a drained element
  bool connected = true;
  double path_fraction = 1;
  std::optional<double> min_paths_after;
  double bandwidth_fraction = 1;
  double crossing_share = 0;
  std::vector<model::NodeId> crossed_switches;  // ascending
  std::vector<model::LinkId> crossed_links;     // named drained links only, ascending
  int64_t host_pairs = 0;                       // unordered pairs of the job's hosts
  int64_t host_pairs_crossing = 0;              // of those, crossing a drained element
  int64_t host_pairs_cut = 0;                   // of those, without a path after the drain
  int gpus = 0;                                 // GPUs the job uses (hosts x GpusPerHost)
};

struct JobAssessment {
  std::vector<JobImpact> jobs;  // every job of the snapshot, in JobId order
  FabricImpact fabric;
  int jobs_affected = 0;
  int jobs_disconnected = 0;
  int gpus_affected = 0;
  // Work done, for logs: distinct pair routes computed.
  int64_t pair_routes = 0;
};

// Per-snapshot precomputation. Building it routes every class pair used by
// some job once (tens to hundreds of ms at 32k GPUs).
class JobSimIndex {
 public:
  // REQUIRES: snapshot != nullptr.
  explicit JobSimIndex(model::SnapshotPtr snapshot);
  ~JobSimIndex();
  JobSimIndex(const JobSimIndex&) = delete;
  JobSimIndex& operator=(const JobSimIndex&) = delete;

  const model::Snapshot& snapshot() const { return *snapshot_; }
  const model::Topology& topology() const { return *snapshot_->topology; }
  const model::JobSet& jobs() const { return *snapshot_->jobs; }
  const RoutingIndex& routing() const { return routing_; }

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  model::SnapshotPtr snapshot_;
  RoutingIndex routing_;
  std::unique_ptr<Impl> impl_;
};

// Per-thread scratch for AssessJobs; reuse it across calls on one thread.
class JobSimWorkspace {
 public:
  JobSimWorkspace();
  ~JobSimWorkspace();
  JobSimWorkspace(JobSimWorkspace&&) noexcept;
  JobSimWorkspace& operator=(JobSimWorkspace&&) noexcept;

  struct State;
  State& state() { return *state_; }

 private:
  std::unique_ptr<State> state_;
};

// The job-level what-if of `drain` on the index's snapshot.
// Errors: kInvalidArgument when the drain names ids outside the topology;
// kCancelled when `stop` fires (checked between jobs).
Result<JobAssessment> AssessJobs(const JobSimIndex& index, const model::Drain& drain, JobSimWorkspace& workspace,
                                 std::stop_token stop = {});
Result<JobAssessment> AssessJobs(const JobSimIndex& index, const model::Drain& drain, std::stop_token stop = {});

// The fabric-level part only (no routing). An invalid drain (ids outside
// the topology) gives an empty FabricImpact; AssessJobs reports it.
FabricImpact AssessFabric(const JobSimIndex& index, const model::Drain& drain);

// One single-switch drain of a candidates sweep, summarized.
struct DrainCandidate {
  model::NodeId sw;
  int jobs_affected = 0;
  int jobs_disconnected = 0;
  int gpus_affected = 0;
  int gpus_disconnected = 0;  // GPUs of jobs left disconnected
  double worst_path_fraction = 1;
  double worst_bandwidth_fraction = 1;
  std::optional<double> min_paths_after;
  int hosts_cut_off = 0;
  std::vector<model::JobId> affected_jobs;  // worst first (as RankJobs)
};

// Every switch of a tier (by name, e.g. "spine"), ascending ids.
std::vector<model::NodeId> SwitchesOfTier(const model::Topology& topology, std::string_view tier);

// Runs the job-level what-if for each single-switch drain of `switches` and
// returns them safest first: fewest GPUs in disconnected jobs, then highest
// worst bandwidth fraction, highest worst path fraction, fewest affected GPUs,
// fewest affected jobs, then switch name. Sequential; a caller with several
// threads may split `switches`, run each part with its own workspace through
// this function and merge with RankCandidates.
// Errors: kInvalidArgument for an id that is not a switch; kCancelled.
Result<std::vector<DrainCandidate>> SweepDrainCandidates(const JobSimIndex& index,
                                                         std::span<const model::NodeId> switches,
                                                         JobSimWorkspace& workspace, std::stop_token stop = {});
// Sorts safest first (the order above).
void RankCandidates(const model::Topology& topology, std::vector<DrainCandidate>& candidates);

// Job ids of `assessment`, affected jobs first, worst first: disconnected,
// then lowest bandwidth fraction, lowest path fraction, most GPUs, job id.
std::vector<model::JobId> RankJobs(const JobAssessment& assessment, const model::JobSet& jobs);

}  // namespace drainwise::sim
