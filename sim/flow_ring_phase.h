// Ring phase drift: a flow-level term for drained ring collectives whose
// steps are latency-bound (docs/model.md, "Ring phase drift").
//
// The fluid model runs every edge of a ring at once, as if all edges were
// in phase: a drained link shared by n edges slows every step by the full
// congestion factor. A ring step is a chunk sent (bandwidth) and then a
// wait (latency: the round trip and the per-message overhead) before the
// next chunk may leave; edges drift out of phase (a step waits for the edge
// before it, not for a global barrier), so while some edges wait, others
// use the link. At the two extremes, with B = the in-phase bandwidth time
// (drained), B0 = the same job's bandwidth time on the baseline and L = its
// step latency:
//   all in phase (the fluid model)      comm = B + L
//   perfectly interleaved (mean field)  comm = max(B0 + L, B)
// The term interpolates: comm = B + L - min(max(0, B - B0), theta x L),
// that is, up to a share theta of the step latency hides the congestion
// the drain adds. theta = FlowOptions::ring_phase_overlap (0 = off).
// Only for jobs whose every collective is a ring (all-reduce, all-gather,
// reduce-scatter) of more than one step; only the drained side changes (the
// baseline is its own reference: B = B0). Pure.
#pragma once

#include "model/jobs.h"
#include "sim/flow_sim_state.h"

namespace drainwise::sim {

// The drained side's times with the ring phase credit taken off
// bandwidth_s; `drained` unchanged when the term is off, the job is not
// all-ring or either side is cut off.
JobTimes WithRingPhaseCredit(const Workload& workload, const model::Job& job, uint32_t job_index,
                             const JobTimes& baseline, const JobTimes& drained, double ring_phase_overlap);

}  // namespace drainwise::sim
