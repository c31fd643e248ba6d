#include "sim/packet/packet_sim.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <unordered_map>

#include <fmt/format.h>

#include "sim/flow_workload.h"
#include "sim/job_sim.h"
#include "sim/packet/blast_radius.h"
#include "sim/packet/packet_run.h"

namespace drainwise::sim {

using packet_internal::RunFlow;
using packet_internal::RunInput;
using packet_internal::RunLink;
using packet_internal::RunRoute;

std::string_view PacketRoutingName(PacketRouting routing) {
  return routing == PacketRouting::kSpray ? "spray" : "hash";
}

std::optional<PacketRouting> ParsePacketRouting(std::string_view name) {
  if (name == "hash") return PacketRouting::kHash;
  if (name == "spray") return PacketRouting::kSpray;
  return std::nullopt;
}

Status ValidatePacketOptions(const PacketOptions& o) {
  auto bad = [](std::string m) -> Status { return InvalidArgument("packet options: " + m); };
  if (!(o.per_hop_delay_s >= 0) || o.per_hop_delay_s > 1) return bad("per_hop_delay_s must be in [0, 1]");
  if (!(o.per_message_overhead_s >= 0) || o.per_message_overhead_s > 1)
    return bad("per_message_overhead_s must be in [0, 1]");
  if (o.mtu_bytes < 576 || o.mtu_bytes > 65000) return bad("mtu_bytes must be in [576, 65000]");
  if (o.ecn_threshold_packets < 1 || o.ecn_threshold_packets >= o.buffer_packets)
    return bad("ecn_threshold_packets must be at least 1 and below buffer_packets");
  if (o.buffer_packets > 1000000) return bad("buffer_packets must be at most 1000000");
  if (o.spray_dupack_threshold < 3 || o.spray_dupack_threshold > 100000)
    return bad("spray_dupack_threshold must be in [3, 100000]");
  if (!(o.min_rto_s > 0) || o.min_rto_s > 10) return bad("min_rto_s must be in (0, 10]");
  if (o.max_ring_steps < 1 || o.max_ring_steps > 100000) return bad("max_ring_steps must be in [1, 100000]");
  if (!(o.max_simulated_s > 0) || o.max_simulated_s > 60) return bad("max_simulated_s must be in (0, 60]");
  if (o.max_hosts < 1 || o.max_flows < 1) return bad("max_hosts and max_flows must be at least 1");
  if (!(o.bystander_slowdown_pct >= 0)) return bad("bystander_slowdown_pct must be >= 0");
  return {};
}

namespace packet_internal {
RunSettings SettingsOf(const PacketOptions& o) {
  RunSettings s;
  s.routing = o.routing;
  s.seed = o.seed;
  s.per_hop_delay_s = o.per_hop_delay_s;
  s.per_message_overhead_s = o.per_message_overhead_s;
  s.mtu_bytes = o.mtu_bytes;
  s.ecn_threshold_packets = o.ecn_threshold_packets;
  s.buffer_packets = o.buffer_packets;
  s.spray_dupack_threshold = o.spray_dupack_threshold;
  s.min_rto_s = o.min_rto_s;
  s.max_simulated_s = o.max_simulated_s;
  return s;
}
}  // namespace packet_internal

namespace {

bool IsRing(model::CollectiveKind k) {
  return k == model::CollectiveKind::kAllReduce || k == model::CollectiveKind::kAllGather ||
         k == model::CollectiveKind::kReduceScatter;
}

// One run's plain-data scenario, and which job every run flow belongs to.
struct BuiltRun {
  RunInput in;
  std::vector<uint8_t> job_connected;  // per blast-radius job
};

BuiltRun BuildRun(const model::Snapshot& snapshot, const Workload& workload, const BlastRadius& br,
                  const model::DrainMask& mask, const PacketOptions& o) {
  const model::Topology& topo = *snapshot.topology;
  BuiltRun out;
  RunInput& in = out.in;
  in.settings = packet_internal::SettingsOf(o);
  std::vector<int32_t> node_of(topo.node_count(), -1);
  for (model::NodeId h : br.hosts) {
    node_of[h.value] = static_cast<int32_t>(in.is_host.size());
    in.is_host.push_back(1);
  }
  for (model::NodeId s : br.switches) {
    if (mask.node_down(s)) continue;
    node_of[s.value] = static_cast<int32_t>(in.is_host.size());
    in.is_host.push_back(0);
  }
  std::vector<int32_t> run_link(topo.link_count(), -1);
  for (model::LinkId l : br.links) {
    if (mask.link_down(l)) continue;
    const model::Link& link = topo.link(l);
    if (node_of[link.a.value] < 0 || node_of[link.b.value] < 0) continue;
    run_link[l.value] = static_cast<int32_t>(in.links.size());
    in.links.push_back({l.value, static_cast<uint32_t>(node_of[link.a.value]),
                        static_cast<uint32_t>(node_of[link.b.value]), link.capacity_bps});
  }
  const size_t n = in.is_host.size();
  std::vector<std::vector<uint32_t>> adj(n);  // run links per run node
  for (uint32_t l = 0; l < in.links.size(); ++l) {
    adj[in.links[l].a].push_back(l);
    adj[in.links[l].b].push_back(l);
  }
  auto other = [&](uint32_t l, uint32_t node) { return in.links[l].a == node ? in.links[l].b : in.links[l].a; };
  // Per destination NIC (run link of a host): BFS distances over switches,
  // and the equal-cost next hops of every switch that reaches it.
  std::unordered_map<uint32_t, std::vector<uint16_t>> dist_to;
  constexpr uint16_t kFar = std::numeric_limits<uint16_t>::max();
  for (uint32_t host = 0; host < n; ++host) {
    if (!in.is_host[host]) continue;
    for (uint32_t nic : adj[host]) {
      std::vector<uint16_t>& dist = dist_to[nic];
      dist.assign(n, kFar);
      dist[host] = 0;
      const uint32_t first = other(nic, host);
      dist[first] = 1;
      std::deque<uint32_t> queue{first};
      while (!queue.empty()) {
        const uint32_t u = queue.front();
        queue.pop_front();
        for (uint32_t l : adj[u]) {
          const uint32_t v = other(l, u);
          if (in.is_host[v] || dist[v] != kFar) continue;
          dist[v] = static_cast<uint16_t>(dist[u] + 1);
          queue.push_back(v);
        }
      }
      for (uint32_t u = 0; u < n; ++u) {
        if (in.is_host[u] || dist[u] == kFar) continue;
        RunRoute r;
        r.node = u;
        r.dst_link = nic;
        if (u == first) {
          r.next_links.push_back(nic);
        } else {
          for (uint32_t l : adj[u]) {
            const uint32_t v = other(l, u);
            if (!in.is_host[v] && dist[v] + 1 == dist[u]) r.next_links.push_back(l);
          }
        }
        in.routes.push_back(std::move(r));
      }
    }
  }
  // A host's NIC as a run link: the demand's NIC, else (all NICs, or that
  // one down) one of its live NICs, spread by `spread`.
  auto nic_link = [&](uint32_t host, int16_t nic, uint32_t spread) -> int32_t {
    const auto nics = topo.neighbors(model::NodeId(host));
    if (nic != kAllNics && static_cast<size_t>(nic) < nics.size() && run_link[nics[nic].link.value] >= 0) {
      return run_link[nics[nic].link.value];
    }
    std::vector<int32_t> live;
    for (const model::Adjacency& a : nics) {
      if (run_link[a.link.value] >= 0) live.push_back(run_link[a.link.value]);
    }
    if (live.empty()) return -1;
    return live[spread % live.size()];
  };
  {
    double nic_bps = 0;
    for (const RunLink& l : in.links) {
      if (in.is_host[l.a] || in.is_host[l.b]) nic_bps = std::max(nic_bps, l.capacity_bps);
    }
    const int links = 2 * std::max(1, topo.max_level());  // host -> leaf -> ... -> top -> ... -> host
    const double mss = o.mtu_bytes - 52;
    const double rtt_s = 2 * links * (o.per_hop_delay_s + (nic_bps > 0 ? o.mtu_bytes * 8 / nic_bps : 0));
    in.initial_cwnd_segments = static_cast<uint32_t>(std::clamp(std::ceil(nic_bps * rtt_s / 8 / mss), 10.0, 4096.0));
  }
  out.job_connected.assign(br.jobs.size(), 1);
  for (uint32_t slot = 0; slot < br.jobs.size(); ++slot) {
    const uint32_t j = br.jobs[slot].value;
    const model::Job& job = snapshot.jobs->job(model::JobId(j));
    const size_t job_first = in.flows.size();
    std::vector<uint32_t> demand_of;  // per run flow of this job: its demand
    for (uint32_t d = workload.job_first_demand[j]; d < workload.job_first_demand[j + 1]; ++d) {
      const FlowDemand& fd = workload.demands[d];
      if (fd.src == fd.dst) continue;
      const int32_t sl = nic_link(fd.src, fd.src_nic, d);
      const int32_t dl = nic_link(fd.dst, fd.dst_nic, d);
      if (sl < 0 || dl < 0) {
        out.job_connected[slot] = 0;
        break;
      }
      const uint32_t src = static_cast<uint32_t>(node_of[fd.src]);
      const uint32_t dst = static_cast<uint32_t>(node_of[fd.dst]);
      const std::vector<uint16_t>& dist = dist_to[static_cast<uint32_t>(dl)];
      if (dist[other(static_cast<uint32_t>(sl), src)] == kFar) {
        out.job_connected[slot] = 0;
        break;
      }
      RunFlow f;
      f.job_slot = slot;
      f.src = src;
      f.dst = dst;
      f.src_link = static_cast<uint32_t>(sl);
      f.dst_link = static_cast<uint32_t>(dl);
      f.connections = fd.multiplicity;
      f.bytes = static_cast<uint64_t>(std::llround(fd.bytes));
      const model::Collective& coll = job.iteration.collectives[fd.collective];
      if (IsRing(coll.kind)) {
        double steps = 1;
        for (const CollectiveSteps& cs : workload.collectives) {
          if (cs.job == j && cs.collective == fd.collective) steps = cs.steps;
        }
        f.steps = static_cast<uint32_t>(std::clamp<double>(std::round(steps), 1, o.max_ring_steps));
      }
      if (f.bytes == 0) continue;
      demand_of.push_back(d);
      in.flows.push_back(std::move(f));
    }
    if (!out.job_connected[slot]) {
      in.flows.resize(job_first);  // a disconnected job takes no capacity
      continue;
    }
    // A ring edge a -> b waits for the edge into a of the same collective.
    for (size_t f = job_first; f < in.flows.size(); ++f) {
      if (in.flows[f].steps <= 1) continue;
      const FlowDemand& me = workload.demands[demand_of[f - job_first]];
      for (size_t g = job_first; g < in.flows.size(); ++g) {
        const FlowDemand& them = workload.demands[demand_of[g - job_first]];
        if (them.collective == me.collective && them.dst == me.src && them.dst_nic == me.src_nic) {
          in.flows[f].preds.push_back(static_cast<uint32_t>(g));
        }
      }
    }
  }
  return out;
}

}  // namespace

struct PacketPlan {
  model::Drain drain;
  Workload workload;
  FlowReport flows;
  BlastRadius br;
  size_t max_hosts = 0, max_flows = 0;
};

Error BlastRadiusTooLarge(const PacketBlastRadiusSize& z) {
  return Error{ErrorCode::kTooLarge,
               fmt::format("packet level: the blast radius of this drain has {} jobs, {} hosts and {} flows; the "
                           "cap is {} hosts and {} flows (packet options max_hosts, max_flows)",
                           z.jobs, z.hosts, z.flows, z.max_hosts, z.max_flows)};
}

PacketBlastRadiusSize Size(const PacketPlan& plan) {
  return {plan.br.jobs.size(), plan.br.hosts.size(), plan.br.flows, plan.max_hosts, plan.max_flows};
}

Result<std::shared_ptr<const PacketPlan>> PlanPackets(const model::Snapshot& snapshot, const model::Drain& drain,
                                                      const PacketOptions& options, std::stop_token stop) {
  if (!PacketLevelAvailable()) return MakeError(ErrorCode::kUnavailable, std::string(PacketLevelUnavailableMessage()));
  if (!snapshot.topology || !snapshot.jobs) return InvalidArgument("packet simulation: empty snapshot");
  if (auto ok = ValidatePacketOptions(options); !ok) return tl::unexpected(ok.error());
  model::SnapshotPtr view(model::SnapshotPtr{}, &snapshot);
  const JobSimIndex index(view);
  auto assessment = AssessJobs(index, drain, stop);
  if (!assessment) return tl::unexpected(assessment.error());
  auto flows = SimulateFlows(snapshot, drain, options.flow, stop);
  if (!flows) return tl::unexpected(flows.error());
  auto plan = std::make_shared<PacketPlan>();
  plan->drain = drain;
  plan->workload = BuildWorkload(*snapshot.topology, *snapshot.jobs);
  auto br = SelectBlastRadius(snapshot, drain, plan->workload, *assessment, *flows, options);
  if (!br) return tl::unexpected(br.error());
  plan->flows = std::move(*flows);
  plan->br = std::move(*br);
  plan->max_hosts = options.max_hosts;
  plan->max_flows = options.max_flows;
  return std::shared_ptr<const PacketPlan>(std::move(plan));
}

Result<PacketReport> SimulatePackets(const model::Snapshot& snapshot, const model::Drain& drain,
                                     const PacketOptions& options, std::stop_token stop) {
  auto plan = PlanPackets(snapshot, drain, options, stop);
  if (!plan) return tl::unexpected(plan.error());
  return SimulatePlannedPackets(snapshot, **plan, options, stop);
}

Result<PacketReport> SimulatePlannedPackets(const model::Snapshot& snapshot, const PacketPlan& plan,
                                            const PacketOptions& options, std::stop_token stop) {
  if (!PacketLevelAvailable()) return MakeError(ErrorCode::kUnavailable, std::string(PacketLevelUnavailableMessage()));
  if (auto ok = ValidatePacketOptions(options); !ok) return tl::unexpected(ok.error());
  if (plan.br.over_cap) return tl::unexpected(BlastRadiusTooLarge(Size(plan)));
  auto progress = [&](double f) {
    if (options.progress) options.progress(std::clamp(f, 0.0, 1.0));
  };
  const Workload& workload = plan.workload;
  const FlowReport* flows = &plan.flows;
  const BlastRadius* br = &plan.br;
  const model::Drain& drain = plan.drain;
  progress(0.05);

  PacketReport report;
  report.options = options;
  report.options.progress = nullptr;
  report.hosts = br->hosts.size();
  report.switches = br->switches.size();
  report.links = br->links.size();
  report.flows = br->flows;
  report.jobs.resize(br->jobs.size());
  for (size_t s = 0; s < br->jobs.size(); ++s) {
    PacketJobResult& r = report.jobs[s];
    r.job = br->jobs[s];
    r.flows = workload.job_flows[r.job.value];
    r.bystander = br->bystander[s] != 0;
    const FlowJobResult& fj = flows->jobs[r.job.value];
    r.flow_baseline_comm_s = fj.baseline.comm_s;
    r.flow_drained_comm_s = fj.drained.comm_s;
    r.flow_slowdown_pct = fj.slowdown_pct;
  }
  if (br->jobs.empty()) {  // the drain changes no job's traffic: nothing to replay
    progress(1);
    return report;
  }
  const model::DrainMask none;
  const model::DrainMask drained(*snapshot.topology, drain);
  BuiltRun runs[2] = {BuildRun(snapshot, workload, *br, none, options),
                      BuildRun(snapshot, workload, *br, drained, options)};
  auto outs = packet_internal::RunScenarios({&runs[0].in, &runs[1].in}, options, stop,
                                            [&](double f) { progress(std::min(0.95, 0.05 + 0.9 * f)); });
  if (!outs) return tl::unexpected(outs.error());
  for (int side = 0; side < 2; ++side) {
    const BuiltRun& run = runs[side];
    packet_internal::RunOutput& out = (*outs)[side];
    std::vector<double> comm(br->jobs.size(), 0);
    std::vector<uint8_t> done(br->jobs.size(), 1);
    for (size_t f = 0; f < run.in.flows.size(); ++f) {
      const uint32_t slot = run.in.flows[f].job_slot;
      if (out.flow_done_s[f] < 0) {
        done[slot] = 0;
      } else {
        comm[slot] = std::max(comm[slot], out.flow_done_s[f]);
      }
    }
    for (size_t s = 0; s < br->jobs.size(); ++s) {
      PacketJobSide& js = side == 0 ? report.jobs[s].baseline : report.jobs[s].drained;
      const model::Job& job = snapshot.jobs->job(br->jobs[s]);
      js.connected = run.job_connected[s] != 0;
      js.completed = js.connected && done[s];
      if (js.completed) {
        js.comm_s = comm[s];
        js.iteration_s = job.iteration.compute_s + (1 - job.iteration.overlap) * comm[s];
      }
    }
    (side == 0 ? report.baseline : report.drained) = std::move(out.stats);
  }
  progress(0.95);
  for (PacketJobResult& r : report.jobs) {
    if (r.baseline.completed && r.drained.completed && r.baseline.iteration_s > 0) {
      r.slowdown_pct = (r.drained.iteration_s / r.baseline.iteration_s - 1) * 100;
    }
  }
  progress(1);
  return report;
}

}  // namespace drainwise::sim
