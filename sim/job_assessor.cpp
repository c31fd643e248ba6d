// The per-job assessment of the job-level simulator: the job loop, the
// fused pass over each crossing class pair's undrained DAG, host-to-host
// routes for pairs with a drained NIC, and the per-drain pair caches.
#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <tuple>
#include <utility>

#include "sim/job_sim_internal.h"

namespace drainwise::sim {

using model::JobId;
using model::Topology;

namespace {

// One assessment: the job loop and its pair caches.
class Assessor {
 public:
  Assessor(const JobSimIndex& index, const model::Drain& drain, const DrainMask& mask, JobSimWorkspace::State& st)
      : index_(index),
        m_(index.impl()),
        routing_(index.routing()),
        topo_(index.topology()),
        drain_(drain),
        mask_(mask),
        st_(st) {
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

    // Clean x clean, by class pair, in two passes: the first finds the
    // crossing pairs and computes their after-drain results grouped by
    // destination class (PrepareDest then marks each class's dead switches
    // once per job instead of once per pair: the row-major order changes
    // destination at every pair, and re-marking a destination's thousands
    // of dead switches was a fifth of the time); the second adds them up in
    // row-major order, so every sum is formed in the same order as before.
    items_.clear();
    todo_.clear();
    for (uint32_t x = 0; x < k; ++x) {
      for (uint32_t y = 0; y < k; ++y) {
        const double w = x == y ? double(clean[x]) * (clean[x] - 1.0) : double(clean[x]) * clean[y];
        if (w <= 0) continue;
        const uint32_t pid = m_.job_pairs[m_.pair_offsets[j] + x * k + y];
        const auto& before = m_.pairs[pid];
        if (before.hops == kUnreachable) {
          items_.push_back({w, pid, Item::kCut});
        } else if (!MarkCrossed(before)) {
          items_.push_back({w, pid, Item::kClean});
        } else {
          items_.push_back({w, pid, Item::kCrossing});
          if (st_.pair_epoch[pid] != st_.epoch) todo_.push_back(pid);
        }
      }
    }
    // By destination, then hop count (Fused's memo keeps one run per level:
    // runs of one length, e.g. the cross-pod ones, should follow each other),
    // then source class (sources of one pod are neighbours).
    std::sort(todo_.begin(), todo_.end(), [&](uint32_t a, uint32_t b) {
      const auto &pa = m_.pairs[a], &pb = m_.pairs[b];
      return std::tie(pa.dst_class, pa.hops, pa.src_class) < std::tie(pb.dst_class, pb.hops, pb.src_class);
    });
    for (uint32_t pid : todo_) After(pid, m_.pairs[pid]);
    for (const Item& it : items_) {
      t.total += it.w;
      if (it.kind == Item::kCut) {
        t.Cut(it.w, imp);
      } else if (it.kind == Item::kCrossing) {
        const auto& before = m_.pairs[it.pid];
        const auto& after = After(it.pid, before);
        t.Add(it.w, before.paths, before.spray_bps, after.connected, after.paths, after.spray_bps,
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
    void Add(double w, double paths_before, double spray_before, bool connected, double paths_after, double spray_after,
             double crossed_share, JobImpact& imp) {
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
    auto on = [&](uint32_t u) { return da[u] != kUnreachable && db[u] != kUnreachable && da[u] + db[u] == p.hops; };
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
    const auto* it =
        std::lower_bound(first, last, w, [](const JobSimIndex::Impl::Bundle& b, uint32_t p) { return b.peer < p; });
    return static_cast<uint32_t>(it - m_.bundles.data());
  }

  void NewDeadEpoch() {
    if (++st_.dead_epoch == 0) {
      std::fill(st_.dead_mark.begin(), st_.dead_mark.end(), 0);
      std::fill(st_.pred_mark.begin(), st_.pred_mark.end(), 0);
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
    std::vector<uint32_t>& preds = st_.pred_lists[B];
    if (st_.dest_epoch[B] == st_.epoch) {
      for (uint32_t v : dead) st_.dead_mark[v] = st_.dead_epoch;
      for (uint32_t v : preds) st_.pred_mark[v] = st_.dead_epoch;
      return;
    }
    st_.dest_epoch[B] = st_.epoch;
    dead.clear();
    preds.clear();
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
          if (st_.pred_mark[v] != st_.dead_epoch) {
            st_.pred_mark[v] = st_.dead_epoch;
            st_.dead_links[v] = 0;
            preds.push_back(v);
          }
          // v lost these next-hop links to u's death. Unless dead and down
          // links together could cover all of v's next-hop links, v keeps
          // one and needs no full check: a spine's death queued thousands of
          // leaves that kept 31 of 32 next hops, and reading their next-hop
          // lists (cache misses into the class's table) was most of
          // PrepareDest.
          st_.dead_links[v] += m_.bundles[b].count;
          if (st_.dead_links[v] + st_.down_degree[v] >= nh.total[v]) work.push_back(v | kFull);
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
  //
  // Many sources towards one class meet at the same level-for-level state:
  // on a Clos every source class of a pod reaches the pod's spines with the
  // same values, and every source pod reaches the superspines with the same
  // values, so the rest of the pass (most of its nodes and links) would be
  // repeated. Each level is therefore compared with the memo (State::memo)
  // before it is processed, and a run that goes to the end fills the memo.
  // A hit computes nothing differently: the rest of the pass is a function
  // of that level's nodes, order and values, and the bottleneck is a min.
  [[gnu::noinline]] bool Fused(NodeId src, uint32_t B, uint16_t hops, JobSimWorkspace::State::After& out) {
    ++routes_;
    PrepareDest(B);
    auto& st = st_;
    if (st.memo_dest != B) {
      st.memo_dest = B;
      for (auto& slot : st.memo) slot.valid = false;
    }
    if (st.memo.size() < hops) st.memo.resize(hops);
    st.level_start.resize(hops + 1);
    st.level_min.resize(hops + 1);
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
    st.order.assign(1, s);
    double bottleneck = std::numeric_limits<double>::infinity();  // of the levels processed
    bool source_ok = true;

    auto reach = [&](uint32_t w) {
      if (st.seen[w] != st.seen_epoch) {
        visit(w);
        st.order.push_back(w);
      }
    };
    size_t begin = 0;
    for (uint32_t level = hops; level > 0; --level) {
      const size_t end = st.order.size();
      st.level_start[level] = begin;
      if (level < hops && !st.memo_off && SameLevel(st.memo[level], begin, end)) {
        const auto& slot = st.memo[level];
        ++st.memo_hits;
        out.clean_share = slot.dst_clean;
        if (!source_ok) return false;
        out.connected = slot.dst_frac > 0;
        out.paths = slot.dst_fwd;
        out.spray_bps = out.connected ? std::min(bottleneck, slot.bottleneck) : 0;
        return true;
      }
      // This level's share of the bottleneck (a min, so splitting it by
      // level changes nothing).
      double level_bn = std::numeric_limits<double>::infinity();
      for (size_t i = begin; i < end; ++i) {
        const uint32_t u = st.order[i];
        const double frac_u = st.frac[u];
        const double fwd_u = st.fwd[u];
        if (u != s && (switch_only_ || !Touched(u))) {
          const auto* first = nh.entries.data() + nh.offsets[u];
          const auto* last = nh.entries.data() + nh.offsets[u + 1];
          const bool touched = Touched(u);
          if (!touched && st.pred_mark[u] != st.dead_epoch) {
            // Most of the DAG: no next hop is down or dead, so the general
            // case below would find lost == 0 (live_total == total, the
            // index's min_cap exact) after a pass over the next hops; this
            // does the same arithmetic in the same order without that pass
            // and without the per-peer down/dead reads.
            const double total = nh.total[u];
            const double clean_per_link = st.clean[u] / total;
            const bool flows = frac_u > 0 && total > 0;
            const double frac_per_link = flows ? frac_u / total : 0;
            for (const auto* e = first; e != last; ++e) {
              const uint32_t w = e->peer;
              reach(w);
              st.clean[w] += clean_per_link * e->count;
              if (flows) {
                st.frac[w] += frac_per_link * e->count;
                st.fwd[w] += fwd_u * e->count;
              }
            }
            if (flows) level_bn = std::min(level_bn, nh.min_cap[u] / frac_per_link);
            continue;
          }
          // Every next-hop bundle is whole or entirely down (its peer is
          // drained); dead peers drop out of the after-drain split.
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
          if (flows) level_bn = std::min(level_bn, cap / frac_per_link);
          continue;
        }
        // The source, or a node that lost links: bundle by bundle.
        src_hops_.clear();
        if (u == s) {
          for (uint32_t b = m_.bundle_offsets[s]; b < m_.bundle_offsets[s + 1]; ++b) {
            if (dist[m_.bundles[b].peer] + 1u == level) src_hops_.push_back(b);
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
            level_bn = std::min(level_bn, st.live_cap[b] * live_total / frac_u);
          }
        }
      }
      st.level_min[level] = level_bn;
      bottleneck = std::min(bottleneck, level_bn);
      begin = end;
    }
    const bool dst_seen = st.seen[dst] == st.seen_epoch;
    out.clean_share = dst_seen ? st.clean[dst] : 0;
    if (dst_seen) {
      // Levels hops-1 .. 1 into the memo, with the bottleneck of the levels
      // from each one down.
      double below = std::numeric_limits<double>::infinity();
      for (uint32_t level = 1; level < hops; ++level) {
        below = std::min(below, st.level_min[level]);
        auto& slot = st.memo[level];
        const size_t first = st.level_start[level];
        const size_t last = level == 1 ? begin : st.level_start[level - 1];
        slot.valid = true;
        slot.nodes.assign(st.order.begin() + first, st.order.begin() + last);
        slot.values.resize(3 * slot.nodes.size());
        for (size_t i = 0; i < slot.nodes.size(); ++i) {
          const uint32_t v = slot.nodes[i];
          slot.values[3 * i] = st.clean[v];
          slot.values[3 * i + 1] = st.frac[v];
          slot.values[3 * i + 2] = st.fwd[v];
        }
        slot.dst_clean = st.clean[dst];
        slot.dst_frac = st.frac[dst];
        slot.dst_fwd = st.fwd[dst];
        slot.bottleneck = below;
      }
    }
    if (!source_ok) return false;
    out.connected = st.frac[dst] > 0;
    out.paths = st.fwd[dst];
    out.spray_bps = out.connected ? bottleneck : 0;
    return true;
  }

  // Level order[begin .. end) of Fused is the one `slot` holds: the same
  // nodes in the same order with bit-identical values.
  bool SameLevel(const JobSimWorkspace::State::LevelSlot& slot, size_t begin, size_t end) const {
    if (!slot.valid || slot.nodes.size() != end - begin) return false;
    auto same = [](double a, double b) { return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b); };
    for (size_t i = 0; i < slot.nodes.size(); ++i) {
      const uint32_t v = st_.order[begin + i];
      if (v != slot.nodes[i] || !same(st_.clean[v], slot.values[3 * i]) || !same(st_.frac[v], slot.values[3 * i + 1]) ||
          !same(st_.fwd[v], slot.values[3 * i + 2])) {
        return false;
      }
    }
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

  void DirtyPair(uint32_t j, uint32_t x, uint32_t y, NodeId src, NodeId dst, double w, Totals& t, JobImpact& imp) {
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
    t.Add(w, before.paths, before.spray_bps, after.connected, after.paths, after.spray_bps, 1 - after.clean_share, imp);
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
  bool switch_only_ = true;          // no named links: a bundle is down iff its peer is
  std::vector<uint32_t> endpoints_;  // live switches with a down link, unique
  static constexpr uint32_t kFull = 1u << 31;
  std::vector<std::pair<NodeId, uint32_t>> dirty_members_;  // host, member index
  // One job's clean class pairs in row-major order, and the crossing ones
  // still to compute (Assess).
  struct Item {
    enum Kind : uint8_t { kCut, kClean, kCrossing };
    double w;
    uint32_t pid;
    Kind kind;
  };
  std::vector<Item> items_;
  std::vector<uint32_t> todo_;
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

Result<JobAssessment> AssessJobs(const JobSimIndex& index, const model::Drain& drain, JobSimWorkspace& workspace,
                                 std::stop_token stop) {
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

}  // namespace drainwise::sim
