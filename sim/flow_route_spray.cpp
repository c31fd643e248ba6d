// Spray routing (`spray`, `spray-path`, and `adaptive`'s starting point): every demand on its route classes
// with the mode's fixed split fractions, one aggregate per demand.
#include <algorithm>

#include "model/units.h"
#include "sim/flow_sim_state.h"

namespace drainwise::sim {

void FlowSimulator::State::RouteClasses(const model::DrainMask& mask, const RunFrom& from, bool per_path,
                                        bool sort_by_from, bool keep_links, RouteTable& table) const {
  if (const RouteTable* keys = from.routes != nullptr ? from.routes : from.same_keys) {
    table.RegisterAll(*keys);
  } else {
    std::vector<int16_t> src_nics, dst_nics;
    for (const FlowDemand& d : workload.demands) RegisterDemand(d, mask, table, src_nics, dst_nics);
  }
  ComputeClasses(*index, mask,
                 from.routes  ? from.routes
                 : from.reuse ? &from.reuse->table
                              : nullptr,
                 from.routes != nullptr, per_path, sort_by_from, table, keep_links, from.runner);
}

void FlowSimulator::State::RouteSpray(const model::DrainMask& mask, const RunFrom& from, Scenario& sc) const {
  const bool per_path = options.routing == FlowRouting::kSprayPath || options.routing == FlowRouting::kAdaptive;
  const auto& demands = workload.demands;
  std::vector<int16_t> src_nics, dst_nics;
  RouteClasses(mask, from, per_path, false, /*keep_links=*/options.routing == FlowRouting::kAdaptive, sc.table);

  const size_t nd = demands.size();
  std::vector<uint8_t> demand_ok(nd, 0);
  sc.demand_hops.assign(nd, 0);
  sc.demand_changed.assign(nd, 0);
  sc.job_connected.assign(snapshot->jobs->size(), 1);
  std::vector<uint32_t> priv_off(nd + 1, 0), term_off(nd + 1, 0);
  std::vector<LinkShare> priv, srcs, dsts;
  std::vector<ClassTerm> terms;
  // Most demands have two NIC links and one route class: sized once, not
  // grown by doubling (at 32k-moe's 524 k demands the copies and their page
  // faults were a fifth of a run).
  priv.reserve(2 * nd);
  terms.reserve(nd);
  auto add_share = [](std::vector<LinkShare>& v, uint32_t link, double share) {
    for (LinkShare& ls : v) {
      if (ls.link == link) {
        ls.share += share;
        return;
      }
    }
    v.push_back({link, share});
  };
  auto class_index = [&](const RouteTable::Class* c) { return static_cast<uint32_t>(c - sc.table.classes.data()); };
  for (size_t i = 0; i < nd; ++i) {
    const FlowDemand& d = demands[i];
    bool changed = false;
    int hops = 0;
    if (d.src_nic == kAllNics) {
      // Explicit flows: the host-to-host route, NIC links included.
      const RouteTable::Class* c = sc.table.Find(RouteTable::HostKey(d.src, d.dst));
      if (c != nullptr && c->connected) {
        demand_ok[i] = 1;
        hops = c->hops;
        terms.push_back({class_index(c), 1.0});
        changed = !c->clean;
      }
    } else {
      // Even over the reachable (source NIC, destination NIC) pairs; one
      // pair unless a NIC is down.
      UsableNics(topo(), mask, d.src, d.src_nic, src_nics);
      UsableNics(topo(), mask, d.dst, d.dst_nic, dst_nics);
      changed = src_nics.size() != 1 || src_nics[0] != d.src_nic || dst_nics.size() != 1 || dst_nics[0] != d.dst_nic;
      srcs.clear();
      dsts.clear();
      size_t t0 = terms.size();
      int npairs = 0;
      for (int pass = 0; pass < 2; ++pass) {  // pass 0 counts, pass 1 emits
        for (int16_t s : src_nics) {
          for (int16_t t : dst_nics) {
            uint32_t a = NicSwitch(topo(), d.src, s), b = NicSwitch(topo(), d.dst, t);
            const RouteTable::Class* c = a == b ? nullptr : sc.table.Find(RouteTable::SwitchKey(a, b));
            if (a != b && (c == nullptr || !c->connected)) continue;
            if (pass == 0) {
              ++npairs;
              if (c != nullptr) changed = changed || !c->clean;
              continue;
            }
            const double share = 1.0 / npairs;
            add_share(srcs, NicLinkUp(topo(), d.src, s), share);
            add_share(dsts, NicLinkDown(topo(), d.dst, t), share);
            if (c != nullptr) {
              uint32_t ci = class_index(c);
              auto it = std::find_if(terms.begin() + static_cast<std::ptrdiff_t>(t0), terms.end(),
                                     [&](const ClassTerm& x) { return x.cls == ci; });
              if (it != terms.end()) {
                it->scale += share;
              } else {
                terms.push_back({ci, share});
              }
              hops = std::max<int>(hops, 2 + c->hops);
            } else {
              hops = std::max(hops, 2);
            }
          }
        }
        if (npairs == 0) break;
      }
      if (npairs > 0) {
        demand_ok[i] = 1;
        // Sources first, destinations last: the solver's cover links.
        priv.insert(priv.end(), srcs.begin(), srcs.end());
        priv.insert(priv.end(), dsts.begin(), dsts.end());
      }
    }
    if (!demand_ok[i]) sc.job_connected[d.job] = 0;
    sc.demand_hops[i] = static_cast<uint16_t>(hops);
    sc.demand_changed[i] = changed ? 1 : 0;
    priv_off[i + 1] = static_cast<uint32_t>(priv.size());
    term_off[i + 1] = static_cast<uint32_t>(terms.size());
  }

  FluidProblem& p = sc.problem;
  p.capacity_bps = sc.capacity_bps;
  p.classes.reserve(sc.table.classes.size());
  for (const RouteTable::Class& c : sc.table.classes) p.classes.push_back(c.shares);
  // Aggregate i = demand i; a cut-off job's demands carry nothing.
  p.weight.reserve(nd);
  p.bits.reserve(nd);
  sc.agg_demand.resize(nd);
  p.private_links.reserve(priv.size());
  p.terms.reserve(terms.size());
  p.private_offsets.reserve(nd + 1);
  p.term_offsets.reserve(nd + 1);
  for (size_t i = 0; i < nd; ++i) {
    const FlowDemand& d = demands[i];
    const bool live = sc.job_connected[d.job] != 0;
    sc.agg_demand[i] = static_cast<uint32_t>(i);
    p.weight.push_back(d.multiplicity);
    p.bits.push_back(live ? units::BitsFromBytes(d.bytes) : 0.0);
    if (live) {
      for (uint32_t k = priv_off[i]; k < priv_off[i + 1]; ++k) p.AddPrivate(priv[k].link, priv[k].share);
      for (uint32_t k = term_off[i]; k < term_off[i + 1]; ++k) p.AddTerm(terms[k].cls, terms[k].scale);
    } else {
      sc.demand_hops[i] = 0;
    }
    p.private_offsets.push_back(static_cast<uint32_t>(p.private_links.size()));
    p.term_offsets.push_back(static_cast<uint32_t>(p.terms.size()));
  }
}

}  // namespace drainwise::sim
