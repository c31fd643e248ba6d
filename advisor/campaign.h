// Campaigns: when each batch of a maintenance list should go, and what it
// costs in GPU-hours (docs/campaigns.md).
//
// A campaign takes maintenance items (each a drain with a duration and an
// optional earliest start and deadline), a window, constraints (at most
// `max_concurrent` items drained at once, blackouts in which nothing is
// drained) and an objective, and returns a timed schedule:
//   batches   items grouped by the policy's fabric (failure-domain) rules,
//             run one after another, each with a start and an end;
//   actions   around each batch: migrate job J at t (just after one of its
//             checkpoints when that is cheaper than migrating at once), or
//             wait for job K's expected end;
//   verdict   of each batch at its start on the fabric as it will be then:
//             jobs ended by then gone, earlier migrations applied (job
//             level, and flow level when asked);
//   cost      in the one cost model of advisor/cost.h: migrations, restarts
//             of jobs cut off and not moved, slowdown x duration, delay.
// The chosen schedule is compared with two simple strategies (everything as
// early as possible with migrations; each batch after its jobs end) and is
// never worse than either under the objective (if the search is, the better
// strategy is chosen and said so).
//
// Pure: no I/O, no logging; deterministic for a given input.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "advisor/advisor.h"
#include "advisor/cost.h"

namespace drainwise::advisor {

enum class CampaignObjective { kGpuHours, kFinish };
std::string_view CampaignObjectiveName(CampaignObjective objective);  // "gpu_hours" | "finish"

struct CampaignItem {
  model::Drain drain;  // non-empty
  double duration_s = 3600;
  std::optional<int64_t> earliest;  // unix seconds
  std::optional<int64_t> deadline;  // the item must be done by then
};

struct CampaignRequest {
  std::vector<CampaignItem> items;  // non-empty
  TimeWindow window;                // the whole campaign happens within it
  int max_concurrent = 1;           // items drained at once (>= 1)
  std::vector<TimeWindow> blackouts;
  CampaignObjective objective = CampaignObjective::kGpuHours;
  bool flow = false;  // also verify each batch with the flow-level pass
};

enum class CampaignActionKind { kMigrate, kWait };
std::string_view CampaignActionKindName(CampaignActionKind kind);  // "migrate" | "wait"

struct CampaignAction {
  CampaignActionKind kind = CampaignActionKind::kMigrate;
  model::JobId job;
  int64_t at = 0;                 // migrate: when; wait: the job's expected end
  bool after_checkpoint = false;  // migrate: right after one of the job's checkpoints
  std::vector<model::NodeId> from_hosts, to_hosts;
  double gpu_hours = 0;  // migrate: restart + work lost since the last checkpoint
};

struct CampaignBatch {
  std::vector<int> items;  // indices into CampaignRequest::items
  model::Drain drain;      // the items' drains together
  int64_t start = 0, end = 0;
  std::vector<CampaignAction> actions;  // migrations first, then waits, each by time
  Prediction predicted;                 // at `start` with the actions applied
  policies::Verdict verdict;
  std::vector<model::JobId> interrupted;  // cut off and not moved: they restart
  double migration_gpu_hours = 0, interruption_gpu_hours = 0, slowdown_gpu_hours = 0, delay_gpu_hours = 0;
  double gpu_hours() const {
    return migration_gpu_hours + interruption_gpu_hours + slowdown_gpu_hours + delay_gpu_hours;
  }
};

struct CampaignSchedule {
  std::string strategy;                // "search" | "now" | "after_jobs_end"
  std::vector<CampaignBatch> batches;  // by start
  std::vector<int> unscheduled;        // items no feasible time was found for
  bool all_allowed = true;             // every batch predicts allow and nothing is unscheduled
  int64_t finish = 0;                  // end of the last batch
  double migration_gpu_hours = 0, interruption_gpu_hours = 0, slowdown_gpu_hours = 0, delay_gpu_hours = 0;
  double gpu_hours() const {
    return migration_gpu_hours + interruption_gpu_hours + slowdown_gpu_hours + delay_gpu_hours;
  }
};

struct Campaign {
  CampaignSchedule chosen;
  std::vector<CampaignSchedule> strategies;  // "now", "after_jobs_end": the comparison
  std::vector<std::string> notes;
};

// Host names a batch's Slurm maintenance reservation keeps jobs off: the
// hosts attached to its drained switches and links, the hosts its
// migrations leave, and the hosts of the jobs it waits for. Sorted by name.
std::vector<std::string> ReservationHosts(const model::Snapshot& snapshot, const CampaignBatch& batch);

}  // namespace drainwise::advisor
