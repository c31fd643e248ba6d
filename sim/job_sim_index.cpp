// The per-snapshot index of the job-level simulator: attachment classes'
// trees and next hops, class pairs routed once, per-job switch sets and the
// fabric's capacity groups.
#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "sim/job_sim_internal.h"

namespace drainwise::sim {

using model::Topology;

namespace {

std::string TierName(const Topology& t, NodeId n) {
  const model::Node& node = t.node(n);
  return node.is_host() ? std::string("host") : node.tier;
}

}  // namespace

// The host of class `c` to route from/to: the first (or second) host of the
// class that the drain does not touch.
NodeId CleanHost(const RoutingIndex& routing, uint32_t c, const std::vector<uint8_t>& dirty, int skip) {
  for (NodeId h : routing.class_hosts(c)) {
    if (!dirty.empty() && dirty[h.value]) continue;
    if (skip-- == 0) return h;
  }
  return NodeId();
}

JobSimIndex::JobSimIndex(model::SnapshotPtr snapshot)
    : snapshot_(std::move(snapshot)), routing_(*snapshot_->topology), impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  const Topology& topo = *snapshot_->topology;
  const model::JobSet& jobs = *snapshot_->jobs;
  const size_t nclass = routing_.class_count();
  const DrainMask none;

  // Members per job and the classes they use.
  std::vector<uint8_t> used(nclass, 0);
  m.member_offsets.assign(1, 0);
  std::map<uint32_t, uint32_t> counts;
  for (const model::Job& job : jobs.jobs()) {
    counts.clear();
    for (NodeId h : job.hosts) ++counts[routing_.class_of(h)];
    for (auto [c, n] : counts) {
      m.members.push_back({c, n});
      used[c] = 1;
    }
    m.member_offsets.push_back(static_cast<uint32_t>(m.members.size()));
    m.job_gpus.push_back(static_cast<int>(job.hosts.size()) * model::GpusPerHost(job, topo));
  }

  m.class_tree.resize(nclass);
  for (uint32_t c = 0; c < nclass; ++c) {
    if (!used[c]) continue;
    m.class_tree[c] = std::make_unique<PathTree>();
    m.class_tree[c]->Build(routing_, none, routing_.HostAttachment(routing_.class_representative(c)));
  }

  // Bundles.
  {
    const size_t n = topo.node_count();
    m.bundle_offsets.assign(n + 1, 0);
    m.bundle_of.assign(2 * topo.link_count(), 0);
    std::vector<std::pair<uint32_t, uint32_t>> by_peer;  // (peer, link)
    for (size_t u = 0; u < n; ++u) {
      by_peer.clear();
      for (const model::Adjacency& adj : topo.neighbors(NodeId(u)))
        by_peer.emplace_back(adj.peer.value, adj.link.value);
      std::sort(by_peer.begin(), by_peer.end());
      for (size_t i = 0; i < by_peer.size();) {
        Impl::Bundle b{by_peer[i].first, static_cast<uint32_t>(m.bundle_links.size()), 0,
                       std::numeric_limits<double>::infinity()};
        const uint32_t id = static_cast<uint32_t>(m.bundles.size());
        for (; i < by_peer.size() && by_peer[i].first == b.peer; ++i) {
          const uint32_t l = by_peer[i].second;
          m.bundle_links.push_back(l);
          ++b.count;
          b.min_capacity_bps = std::min(b.min_capacity_bps, topo.links()[l].capacity_bps);
          m.bundle_of[2 * l + (topo.links()[l].a.value == u ? 0 : 1)] = id;
        }
        m.bundles.push_back(b);
      }
      m.bundle_offsets[u + 1] = static_cast<uint32_t>(m.bundles.size());
    }
  }
  m.class_next.resize(nclass);
  for (uint32_t c = 0; c < nclass; ++c) {
    if (!used[c]) continue;
    const uint16_t* dist = m.class_tree[c]->distances().data();
    const uint32_t rep = routing_.class_representative(c).value;
    Impl::NextHops& nh = m.class_next[c];
    nh.offsets.assign(topo.node_count() + 1, 0);
    nh.total.assign(topo.node_count(), 0);
    nh.min_cap.assign(topo.node_count(), std::numeric_limits<double>::infinity());
    nh.uniform.assign(topo.node_count(), 1);
    for (size_t u = 0; u < topo.node_count(); ++u) {
      const uint16_t du = dist[u];
      if (!routing_.is_host(NodeId(u)) && du != kUnreachable && du >= 1) {
        for (uint32_t b = m.bundle_offsets[u]; b < m.bundle_offsets[u + 1]; ++b) {
          const Impl::Bundle& bundle = m.bundles[b];
          const uint32_t w = bundle.peer;
          const bool next = du == 1 ? w == rep : (!routing_.is_host(NodeId(w)) && dist[w] + 1 == du);
          if (!next) continue;
          nh.entries.push_back({w, bundle.count});
          nh.total[u] += bundle.count;
          if (nh.total[u] > bundle.count && bundle.min_capacity_bps != nh.min_cap[u]) nh.uniform[u] = 0;
          nh.min_cap[u] = std::min(nh.min_cap[u], bundle.min_capacity_bps);
          if (routing_.topology().link(LinkId(m.bundle_links[bundle.first])).capacity_bps != bundle.min_capacity_bps) {
            nh.uniform[u] = 0;
          }
        }
      }
      nh.offsets[u + 1] = static_cast<uint32_t>(nh.entries.size());
    }
  }

  // Class pairs, routed once.
  std::unordered_map<uint64_t, uint32_t> pair_ids;
  RouteWorkspace ws;
  const std::vector<uint8_t> no_dirty;
  auto pair_id = [&](uint32_t a, uint32_t b) {
    uint64_t key = (uint64_t{a} << 32) | b;
    auto [it, inserted] = pair_ids.emplace(key, static_cast<uint32_t>(m.pairs.size()));
    if (inserted) {
      Impl::PairBefore p;
      p.src_class = a;
      p.dst_class = b;
      NodeId src = CleanHost(routing_, a, no_dirty, a == b ? 1 : 0);
      PairRoute r = ws.Route(routing_, none, *m.class_tree[b], routing_.HostAttachment(src));
      if (r.connected) {
        p.hops = r.hops;
        p.paths = r.paths;
        p.spray_bps = SprayThroughputBps(routing_, ws.links());
      }
      m.pairs.push_back(p);
    }
    return it->second;
  };
  m.pair_offsets.assign(1, 0);
  for (size_t j = 0; j < jobs.size(); ++j) {
    const uint32_t b = m.member_offsets[j], e = m.member_offsets[j + 1];
    for (uint32_t x = b; x < e; ++x) {
      for (uint32_t y = b; y < e; ++y) {
        const auto& mx = m.members[x];
        const auto& my = m.members[y];
        bool usable = x != y || mx.count >= 2;
        m.job_pairs.push_back(usable ? pair_id(mx.cls, my.cls) : kNoPair);
      }
    }
    m.pair_offsets.push_back(static_cast<uint32_t>(m.job_pairs.size()));
  }

  // Switches each job's traffic crosses: s is on a shortest path of (A, B)
  // iff dist_A(s) + dist_B(s) == hops(A, B).
  m.words_per_job = (topo.node_count() + 63) / 64;
  m.job_switch_bits.assign(m.words_per_job * jobs.size(), 0);
  for (size_t j = 0; j < jobs.size(); ++j) {
    uint64_t* bits = &m.job_switch_bits[j * m.words_per_job];
    for (uint32_t k = m.pair_offsets[j]; k < m.pair_offsets[j + 1]; ++k) {
      if (m.job_pairs[k] == kNoPair) continue;
      const auto& p = m.pairs[m.job_pairs[k]];
      if (p.hops == kUnreachable || p.src_class > p.dst_class) continue;  // symmetric: one direction
      const uint16_t* da = m.class_tree[p.src_class]->distances().data();
      const uint16_t* db = m.class_tree[p.dst_class]->distances().data();
      for (NodeId s : topo.switches()) {
        if (da[s.value] != kUnreachable && db[s.value] != kUnreachable && da[s.value] + db[s.value] == p.hops) {
          bits[s.value / 64] |= uint64_t{1} << (s.value % 64);
        }
      }
    }
  }

  // Capacity groups: (lower level, upper level, pod) -> totals.
  std::map<std::tuple<int, int, std::string>, std::pair<std::string, double>> group_map;
  auto group_key = [&](const model::Link& l) {
    const model::Node& a = topo.node(l.a);
    const model::Node& b = topo.node(l.b);
    bool a_low = a.level < b.level || (a.level == b.level && l.a < l.b);
    NodeId lo = a_low ? l.a : l.b, hi = a_low ? l.b : l.a;
    const std::string& pod = !topo.node(lo).pod.empty() ? topo.node(lo).pod : topo.node(hi).pod;
    return std::make_tuple(topo.node(lo).level, topo.node(hi).level, pod,
                           TierName(topo, lo) + "-" + TierName(topo, hi));
  };
  for (const model::Link& l : topo.links()) {
    auto [lo, hi, pod, name] = group_key(l);
    auto& g = group_map[{lo, hi, pod}];
    g.first = name;
    g.second += l.capacity_bps;
  }
  std::map<std::tuple<int, int, std::string>, uint32_t> group_index;
  for (auto& [key, v] : group_map) {
    group_index[key] = static_cast<uint32_t>(m.groups.size());
    m.groups.push_back(CapacityChange{v.first, std::get<2>(key), 0, v.second});
  }
  m.link_group.reserve(topo.link_count());
  for (const model::Link& l : topo.links()) {
    auto [lo, hi, pod, name] = group_key(l);
    m.link_group.push_back(group_index[{lo, hi, pod}]);
  }
  m.uplinks_before.assign(topo.node_count(), 0);
  for (NodeId s : topo.switches()) {
    if (topo.node(s).level != model::kLeafLevel) continue;
    for (const model::Adjacency& adj : topo.neighbors(s)) {
      if (topo.node(adj.peer).level > model::kLeafLevel) ++m.uplinks_before[s.value];
    }
  }
}

JobSimIndex::~JobSimIndex() = default;

}  // namespace drainwise::sim
