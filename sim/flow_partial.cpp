// Partial drained runs (hash modes, every seed): route and solve
// only the baseline components a drain touches, take the others from the
// baseline of the same seed.
//
// Why it is exact. Under one seed, a demand the drain leaves alone hashes
// its flows onto the paths it had (flow_route_hash.cpp), so its aggregates
// are the baseline's. Let T be the baseline components holding a changed
// demand (closed so that a routed demand's aggregates are all in T), U one
// of the others. The whole drained problem's tight links decide its
// components; a class link's bound sums, per side, the NIC capacity of
// every component feeding it, so U's share is what the baseline's
// footprint recorded (ComponentFootprint), and the routed part's bounds
// plus the untouched shares are the whole problem's. If no link the routed
// part can fill is used by an untouched component, then:
//   - U keeps its tight links: one U uses but the routed part does not has
//     lost at most the baseline T's traffic, and was tight only if no T
//     aggregate used it (it would have joined them in one component), so
//     its bound is the baseline's; one both use is not tight (checked);
//   - so U is exactly a component of the whole drained problem, with the
//     baseline's aggregates: the full run would copy its solution, as this
//     one does;
//   - the routed part's components are the whole problem's components
//     that hold a routed demand, with the same aggregates in the same
//     order, so their solutions are the full run's to the bit.
// Otherwise (a link that can fill is shared) the run routes everything.
// Loads add the untouched components' recorded loads, so they may differ
// from a full run's in the last bits (another order of summation).
#include <algorithm>
#include <cmath>

#include "sim/buffers.h"
#include "sim/flow_sim_state.h"

namespace drainwise::sim {

bool FlowSimulator::State::PartialDemands(const Scenario& base, const std::vector<uint8_t>& routable,
                                          Scenario& sc) const {
  const auto& demands = workload.demands;
  const size_t nd = demands.size();
  const FluidSolution& bs = base.solution;  // a cached baseline: component ids packed
  const size_t na = bs.aggregate_count();
  const size_t ncomp = base.solution.component_size.size();
  std::vector<uint8_t> routed(nd, 0), touched(ncomp, 0);
  std::vector<uint32_t> queue;  // touched components whose demands are not all routed yet
  auto route = [&](size_t i) {
    routed[i] = 1;
    for (uint32_t a = base.demand_aggs[i]; a < base.demand_aggs[i + 1]; ++a) {
      const uint32_t c = bs.component_of(a);
      if (!touched[c]) {
        touched[c] = 1;
        queue.push_back(c);
      }
    }
  };
  for (size_t i = 0; i < nd; ++i) {
    const uint32_t j = demands[i].job;
    const bool none_before = base.demand_aggs[i] == base.demand_aggs[i + 1];
    if (sc.demand_changed[i] || sc.job_connected[j] != base.job_connected[j] || (routable[i] && none_before)) {
      route(i);
    }
  }
  // Every demand with an aggregate in a touched component, until no
  // component joins (a demand's aggregates may lie in several): a search
  // over the components, through the demands of each (one pass).
  std::vector<uint32_t> comp_off(ncomp + 1, 0), comp_demands(na);
  for (uint32_t a = 0; a < na; ++a) ++comp_off[bs.component_of(a) + 1];
  for (size_t c = 0; c < ncomp; ++c) comp_off[c + 1] += comp_off[c];
  {
    std::vector<uint32_t> fill(comp_off.begin(), comp_off.end() - 1);
    for (uint32_t i = 0; i < nd; ++i) {
      for (uint32_t a = base.demand_aggs[i]; a < base.demand_aggs[i + 1]; ++a)
        comp_demands[fill[bs.component_of(a)]++] = i;
    }
  }
  while (!queue.empty()) {
    const uint32_t c = queue.back();
    queue.pop_back();
    for (uint32_t k = comp_off[c]; k < comp_off[c + 1]; ++k) {
      if (!routed[comp_demands[k]]) route(comp_demands[k]);
    }
  }
  size_t kept = 0;
  for (size_t i = 0; i < nd; ++i) {
    if (routed[i]) kept += base.demand_aggs[i + 1] - base.demand_aggs[i];
  }
  // Nearly all of the problem: a full run costs no more.
  if (10 * kept > 9 * na) return false;
  sc.routed = std::move(routed);
  sc.routed_components = std::move(touched);
  return true;
}

bool FlowSimulator::State::AddOutside(const Scenario& base, Scenario& sc, Outside& out) const {
  const size_t nl = capacity_bps.size();
  out.side0.assign(nl, 0.0);
  out.side1.assign(nl, 0.0);
  out.load.assign(nl, 0.0);
  out.used.assign(nl, 0);
  out.components = 0;
  const ComponentFootprint& f = base.footprint;
  for (size_t c = 0; c < f.component_count(); ++c) {
    if (sc.routed_components[c]) continue;
    ++out.components;
    for (const ComponentFootprint::Entry& e : f.of(c)) {
      out.side0[e.link] += e.side0;
      out.side1[e.link] += e.side1;
      out.load[e.link] += e.load;
      out.used[e.link] = 1;
    }
  }
  FluidProblem& p = sc.problem;
  const size_t nc = p.class_count();
  p.outside_side0.assign(nc, 0.0);
  p.outside_side1.assign(nc, 0.0);
  for (size_t c = 0; c < nc; ++c) {
    if (p.classes[c].size() != 1) return false;  // not a hash problem: never partial
    const uint32_t l = p.classes[c][0].link;
    p.outside_side0[c] = out.side0[l];
    p.outside_side1[c] = out.side1[l];
  }
  const std::vector<uint8_t> tight = TightLinks(p);
  for (size_t l = 0; l < nl; ++l) {
    if (tight[l] && out.used[l]) return false;
  }
  return true;
}

void FlowSimulator::State::FinishPartial(const Scenario& base, const SeedOutcome* base_outcome, const Outside& out,
                                         Scenario& sc) const {
  FluidSolution& sol = sc.solution;
  for (size_t l = 0; l < out.load.size(); ++l) {
    if (out.used[l]) sol.load0_bps[l] += out.load[l];
  }
  sol.components_reused += out.components;
  // Links only the untouched components use, counted as the whole
  // problem's TightLinks counts them (DecideTight): a NIC link (the hash
  // modes' only private links) is tight; a fabric link (a class of its
  // own) is tight when the smaller of its two sides passes its capacity,
  // else redundant when loaded. A link the routed part uses was counted by
  // its solve, with the untouched sides added (AddOutside).
  const FluidProblem& p = sc.problem;
  std::vector<uint8_t> inside(out.used.size(), 0);
  for (const uint32_t l : p.private_links) inside[l] = 1;
  for (const auto& cls : p.classes) {
    for (const LinkShare& ls : cls) inside[ls.link] = 1;
  }
  for (uint32_t l = 0; l < out.used.size(); ++l) {
    if (!out.used[l] || inside[l]) continue;
    if (IsNicLink(topo(), l)) {
      ++sol.tight_links;
      continue;
    }
    const double bound = std::min(out.side0[l], out.side1[l]);
    if (BoundCanSaturate(bound, p.capacity_bps[l])) {
      ++sol.tight_links;
    } else if (bound > 0) {
      ++sol.redundant_links;
    }
  }
  const auto& demands = workload.demands;
  const size_t nj = snapshot->jobs->size();
  sc.outside_job_finish.assign(nj, 0.0);
  // A job with no demand routed keeps its baseline finish, the maximum
  // over the same aggregates (summarised with the baseline), when it was
  // connected there and finished: no pass over its aggregates (~7 ms of
  // a drained seed on the 32k MoE hash case, for the three jobs it leaves).
  std::vector<uint8_t> whole(nj, 0);
  if (base_outcome != nullptr) {
    for (size_t j = 0; j < nj; ++j) {
      const JobTimes& t = base_outcome->times[j];
      whole[j] = t.connected && std::isfinite(t.bandwidth_s);
    }
    for (size_t i = 0; i < demands.size(); ++i) {
      if (sc.routed[i]) whole[demands[i].job] = 0;
    }
  }
  for (size_t j = 0; j < nj; ++j) {
    if (!whole[j]) continue;
    sc.outside_job_finish[j] = base_outcome->times[j].bandwidth_s;
    sol.makespan_s = std::max(sol.makespan_s, sc.outside_job_finish[j]);
  }
  for (size_t i = 0; i < demands.size(); ++i) {
    if (sc.routed[i]) continue;
    sc.demand_hops[i] = base.demand_hops[i];
    if (whole[demands[i].job]) continue;
    double& job = sc.outside_job_finish[demands[i].job];
    for (uint32_t a = base.demand_aggs[i]; a < base.demand_aggs[i + 1]; ++a) {
      const double finish = base.solution.finish(a);
      job = std::max(job, finish);
      if (std::isfinite(finish)) sol.makespan_s = std::max(sol.makespan_s, finish);
    }
  }
}

void FlowSimulator::State::KeepReportData(Scenario& sc, const TaskRunner& runner) const {
  const FluidProblem& p = sc.problem;
  const FluidSolution& sol = sc.solution;
  const auto& demands = workload.demands;
  // Each component's aggregates in ascending order, so by demand and by job.
  std::vector<uint32_t> off, members;
  sol.MembersByComponent(off, members);
  // A component's (job, link) pairs depend on it alone: the components in
  // kParts runs (FluidSolution::ComponentRuns), each with its own list,
  // joined in order (the list one pass makes), and the weights packed
  // beside them (on the 32k MoE hash case, 45 ms of one thread after the
  // first seed's solve).
  constexpr size_t kParts = 4;
  const std::vector<size_t> part_begin = FluidSolution::ComponentRuns(off, kParts);
  std::vector<std::pair<uint32_t, uint32_t>> part_links[kParts];
  std::vector<uint32_t> part_off[kParts];  // per component of the part: where its pairs end
  RunTasks(runner, kParts + 1, [&](size_t t) {
    if (t == kParts) {
      sc.agg_weight = PackedDoubles(p.weight);
      return;
    }
    std::vector<uint32_t> noted(p.capacity_bps.size(), UINT32_MAX);  // per link: the last job noted on it
    auto& links = part_links[t];
    for (size_t c = part_begin[t]; c < part_begin[t + 1]; ++c) {
      const size_t first = links.size();
      for (uint32_t k = off[c]; k < off[c + 1]; ++k) {
        const uint32_t a = members[k];
        if (!(p.bits[a] > 0)) continue;  // as the report: no bits, no crossing
        const uint32_t j = demands[sc.agg_demand[a]].job;
        auto note = [&](uint32_t l) {
          if (noted[l] == j) return;
          noted[l] = j;
          links.push_back({j, l});
        };
        for (uint32_t i = p.private_offsets[a]; i < p.private_offsets[a + 1]; ++i) note(p.private_links[i]);
        for (uint32_t i = p.term_offsets[a]; i < p.term_offsets[a + 1]; ++i) {
          for (const LinkShare& ls : p.classes[p.terms[i]]) note(ls.link);
        }
      }
      for (size_t e = first; e < links.size(); ++e) noted[links[e].second] = UINT32_MAX;
      part_off[t].push_back(static_cast<uint32_t>(links.size()));
    }
  });
  size_t total = 0;
  for (const auto& links : part_links) total += links.size();
  sc.job_links_off.assign(1, 0);
  sc.job_links.clear();
  sc.job_links.reserve(total);
  for (size_t t = 0; t < kParts; ++t) {
    const auto shift = static_cast<uint32_t>(sc.job_links.size());
    for (uint32_t e : part_off[t]) sc.job_links_off.push_back(shift + e);
    sc.job_links.insert(sc.job_links.end(), part_links[t].begin(), part_links[t].end());
    Free(part_links[t]);
  }
}

}  // namespace drainwise::sim
