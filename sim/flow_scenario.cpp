#include <algorithm>

#include "model/units.h"
#include "sim/buffers.h"
#include "sim/flow_sim_state.h"

namespace drainwise::sim {

std::vector<JobTimes> TimesOf(const Workload& w, const Scenario& sc, const FlowOptions& o, size_t jobs,
                              const TaskRunner& runner) {
  std::vector<JobTimes> out(jobs);
  for (size_t j = 0; j < jobs; ++j) out[j].connected = sc.job_connected[j] != 0;
  // Each job's last finish, over the aggregates in two halves (at once
  // through a runner; a maximum does not depend on the order). A half
  // keeps its job's maximum in a register while the job lasts (aggregates
  // come by demand, demands by job) and writes it out when the job
  // changes: its array written per aggregate, beside the other half's on
  // one cache line, the two threads took turns with the line (the 32k MoE
  // hash case's baseline seeds: ~20 ms or ~5 ms per pass, by where malloc
  // had put the two arrays).
  const size_t na = sc.agg_demand.size();
  std::vector<double> last[2] = {std::vector<double>(jobs, 0.0), std::vector<double>(jobs, 0.0)};
  RunTasks(runner, 2, [&](size_t half) {
    const size_t begin = half == 0 ? 0 : na / 2, end = half == 0 ? na / 2 : na;
    constexpr uint32_t kNoJob = UINT32_MAX;
    uint32_t job = kNoJob;
    double job_last = 0;
    auto flush = [&] {
      if (job != kNoJob) last[half][job] = std::max(last[half][job], job_last);
    };
    for (size_t a = begin; a < end; ++a) {
      const uint32_t j = w.demands[sc.agg_demand[a]].job;
      if (j != job) {
        flush();
        job = j;
        job_last = 0;
      }
      if (out[j].connected) job_last = std::max(job_last, sc.solution.finish_s[a]);
    }
    flush();
  });
  for (size_t j = 0; j < jobs; ++j) out[j].bandwidth_s = std::max(last[0][j], last[1][j]);
  // A partial run: the aggregates left in the baseline.
  for (size_t j = 0; j < sc.outside_job_finish.size(); ++j) {
    if (out[j].connected) out[j].bandwidth_s = std::max(out[j].bandwidth_s, sc.outside_job_finish[j]);
  }
  for (const CollectiveSteps& c : w.collectives) {
    if (!out[c.job].connected) continue;
    int hops = 0;
    for (uint32_t d = c.first_demand; d < c.end_demand; ++d) hops = std::max<int>(hops, sc.demand_hops[d]);
    out[c.job].max_hops = std::max(out[c.job].max_hops, hops);
    // A dependent step waits for one round trip over its path (data there,
    // acknowledgement back) plus the per-message overhead.
    out[c.job].latency_s += c.steps * (2.0 * hops * o.per_hop_latency_s + o.per_message_overhead_s);
  }
  return out;
}

// Per aggregate of `sc`: its index in `base` when it is identical there
// (same demand, weight, size and route), else kNoLink. Decided per demand
// from the routes, so `base` needs no FluidProblem.
void FlowSimulator::State::ReuseMap(const Scenario& base, const Scenario& sc, const TaskRunner* runner,
                                    std::vector<uint32_t>& out) const {
  const size_t nd = workload.demands.size(), na = sc.agg_demand.size();
  ResizeWithRoom(out, na);  // every entry is written below
  auto same_job_state = [&](size_t i) {
    uint32_t j = workload.demands[i].job;
    return sc.job_connected[j] == base.job_connected[j];
  };
  if (!hash()) {  // aggregate i = demand i in both
    for (size_t i = 0; i < na; ++i) {
      out[i] = i < nd && !sc.demand_changed[i] && same_job_state(i) ? static_cast<uint32_t>(i) : kNoLink;
    }
    return;
  }
  // Hash modes: a demand whose routes are unchanged hashes as it did under
  // the same seed; under another seed only when nothing is hashed.
  auto same_flows = [&](size_t i) {
    if (sc.demand_changed[i]) return false;
    return sc.seed == base.seed || (sc.demand_seed_free[i] && base.demand_seed_free[i]);
  };
  // Aggregates are emitted in demand order in both scenarios: a range of
  // demands starts where the first aggregate of its first demand is. Two
  // ranges at once through a runner (one thread's pass left the other
  // idle, once per seed).
  const bool ranges = !base.demand_aggs.empty();
  auto first_of = [](const std::vector<uint32_t>& agg_demand, size_t i) {
    return static_cast<size_t>(std::lower_bound(agg_demand.begin(), agg_demand.end(), i) - agg_demand.begin());
  };
  const bool two = runner != nullptr && *runner && nd >= 2;
  RunTasks(two ? *runner : TaskRunner{}, two ? 2 : 1, [&](size_t h) {
    const size_t d0 = h == 0 ? 0 : nd / 2, d1 = two && h == 0 ? nd / 2 : nd;
    size_t a = first_of(sc.agg_demand, d0);
    size_t b = ranges ? base.demand_aggs[d0] : first_of(base.agg_demand, d0);
    for (size_t i = d0; i < d1; ++i) {
      size_t a1 = a, b1 = ranges ? base.demand_aggs[i + 1] : b;
      while (a1 < na && sc.agg_demand[a1] == i) ++a1;
      while (!ranges && b1 < base.agg_demand.size() && base.agg_demand[b1] == i) ++b1;
      const bool same = a1 - a == b1 - b && same_job_state(i) && same_flows(i);
      for (size_t k = 0; k < a1 - a; ++k) out[a + k] = same ? static_cast<uint32_t>(b + k) : kNoLink;
      a = a1;
      b = b1;
    }
  });
}

Result<Scenario> FlowSimulator::State::Run(const model::DrainMask& mask, const RunFrom& from, uint64_t seed,
                                           std::stop_token stop) const {
  Scenario sc;
  sc.seed = seed;
  sc.capacity_bps = capacity_bps;
  // A partial drained run (flow_partial.cpp) when only a summary is wanted
  // and the baseline has a footprint; everything when the parts it leaves
  // out turn out coupled to the routed ones.
  Outside outside;
  const Scenario* base = from.reuse;
  const bool may_skip = partial_runs() && from.summary_only && base != nullptr && !base->footprint.empty();
  if (hash()) {
    RouteHash(mask, from, seed, may_skip ? base : nullptr, sc);
    if (!sc.routed.empty() && !AddOutside(*base, sc, outside)) {
      if (from.pool != nullptr) from.pool->Give(std::move(sc.problem));
      sc = Scenario{};
      sc.seed = seed;
      sc.capacity_bps = capacity_bps;
      RouteHash(mask, from, seed, nullptr, sc);
    }
  } else {
    RouteSpray(mask, from, sc);
  }
  if (stop.stop_requested()) return MakeError(ErrorCode::kCancelled, "flow simulation cancelled");
  ReuseHint hint;
  std::vector<uint32_t> previous = from.pool != nullptr ? from.pool->TakeIndex() : std::vector<uint32_t>{};
  if (from.reuse != nullptr && options.overload_penalty == 0) {
    ReuseMap(*from.reuse, sc, from.runner, previous);
    // adaptive: this first solve is spray-path's, as the reused one.
    hint = {&from.reuse->SpraySolution(), &previous};
  }
  SolverScratch scratch = from.pool != nullptr ? from.pool->TakeScratch() : SolverScratch{};
  FluidSolution::Columns columns = from.pool != nullptr ? from.pool->TakeColumns() : FluidSolution::Columns{};
  // At most one entry per two aggregates or per directed link, or none.
  FluidOptions solve{options.incremental_solver, &scratch, from.runner, from.footprint ? &sc.footprint : nullptr,
                     std::max(sc.problem.aggregate_count() / 2, sc.capacity_bps.size())};
  solve.storage = &columns;
  auto sol = SolveFluid(sc.problem, stop, hint, solve);
  if (!sol) return tl::unexpected(sol.error());
  sc.solution = std::move(*sol);
  if (!sc.routed.empty()) FinishPartial(*base, from.reuse_outcome, outside, sc);
  if (options.routing == FlowRouting::kAdaptive) {
    if (auto ok = Adapt(from.reuse, sc, from.runner, stop); !ok) return tl::unexpected(ok.error());
  }
  if (options.overload_penalty > 0) {
    // Links at or past the threshold at t = 0 lose a further share of their
    // capacity; the fluid model runs again on the penalised capacities.
    for (size_t l = 0; l < sc.capacity_bps.size(); ++l) {
      const double line = index->capacity_bps_directed(static_cast<uint32_t>(l)) * options.goodput;
      const double bg = options.background_bps.empty() ? 0.0 : options.background_bps[l];
      if (line > 0 && sc.solution.load0_bps[l] + bg >= options.overload_threshold * line * (1 - 1e-9)) {
        sc.problem.capacity_bps[l] *= 1 - options.overload_penalty;
        ++sc.links_penalised;
      }
    }
    if (sc.links_penalised > 0) {
      sc.capacity_bps = sc.problem.capacity_bps;
      auto again = SolveFluid(sc.problem, stop, {}, solve);
      if (!again) return tl::unexpected(again.error());
      sc.solution = std::move(*again);
    }
  }
  if (from.pool != nullptr) {
    from.pool->GiveScratch(std::move(scratch));
    from.pool->GiveIndex(std::move(previous));
  }
  return sc;
}

}  // namespace drainwise::sim
