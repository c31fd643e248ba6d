#include "sim/flow_ring_phase.h"

#include <algorithm>

namespace drainwise::sim {

namespace {

bool IsRing(model::CollectiveKind k) {
  return k == model::CollectiveKind::kAllReduce || k == model::CollectiveKind::kAllGather ||
         k == model::CollectiveKind::kReduceScatter;
}

}  // namespace

JobTimes WithRingPhaseCredit(const Workload& workload, const model::Job& job, uint32_t job_index,
                             const JobTimes& baseline, const JobTimes& drained, double theta) {
  if (!(theta > 0) || !baseline.connected || !drained.connected) return drained;
  bool any = false;
  for (const CollectiveSteps& c : workload.collectives) {
    if (c.job != job_index) continue;
    if (!IsRing(job.iteration.collectives[c.collective].kind) || !(c.steps > 1)) return drained;
    any = true;
  }
  if (!any) return drained;
  const double excess_s = std::max(0.0, drained.bandwidth_s - baseline.bandwidth_s);
  JobTimes out = drained;
  out.bandwidth_s -= std::min(excess_s, theta * drained.latency_s);
  return out;
}

}  // namespace drainwise::sim
