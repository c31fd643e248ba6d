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
    }
    for (NodeId h : dirty_hosts) dirty[h.value] = 0;
    dirty_hosts.clear();
    pool_used = 0;
    if (++epoch == 0) {
      std::fill(pair_epoch.begin(), pair_epoch.end(), 0);
      for (auto& v : tree_epoch) std::fill(v.begin(), v.end(), 0);
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
  bool MarkCrossed(const JobSimIndex::Impl::PairBefore& p) {
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
    Route(src, dst, out);
    st_.pair_epoch[pid] = st_.epoch;
    return out;
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
