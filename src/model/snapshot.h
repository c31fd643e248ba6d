// An immutable, versioned picture of the fabric and the jobs on it.
//
// Published atomically as std::shared_ptr<const Snapshot>: readers keep the
// version they started with while a connector or a PUT publishes the next.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/jobs.h"
#include "model/topology.h"

namespace drainwise::model {

struct Snapshot {
  std::shared_ptr<const Topology> topology;
  std::shared_ptr<const JobSet> jobs;
  int64_t topology_version = 0;
  int64_t jobs_version = 0;
  // Jobs of the jobs document that did not resolve against this topology.
  std::vector<std::string> dropped_jobs;
};

using SnapshotPtr = std::shared_ptr<const Snapshot>;

// Resolves `jobs` against `topology` leniently (jobs that no longer fit are
// listed in dropped_jobs) and packages both.
SnapshotPtr MakeSnapshot(std::shared_ptr<const Topology> topology, int64_t topology_version, const JobsSpec& jobs,
                         int64_t jobs_version);

}  // namespace drainwise::model
