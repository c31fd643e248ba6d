#include "sim/job_sim.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <unordered_map>
#include <utility>

namespace drainwise::sim {

using model::JobId;
using model::Topology;

namespace {

constexpr uint32_t kNoPair = std::numeric_limits<uint32_t>::max();

// Path counts are sums of products of small integers held in doubles: exact
// up to 2^53, so "reduced" can be a strict comparison with a relative guard.
bool Fewer(double after, double before) { return after < before * (1 - 1e-12); }

std::string TierName(const Topology& t, NodeId n) {
  const model::Node& node = t.node(n);
  return node.is_host() ? std::string("host") : node.tier;
}

}  // namespace

// ---------------------------------------------------------------------------
// Per-snapshot structure.

struct JobSimIndex::Impl {
  struct PairBefore {
    uint32_t src_class = 0;
    uint32_t dst_class = 0;
    uint16_t hops = kUnreachable;
    double paths = 0;
    double spray_bps = 0;
  };
  struct Member {
    uint32_t cls;
    uint32_t count;  // hosts of the job in this class
  };

  // Before-drain tree towards each class's representative (first host);
  // null for classes no job uses.
  std::vector<std::unique_ptr<PathTree>> class_tree;
  std::vector<PairBefore> pairs;
  // Per job: its members (classes with host counts) and the k x k matrix of
  // pair ids (kNoPair on the diagonal of a class holding one host).
  std::vector<uint32_t> member_offsets;
  std::vector<Member> members;
  std::vector<uint32_t> pair_offsets;
  std::vector<uint32_t> job_pairs;
  std::vector<int> job_gpus;
  // Per job: a bitset over node ids of the switches some pair's shortest
  // paths cross before any drain (prefilter: a job whose bits miss every
  // drained element is unaffected without per-pair work).
  size_t words_per_job = 0;
  std::vector<uint64_t> job_switch_bits;
  // Fabric-level: capacity group of every link (groups sorted by tier
  // levels, then pod) and each leaf's uplink count before any drain.
  std::vector<uint32_t> link_group;
  std::vector<CapacityChange> groups;
  std::vector<int> uplinks_before;

  // Bundles: the links from a node to one peer, parallel links together
  // (they share every split evenly). Node u's bundles are
  // bundles[bundle_offsets[u] .. bundle_offsets[u+1]); bundle_of[2l + side]
  // is the bundle of link l seen from its a (side 0) or b (side 1) end.
  struct Bundle {
    uint32_t peer;
    uint32_t first;  // into bundle_links
    uint32_t count;
    double min_capacity_bps;
  };
  std::vector<uint32_t> bundle_offsets;
  std::vector<Bundle> bundles;
  std::vector<uint32_t> bundle_links;
  std::vector<uint32_t> bundle_of;
  // Per used class B: for every switch, its next-hop bundles towards B's
  // representative on the undrained fabric (CSR over node ids).
  struct NextHop {
    uint32_t peer;
    uint32_t count;  // links in the bundle
  };
  struct NextHops {
    std::vector<uint32_t> offsets;
    std::vector<NextHop> entries;
    std::vector<uint32_t> total;     // per node: next-hop links
    std::vector<double> min_cap;     // per node: smallest next-hop link capacity
    std::vector<uint8_t> uniform;    // per node: every next-hop bundle has min_cap
  };
  std::vector<NextHops> class_next;

  bool JobCrosses(uint32_t job, NodeId n) const {
    return (job_switch_bits[job * words_per_job + n.value / 64] >> (n.value % 64)) & 1;
  }
};

namespace {

// The host of class `c` to route from/to: the first (or second) host of the
// class that the drain does not touch.
NodeId CleanHost(const RoutingIndex& routing, uint32_t c, const std::vector<uint8_t>& dirty, int skip) {
  for (NodeId h : routing.class_hosts(c)) {
    if (!dirty.empty() && dirty[h.value]) continue;
    if (skip-- == 0) return h;
  }
  return NodeId();
}

}  // namespace

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
      for (const model::Adjacency& adj : topo.neighbors(NodeId(u))) by_peer.emplace_back(adj.peer.value, adj.link.value);
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
        if (da[s.value] != kUnreachable && db[s.value] != kUnreachable &&
            da[s.value] + db[s.value] == p.hops) {
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

// ---------------------------------------------------------------------------
// Per-thread scratch.

struct JobSimWorkspace::State {
  RouteWorkspace route;
  // Trees built during one assessment (towards a host, before or after).
  std::vector<std::unique_ptr<PathTree>> pool;
  size_t pool_used = 0;
  // Per node and "after" flag: epoch and the tree towards that host.
  std::vector<uint32_t> tree_epoch[2];
  std::vector<const PathTree*> tree_of[2];
  // Per class pair: epoch and the after-drain result.
  struct After {
    bool connected = false;
    double paths = 0;
    double spray_bps = 0;
    double clean_share = 1;
  };
  std::vector<uint32_t> pair_epoch;
  std::vector<After> after;
  std::vector<uint8_t> dirty;  // per node: a named drained link is one of its NICs
  std::vector<NodeId> dirty_hosts;
  uint32_t epoch = 0;
  const JobSimIndex* last_index = nullptr;

  // Bundles under the current drain: live link count and the smallest live
  // capacity (index values except for `touched` ones, restored in Begin).
  std::vector<uint32_t> live_count;
  std::vector<double> live_cap;
  std::vector<uint32_t> touched;
  std::vector<uint32_t> node_touched;  // epoch: endpoint of a down link
  std::vector<uint8_t> down;           // per node: drained switch (current drain)
  std::vector<uint32_t> down_degree;   // per node: its down links (current drain)
  std::vector<uint32_t> degree_list;   // nodes with down_degree set
  std::vector<NodeId> down_list;
  // Per class: epoch and the switches that lost every surviving shortest
  // path towards it ("dead"); dead_mark stamps the current class's set.
  std::vector<uint32_t> dest_epoch;
  std::vector<std::vector<uint32_t>> dead_lists;
  std::vector<uint32_t> dead_mark;
  uint32_t dead_epoch = 0;
  uint32_t current_dest = RoutingIndex::kNoClass;
  std::vector<uint32_t> worklist;
  // Fused route scratch, per node.
  std::vector<double> clean, frac, fwd;
  std::vector<uint32_t> seen;
  uint32_t seen_epoch = 0;
  std::vector<uint32_t> frontier, next;

  void Begin(const JobSimIndex& index) {
    const size_t n = index.topology().node_count();
    const size_t np = index.impl().pairs.size();
    if (last_index != &index || pair_epoch.size() != np || dirty.size() != n) {
      // Another index (or the first use): every stamp starts over.
      pair_epoch.assign(np, 0);
      after.assign(np, After{});
      for (int a = 0; a < 2; ++a) {
        tree_epoch[a].assign(n, 0);
        tree_of[a].assign(n, nullptr);
      }
      dirty.assign(n, 0);
      dirty_hosts.clear();
      epoch = 0;
      last_index = &index;
      const auto& m = index.impl();
      live_count.resize(m.bundles.size());
      live_cap.resize(m.bundles.size());
      for (size_t b = 0; b < m.bundles.size(); ++b) {
        live_count[b] = m.bundles[b].count;
        live_cap[b] = m.bundles[b].min_capacity_bps;
      }
      touched.clear();
      node_touched.assign(n, 0);
      down.assign(n, 0);
      down_list.clear();
      down_degree.assign(n, 0);
      degree_list.clear();
      dest_epoch.assign(index.routing().class_count(), 0);
      dead_lists.assign(index.routing().class_count(), {});
      dead_mark.assign(n, 0);
      dead_epoch = 0;
      clean.assign(n, 0);
      frac.assign(n, 0);
      fwd.assign(n, 0);
      seen.assign(n, 0);
      seen_epoch = 0;
    }
    {
      const auto& m = index.impl();
      for (uint32_t b : touched) {
        live_count[b] = m.bundles[b].count;
        live_cap[b] = m.bundles[b].min_capacity_bps;
      }
      touched.clear();
      for (NodeId d : down_list) down[d.value] = 0;
      down_list.clear();
      for (uint32_t v : degree_list) down_degree[v] = 0;
      degree_list.clear();
      current_dest = RoutingIndex::kNoClass;
    }
    for (NodeId h : dirty_hosts) dirty[h.value] = 0;
    dirty_hosts.clear();
    pool_used = 0;
    if (++epoch == 0) {
      std::fill(pair_epoch.begin(), pair_epoch.end(), 0);
      for (auto& v : tree_epoch) std::fill(v.begin(), v.end(), 0);
      std::fill(dest_epoch.begin(), dest_epoch.end(), 0);
      std::fill(node_touched.begin(), node_touched.end(), 0);
      epoch = 1;
    }
  }

  PathTree* NewTree() {
    if (pool_used == pool.size()) pool.push_back(std::make_unique<PathTree>());
    return pool[pool_used++].get();
  }
};

JobSimWorkspace::JobSimWorkspace() : state_(std::make_unique<State>()) {}
JobSimWorkspace::~JobSimWorkspace() = default;
JobSimWorkspace::JobSimWorkspace(JobSimWorkspace&&) noexcept = default;
JobSimWorkspace& JobSimWorkspace::operator=(JobSimWorkspace&&) noexcept = default;

// ---------------------------------------------------------------------------
// Fabric-level impact.

namespace {

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
      if (topo.node(x).is_host()) hosts.push_back(x.value);
      else if (topo.node(x).level == model::kLeafLevel && !mask.node_down(x)) leaves.push_back(x.value);
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

// One assessment: the job loop and its pair caches.
class Assessor {
 public:
  Assessor(const JobSimIndex& index, const model::Drain& drain, const DrainMask& mask,
           JobSimWorkspace::State& st)
      : index_(index), m_(index.impl()), routing_(index.routing()), topo_(index.topology()),
        drain_(drain), mask_(mask), st_(st) {
    st_.Begin(index);
    for (LinkId l : drain.links) {
      const model::Link& link = topo_.link(l);
      bool host_link = false;
      for (NodeId x : {link.a, link.b}) {
        if (topo_.node(x).is_host()) {
          host_link = true;
          if (!st_.dirty[x.value]) {
            st_.dirty[x.value] = 1;
            st_.dirty_hosts.push_back(x);
          }
        }
      }
      if (!host_link) switch_links_.push_back(l);
    }
    for (NodeId d : drain.switches) {
      st_.down[d.value] = 1;
      st_.down_list.push_back(d);
    }
    switch_only_ = drain.links.empty();
    for (LinkId l : mask.down_links()) {
      for (NodeId x : {topo_.link(l).a, topo_.link(l).b}) {
        if (topo_.node(x).is_host() || st_.down[x.value]) continue;
        if (st_.down_degree[x.value]++ == 0) endpoints_.push_back(x.value);
      }
    }
    st_.degree_list = endpoints_;
    // Bundles that lose links: recount live links and capacity.
    for (LinkId l : mask.down_links()) {
      st_.node_touched[topo_.link(l).a.value] = st_.epoch;
      st_.node_touched[topo_.link(l).b.value] = st_.epoch;
      for (int side = 0; side < 2; ++side) {
        const uint32_t b = m_.bundle_of[2 * l.value + side];
        if (std::find(st_.touched.begin(), st_.touched.end(), b) == st_.touched.end()) st_.touched.push_back(b);
      }
    }
    for (uint32_t b : st_.touched) {
      const auto& bundle = m_.bundles[b];
      uint32_t live = 0;
      double cap = std::numeric_limits<double>::infinity();
      for (uint32_t i = 0; i < bundle.count; ++i) {
        const uint32_t l = m_.bundle_links[bundle.first + i];
        if (mask.link_down(LinkId(l))) continue;
        ++live;
        cap = std::min(cap, topo_.links()[l].capacity_bps);
      }
      st_.live_count[b] = live;
      st_.live_cap[b] = cap;
    }
  }

  int64_t routes() const { return routes_; }

  JobImpact Assess(JobId job_id) {
    const model::Job& job = index_.jobs().job(job_id);
    const uint32_t j = job_id.value;
    JobImpact imp;
    imp.job = job_id;
    imp.gpus = m_.job_gpus[j];
    const int64_t n = static_cast<int64_t>(job.hosts.size());
    imp.host_pairs = n * (n - 1) / 2;
    if (n < 2) return imp;

    bool has_dirty = false;
    for (NodeId h : job.hosts) has_dirty = has_dirty || st_.dirty[h.value];
    if (!has_dirty && !Prefilter(j)) {
      // Nothing drained is on this job's paths; only pairs cut off before
      // the drain (hosts without a NIC) matter.
      AccountUnreachable(j, imp);
      return imp;
    }

    Totals t;
    crossed_nodes_.clear();
    crossed_links_.clear();
    const uint32_t mb = m_.member_offsets[j], me = m_.member_offsets[j + 1];
    const uint32_t k = me - mb;
    // Clean members: class groups minus the job's dirty hosts.
    std::vector<uint32_t>& clean = clean_counts_;
    clean.assign(k, 0);
    for (uint32_t x = 0; x < k; ++x) clean[x] = m_.members[mb + x].count;
    dirty_members_.clear();
    if (has_dirty) {
      for (NodeId h : job.hosts) {
        if (!st_.dirty[h.value]) continue;
        uint32_t c = routing_.class_of(h);
        for (uint32_t x = 0; x < k; ++x) {
          if (m_.members[mb + x].cls == c) {
            --clean[x];
            dirty_members_.push_back({h, x});
          }
        }
      }
    }

    // Clean x clean, by class pair.
    for (uint32_t x = 0; x < k; ++x) {
      for (uint32_t y = 0; y < k; ++y) {
        const double w = x == y ? double(clean[x]) * (clean[x] - 1.0) : double(clean[x]) * clean[y];
        if (w <= 0) continue;
        const uint32_t pid = m_.job_pairs[m_.pair_offsets[j] + x * k + y];
        const auto& before = m_.pairs[pid];
        t.total += w;
        if (before.hops == kUnreachable) {
          t.Cut(w, imp);
          continue;
        }
        if (!MarkCrossed(before)) continue;
        const auto& after = After(pid, before);
        t.Add(w, before.paths, before.spray_bps, after.connected, after.paths, after.spray_bps,
              1 - after.clean_share, imp);
      }
    }
    // Pairs with a dirty host: routed host to host.
    for (size_t d = 0; d < dirty_members_.size(); ++d) {
      const auto [h, xh] = dirty_members_[d];
      for (uint32_t y = 0; y < k; ++y) {
        if (clean[y] == 0) continue;
        const uint32_t c = m_.members[mb + y].cls;
        NodeId other = CleanHost(routing_, c, st_.dirty, 0);
        if (other == h) other = CleanHost(routing_, c, st_.dirty, 1);
        DirtyPair(j, xh, y, h, other, double(clean[y]), t, imp);
        DirtyPair(j, y, xh, other, h, double(clean[y]), t, imp);
      }
      for (size_t e = 0; e < dirty_members_.size(); ++e) {
        if (e == d) continue;
        DirtyPair(j, xh, dirty_members_[e].second, h, dirty_members_[e].first, 1.0, t, imp);
      }
    }

    imp.affected = t.crossing > 0;
    imp.crossing_share = t.total > 0 ? t.crossing_traffic / t.total : 0;
    imp.host_pairs_crossing = static_cast<int64_t>(std::llround(t.crossing / 2));
    imp.host_pairs_cut = static_cast<int64_t>(std::llround(t.cut / 2));
    for (NodeId s : drain_.switches) {
      if (crossed_nodes_.count(s.value)) imp.crossed_switches.push_back(s);
    }
    for (LinkId l : drain_.links) {
      if (crossed_links_.count(l.value)) imp.crossed_links.push_back(l);
    }
    return imp;
  }

 private:
  struct Totals {
    double total = 0, crossing = 0, crossing_traffic = 0, cut = 0;
    void Cut(double w, JobImpact& imp) {
      cut += w;
      imp.connected = false;
    }
    void Add(double w, double paths_before, double spray_before, bool connected, double paths_after,
             double spray_after, double crossed_share, JobImpact& imp) {
      crossing += w;
      crossing_traffic += w * crossed_share;
      if (!connected) {
        Cut(w, imp);
        imp.path_fraction = 0;
        imp.bandwidth_fraction = 0;
        imp.min_paths_after = 0;
        return;
      }
      imp.path_fraction = std::min(imp.path_fraction, paths_after / paths_before);
      if (Fewer(paths_after, paths_before)) {
        imp.min_paths_after = std::min(imp.min_paths_after.value_or(paths_after), paths_after);
      }
      if (spray_before > 0) imp.bandwidth_fraction = std::min(imp.bandwidth_fraction, spray_after / spray_before);
    }
  };

  // True when some drained switch or named switch link can be on the job's paths.
  bool Prefilter(uint32_t j) const {
    for (NodeId s : drain_.switches) {
      if (m_.JobCrosses(j, s)) return true;
    }
    for (LinkId l : switch_links_) {
      const model::Link& link = topo_.link(l);
      if (m_.JobCrosses(j, link.a) && m_.JobCrosses(j, link.b)) return true;
    }
    return false;
  }

  void AccountUnreachable(uint32_t j, JobImpact& imp) const {
    const uint32_t mb = m_.member_offsets[j], k = m_.member_offsets[j + 1] - mb;
    double cut = 0;
    for (uint32_t x = 0; x < k; ++x) {
      for (uint32_t y = 0; y < k; ++y) {
        const uint32_t pid = m_.job_pairs[m_.pair_offsets[j] + x * k + y];
        if (pid == kNoPair || m_.pairs[pid].hops != kUnreachable) continue;
        const double cx = m_.members[mb + x].count, cy = m_.members[mb + y].count;
        cut += x == y ? cx * (cx - 1) : cx * cy;
      }
    }
    if (cut > 0) {
      imp.connected = false;
      imp.host_pairs_cut = static_cast<int64_t>(std::llround(cut / 2));
    }
  }

  // Marks the drained elements on the before-paths of a clean class pair;
  // true when there is any.
  [[gnu::noinline]] bool MarkCrossed(const JobSimIndex::Impl::PairBefore& p) {
    const uint16_t* da = m_.class_tree[p.src_class]->distances().data();
    const uint16_t* db = m_.class_tree[p.dst_class]->distances().data();
    auto on = [&](uint32_t u) {
      return da[u] != kUnreachable && db[u] != kUnreachable && da[u] + db[u] == p.hops;
    };
    bool any = false;
    for (NodeId s : drain_.switches) {
      if (on(s.value)) {
        crossed_nodes_.insert(s.value);
        any = true;
      }
    }
    for (LinkId l : switch_links_) {
      const model::Link& link = topo_.link(l);
      const uint32_t a = link.a.value, b = link.b.value;
      auto fits = [&](uint32_t u, uint32_t w) {
        return da[u] != kUnreachable && db[w] != kUnreachable && da[u] + 1 + db[w] == p.hops;
      };
      if (fits(a, b) || fits(b, a)) {
        crossed_links_.insert(l.value);
        any = true;
      }
    }
    return any;
  }

  const PathTree& TreeToward(NodeId host, bool after) {
    const int a = after ? 1 : 0;
    if (st_.tree_epoch[a][host.value] == st_.epoch) return *st_.tree_of[a][host.value];
    const PathTree* tree = nullptr;
    const uint32_t c = routing_.class_of(host);
    const PathTree* base = m_.class_tree[c].get();
    const bool rep = base != nullptr && routing_.class_representative(c) == host;
    if (rep && (!after || (!st_.dirty[host.value] && base->StillShortestUnder(routing_, mask_)))) {
      tree = base;
    } else {
      PathTree* t = st_.NewTree();
      t->Build(routing_, after ? mask_ : none_, routing_.HostAttachment(host));
      tree = t;
    }
    st_.tree_epoch[a][host.value] = st_.epoch;
    st_.tree_of[a][host.value] = tree;
    return *tree;
  }

  const JobSimWorkspace::State::After& After(uint32_t pid, const JobSimIndex::Impl::PairBefore& p) {
    if (st_.pair_epoch[pid] == st_.epoch) return st_.after[pid];
    NodeId dst = CleanHost(routing_, p.dst_class, st_.dirty, 0);
    NodeId src = CleanHost(routing_, p.src_class, st_.dirty, p.src_class == p.dst_class ? 1 : 0);
    JobSimWorkspace::State::After& out = st_.after[pid];
    if (dst == routing_.class_representative(p.dst_class)) {
      if (!Fused(src, p.dst_class, p.hops, out)) {
        // The source lost every shortest path of the old length: route it
        // on a tree rebuilt under the drain.
        ++routes_;
        const PathTree& after = TreeToward(dst, true);
        PairRoute r = st_.route.Route(routing_, mask_, after, routing_.HostAttachment(src));
        out.connected = r.connected;
        out.paths = r.paths;
        out.spray_bps = r.connected ? SprayThroughputBps(routing_, st_.route.links()) : 0;
      }
    } else {
      Route(src, dst, out);
    }
    st_.pair_epoch[pid] = st_.epoch;
    return out;
  }

  bool Dead(uint32_t v) const { return st_.dead_mark[v] == st_.dead_epoch; }
  // An endpoint of a down link: some of its bundles lost links.
  bool Touched(uint32_t v) const { return st_.node_touched[v] == st_.epoch; }
  // The bundle from u to peer w (u's bundles are sorted by peer).
  uint32_t FindBundle(uint32_t u, uint32_t w) const {
    const auto* first = m_.bundles.data() + m_.bundle_offsets[u];
    const auto* last = m_.bundles.data() + m_.bundle_offsets[u + 1];
    const auto* it = std::lower_bound(first, last, w, [](const JobSimIndex::Impl::Bundle& b, uint32_t p) {
      return b.peer < p;
    });
    return static_cast<uint32_t>(it - m_.bundles.data());
  }

  void NewDeadEpoch() {
    if (++st_.dead_epoch == 0) {
      std::fill(st_.dead_mark.begin(), st_.dead_mark.end(), 0);
      st_.dead_epoch = 1;
    }
  }

  // Makes Dead() answer for class B: the switches whose every undrained
  // shortest path towards B crosses a down element. Only the neighborhood of
  // the down links is examined: a node can only die when a next hop does.
  [[gnu::noinline]] void PrepareDest(uint32_t B) {
    if (st_.current_dest == B) return;
    NewDeadEpoch();
    st_.current_dest = B;
    std::vector<uint32_t>& dead = st_.dead_lists[B];
    if (st_.dest_epoch[B] == st_.epoch) {
      for (uint32_t v : dead) st_.dead_mark[v] = st_.dead_epoch;
      return;
    }
    st_.dest_epoch[B] = st_.epoch;
    dead.clear();
    const uint16_t* dist = m_.class_tree[B]->distances().data();
    const auto& nh = m_.class_next[B];
    std::vector<uint32_t>& work = st_.worklist;
    work.clear();
    // Seeds: the live switches that lost links. While none of its next hops
    // has died, a seed with fewer down links than next-hop links is alive;
    // a later death re-queues it for the full check below (kFull).
    for (uint32_t u : endpoints_) work.push_back(u);
    while (!work.empty()) {
      const uint32_t item = work.back();
      work.pop_back();
      const bool full = (item & kFull) != 0;
      const uint32_t u = item & ~kFull;
      if (Dead(u)) continue;
      const uint16_t du = dist[u];
      if (du == kUnreachable || du == 0) continue;
      if (!full && st_.down_degree[u] < nh.total[u]) continue;
      bool alive = false;
      for (uint32_t i = nh.offsets[u]; i < nh.offsets[u + 1] && !alive; ++i) {
        const uint32_t w = nh.entries[i].peer;
        alive = !Dead(w) && (!Touched(u) || (switch_only_ ? !st_.down[w] : st_.live_count[FindBundle(u, w)] > 0));
      }
      if (alive) continue;
      st_.dead_mark[u] = st_.dead_epoch;
      dead.push_back(u);
      for (uint32_t b = m_.bundle_offsets[u]; b < m_.bundle_offsets[u + 1]; ++b) {
        const uint32_t v = m_.bundles[b].peer;
        if (dist[v] != kUnreachable && dist[v] == du + 1 && !routing_.is_host(NodeId(v)) && !st_.down[v]) {
          work.push_back(v | kFull);
        }
      }
    }
  }

  // One pass over the undrained shortest-path DAG from `src` to B's
  // representative, computing at once the share of the traffic that crossed
  // a down element (before the drain) and, on the part of the DAG that
  // survives, the per-hop spray and path counts after the drain. This is
  // exact when the source keeps a shortest path of the old length: every
  // after-drain shortest path is then an undrained one that avoids the down
  // elements and the dead switches. Returns false otherwise (only
  // out.clean_share is then set).
  [[gnu::noinline]] bool Fused(NodeId src, uint32_t B, uint16_t hops, JobSimWorkspace::State::After& out) {
    ++routes_;
    PrepareDest(B);
    auto& st = st_;
    const uint16_t* dist = m_.class_tree[B]->distances().data();
    const auto& nh = m_.class_next[B];
    const uint32_t dst = routing_.class_representative(B).value;
    if (++st.seen_epoch == 0) {
      std::fill(st.seen.begin(), st.seen.end(), 0);
      st.seen_epoch = 1;
    }
    auto visit = [&](uint32_t v) {
      st.seen[v] = st.seen_epoch;
      st.clean[v] = st.frac[v] = st.fwd[v] = 0;
    };
    const uint32_t s = src.value;
    visit(s);
    st.clean[s] = st.frac[s] = st.fwd[s] = 1;
    st.frontier.assign(1, s);
    double bottleneck = std::numeric_limits<double>::infinity();
    bool source_ok = true;

    auto reach = [&](uint32_t w) {
      if (st.seen[w] != st.seen_epoch) {
        visit(w);
        st.next.push_back(w);
      }
    };
    for (uint32_t level = hops; level > 0; --level) {
      st.next.clear();
      for (uint32_t u : st.frontier) {
        const double frac_u = st.frac[u];
        const double fwd_u = st.fwd[u];
        if (u != s && (switch_only_ || !Touched(u))) {
          // Every next-hop bundle is whole or entirely down (its peer is
          // drained); dead peers drop out of the after-drain split.
          const auto* first = nh.entries.data() + nh.offsets[u];
          const auto* last = nh.entries.data() + nh.offsets[u + 1];
          const bool touched = Touched(u);
          uint32_t lost = 0, drained = 0;
          for (const auto* e = first; e != last; ++e) {
            const bool down = touched && st.down[e->peer];
            drained += down ? e->count : 0;
            lost += (down || Dead(e->peer)) ? e->count : 0;
          }
          const double total = nh.total[u];
          const double live_total = total - lost;
          const double clean_per_link = st.clean[u] / total;
          const bool flows = frac_u > 0 && live_total > 0;
          const double frac_per_link = flows ? frac_u / live_total : 0;
          const bool exact_cap = lost == 0 || nh.uniform[u];
          double cap = exact_cap ? nh.min_cap[u] : std::numeric_limits<double>::infinity();
          for (const auto* e = first; e != last; ++e) {
            const uint32_t w = e->peer;
            reach(w);
            const bool down = drained > 0 && st.down[w];
            if (!down) st.clean[w] += clean_per_link * e->count;
            if (flows && (lost == 0 || (!down && !Dead(w)))) {
              st.frac[w] += frac_per_link * e->count;
              st.fwd[w] += fwd_u * e->count;
              if (!exact_cap) cap = std::min(cap, m_.bundles[FindBundle(u, w)].min_capacity_bps);
            }
          }
          if (flows) bottleneck = std::min(bottleneck, cap / frac_per_link);
          continue;
        }
        // The source, or a node that lost links: bundle by bundle.
        src_hops_.clear();
        if (u == s) {
          for (uint32_t b = m_.bundle_offsets[s]; b < m_.bundle_offsets[s + 1]; ++b) {
            if (dist[m_.bundles[b].peer] + 1 == level) src_hops_.push_back(b);
          }
        } else {
          for (uint32_t i = nh.offsets[u]; i < nh.offsets[u + 1]; ++i) {
            src_hops_.push_back(FindBundle(u, nh.entries[i].peer));
          }
        }
        double total = 0, live_total = 0;
        for (uint32_t b : src_hops_) {
          total += m_.bundles[b].count;
          if (!Dead(m_.bundles[b].peer)) live_total += st.live_count[b];
        }
        if (u == s && live_total == 0) source_ok = false;
        const double clean_per_link = st.clean[u] / total;
        for (uint32_t b : src_hops_) {
          const uint32_t w = m_.bundles[b].peer;
          reach(w);
          const double live = st.live_count[b];  // 0 when w is drained: its links are down
          st.clean[w] += clean_per_link * live;
          if (frac_u > 0 && live > 0 && !Dead(w)) {
            st.frac[w] += frac_u * live / live_total;
            st.fwd[w] += fwd_u * live;
            bottleneck = std::min(bottleneck, st.live_cap[b] * live_total / frac_u);
          }
        }
      }
      st.frontier.swap(st.next);
    }
    out.clean_share = st.seen[dst] == st.seen_epoch ? st.clean[dst] : 0;
    if (!source_ok) return false;
    out.connected = st.frac[dst] > 0;
    out.paths = st.fwd[dst];
    out.spray_bps = out.connected ? bottleneck : 0;
    return true;
  }

  void Route(NodeId src, NodeId dst, JobSimWorkspace::State::After& out) {
    routes_ += 2;
    const PathTree& after = TreeToward(dst, true);
    PairRoute r = st_.route.Route(routing_, mask_, after, routing_.HostAttachment(src));
    out.connected = r.connected;
    out.paths = r.paths;
    out.spray_bps = r.connected ? SprayThroughputBps(routing_, st_.route.links()) : 0;
    const PathTree& before = TreeToward(dst, false);
    st_.route.RouteTracking(routing_, none_, before, routing_.HostAttachment(src), mask_, &out.clean_share);
  }

  void DirtyPair(uint32_t j, uint32_t x, uint32_t y, NodeId src, NodeId dst, double w, Totals& t,
                 JobImpact& imp) {
    const uint32_t k = m_.member_offsets[j + 1] - m_.member_offsets[j];
    const uint32_t pid = m_.job_pairs[m_.pair_offsets[j] + x * k + y];
    const auto& before = m_.pairs[pid];
    t.total += w;
    if (before.hops == kUnreachable) {
      t.Cut(w, imp);
      return;
    }
    JobSimWorkspace::State::After after;
    Route(src, dst, after);
    // The tracking route is the last one: mark what it crossed.
    bool any = false;
    for (const DagLink& e : st_.route.links()) {
      if (mask_.node_down(NodeId(e.to))) {
        crossed_nodes_.insert(e.to);
        any = true;
      }
      if (mask_.link_down(LinkId(e.link))) {
        crossed_links_.insert(e.link);
        any = true;
      }
    }
    if (!any) return;
    t.Add(w, before.paths, before.spray_bps, after.connected, after.paths, after.spray_bps,
          1 - after.clean_share, imp);
  }

  const JobSimIndex& index_;
  const JobSimIndex::Impl& m_;
  const RoutingIndex& routing_;
  const Topology& topo_;
  const model::Drain& drain_;
  const DrainMask& mask_;
  const DrainMask none_;
  JobSimWorkspace::State& st_;
  std::vector<LinkId> switch_links_;  // named drained links between two switches
  std::vector<uint32_t> clean_counts_;
  std::vector<uint32_t> src_hops_;
  bool switch_only_ = true;  // no named links: a bundle is down iff its peer is
  std::vector<uint32_t> endpoints_;  // live switches with a down link, unique
  static constexpr uint32_t kFull = 1u << 31;
  std::vector<std::pair<NodeId, uint32_t>> dirty_members_;  // host, member index
  // Small sets (a drain names few elements): sorted-vector semantics are not
  // needed, only membership.
  struct SmallSet {
    std::vector<uint32_t> v;
    void clear() { v.clear(); }
    void insert(uint32_t x) {
      if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
    }
    size_t count(uint32_t x) const { return std::find(v.begin(), v.end(), x) != v.end(); }
  };
  SmallSet crossed_nodes_, crossed_links_;
  int64_t routes_ = 0;
};

}  // namespace

FabricImpact AssessFabric(const JobSimIndex& index, const model::Drain& drain) {
  if (!ValidateDrain(index.topology(), drain)) return {};
  return FabricImpactOf(index, drain, DrainMask(index.topology(), drain));
}

Result<JobAssessment> AssessJobs(const JobSimIndex& index, const model::Drain& drain,
                                 JobSimWorkspace& workspace, std::stop_token stop) {
  if (auto st = ValidateDrain(index.topology(), drain); !st) return tl::unexpected(st.error());
  const DrainMask mask(index.topology(), drain);
  JobAssessment out;
  out.fabric = FabricImpactOf(index, drain, mask);
  Assessor assessor(index, drain, mask, workspace.state());
  const size_t njobs = index.jobs().size();
  out.jobs.reserve(njobs);
  for (size_t j = 0; j < njobs; ++j) {
    if (stop.stop_requested()) return MakeError(ErrorCode::kCancelled, "job assessment cancelled");
    JobImpact imp = assessor.Assess(JobId(j));
    if (imp.affected) {
      ++out.jobs_affected;
      out.gpus_affected += imp.gpus;
    }
    if (imp.affected && !imp.connected) ++out.jobs_disconnected;
    out.jobs.push_back(std::move(imp));
  }
  out.pair_routes = assessor.routes();
  return out;
}

Result<JobAssessment> AssessJobs(const JobSimIndex& index, const model::Drain& drain, std::stop_token stop) {
  JobSimWorkspace ws;
  return AssessJobs(index, drain, ws, stop);
}

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
    return std::make_tuple(d.gpus_disconnected, -d.worst_bandwidth_fraction, -d.worst_path_fraction,
                           d.gpus_affected, d.jobs_affected);
  };
  std::stable_sort(c.begin(), c.end(), [&](const DrainCandidate& x, const DrainCandidate& y) {
    auto kx = key(x), ky = key(y);
    if (kx != ky) return kx < ky;
    return topology.node(x.sw).name < topology.node(y.sw).name;
  });
}

Result<std::vector<DrainCandidate>> SweepDrainCandidates(const JobSimIndex& index,
                                                         std::span<const NodeId> switches,
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
