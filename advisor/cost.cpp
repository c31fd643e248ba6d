#include "advisor/cost.h"

#include <algorithm>
#include <cmath>

#include "advisor/advisor.h"

namespace drainwise::advisor {

double JobGpus(const model::Job& job, const model::Topology& topology) {
  return static_cast<double>(job.hosts.size()) * model::GpusPerHost(job, topology);
}

double CheckpointIntervalSeconds(const model::Job& job, const AdvisorOptions& options) {
  if (job.checkpoint && job.checkpoint->interval_s > 0) return job.checkpoint->interval_s;
  return options.default_checkpoint_interval_s;
}

double RestartCostSeconds(const model::Job& job, const AdvisorOptions& options) {
  return job.checkpoint ? job.checkpoint->restart_cost_s : options.default_restart_cost_s;
}

double LostWorkSeconds(const model::Job& job, int64_t t, const AdvisorOptions& options) {
  double interval = CheckpointIntervalSeconds(job, options);
  if (job.started_at && *job.started_at <= t && interval > 0) {
    return std::fmod(static_cast<double>(t - *job.started_at), interval);
  }
  return interval / 2;  // unknown phase: half an interval on average
}

std::optional<int64_t> NextCheckpoint(const model::Job& job, int64_t t) {
  if (!job.checkpoint || job.checkpoint->interval_s <= 0 || !job.started_at) return std::nullopt;
  const double interval = job.checkpoint->interval_s;
  if (t <= *job.started_at) return *job.started_at + static_cast<int64_t>(std::ceil(interval));
  double k = std::ceil(static_cast<double>(t - *job.started_at) / interval);
  return *job.started_at + static_cast<int64_t>(std::ceil(k * interval));
}

double RestartGpuHours(const model::Job& job, const model::Topology& topology, int64_t t,
                       const AdvisorOptions& options) {
  return (RestartCostSeconds(job, options) + LostWorkSeconds(job, t, options)) * JobGpus(job, topology) / 3600.0;
}

double SlowdownGpuHours(double gpus, double slowdown_pct, double duration_s) {
  if (slowdown_pct <= 0 || duration_s <= 0) return 0;
  return gpus * slowdown_pct / 100.0 * duration_s / 3600.0;
}

double DelayGpuHours(double delay_s, const AdvisorOptions& options) {
  return std::max(0.0, delay_s) / 3600.0 * options.delay_gpu_hours_per_hour;
}

}  // namespace drainwise::advisor
