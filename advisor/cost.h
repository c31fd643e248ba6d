// The one cost model of assessments and campaigns, in GPU-hours.
//
//   migration     GPUs x (restart cost + work lost since the last checkpoint)
//   interruption  the same, for a job the drain cuts off and nobody moves
//                 (its restart risk: it restarts from its last checkpoint)
//   slowdown      GPUs x slowdown fraction x how long the drain lasts
//   delay         hours the maintenance waits x the value of an hour of
//                 delay (AdvisorOptions::delay_gpu_hours_per_hour)
//
// Times are unix seconds, durations seconds. Pure functions.
#pragma once

#include <cstdint>
#include <optional>

#include "model/jobs.h"
#include "model/topology.h"

namespace drainwise::advisor {

struct AdvisorOptions;

// A change window: the maintenance may happen within [start_unix_s, end_unix_s).
struct TimeWindow {
  int64_t start_unix_s = 0;
  int64_t end_unix_s = 0;
};

// GPUs (ranks) the job runs on.
double JobGpus(const model::Job& job, const model::Topology& topology);

// Checkpoint interval and restart cost of `job`, the options' defaults where
// it declares none.
double CheckpointIntervalSeconds(const model::Job& job, const AdvisorOptions& options);
double RestartCostSeconds(const model::Job& job, const AdvisorOptions& options);

// Work lost when the job stops at `t`: the time since its last checkpoint
// (from started_at and the interval), half an interval when its phase is unknown.
double LostWorkSeconds(const model::Job& job, int64_t t, const AdvisorOptions& options);

// The first checkpoint moment at or after `t` (started_at + k x interval);
// nullopt when the job declares no checkpoint interval or start time.
std::optional<int64_t> NextCheckpoint(const model::Job& job, int64_t t);

// Restart cost + lost work at `t`, times the job's GPUs, in GPU-hours: what a
// migration at `t` costs, and what a job cut off at `t` loses.
double RestartGpuHours(const model::Job& job, const model::Topology& topology, int64_t t,
                       const AdvisorOptions& options);

// GPUs x slowdown_pct / 100 x duration, in GPU-hours (0 for slowdown <= 0).
double SlowdownGpuHours(double gpus, double slowdown_pct, double duration_s);

// `delay_s` of one maintenance item, in GPU-hours (0 for delay <= 0).
double DelayGpuHours(double delay_s, const AdvisorOptions& options);

}  // namespace drainwise::advisor
