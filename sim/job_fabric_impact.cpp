// The fabric-level part of a job-level assessment: capacity removed per tier
// and pod, leaves left with one uplink, hosts cut off or degraded, failure
// domains touched. No routing.
#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "sim/job_sim_internal.h"

namespace drainwise::sim {

using model::Topology;

FabricImpact FabricImpactOf(const JobSimIndex& index, const model::Drain& drain, const DrainMask& mask) {
  const Topology& topo = index.topology();
  const JobSimIndex::Impl& m = index.impl();
  FabricImpact f;
  f.switches_drained = static_cast<int>(drain.switches.size());
  f.links_down = static_cast<int>(mask.down_links().size());

  std::vector<double> removed(m.groups.size(), 0);
  std::vector<uint32_t> leaves, hosts;
  for (LinkId l : mask.down_links()) {
    removed[m.link_group[l.value]] += topo.link(l).capacity_bps;
    for (NodeId x : {topo.link(l).a, topo.link(l).b}) {
      if (topo.node(x).is_host())
        hosts.push_back(x.value);
      else if (topo.node(x).level == model::kLeafLevel && !mask.node_down(x))
        leaves.push_back(x.value);
    }
  }
  for (size_t g = 0; g < m.groups.size(); ++g) {
    if (removed[g] <= 0) continue;
    CapacityChange c = m.groups[g];
    c.removed_bps = removed[g];
    f.capacity.push_back(std::move(c));
  }

  std::sort(leaves.begin(), leaves.end());
  leaves.erase(std::unique(leaves.begin(), leaves.end()), leaves.end());
  for (uint32_t leaf : leaves) {
    int after = 0;
    for (const model::Adjacency& adj : topo.neighbors(NodeId(leaf))) {
      if (topo.node(adj.peer).level > model::kLeafLevel && !mask.link_down(adj.link) && !mask.node_down(adj.peer)) {
        ++after;
      }
    }
    const int before = m.uplinks_before[leaf];
    if (after <= 1 && after < before) f.single_uplink_leaves.push_back({NodeId(leaf), before, after});
  }

  std::sort(hosts.begin(), hosts.end());
  hosts.erase(std::unique(hosts.begin(), hosts.end()), hosts.end());
  for (uint32_t h : hosts) {
    size_t live = 0, total = 0;
    for (const model::Adjacency& adj : topo.neighbors(NodeId(h))) {
      ++total;
      if (!mask.link_down(adj.link) && !mask.node_down(adj.peer)) ++live;
    }
    (live == 0 ? f.hosts_cut_off : f.hosts_degraded).push_back(NodeId(h));
    (void)total;
  }

  std::map<std::pair<std::string, std::string>, std::vector<NodeId>> domains;
  for (NodeId s : drain.switches) {
    const model::Node& node = topo.node(s);
    for (const auto& [k, v] : node.domains) domains[{k, v}].push_back(s);
    if (!node.plane.empty()) domains[{"plane", node.plane}].push_back(s);
  }
  for (auto& [kv, sws] : domains) f.domains.push_back({kv.first, kv.second, std::move(sws)});
  return f;
}

Status ValidateDrain(const Topology& topo, const model::Drain& drain) {
  for (NodeId s : drain.switches) {
    if (s.value >= topo.node_count() || !topo.node(s).is_switch()) {
      return InvalidArgument("drain: node id " + std::to_string(s.value) + " is not a switch of this topology");
    }
  }
  for (LinkId l : drain.links) {
    if (l.value >= topo.link_count()) {
      return InvalidArgument("drain: link id " + std::to_string(l.value) + " is not a link of this topology");
    }
  }
  return {};
}

FabricImpact AssessFabric(const JobSimIndex& index, const model::Drain& drain) {
  if (!ValidateDrain(index.topology(), drain)) return {};
  return FabricImpactOf(index, drain, DrainMask(index.topology(), drain));
}

}  // namespace drainwise::sim
