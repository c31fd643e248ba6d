// Ranking and the drain-candidates sweep of the job-level simulator.
#include "sim/job_sim.h"

#include <algorithm>
#include <tuple>

namespace drainwise::sim {

using model::JobId;
using model::Topology;

std::vector<model::JobId> RankJobs(const JobAssessment& a, const model::JobSet& jobs) {
  std::vector<JobId> ids;
  ids.reserve(a.jobs.size());
  for (const JobImpact& j : a.jobs) ids.push_back(j.job);
  auto key = [&](JobId id) {
    const JobImpact& j = a.jobs[id.value];
    return std::make_tuple(!j.affected, j.connected, j.bandwidth_fraction, j.path_fraction, -j.gpus);
  };
  std::stable_sort(ids.begin(), ids.end(), [&](JobId x, JobId y) {
    auto kx = key(x), ky = key(y);
    if (kx != ky) return kx < ky;
    return jobs.job(x).id < jobs.job(y).id;
  });
  return ids;
}

std::vector<NodeId> SwitchesOfTier(const Topology& topology, std::string_view tier) {
  std::vector<NodeId> out;
  for (NodeId s : topology.switches()) {
    if (topology.node(s).tier == tier) out.push_back(s);
  }
  return out;
}

void RankCandidates(const Topology& topology, std::vector<DrainCandidate>& c) {
  auto key = [](const DrainCandidate& d) {
    return std::make_tuple(d.gpus_disconnected, -d.worst_bandwidth_fraction, -d.worst_path_fraction, d.gpus_affected,
                           d.jobs_affected);
  };
  std::stable_sort(c.begin(), c.end(), [&](const DrainCandidate& x, const DrainCandidate& y) {
    auto kx = key(x), ky = key(y);
    if (kx != ky) return kx < ky;
    return topology.node(x.sw).name < topology.node(y.sw).name;
  });
}

Result<std::vector<DrainCandidate>> SweepDrainCandidates(const JobSimIndex& index, std::span<const NodeId> switches,
                                                         JobSimWorkspace& workspace, std::stop_token stop) {
  const Topology& topo = index.topology();
  std::vector<DrainCandidate> out;
  out.reserve(switches.size());
  model::Drain drain;
  for (NodeId s : switches) {
    if (stop.stop_requested()) return MakeError(ErrorCode::kCancelled, "drain-candidates sweep cancelled");
    drain.switches.assign(1, s);
    auto a = AssessJobs(index, drain, workspace, stop);
    if (!a) return tl::unexpected(a.error());
    DrainCandidate c;
    c.sw = s;
    c.jobs_affected = a->jobs_affected;
    c.jobs_disconnected = a->jobs_disconnected;
    c.gpus_affected = a->gpus_affected;
    c.hosts_cut_off = static_cast<int>(a->fabric.hosts_cut_off.size());
    for (const JobImpact& j : a->jobs) {
      if (!j.affected) continue;
      if (!j.connected) c.gpus_disconnected += j.gpus;
      c.worst_path_fraction = std::min(c.worst_path_fraction, j.path_fraction);
      c.worst_bandwidth_fraction = std::min(c.worst_bandwidth_fraction, j.bandwidth_fraction);
      if (j.min_paths_after) {
        c.min_paths_after = std::min(c.min_paths_after.value_or(*j.min_paths_after), *j.min_paths_after);
      }
    }
    for (JobId id : RankJobs(*a, index.jobs())) {
      if (!a->jobs[id.value].affected) break;
      c.affected_jobs.push_back(id);
    }
    out.push_back(std::move(c));
  }
  RankCandidates(topo, out);
  return out;
}

}  // namespace drainwise::sim
