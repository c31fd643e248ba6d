// The flow-level workload model (docs/model.md, "Flow-level"): every job's
// collectives turned into host-to-host flows between NICs.
//
// Ranks are a job's GPUs, hosts x GpusPerHost(), rank r on host r / G, local
// GPU r % G. GPU i of a host uses NIC floor(i * nics / G) (NIC i on a
// rail-optimised host with one NIC per GPU). Traffic between GPUs of one
// host stays inside the host and makes no flow. Identical flows of one
// collective (same hosts, NICs and size) are merged into one FlowDemand with
// a multiplicity: k identical flows are one weight-k flow in max-min.
//
// The workload depends on the snapshot only, never on a drain or on routing:
// a NIC that is drained is handled by the simulator (fallback to the host's
// other NICs), so baseline and drained runs share demand indices.
//
// Pure; safe to call concurrently.
#pragma once

#include <cstdint>
#include <vector>

#include "model/jobs.h"
#include "model/topology.h"
#include "sim/task_runner.h"

namespace drainwise::sim {

// NIC index meaning "the host's NICs, sprayed by the routing model" (the
// explicit `flows` collectives, which name hosts, not GPUs).
inline constexpr int16_t kAllNics = -1;

// `multiplicity` identical flows of `bytes` each from host `src` (NIC
// `src_nic`) to host `dst` (NIC `dst_nic`). `bytes` already includes the
// collective's `count`.
struct FlowDemand {
  uint32_t job = 0;         // JobId value
  uint32_t collective = 0;  // index in job.iteration.collectives
  uint32_t src = 0;         // host NodeId value
  uint32_t dst = 0;         // host NodeId value
  int16_t src_nic = kAllNics;
  int16_t dst_nic = kAllNics;
  uint32_t multiplicity = 1;
  double bytes = 0;
};

// The latency bookkeeping of one collective (issue 9, alpha-beta): it pays
// `steps` times a per-step latency. Its demands are
// [first_demand, end_demand) of Workload::demands.
struct CollectiveSteps {
  uint32_t job = 0;
  uint32_t collective = 0;
  double steps = 0;  // already multiplied by count
  uint32_t first_demand = 0;
  uint32_t end_demand = 0;
};

struct Workload {
  std::vector<FlowDemand> demands;           // grouped by job, then collective
  std::vector<CollectiveSteps> collectives;  // collectives with at least one demand
  std::vector<uint32_t> job_first_demand;    // per job, size jobs+1 (CSR into demands)
  std::vector<uint64_t> job_flows;           // inter-host rank-level flows per job
  uint64_t rank_flows = 0;                   // all inter-host rank-level flows
};

// NIC used by local GPU `gpu` of a host with `nics` NICs, when the job uses
// `gpus` GPUs per host: floor(gpu * nics / gpus). REQUIRES nics >= 1, gpus >= 1.
inline int NicOfGpu(int gpu, int nics, int gpus) { return static_cast<int>((static_cast<int64_t>(gpu) * nics) / gpus); }

// Through `runner`, two runs of jobs at once (of about as many hosts each),
// joined in job order: the same workload.
Workload BuildWorkload(const model::Topology& topology, const model::JobSet& jobs, const TaskRunner& runner = {});

}  // namespace drainwise::sim
