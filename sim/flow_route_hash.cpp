// Hash routing (`hash`, `hash-rehash`): each rank-level flow pinned to one
// ECMP path by a seeded per-hop hash; flows of a demand on the same path
// are one aggregate, with its NIC links private and one class term per
// fabric link of its path (a class per directed fabric link).
#include <algorithm>

#include "model/units.h"
#include "sim/buffers.h"
#include "sim/flow_sim_state.h"

namespace drainwise::sim {

void FlowSimulator::State::RouteHash(const model::DrainMask& mask, const RunFrom& from, uint64_t seed,
                                     const Scenario* partial, Scenario& sc) const {
  const Scenario* base = from.previous_paths;
  const bool resilient = options.routing == FlowRouting::kHashResilient && base != nullptr;
  const auto& demands = workload.demands;
  RouteClasses(mask, from, false, true, true, sc.table);

  const size_t nd = demands.size();
  sc.demand_hops.assign(nd, 0);
  sc.demand_changed.assign(nd, 0);
  sc.demand_seed_free.assign(nd, 0);
  sc.job_connected.assign(snapshot->jobs->size(), 1);

  // Per-hop hashing along a class DAG from `from` to `to` (a row of the
  // table's forwarding table, or a host pair's walk index: flow_routes.h).
  // Resilient: keep the baseline choice at a hop while it is still a next
  // hop.
  using Hop = WalkIndex::Hop;
  auto walk = [&](const RouteTable::Class& c, const RouteTable::Class* bc, uint32_t from, uint32_t to,
                  uint64_t flow_hash, std::vector<uint32_t>& path) {
    if (!c.hashed()) return;
    // A route the drain left alone is the baseline's (same row or index): same pick.
    const bool keep = resilient && bc != nullptr && bc->hashed() && !bc->SameWalk(c);
    uint32_t node = from;
    for (int guard = 0; node != to && guard < 64; ++guard) {
      auto cand = c.Out(node);
      if (cand.empty()) break;
      const uint64_t h = Mix(flow_hash ^ (static_cast<uint64_t>(node) * 0x9E3779B97F4A7C15ull));
      const Hop* pick = &cand[ModOf(h, cand.size())];
      if (keep) {
        auto bcand = bc->Out(node);
        if (!bcand.empty()) {
          // The baseline's choice where it still is: at the same place
          // when the hop's choices are the baseline's (most hops), else
          // found by its id (both lists are in directed-id order).
          const size_t i = ModOf(h, bcand.size());
          const uint32_t was = bcand[i].directed;
          const Hop* found = nullptr;
          if (i < cand.size() && cand[i].directed == was) {
            found = &cand[i];
          } else {
            auto it = std::lower_bound(cand.begin(), cand.end(), was,
                                       [](const Hop& l, uint32_t d) { return l.directed < d; });
            if (it != cand.end() && it->directed == was) found = &*it;
          }
          pick = found != nullptr ? found : &cand[ModOf(Mix(h), cand.size())];
        }
      }
      path.push_back(pick->directed);
      node = pick->to;
    }
  };

  FluidProblem& p = sc.problem;
  if (from.pool != nullptr) p = from.pool->Take();  // empty, arrays kept
  p.capacity_bps = sc.capacity_bps;
  // At most one aggregate per rank-level flow, two NIC links each and a
  // term per fabric link: reserved once (pages never touched stay free),
  // so millions of aggregates cost no reallocation and copy.
  const size_t max_aggs = std::max<size_t>(nd, workload.rank_flows);
  ReserveWithRoom(p.weight, max_aggs);
  ReserveWithRoom(p.bits, max_aggs);
  ReserveWithRoom(p.private_offsets, max_aggs + 1);
  ReserveWithRoom(p.term_offsets, max_aggs + 1);
  ReserveWithRoom(p.private_links, 2 * max_aggs);
  ReserveWithRoom(p.terms, 4 * max_aggs);
  ReserveWithRoom(sc.agg_demand, max_aggs);
  // One class per directed fabric link, made when a path first crosses
  // it: a hashed path's fabric part is one term per link, so routing needs
  // no table of distinct paths (millions of them, one lookup per aggregate,
  // most of the routing time), the classes are the same for every seed, and
  // a class's rate bound counts each NIC feeding the link once.
  std::vector<uint32_t> link_class(p.capacity_bps.size(), kNoLink);
  auto LinkClass = [&](uint32_t l) {
    if (link_class[l] == kNoLink) {
      const LinkShare one{l, 1.0};
      link_class[l] = p.AddClass(std::span<const LinkShare>(&one, 1));
    }
    return link_class[l];
  };

  // What one range of demands routes with: its scratch and where its
  // aggregates go. The first range writes into the problem itself; the
  // others into lists of their own (fabric links by id, no class made yet),
  // appended in order once every range is routed, their links then given
  // classes in the order of first use: the problem is the one a single
  // pass over the demands makes, to the bit.
  struct Range : HashChoiceScratch, HashRangeArrays {
    std::vector<const RouteTable::Class*> base_classes;  // resilient: per pair, its class in the baseline
    std::vector<uint32_t> flat, off, order;
    struct Packed {
      uint64_t hi, lo;  // a path's middle links, two to a word, in order
      uint32_t flow;
    };
    std::vector<Packed> packed;
    std::vector<uint32_t> cut_jobs;  // jobs with a demand left without a route
    // A range after the first: its fabric links in the order of their
    // first use in the range (seen: per link).
    std::vector<uint32_t> first_links;
    std::vector<uint8_t> seen;
  };
  auto choose = [&](size_t i, Range& r) { return HashChoice(mask, sc.table, i, r, sc.demand_changed[i]); };
  // A partial run first decides what to route from every demand's choices.
  // (The same for every seed: lent by the caller when it made them once.)
  if (partial != nullptr) {
    HashChoices own;
    if (from.choices == nullptr) ChooseAll(mask, sc.table, nullptr, own);
    const HashChoices& ch = from.choices != nullptr ? *from.choices : own;
    sc.demand_changed = ch.changed;
    sc.job_connected = ch.job_connected;
    PartialDemands(*partial, ch.routable, sc);
  }
  // One aggregate: `weight` flows of demand i on a path whose NIC links are
  // `up` and `down` and whose fabric links are `fabric`.
  auto add = [&](Range& r, bool first, size_t i, double weight, double bits, uint32_t up, uint32_t down,
                 std::span<const uint32_t> fabric) {
    if (first) {
      p.weight.push_back(weight);
      p.bits.push_back(bits);
      // Every share and scale is 1: ids only (FluidProblem).
      p.private_links.push_back(up);
      p.private_links.push_back(down);
      p.private_offsets.push_back(static_cast<uint32_t>(p.private_links.size()));
      for (uint32_t l : fabric) p.terms.push_back(LinkClass(l));
      p.term_offsets.push_back(static_cast<uint32_t>(p.terms.size()));
      sc.agg_demand.push_back(static_cast<uint32_t>(i));
      return;
    }
    r.weight.push_back(weight);
    r.bits.push_back(bits);
    r.private_links.push_back(up);
    r.private_links.push_back(down);
    r.links.insert(r.links.end(), fabric.begin(), fabric.end());
    for (uint32_t l : fabric) {
      if (r.seen[l] == 0) {
        r.seen[l] = 1;
        r.first_links.push_back(l);
      }
    }
    r.term_end.push_back(static_cast<uint32_t>(r.links.size()));
    r.agg_demand.push_back(static_cast<uint32_t>(i));
  };
  auto route = [&](size_t i, Range& r, bool first) {
    // A partial run's first pass made every demand's choices and cut off
    // the jobs left without a route: a demand it leaves out needs nothing.
    if (!sc.routed.empty() && !sc.routed[i]) return;
    const FlowDemand& d = demands[i];
    const bool ok = choose(i, r);
    if (!ok) {
      r.cut_jobs.push_back(d.job);
      return;
    }
    const double bits = units::BitsFromBytes(d.bytes);
    std::vector<uint32_t>& flat = r.flat;
    std::vector<uint32_t>& off = r.off;
    flat.clear();
    off.assign(1, 0);
    if (d.src_nic == kAllNics) {
      const RouteTable::Class* c = r.host_class;
      const RouteTable::Class* bc = resilient ? base->table.Find(c->key) : nullptr;
      const HashOf flow_hash(seed, i, 0);
      for (uint32_t k = 0; k < d.multiplicity; ++k) {
        walk(*c, bc, d.src, d.dst, flow_hash(k), flat);
        off.push_back(static_cast<uint32_t>(flat.size()));
      }
    } else {
      if (r.pairs.size() == 1 && r.pairs[0].c == nullptr) {
        // Both NICs on one switch: a single path, nothing to hash.
        add(r, first, i, d.multiplicity, bits, NicLinkUp(topo(), d.src, r.pairs[0].s),
            NicLinkDown(topo(), d.dst, r.pairs[0].t), {});
        sc.demand_hops[i] = 2;
        sc.demand_seed_free[i] = 1;
        return;
      }
      // Each pair's baseline class looked up once, not once per flow
      // (a hash table's lookup: ~7 of 8 per demand on the 32k MoE case).
      r.base_classes.assign(r.pairs.size(), nullptr);
      for (size_t j = 0; resilient && j < r.pairs.size(); ++j) {
        if (r.pairs[j].c != nullptr) r.base_classes[j] = base->table.Find(r.pairs[j].c->key);
      }
      const HashOf flow_hash(seed, i, 0);
      for (uint32_t k = 0; k < d.multiplicity; ++k) {
        const uint64_t fh = flow_hash(k);
        const size_t j = r.pairs.size() == 1 ? 0 : ModOf(Mix(fh ^ 0xA5A5A5A5ull), r.pairs.size());
        const HashPairChoice& pc = r.pairs[j];
        flat.push_back(NicLinkUp(topo(), d.src, pc.s));
        if (pc.c != nullptr) {
          walk(*pc.c, r.base_classes[j], NicSwitch(topo(), d.src, pc.s), NicSwitch(topo(), d.dst, pc.t), fh, flat);
        }
        flat.push_back(NicLinkDown(topo(), d.dst, pc.t));
        off.push_back(static_cast<uint32_t>(flat.size()));
      }
    }
    // Flows of the demand on the same path are one aggregate.
    const size_t nflows = off.size() - 1;
    std::vector<uint32_t>& order = r.order;
    order.resize(nflows);
    for (uint32_t k = 0; k < nflows; ++k) order[k] = k;
    auto path_of = [&](uint32_t k) {
      return std::span<const uint32_t>(flat.data() + off[k], flat.data() + off[k + 1]);
    };
    // In the order of their paths (as sequences of link ids). When every
    // path has one length of 3 to 6 links and the same first and last (one
    // NIC pair, the common case), that is the order of their middle links
    // packed into two words, compared as integers: on the 32k MoE hash case
    // the comparisons of whole paths were ~4 % of a run's CPU time.
    const uint32_t len = nflows > 0 ? off[1] - off[0] : 0;
    bool packed = nflows > 1 && len >= 3 && len <= 6;
    for (size_t k = 1; packed && k < nflows; ++k) {
      packed = off[k + 1] - off[k] == len && flat[off[k]] == flat[0] && flat[off[k] + len - 1] == flat[len - 1];
    }
    if (packed) {
      r.packed.resize(nflows);
      for (uint32_t k = 0; k < nflows; ++k) {
        // (In registers: built in an array on the stack, each key's two
        // words were stored by halves and read back whole, a stalled load
        // per flow.)
        const uint32_t* f = flat.data() + off[k];
        auto middle = [&](uint32_t m) { return m + 1 < len ? uint64_t{f[m]} : 0; };
        r.packed[k] = {middle(1) << 32 | middle(2), middle(3) << 32 | middle(4), k};
      }
      std::sort(r.packed.begin(), r.packed.end(), [](const Range::Packed& x, const Range::Packed& y) {
        return x.hi != y.hi ? x.hi < y.hi : x.lo < y.lo;
      });
      for (uint32_t k = 0; k < nflows; ++k) order[k] = r.packed[k].flow;
    } else {
      std::sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
        auto px = path_of(x), py = path_of(y);
        return std::lexicographical_compare(px.begin(), px.end(), py.begin(), py.end());
      });
    }
    auto same_path = [&](size_t a, size_t b) {  // flows order[a] and order[b]
      return packed ? r.packed[a].hi == r.packed[b].hi && r.packed[a].lo == r.packed[b].lo
                    : std::ranges::equal(path_of(order[a]), path_of(order[b]));
    };
    for (size_t k = 0; k < nflows;) {
      size_t e = k + 1;
      auto pk = path_of(order[k]);
      while (e < nflows && same_path(e, k)) ++e;
      // NIC links private; the fabric part is a class shared by every flow
      // hashed onto the same path, so the solver can tell links that can
      // never saturate (and split the fabric into independent components).
      add(r, first, i, static_cast<double>(e - k), bits, pk.front(), pk.back(),
          pk.size() > 2 ? pk.subspan(1, pk.size() - 2) : std::span<const uint32_t>{});
      sc.demand_hops[i] = std::max<uint16_t>(sc.demand_hops[i], static_cast<uint16_t>(pk.size()));
      k = e;
    }
  };
  // Two ranges of demands with about as many rank-level flows each, routed
  // at once through the runner (a run that is itself a task routes them in
  // one pass): with the solver's components on the same threads, seeds
  // then run one at a time, one problem in memory instead of one per thread.
  // Whatever the size, so that the tests' small fabrics check it too.
  const bool two = from.runner != nullptr && *from.runner && nd >= 2;
  size_t cut = nd;
  if (two) {
    size_t flows = 0;
    cut = 0;
    while (cut < nd && 2 * flows < workload.rank_flows) flows += demands[cut++].multiplicity;
  }
  std::vector<Range> ranges(two ? 2 : 1);
  if (two) {
    // At most one aggregate per flow of the range (pages never touched
    // stay free), in arrays a previous seed's run left in the pool: on the
    // 32k MoE case, 8 seeds, fresh ones were ~18 % of the run's page faults.
    size_t f1 = 0;
    for (size_t i = cut; i < nd; ++i) f1 += std::max<uint32_t>(demands[i].multiplicity, 1);
    Range& r = ranges[1];
    if (from.pool != nullptr) static_cast<HashRangeArrays&>(r) = from.pool->TakeRange();
    r.weight.reserve(f1);
    r.bits.reserve(f1);
    r.private_links.reserve(2 * f1);
    r.links.reserve(4 * f1);
    r.term_end.reserve(f1);
    r.agg_demand.reserve(f1);
    r.seen.assign(p.capacity_bps.size(), 0);
  }
  RunTasks(two ? *from.runner : TaskRunner{}, ranges.size(), [&](size_t k) {
    const size_t b = k == 0 ? 0 : cut, e = k == 0 ? cut : nd;
    for (size_t i = b; i < e; ++i) route(i, ranges[k], k == 0);
  });
  for (size_t k = 0; k < ranges.size(); ++k) {
    Range& r = ranges[k];
    for (uint32_t j : r.cut_jobs) sc.job_connected[j] = 0;
    if (k == 0) continue;
    // The range's new links get classes in the order of their first use
    // (those of a single pass, which would have made them on the way);
    // its arrays are then appended by two tasks at once (a pass of one
    // thread per seed was ~15 ms, on the 32k MoE hash case, with the other
    // idle; the first seed's, into fresh pages, ~43 ms).
    for (uint32_t l : r.first_links) LinkClass(l);
    const size_t a0 = p.weight.size(), t0 = p.terms.size(), na = r.term_end.size();
    const uint32_t priv0 = p.private_offsets.back();
    // Two tasks on disjoint arrays: the per-aggregate columns and private
    // offsets; the terms (mapped to classes) and their offsets.
    RunTasks(two ? *from.runner : TaskRunner{}, 2, [&](size_t h) {
      if (h == 0) {
        p.weight.insert(p.weight.end(), r.weight.begin(), r.weight.end());
        p.bits.insert(p.bits.end(), r.bits.begin(), r.bits.end());
        p.private_links.insert(p.private_links.end(), r.private_links.begin(), r.private_links.end());
        sc.agg_demand.insert(sc.agg_demand.end(), r.agg_demand.begin(), r.agg_demand.end());
        p.private_offsets.resize(a0 + 1 + na);
        for (size_t a = 0; a < na; ++a) p.private_offsets[a0 + 1 + a] = priv0 + 2 * static_cast<uint32_t>(a + 1);
        return;
      }
      p.terms.resize(t0 + r.links.size());
      for (size_t t = 0; t < r.links.size(); ++t) p.terms[t0 + t] = link_class[r.links[t]];
      p.term_offsets.resize(a0 + 1 + na);
      for (size_t a = 0; a < na; ++a) p.term_offsets[a0 + 1 + a] = static_cast<uint32_t>(t0) + r.term_end[a];
    });
  }
  if (two && from.pool != nullptr) from.pool->GiveRange(std::move(static_cast<HashRangeArrays&>(ranges[1])));
  ranges.clear();
  // A cut-off job takes no capacity (when there is one: the pass over
  // every aggregate was ~1 ms of one thread per seed on the 32k MoE case).
  const bool all_connected =
      std::all_of(sc.job_connected.begin(), sc.job_connected.end(), [](uint8_t c) { return c != 0; });
  for (size_t a = 0; !all_connected && a < p.aggregate_count(); ++a) {
    if (!sc.job_connected[demands[sc.agg_demand[a]].job]) {
      p.bits[a] = 0;
      sc.demand_hops[sc.agg_demand[a]] = 0;
    }
  }
}

bool FlowSimulator::State::HashChoice(const model::DrainMask& mask, const RouteTable& table, size_t i,
                                      HashChoiceScratch& r, uint8_t& changed_out) const {
  const FlowDemand& d = workload.demands[i];
  if (d.src_nic == kAllNics) {
    r.host_class = table.Find(RouteTable::HostKey(d.src, d.dst));
    const bool ok = r.host_class != nullptr && r.host_class->connected;
    changed_out = !ok || !r.host_class->clean;
    return ok;
  }
  UsableNics(topo(), mask, d.src, d.src_nic, r.src_nics);
  UsableNics(topo(), mask, d.dst, d.dst_nic, r.dst_nics);
  bool changed =
      r.src_nics.size() != 1 || r.src_nics[0] != d.src_nic || r.dst_nics.size() != 1 || r.dst_nics[0] != d.dst_nic;
  r.pairs.clear();
  for (int16_t s : r.src_nics) {
    for (int16_t t : r.dst_nics) {
      uint32_t a = NicSwitch(topo(), d.src, s), b = NicSwitch(topo(), d.dst, t);
      const RouteTable::Class* c = a == b ? nullptr : table.Find(RouteTable::SwitchKey(a, b));
      if (a != b && (c == nullptr || !c->connected)) continue;
      r.pairs.push_back({s, t, c});
      changed = changed || (c != nullptr && !c->clean);
    }
  }
  changed_out = r.pairs.empty() || changed;
  return !r.pairs.empty();
}

void FlowSimulator::State::ChooseAll(const model::DrainMask& mask, const RouteTable& table, const TaskRunner* runner,
                                     HashChoices& out) const {
  const auto& demands = workload.demands;
  const size_t nd = demands.size();
  out.routable.assign(nd, 0);
  out.changed.assign(nd, 0);
  out.job_connected.assign(snapshot->jobs->size(), 1);
  // Two halves of the demands at once through a runner; each lists the
  // jobs it finds cut off.
  const bool two = runner != nullptr && *runner && nd >= 2;
  std::vector<uint32_t> cut[2];
  RunTasks(two ? *runner : TaskRunner{}, two ? 2 : 1, [&](size_t h) {
    HashChoiceScratch r;
    const size_t b = h == 0 ? 0 : nd / 2, e = two && h == 0 ? nd / 2 : nd;
    for (size_t i = b; i < e; ++i) {
      out.routable[i] = HashChoice(mask, table, i, r, out.changed[i]);
      if (!out.routable[i]) cut[h].push_back(demands[i].job);
    }
  });
  for (const auto& jobs : cut) {
    for (uint32_t j : jobs) out.job_connected[j] = 0;
  }
}

}  // namespace drainwise::sim
