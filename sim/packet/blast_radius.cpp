#include "sim/packet/blast_radius.h"

#include <algorithm>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "sim/routing.h"

namespace drainwise::sim {

namespace {

// A NIC of a host, or all of them (kAllNics), falling back to all of them
// when the NIC is down under `mask` (the simulators do the same).
Attachment AttachmentOf(const RoutingIndex& index, const model::DrainMask& mask, uint32_t host, int16_t nic) {
  const model::NodeId h(host);
  const auto nics = index.topology().neighbors(h);
  if (nic == kAllNics || static_cast<size_t>(nic) >= nics.size() || mask.link_down(nics[nic].link)) {
    return index.HostAttachment(h);
  }
  return index.NicAttachment(h, static_cast<size_t>(nic));
}

}  // namespace

Result<BlastRadius> SelectBlastRadius(const model::Snapshot& snapshot, const model::Drain& drain,
                                      const Workload& workload, const JobAssessment& jobs, const FlowReport& flows,
                                      const PacketOptions& options) {
  const model::Topology& topo = *snapshot.topology;
  BlastRadius br;
  std::vector<uint8_t> chosen(snapshot.jobs->size(), 0);
  if (!options.jobs.empty()) {
    for (model::JobId j : options.jobs) {
      if (j.value >= chosen.size()) return InvalidArgument(fmt::format("packet level: job {} is unknown", j.value));
      chosen[j.value] = 1;
    }
  } else {
    for (const JobImpact& ji : jobs.jobs) {
      if (ji.affected) chosen[ji.job.value] = 1;
    }
    for (const FlowJobResult& fj : flows.jobs) {
      if (!chosen[fj.job.value] && fj.slowdown_pct && std::abs(*fj.slowdown_pct) >= options.bystander_slowdown_pct) {
        chosen[fj.job.value] = 2;
      }
    }
  }
  std::vector<uint8_t> host_in(topo.node_count(), 0);
  for (uint32_t j = 0; j < chosen.size(); ++j) {
    if (!chosen[j]) continue;
    br.jobs.push_back(model::JobId(j));
    br.bystander.push_back(chosen[j] == 2);
    br.flows += workload.job_flows[j];
    for (model::NodeId h : snapshot.jobs->job(model::JobId(j)).hosts) host_in[h.value] = 1;
  }
  for (uint32_t n = 0; n < host_in.size(); ++n) {
    if (host_in[n]) br.hosts.push_back(model::NodeId(n));
  }
  if (br.hosts.size() > options.max_hosts || br.flows > options.max_flows) {
    br.over_cap = true;
    return br;
  }
  // Every link of a shortest path of a selected flow, before and after.
  const RoutingIndex index(topo);
  const model::DrainMask before;
  const model::DrainMask after(topo, drain);
  std::vector<uint8_t> link_in(topo.link_count(), 0);
  RouteWorkspace ws;
  for (const model::DrainMask* mask : {&before, &after}) {
    std::map<std::pair<uint32_t, int16_t>, PathTree> trees;
    std::map<std::tuple<uint32_t, int16_t, uint32_t, int16_t>, bool> routed;
    for (model::JobId j : br.jobs) {
      for (uint32_t d = workload.job_first_demand[j.value]; d < workload.job_first_demand[j.value + 1]; ++d) {
        const FlowDemand& fd = workload.demands[d];
        if (fd.src == fd.dst) continue;
        if (!routed.emplace(std::make_tuple(fd.src, fd.src_nic, fd.dst, fd.dst_nic), true).second) continue;
        const Attachment dst = AttachmentOf(index, *mask, fd.dst, fd.dst_nic);
        auto [it, fresh] = trees.try_emplace({fd.dst, fd.dst_nic});
        if (fresh) it->second.Build(index, *mask, dst);
        const PairRoute pr = ws.Route(index, *mask, it->second, AttachmentOf(index, *mask, fd.src, fd.src_nic));
        if (!pr.connected) continue;
        for (const DagLink& dl : ws.links()) link_in[dl.link] = 1;
      }
    }
  }
  std::vector<uint8_t> switch_in(topo.node_count(), 0);
  for (uint32_t l = 0; l < link_in.size(); ++l) {
    if (!link_in[l]) continue;
    br.links.push_back(model::LinkId(l));
    const model::Link& link = topo.link(model::LinkId(l));
    for (model::NodeId n : {link.a, link.b}) {
      if (topo.node(n).is_switch()) switch_in[n.value] = 1;
    }
  }
  for (uint32_t n = 0; n < switch_in.size(); ++n) {
    if (switch_in[n]) br.switches.push_back(model::NodeId(n));
  }
  return br;
}

}  // namespace drainwise::sim
