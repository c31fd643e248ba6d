#include "model/snapshot.h"

namespace drainwise::model {

SnapshotPtr MakeSnapshot(std::shared_ptr<const Topology> topology, int64_t topology_version, const JobsSpec& jobs,
                         int64_t jobs_version) {
  auto s = std::make_shared<Snapshot>();
  auto resolved = ResolveJobsLenient(jobs, *topology);
  s->jobs = std::make_shared<const JobSet>(std::move(resolved.jobs));
  s->dropped_jobs = std::move(resolved.dropped);
  s->topology = std::move(topology);
  s->topology_version = topology_version;
  s->jobs_version = jobs_version;
  return s;
}

}  // namespace drainwise::model
