#include "advisor/advisor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <thread>
#include <unordered_set>

#include <fmt/format.h>

#include "advisor/cost.h"
#include "advisor/prediction.h"

namespace drainwise::advisor {

using model::Drain;
using model::JobId;
using model::NodeId;
using policies::Decision;
using namespace internal;

double MigrationCostSeconds(const model::Job& job, int64_t now, const AdvisorOptions& options) {
  return RestartCostSeconds(job, options) + LostWorkSeconds(job, now, options);
}

std::vector<NodeId> FindMigrationTarget(const model::Snapshot& snapshot, const model::Job& job, const Drain& drain,
                                        const std::vector<NodeId>& exclude) {
  const auto& topo = *snapshot.topology;
  if (job.hosts.empty()) return {};
  const int gpus = model::GpusPerHost(job, topo);
  const size_t nics = topo.neighbors(job.hosts.front()).size();
  std::map<std::string, int> pods;
  for (NodeId h : job.hosts) ++pods[topo.node(h).pod];
  std::string home_pod =
      std::max_element(pods.begin(), pods.end(), [](auto& a, auto& b) { return a.second < b.second; })->first;
  model::DrainMask mask(topo, drain);
  std::unordered_set<uint32_t> skip;
  for (NodeId h : exclude) skip.insert(h.value);
  for (NodeId h : job.hosts) skip.insert(h.value);

  // Group eligible hosts by the leaves they attach to.
  std::map<std::vector<uint32_t>, std::vector<NodeId>> groups;
  for (NodeId h : topo.hosts()) {
    if (skip.count(h.value) || !snapshot.jobs->HostIsFree(h)) continue;
    const auto& n = topo.node(h);
    if (n.gpus > 0 && n.gpus < gpus) continue;
    auto adj = topo.neighbors(h);
    if (adj.size() != nics) continue;
    std::vector<uint32_t> leaves;
    bool touched = false;
    for (const auto& a : adj) {
      if (mask.link_down(a.link) || mask.node_down(a.peer)) touched = true;
      leaves.push_back(a.peer.value);
    }
    if (touched) continue;
    std::sort(leaves.begin(), leaves.end());
    groups[leaves].push_back(h);
  }
  struct Group {
    bool same_pod;
    std::vector<NodeId> hosts;
  };
  std::vector<Group> ordered;
  for (auto& [leaves, hosts] : groups) ordered.push_back({topo.node(hosts.front()).pod == home_pod, hosts});
  // Same pod first, then the largest groups (fewest leaves for the job), then
  // by first host id for determinism.
  std::stable_sort(ordered.begin(), ordered.end(), [](const Group& a, const Group& b) {
    if (a.same_pod != b.same_pod) return a.same_pod;
    if (a.hosts.size() != b.hosts.size()) return a.hosts.size() > b.hosts.size();
    return a.hosts.front() < b.hosts.front();
  });
  // A group that fits the whole job on its own beats spreading over several.
  for (const auto& g : ordered) {
    if (g.hosts.size() >= job.hosts.size() && g.same_pod == ordered.front().same_pod) {
      return {g.hosts.begin(), g.hosts.begin() + static_cast<long>(job.hosts.size())};
    }
  }
  std::vector<NodeId> out;
  for (const auto& g : ordered) {
    for (NodeId h : g.hosts) {
      if (out.size() == job.hosts.size()) break;
      out.push_back(h);
    }
  }
  if (out.size() < job.hosts.size()) return {};
  return out;
}

model::SnapshotPtr WithJobMoved(const model::Snapshot& snapshot, JobId job, const std::vector<NodeId>& hosts) {
  const auto& topo = *snapshot.topology;
  auto spec = model::DescribeJobs(*snapshot.jobs, topo);
  auto& moved = spec.jobs[job.value];
  // Explicit flows follow their hosts: the i-th old host becomes the i-th new one.
  std::map<std::string, std::string> rename;
  for (size_t i = 0; i < moved.hosts.size() && i < hosts.size(); ++i) rename[moved.hosts[i]] = topo.node(hosts[i]).name;
  for (auto& h : moved.hosts) h = rename[h];
  for (auto& c : moved.iteration.collectives) {
    for (auto& f : c.flows) {
      f.src = rename[f.src];
      f.dst = rename[f.dst];
    }
  }
  return model::MakeSnapshot(snapshot.topology, snapshot.topology_version, spec, snapshot.jobs_version);
}

}  // namespace drainwise::advisor
