// The part of the fabric a packet-level run needs for one drain.
//
// Jobs: those whose traffic the drain changes, that is the jobs the job
// level finds affected (a shortest path of theirs crosses a drained element)
// plus the bystanders whose flow-level slowdown reaches
// `bystander_slowdown_pct` (they share links with rerouted traffic); or
// exactly `options.jobs` when given. Fabric: the jobs' hosts and every link
// and switch on a shortest path between the NICs their flows use, on the
// fabric before the drain and after it (so both runs route exactly as on
// the whole fabric: a subgraph holding every shortest path keeps them).
// Traffic of jobs outside the selection is not replayed.
//
// Cap: at most options.max_hosts hosts and options.max_flows rank-level
// flows (TCP connections); above either, `over_cap` is set and the fabric
// (switches, links) is not computed: the caller refuses with
// BlastRadiusTooLarge. Pure.
#pragma once

#include <cstdint>
#include <vector>

#include "model/drain.h"
#include "model/error.h"
#include "model/ids.h"
#include "model/snapshot.h"
#include "sim/flow_sim.h"
#include "sim/flow_workload.h"
#include "sim/job_sim.h"
#include "sim/packet/packet_sim.h"

namespace drainwise::sim {

struct BlastRadius {
  std::vector<model::JobId> jobs;       // ascending
  std::vector<uint8_t> bystander;       // per entry of jobs: selected only by its flow-level slowdown
  std::vector<model::NodeId> hosts;     // ascending
  std::vector<model::NodeId> switches;  // ascending
  std::vector<model::LinkId> links;     // ascending
  uint64_t flows = 0;                   // rank-level flows of the jobs
  bool over_cap = false;                // hosts > max_hosts or flows > max_flows: no switches, no links
};

Result<BlastRadius> SelectBlastRadius(const model::Snapshot& snapshot, const model::Drain& drain,
                                      const Workload& workload, const JobAssessment& jobs, const FlowReport& flows,
                                      const PacketOptions& options);

}  // namespace drainwise::sim
