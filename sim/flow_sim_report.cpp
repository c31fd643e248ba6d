#include <algorithm>
#include <cmath>
#include <limits>

#include "model/units.h"
#include "sim/flow_ring_phase.h"
#include "sim/flow_sim_state.h"

namespace drainwise::sim {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

SeedOutcome Summarize(const FlowSimulator::State& st, const Scenario& sc, const TaskRunner& runner) {
  SeedOutcome out;
  out.times = TimesOf(st.workload, sc, st.options, st.snapshot->jobs->size(), runner);
  out.load0_bps = sc.solution.load0_bps;
  out.components_solved = sc.solution.components_solved;
  out.components_reused = sc.solution.components_reused;
  out.events = sc.solution.events;
  out.aggregates = sc.problem.aggregate_count();
  out.makespan_s = sc.solution.makespan_s;
  return out;
}

FlowReport BuildFlowReport(const FlowSimulator::State& st, const model::DrainMask& mask, const Scenario& d0,
                           const std::vector<SeedOutcome>& drained) {
  const model::Topology& topo = st.topo();
  const model::JobSet& jobs = *st.snapshot->jobs;
  const FlowOptions& o = st.options;
  const size_t nseeds = st.baseline_outcomes.size();
  const size_t nj = jobs.size();
  const size_t ndl = 2 * topo.link_count();

  FlowReport rep;
  rep.capacity_bps.resize(ndl);
  for (size_t l = 0; l < ndl; ++l)
    rep.capacity_bps[l] = st.index->capacity_bps_directed(static_cast<uint32_t>(l)) * o.goodput;
  rep.background_bps = o.background_bps;
  rep.baseline_load_bps.assign(ndl, 0.0);
  rep.drained_load_bps.assign(ndl, 0.0);
  rep.link_down.assign(ndl, 0);
  for (LinkId l : mask.down_links()) rep.link_down[2 * l.value] = rep.link_down[2 * l.value + 1] = 1;

  // Per job, per seed.
  rep.jobs.resize(nj);
  std::vector<double> base_sum(nj, 0.0), drain_sum(nj, 0.0), slow_sum(nj, 0.0);
  for (size_t k = 0; k < nseeds; ++k) {
    const auto& bt = st.baseline_outcomes[k].times;
    const auto& dt = drained[k].times;
    for (size_t l = 0; l < ndl; ++l) {
      rep.baseline_load_bps[l] += st.baseline_outcomes[k].load0_bps[l] / static_cast<double>(nseeds);
      rep.drained_load_bps[l] += drained[k].load0_bps[l] / static_cast<double>(nseeds);
    }
    for (size_t j = 0; j < nj; ++j) {
      const model::Job& job = jobs.job(model::JobId(j));
      FlowJobResult& r = rep.jobs[j];
      auto side = [&](FlowJobSide& s, const JobTimes& t, double& sum) {
        s.connected = t.connected;
        if (!t.connected) return;
        const double comm = t.bandwidth_s + t.latency_s;
        sum += comm;
        s.max_hops = std::max(s.max_hops, t.max_hops);
        if (k == 0 || comm > s.comm_s_worst) {
          s.comm_s_worst = comm;
          s.iteration_s_worst = Iteration(job, comm);
        }
        s.bandwidth_s += t.bandwidth_s / static_cast<double>(nseeds);
        s.latency_s += t.latency_s / static_cast<double>(nseeds);
      };
      const JobTimes dj = WithRingPhaseCredit(st.workload, job, static_cast<uint32_t>(j), bt[j], dt[j],
                                              o.ring_phase_overlap);  // flow_ring_phase.h
      side(r.baseline, bt[j], base_sum[j]);
      side(r.drained, dj, drain_sum[j]);
      if (bt[j].connected && dj.connected) {
        const double bi = Iteration(job, bt[j].bandwidth_s + bt[j].latency_s);
        const double di = Iteration(job, dj.bandwidth_s + dj.latency_s);
        const double pct = bi > 0 ? (di / bi - 1) * 100 : 0.0;
        slow_sum[j] += pct;
        if (k == 0 || pct > r.slowdown_pct_worst.value_or(-kInf)) r.slowdown_pct_worst = pct;
      }
    }
  }
  for (size_t j = 0; j < nj; ++j) {
    const model::Job& job = jobs.job(model::JobId(j));
    FlowJobResult& r = rep.jobs[j];
    r.job = model::JobId(j);
    r.flows = st.workload.job_flows[j];
    for (auto [s, sum] : {std::pair{&r.baseline, base_sum[j]}, std::pair{&r.drained, drain_sum[j]}}) {
      if (!s->connected) {
        *s = FlowJobSide{};
        s->connected = false;
        continue;
      }
      s->comm_s = sum / static_cast<double>(nseeds);
      s->iteration_s = Iteration(job, s->comm_s);
    }
    if (r.baseline.connected && r.drained.connected) {
      r.slowdown_pct = slow_sum[j] / static_cast<double>(nseeds);
    } else {
      r.slowdown_pct_worst.reset();
    }
  }

  // Links to describe: hot links and every job's bottlenecks (first seed).
  auto utilisation = [&](uint32_t l, double load) {
    const double bg = rep.background_bps.empty() ? 0.0 : rep.background_bps[l];
    return rep.capacity_bps[l] > 0 ? (load + bg) / rep.capacity_bps[l] : 0.0;
  };
  {
    std::vector<uint32_t> cand;
    for (uint32_t l = 0; l < ndl; ++l) {
      if (rep.link_down[l] || !(rep.drained_load_bps[l] > 0)) continue;
      if (o.hot_links_fabric_only && IsNicLink(topo, l)) continue;
      cand.push_back(l);
    }
    // Fullest first; among equally full links, those the drain loaded most.
    auto hotter = [&](uint32_t x, uint32_t y) {
      double ux = utilisation(x, rep.drained_load_bps[x]), uy = utilisation(y, rep.drained_load_bps[y]);
      if (std::abs(ux - uy) > 1e-9) return ux > uy;
      double gx = rep.drained_load_bps[x] - rep.baseline_load_bps[x],
             gy = rep.drained_load_bps[y] - rep.baseline_load_bps[y];
      if (std::abs(gx - gy) > 1e-3) return gx > gy;
      if (rep.drained_load_bps[x] != rep.drained_load_bps[y]) return rep.drained_load_bps[x] > rep.drained_load_bps[y];
      return x < y;
    };
    size_t n = std::min<size_t>(cand.size(), static_cast<size_t>(std::max(0, o.hot_links)));
    std::partial_sort(cand.begin(), cand.begin() + static_cast<std::ptrdiff_t>(n), cand.end(), hotter);
    for (size_t i = 0; i < n; ++i) {
      FlowLinkUse u;
      u.directed_link = cand[i];
      u.load_bps = rep.drained_load_bps[cand[i]];
      u.utilisation = utilisation(cand[i], u.load_bps);
      rep.hot_links.push_back(std::move(u));
    }
  }
  // The first seed's aggregates come in demand order and the demands are
  // grouped by job: job j's aggregates are [job_aggs_off[j], job_aggs_off[j + 1]).
  // A partial run (d0.routed) has those of the demands it routed; the
  // others' are the first baseline's, the same aggregates with the same
  // solution (flow_partial.cpp), which keeps what the report reads of
  // them (Scenario::agg_weight, job_links): the report is the full run's.
  std::vector<uint32_t> job_aggs_off(nj + 1);
  for (size_t j = 0; j <= nj; ++j) {
    job_aggs_off[j] = static_cast<uint32_t>(
        std::lower_bound(d0.agg_demand.begin(), d0.agg_demand.end(), st.workload.job_first_demand[j]) -
        d0.agg_demand.begin());
  }
  const bool partial = !d0.routed.empty();
  const Scenario& base = st.baseline[0];
  {
    // Per job: the bits fixed at each bottleneck link, summed in a dense
    // per-link array (its touched entries reset after each job).
    const FluidSolution& sol = d0.solution;
    std::vector<double> fixed(ndl, 0.0);
    std::vector<uint8_t> listed(ndl, 0);
    std::vector<uint32_t> links;
    std::vector<std::pair<uint32_t, double>> v;  // (link, bits fixed there)
    for (size_t j = 0; j < nj; ++j) {
      if (!rep.jobs[j].drained.connected) continue;
      uint32_t critical = kNoLink;
      double critical_finish = -1;
      links.clear();
      // One aggregate: its bottleneck at t = 0, bits fixed there, finish.
      auto add = [&](uint32_t l, double bits, double weight, double finish) {
        if (l == kNoLink || !(bits > 0)) return;
        if (!listed[l]) {
          listed[l] = 1;
          links.push_back(l);
        }
        fixed[l] += bits * weight;
        if (finish > critical_finish) {
          critical_finish = finish;
          critical = l;
        }
      };
      if (!partial) {
        for (uint32_t a = job_aggs_off[j]; a < job_aggs_off[j + 1]; ++a) {
          add(sol.bottleneck0[a], d0.problem.bits[a], d0.problem.weight[a], sol.finish_s[a]);
        }
      } else {
        // Demand by demand, in order: the routed ones' aggregates from the
        // run, the others' from the baseline (bits as the run would give
        // them: the job is connected, and was in the baseline).
        uint32_t a = job_aggs_off[j];
        for (uint32_t i = st.workload.job_first_demand[j]; i < st.workload.job_first_demand[j + 1]; ++i) {
          if (d0.routed[i]) {
            for (; a < job_aggs_off[j + 1] && d0.agg_demand[a] == i; ++a) {
              add(sol.bottleneck0[a], d0.problem.bits[a], d0.problem.weight[a], sol.finish_s[a]);
            }
            continue;
          }
          const double bits = units::BitsFromBytes(st.workload.demands[i].bytes);
          for (uint32_t b = base.demand_aggs[i]; b < base.demand_aggs[i + 1]; ++b) {
            add(base.solution.bottleneck0[b], bits, base.agg_weight[b], base.solution.finish(b));
          }
        }
      }
      v.clear();
      for (uint32_t l : links) {
        v.push_back({l, fixed[l]});
        fixed[l] = 0;
        listed[l] = 0;
      }
      std::sort(v.begin(), v.end(), [&](const auto& x, const auto& y) {
        bool cx = x.first == critical, cy = y.first == critical;
        if (cx != cy) return cx;
        return x.second != y.second ? x.second > y.second : x.first < y.first;
      });
      for (size_t i = 0; i < v.size() && i < static_cast<size_t>(std::max(0, o.bottlenecks_per_job)); ++i) {
        FlowLinkUse u;
        u.directed_link = v[i].first;
        u.load_bps = rep.drained_load_bps[v[i].first];
        u.utilisation = utilisation(v[i].first, u.load_bps);
        rep.jobs[j].bottlenecks.push_back(std::move(u));
      }
    }
  }
  // Jobs crossing each described link, in one pass over the routes.
  {
    std::vector<uint32_t> slot(ndl, UINT32_MAX);
    size_t nslots = 0;
    std::vector<FlowLinkUse*> uses;
    auto note = [&](FlowLinkUse& u) {
      if (slot[u.directed_link] == UINT32_MAX) slot[u.directed_link] = static_cast<uint32_t>(nslots++);
      uses.push_back(&u);
    };
    for (auto& u : rep.hot_links) note(u);
    for (auto& r : rep.jobs) {
      for (auto& u : r.bottlenecks) note(u);
    }
    const FluidProblem& p = d0.problem;
    std::vector<std::vector<uint32_t>> class_slots(p.class_count());
    for (size_t c = 0; c < p.class_count(); ++c) {
      for (const LinkShare& ls : p.classes[c]) {
        if (slot[ls.link] != UINT32_MAX) class_slots[c].push_back(slot[ls.link]);
      }
    }
    // Jobs in ascending order, each noted once per slot: sorted lists.
    std::vector<std::vector<model::JobId>> by_slot(nslots);
    std::vector<uint32_t> last_job(nslots, UINT32_MAX);
    auto cross = [&](uint32_t s, uint32_t j) {
      if (last_job[s] == j) return;
      last_job[s] = j;
      by_slot[s].push_back(model::JobId(j));
    };
    for (uint32_t j = 0; j < nj; ++j) {
      for (uint32_t a = job_aggs_off[j]; a < job_aggs_off[j + 1]; ++a) {
        if (!(p.bits[a] > 0)) continue;
        for (uint32_t i = p.private_offsets[a]; i < p.private_offsets[a + 1]; ++i) {
          if (slot[p.private_links[i]] != UINT32_MAX) cross(slot[p.private_links[i]], j);
        }
        for (uint32_t i = p.term_offsets[a]; i < p.term_offsets[a + 1]; ++i) {
          for (uint32_t s : class_slots[p.terms[i]]) cross(s, j);
        }
      }
    }
    if (partial) {
      // The components the run left in the baseline, then each list back
      // in ascending order, each job once.
      for (size_t c = 0; c + 1 < base.job_links_off.size(); ++c) {
        if (d0.routed_components[c]) continue;
        for (uint32_t e = base.job_links_off[c]; e < base.job_links_off[c + 1]; ++e) {
          const auto [j, l] = base.job_links[e];
          if (slot[l] != UINT32_MAX) by_slot[slot[l]].push_back(model::JobId(j));
        }
      }
      for (auto& v : by_slot) {
        std::sort(v.begin(), v.end());
        v.erase(std::unique(v.begin(), v.end()), v.end());
      }
    }
    for (FlowLinkUse* u : uses) {
      const auto& v = by_slot[slot[u->directed_link]];
      u->job_count = v.size();
      u->jobs.assign(v.begin(),
                     v.begin() + static_cast<std::ptrdiff_t>(std::min<size_t>(v.size(), std::max(0, o.jobs_per_link))));
    }
  }

  FlowModelInfo& m = rep.model;
  m.routing = o.routing;
  m.seeds = static_cast<int>(nseeds);
  m.goodput = o.goodput;
  m.routing_source = o.routing_source;
  m.per_hop_latency_s = o.per_hop_latency_s;
  m.per_message_overhead_s = o.per_message_overhead_s;
  m.overload_threshold = o.overload_threshold;
  m.overload_penalty = o.overload_penalty;
  m.ring_phase_overlap = o.ring_phase_overlap;
  m.background = !o.background_bps.empty();
  m.links_penalised = d0.links_penalised;
  m.flows = st.workload.rank_flows;
  m.demands = st.workload.demands.size();
  m.aggregates = d0.problem.aggregate_count();
  if (partial) {
    for (size_t i = 0; i < d0.routed.size(); ++i) {
      if (!d0.routed[i]) m.aggregates += base.demand_aggs[i + 1] - base.demand_aggs[i];
    }
  }
  m.route_classes = d0.table.classes.size();
  m.tight_links = d0.solution.tight_links;
  m.redundant_links = d0.solution.redundant_links;
  for (const auto& a : d0.adapted) m.classes_adapted += a.empty() ? 0 : 1;
  for (const SeedOutcome& sc : drained) {
    m.components_solved += sc.components_solved;
    m.components_reused += sc.components_reused;
    m.events += sc.events;
    m.aggregates_routed += sc.aggregates;
    m.simulated_s = std::max(m.simulated_s, sc.makespan_s);
  }
  return rep;
}

}  // namespace drainwise::sim
