// Hash routing (`hash`, `hash-rehash`): each rank-level flow pinned to one
// ECMP path by a seeded per-hop hash; flows of a demand on the same path
// are one aggregate, with its NIC links private and one class term per
// fabric link of its path (a class per directed fabric link).
#include <algorithm>

#include "model/units.h"
#include "sim/flow_sim_state.h"
#include "sim/huge_pages.h"

namespace drainwise::sim {

void FlowSimulator::State::RouteHash(const model::DrainMask& mask, const RunFrom& from, uint64_t seed,
                                     const Scenario* partial, Scenario& sc) const {
  const Scenario* base = from.previous_paths;
  const bool resilient = options.routing == FlowRouting::kHashResilient && base != nullptr;
  const auto& demands = workload.demands;
  std::vector<int16_t> src_nics, dst_nics;
  RouteClasses(mask, from, false, true, true, sc.table);

  const size_t nd = demands.size();
  sc.demand_hops.assign(nd, 0);
  sc.demand_changed.assign(nd, 0);
  sc.demand_seed_free.assign(nd, 0);
  sc.job_connected.assign(snapshot->jobs->size(), 1);

  // Per-hop hashing along a class DAG from `from` to `to` (its walk index,
  // made once per table: flow_routes.h). Resilient: keep the baseline
  // choice at a hop while it is still a next hop.
  using Hop = WalkIndex::Hop;
  auto walk = [&](const RouteTable::Class& c, const RouteTable::Class* bc, uint32_t from, uint32_t to,
                  uint64_t flow_hash, std::vector<uint32_t>& path) {
    if (c.walk == nullptr) return;
    uint32_t node = from;
    for (int guard = 0; node != to && guard < 64; ++guard) {
      auto cand = c.walk->OutOf(node);
      if (cand.empty()) break;
      const uint64_t h = Mix(flow_hash ^ (static_cast<uint64_t>(node) * 0x9E3779B97F4A7C15ull));
      const Hop* pick = &cand[h % cand.size()];
      // A route the drain left alone is the baseline's (same index): same pick.
      if (resilient && bc != nullptr && bc->walk != nullptr && bc->walk != c.walk) {
        auto bcand = bc->walk->OutOf(node);
        if (!bcand.empty()) {
          const Hop& was = bcand[h % bcand.size()];
          auto it = std::find_if(cand.begin(), cand.end(), [&](const Hop& l) { return l.directed == was.directed; });
          pick = it != cand.end() ? &*it : &cand[Mix(h) % cand.size()];
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
  ReserveHuge(p.weight, max_aggs);
  ReserveHuge(p.bits, max_aggs);
  ReserveHuge(p.private_offsets, max_aggs + 1);
  ReserveHuge(p.term_offsets, max_aggs + 1);
  ReserveHuge(p.private_links, 2 * max_aggs);
  ReserveHuge(p.terms, 4 * max_aggs);
  ReserveHuge(sc.agg_demand, max_aggs);
  std::vector<uint32_t> flat, off, order;
  struct PairChoice {
    int16_t s, t;
    const RouteTable::Class* c;
  };
  std::vector<PairChoice> pairs;
  std::vector<LinkShare> links;
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
  // Demand i's route choices: its class (a host-level demand) or its usable
  // (source NIC, destination NIC, class) pairs; false when it has no route.
  // Sets demand_changed[i]: another NIC, or a route the drain touches (an
  // unchanged demand hashes as in the baseline of the same seed).
  const RouteTable::Class* host_class = nullptr;
  auto choose = [&](size_t i) {
    const FlowDemand& d = demands[i];
    if (d.src_nic == kAllNics) {
      host_class = sc.table.Find(RouteTable::HostKey(d.src, d.dst));
      const bool ok = host_class != nullptr && host_class->connected;
      sc.demand_changed[i] = !ok || !host_class->clean;
      return ok;
    }
    UsableNics(topo(), mask, d.src, d.src_nic, src_nics);
    UsableNics(topo(), mask, d.dst, d.dst_nic, dst_nics);
    bool changed = src_nics.size() != 1 || src_nics[0] != d.src_nic || dst_nics.size() != 1 || dst_nics[0] != d.dst_nic;
    pairs.clear();
    for (int16_t s : src_nics) {
      for (int16_t t : dst_nics) {
        uint32_t a = NicSwitch(topo(), d.src, s), b = NicSwitch(topo(), d.dst, t);
        const RouteTable::Class* c = a == b ? nullptr : sc.table.Find(RouteTable::SwitchKey(a, b));
        if (a != b && (c == nullptr || !c->connected)) continue;
        pairs.push_back({s, t, c});
        changed = changed || (c != nullptr && !c->clean);
      }
    }
    sc.demand_changed[i] = pairs.empty() || changed;
    return !pairs.empty();
  };
  // A partial run first decides what to route from every demand's choices.
  if (partial != nullptr) {
    std::vector<uint8_t> routable(nd, 0);
    for (size_t i = 0; i < nd; ++i) {
      routable[i] = choose(i);
      if (!routable[i]) sc.job_connected[demands[i].job] = 0;
    }
    PartialDemands(*partial, routable, sc);
  }
  for (size_t i = 0; i < nd; ++i) {
    const FlowDemand& d = demands[i];
    const bool ok = choose(i);
    if (!ok) {
      sc.job_connected[d.job] = 0;
      continue;
    }
    if (!sc.routed.empty() && !sc.routed[i]) continue;
    flat.clear();
    off.assign(1, 0);
    if (d.src_nic == kAllNics) {
      const RouteTable::Class* c = host_class;
      const RouteTable::Class* bc = resilient ? base->table.Find(c->key) : nullptr;
      for (uint32_t k = 0; k < d.multiplicity; ++k) {
        walk(*c, bc, d.src, d.dst, Hash(seed, i, k, 0), flat);
        off.push_back(static_cast<uint32_t>(flat.size()));
      }
    } else {
      if (pairs.size() == 1 && pairs[0].c == nullptr) {
        // Both NICs on one switch: a single path, nothing to hash.
        links.clear();
        links.push_back({NicLinkUp(topo(), d.src, pairs[0].s), 1.0});
        links.push_back({NicLinkDown(topo(), d.dst, pairs[0].t), 1.0});
        p.AddAggregate(d.multiplicity, units::BitsFromBytes(d.bytes), links, {});
        sc.agg_demand.push_back(static_cast<uint32_t>(i));
        sc.demand_hops[i] = 2;
        sc.demand_seed_free[i] = 1;
        continue;
      }
      for (uint32_t k = 0; k < d.multiplicity; ++k) {
        const uint64_t fh = Hash(seed, i, k, 0);
        const PairChoice& pc = pairs.size() == 1 ? pairs[0] : pairs[Mix(fh ^ 0xA5A5A5A5ull) % pairs.size()];
        flat.push_back(NicLinkUp(topo(), d.src, pc.s));
        if (pc.c != nullptr) {
          const RouteTable::Class* bc = resilient ? base->table.Find(pc.c->key) : nullptr;
          walk(*pc.c, bc, NicSwitch(topo(), d.src, pc.s), NicSwitch(topo(), d.dst, pc.t), fh, flat);
        }
        flat.push_back(NicLinkDown(topo(), d.dst, pc.t));
        off.push_back(static_cast<uint32_t>(flat.size()));
      }
    }
    // Flows of the demand on the same path are one aggregate.
    const size_t nflows = off.size() - 1;
    order.resize(nflows);
    for (uint32_t k = 0; k < nflows; ++k) order[k] = k;
    auto path_of = [&](uint32_t k) {
      return std::span<const uint32_t>(flat.data() + off[k], flat.data() + off[k + 1]);
    };
    std::sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
      auto px = path_of(x), py = path_of(y);
      return std::lexicographical_compare(px.begin(), px.end(), py.begin(), py.end());
    });
    for (size_t k = 0; k < nflows;) {
      size_t e = k + 1;
      auto pk = path_of(order[k]);
      while (e < nflows && std::ranges::equal(path_of(order[e]), pk)) ++e;
      // NIC links private; the fabric part is a class shared by every flow
      // hashed onto the same path, so the solver can tell links that can
      // never saturate (and split the fabric into independent components).
      // (AddAggregate, written out: no temporary lists, millions of times.)
      p.weight.push_back(static_cast<double>(e - k));
      p.bits.push_back(units::BitsFromBytes(d.bytes));
      // Every share and scale is 1: ids only (FluidProblem).
      p.private_links.push_back(pk.front());
      p.private_links.push_back(pk.back());
      p.private_offsets.push_back(static_cast<uint32_t>(p.private_links.size()));
      for (size_t h = 1; h + 1 < pk.size(); ++h) p.terms.push_back(LinkClass(pk[h]));
      p.term_offsets.push_back(static_cast<uint32_t>(p.terms.size()));
      sc.agg_demand.push_back(static_cast<uint32_t>(i));
      sc.demand_hops[i] = std::max<uint16_t>(sc.demand_hops[i], static_cast<uint16_t>(pk.size()));
      k = e;
    }
  }
  // A cut-off job takes no capacity.
  for (size_t a = 0; a < p.aggregate_count(); ++a) {
    if (!sc.job_connected[demands[sc.agg_demand[a]].job]) {
      p.bits[a] = 0;
      sc.demand_hops[sc.agg_demand[a]] = 0;
    }
  }
}

}  // namespace drainwise::sim
