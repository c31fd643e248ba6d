// The advisor: from a proposed drain to a decision a change ticket can act on.
//
// For a drain it runs the job-level pass (and the flow-level pass when asked)
// on the fabric with the drains already in progress applied, evaluates the
// operator's policy into allow / warn / deny with reasons, and searches for
// what would make the drain pass:
//   migrate      move a job that breaks a rule onto free hosts of the same
//                shape that the drain does not touch; re-simulated, checked
//                that nothing else gets worse, ranked by residual impact,
//                then migration cost (restart + lost work), then priority;
//   wait         when the jobs that break rules have an expected end, the
//                earliest time at which the drain passes;
//   alternative  when any one of several switches will do, ranked.
// `allow_after` lists the recommendations that, applied together, turn the
// verdict into allow (checked by simulation, not assumed).
//
// A drain plan orders a maintenance list into batches that each pass the
// policy, with the migrations each batch needs.
//
// Pure apart from its caches: no I/O, no logging; the exceptions to "no
// threads of its own" are the candidates sweep, split over two threads, and
// the flow simulations' independent parts (hash seeds, components), run on
// AdvisorOptions::flow_threads threads (or the caller's runner). The
// per-snapshot precomputation (job-level index, flow simulators) comes from
// the context's SimCache, which belongs to the snapshot (the daemon keeps it
// across calibration and telemetry changes); without one the Advisor keeps
// its own. Safe to call from several threads at once.
//
// Files: advisor.h (this contract), scenario.cpp (one drain simulated and
// judged), assess.cpp (recommendations), plan.cpp (batched plans),
// campaign.* (timed schedules), cost.* (the cost model),
// candidates.cpp (the sweep), migration.cpp (where a job can go and what
// moving it costs), prediction.* (outcome order), sim_cache.* (caches).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "advisor/cost.h"
#include "model/drain.h"
#include "model/error.h"
#include "model/snapshot.h"
#include "policies/evaluate.h"
#include "policies/policy.h"
#include "sim/flow_sim.h"
#include "sim/job_sim.h"

namespace drainwise::advisor {

struct AdvisorOptions {
  sim::FlowOptions flow;                // defaults of the flow-level pass
  double default_restart_cost_s = 600;  // when a job declares no checkpoint
  double default_checkpoint_interval_s = 3600;
  int max_migrations = 8;  // jobs considered for migration per assessment
  // A migration may not make another job worse by more than this many
  // slowdown percentage points (flow level), nor newly break a rule.
  double worse_tolerance_pct = 1.0;
  int max_alternatives = 64;  // any_of entries assessed
  // The cost model (advisor/cost.h): what one hour of delay of one
  // maintenance item is worth, in GPU-hours. The default values it like one
  // 8-GPU host-hour: waiting 10 minutes (1.3 GPU-hours) beats restarting a
  // 16-GPU job with a 5-minute restart and 15 minutes of lost work (5.3),
  // waiting 3 days (576) does not.
  double delay_gpu_hours_per_hour = 8;
  // How long a drain lasts when the request does not say (slowdown costs).
  double default_drain_duration_s = 3600;
  // Threads a flow-level simulation runs its independent parts on (the
  // seeds of the hash modes, the components of one flow problem): the
  // request's own and flow_threads - 1 helpers, kept by the runner and
  // shared by concurrent requests (the daemon keeps one set across the
  // advisors it rebuilds, src/engine/view.h). 1: the
  // request's thread only (the default: on a 2-core host a second thread
  // per simulation competed with the daemon's I/O thread, and /healthz p99
  // under a 120-switch plan went past 10 ms in the sanitizer build, e2e
  // limits_test.cpp). Results are the same for every count.
  int flow_threads = 1;
};

struct Request {
  model::Drain drain;                       // the proposed drain
  std::vector<model::Drain> any_of;         // or: any one of these will do
  bool flow = false;                        // run the flow-level pass too
  std::optional<sim::FlowRouting> routing;  // overrides options.flow.routing
  bool recommend = true;
  // The change window of the maintenance, when known: a wait that would
  // push the drain past its end is not offered for allow_after, and delay is
  // counted from its start (or now, whichever is later).
  std::optional<TimeWindow> window;
  double duration_s = 0;  // how long the drain lasts; 0 = options.default_drain_duration_s
};

// Everything one drain does, on one snapshot, with the active drains applied.
struct Scenario {
  model::Drain drain;                   // proposed only
  model::Drain combined;                // active + proposed
  sim::JobAssessment job;               // combined drain vs the undrained fabric
  std::optional<sim::FlowReport> flow;  // combined vs active-only baseline
  policies::Verdict verdict;
  // Jobs whose measures the proposed drain changes (policy input), JobId order.
  std::vector<policies::JobImpact> impacts;
  double max_slowdown_pct = 0;  // over affected jobs, flow level (0 without it)
  int jobs_affected = 0;
  int jobs_disconnected = 0;
};

enum class RecommendationKind { kMigrate, kWait, kAlternative };
std::string_view RecommendationKindName(RecommendationKind kind);

struct Prediction {
  policies::Decision decision = policies::Decision::kAllow;
  int reasons = 0;
  int jobs_affected = 0;
  int jobs_disconnected = 0;
  double max_slowdown_pct = 0;
};

struct Recommendation {
  RecommendationKind kind = RecommendationKind::kMigrate;
  // kMigrate
  model::JobId job;
  std::vector<model::NodeId> from_hosts;
  std::vector<model::NodeId> to_hosts;
  double cost_s = 0;  // restart + expected lost work since the last checkpoint
  // Every kind, in the cost model's unit (advisor/cost.h): a migration's
  // cost_s x GPUs, a wait's delay x the value of an hour of delay, an
  // alternative's interruptions (jobs it cuts off restart).
  double cost_gpu_hours = 0;
  bool fixes_job = false;  // the job itself no longer breaks any rule
  std::vector<std::string> rules_fixed;
  // kWait
  int64_t wait_until = 0;  // unix seconds
  std::vector<model::JobId> waiting_for;
  bool within_window = true;  // the drain still fits the request's window after the wait
  // kAlternative
  model::Drain alternative;
  int rank = 0;
  // Every kind: the predicted outcome with this recommendation applied alone.
  Prediction predicted;
  std::string summary;
};

struct Assessment {
  Scenario scenario;
  // Migrations and waits ranked together: predicted outcome first, then
  // cost_gpu_hours; alternatives after them, safest first.
  std::vector<Recommendation> recommendations;
  // Indices into recommendations: the cheapest set (waits priced by the
  // delay, migrations by their cost) that, applied together, makes the
  // drain allowed, checked by simulation.
  std::vector<int> allow_after;
  std::optional<Prediction> allow_after_predicted;
  double allow_after_cost_gpu_hours = 0;
  std::vector<std::string> notes;  // why no recommendation exists, etc.
  double job_ms = 0, flow_ms = 0, recommend_ms = 0;
};

struct PlanBatch {
  std::vector<model::NodeId> switches;
  std::vector<Recommendation> migrations;  // needed before this batch
  Prediction predicted;                    // with the migrations applied
  policies::Verdict verdict;
};

struct Plan {
  std::vector<PlanBatch> batches;
  bool all_allowed = true;  // every batch predicts allow
  std::vector<std::string> notes;
};

class SimCache;
struct CampaignRequest;
struct Campaign;

// Every member has a default, so that `Context{snapshot, {}, now}` may leave
// the later ones out (and -Wextra does not flag it).
struct Context {
  model::SnapshotPtr snapshot{};
  model::Drain active{};  // drains in progress
  int64_t now = 0;        // unix seconds
  // The snapshot's simulator caches (advisor/sim_cache.h). Null, or built
  // for another snapshot: the advisor uses caches of its own.
  std::shared_ptr<const SimCache> cache{};
  // Topology drift by device on `snapshot`'s topology (what its sources
  // disagree on), for the policies' no_drift rule; null when none is known.
  std::shared_ptr<const std::map<std::string, std::vector<std::string>>> drift{};
};

class Advisor {
 public:
  // `flow_runner`: where flow simulations run their independent parts;
  // empty: sim::ThreadsRunner(options.flow_threads).
  explicit Advisor(AdvisorOptions options, sim::TaskRunner flow_runner = {});
  ~Advisor();

  const AdvisorOptions& options() const { return options_; }
  // For callers that simulate with FlowSim()'s simulators themselves.
  const sim::TaskRunner& flow_runner() const { return flow_runner_; }

  // Errors: kInvalidArgument (bad drain), kCancelled.
  Result<Assessment> Assess(const Context& ctx, const Request& request, const policies::Policy& policy,
                            std::stop_token stop = {}) const;

  // Job-level sweep of single-switch drains, safest first (sim/job_sim.h),
  // on two threads.
  Result<std::vector<sim::DrainCandidate>> Candidates(const Context& ctx, std::span<const model::NodeId> switches,
                                                      std::stop_token stop = {}) const;

  // Orders `switches` (all must be drained) into batches that each pass the
  // policy, with the migrations they need. Batches are greedy: switches in
  // order of their single-drain impact, each added to the current batch when
  // the batch still predicts allow, else starting the next one.
  Result<Plan> PlanDrains(const Context& ctx, std::span<const model::NodeId> switches, bool flow,
                          const policies::Policy& policy, std::stop_token stop = {}) const;

  // A timed maintenance schedule (advisor/campaign.h). Errors:
  // kInvalidArgument (no items, an empty drain, a bad window), kCancelled.
  Result<Campaign> PlanCampaign(const Context& ctx, const CampaignRequest& request, const policies::Policy& policy,
                                std::stop_token stop = {}) const;

  // The per-snapshot precomputation of ctx.snapshot (built on first use):
  // from ctx.cache when it belongs to the snapshot, else from the advisor's own.
  std::shared_ptr<const sim::JobSimIndex> JobIndex(const Context& ctx) const;
  Result<std::shared_ptr<const sim::FlowSimulator>> FlowSim(const Context& ctx, const sim::FlowOptions& options,
                                                            std::stop_token stop) const;

 private:
  // Job-level results with the combined drain, and with the active drains
  // alone when there are some.
  struct JobLevel {
    sim::JobAssessment all;
    std::optional<sim::JobAssessment> before;
  };
  Result<JobLevel> JobLevelOf(const Context& ctx, const model::Drain& combined, std::stop_token stop) const;
  // `base` with the entries of the `moved` jobs recomputed on `moved_ctx`.
  Result<JobLevel> PatchMoved(const JobLevel& base, const Context& moved_ctx, const model::Drain& combined,
                              const std::vector<model::JobId>& moved, std::stop_token stop) const;
  Result<Scenario> Simulate(const Context& ctx, const model::Drain& drain, bool flow,
                            const sim::FlowOptions& flow_options, const policies::Policy& policy, std::stop_token stop,
                            const JobLevel* job_level = nullptr) const;

  std::shared_ptr<const SimCache> Caches(const Context& ctx) const;
  friend class CampaignPlanner;  // advisor/campaign.cpp: the simulation steps above

  AdvisorOptions options_;
  sim::TaskRunner flow_runner_;
  mutable std::mutex own_mu_;
  mutable std::shared_ptr<SimCache> own_cache_;  // for contexts without caches of their snapshot
};

// The expected cost of restarting `job` elsewhere now: its restart cost plus
// the work lost since its last checkpoint (from started_at and the checkpoint
// interval when known, else half an interval).
double MigrationCostSeconds(const model::Job& job, int64_t now, const AdvisorOptions& options);

// Free hosts for `job` that `drain` (with the snapshot's fabric) leaves fully
// connected: same GPU count and NIC count as the job's hosts, no job on them,
// no NIC link or attached leaf down, none in `exclude`; the same pod first,
// then the leaf groups with the most such hosts (few leaves). Empty when
// there are not enough.
std::vector<model::NodeId> FindMigrationTarget(const model::Snapshot& snapshot, const model::Job& job,
                                               const model::Drain& drain, const std::vector<model::NodeId>& exclude);

// The snapshot with `job`'s hosts replaced by `hosts` (a new, unversioned snapshot).
model::SnapshotPtr WithJobMoved(const model::Snapshot& snapshot, model::JobId job,
                                const std::vector<model::NodeId>& hosts);

}  // namespace drainwise::advisor
