#include "sim/flow_sim.h"

#include <algorithm>
#include <optional>

#include "sim/buffers.h"
#include "sim/flow_sim_state.h"

namespace drainwise::sim {

FlowSimulator::FlowSimulator(std::unique_ptr<State> state) : state_(std::move(state)) {}
FlowSimulator::~FlowSimulator() = default;
const FlowOptions& FlowSimulator::options() const { return state_->options; }
const model::Snapshot& FlowSimulator::snapshot() const { return *state_->snapshot; }

namespace {

size_t BytesOf(const RouteTable& t) {
  size_t n = sim::BytesOf(t.classes);
  for (const auto& v : t.own_links) n += sim::BytesOf(v);
  for (const auto& v : t.own_shares) n += sim::BytesOf(v);
  for (const WalkIndex& w : t.own_walks) n += sim::BytesOf(w.nodes) + sim::BytesOf(w.begin) + sim::BytesOf(w.hops);
  if (t.own_fib) n += t.own_fib->bytes();
  // A node per entry (key, value, next pointer, cached hash) and a bucket array.
  return n + t.by_key.size() * 32 + t.by_key.bucket_count() * sizeof(void*);
}

}  // namespace

size_t Scenario::bytes() const {
  size_t n = BytesOf(table) + solution.bytes() + spray_solution.bytes();
  n += sim::BytesOf(agg_demand) + sim::BytesOf(demand_aggs) + sim::BytesOf(demand_hops) + sim::BytesOf(demand_changed) +
       sim::BytesOf(demand_seed_free);
  n += sim::BytesOf(footprint.offsets) + sim::BytesOf(footprint.entries);
  n += agg_weight.bytes() + sim::BytesOf(job_links_off) + sim::BytesOf(job_links);
  n += sim::BytesOf(routed) + sim::BytesOf(routed_components) + sim::BytesOf(outside_job_finish);
  n += sim::BytesOf(job_connected) + sim::BytesOf(capacity_bps) + sim::BytesOf(adapted);
  for (const auto& v : adapted_shares) n += sim::BytesOf(v);
  return n;
}

FlowSimulator::BaselineMemory FlowSimulator::baseline_memory() const {
  BaselineMemory m;
  for (const Scenario& sc : state_->baseline) {
    m.bytes += sc.bytes();
    m.aggregates += sc.solution.aggregate_count();
  }
  return m;
}

Result<std::shared_ptr<const FlowSimulator>> FlowSimulator::Create(model::SnapshotPtr snapshot, FlowOptions options,
                                                                   std::stop_token stop, const TaskRunner& runner) {
  if (!snapshot || !snapshot->topology || !snapshot->jobs) return InvalidArgument("flow simulation: empty snapshot");
  const model::Topology& topo = *snapshot->topology;
  if (auto ok = ValidateFlowOptions(options, topo); !ok) return tl::unexpected(ok.error().Wrap("flow options"));
  auto st = std::make_unique<State>();
  st->snapshot = std::move(snapshot);
  st->options = std::move(options);
  st->index = std::make_unique<RoutingIndex>(topo);
  st->workload = BuildWorkload(topo, *st->snapshot->jobs, runner);
  const size_t ndl = 2 * topo.link_count();
  st->capacity_bps.resize(ndl);
  for (size_t l = 0; l < ndl; ++l) {
    const double line = st->index->capacity_bps_directed(static_cast<uint32_t>(l)) * st->options.goodput;
    const double bg = st->options.background_bps.empty() ? 0.0 : st->options.background_bps[l];
    st->capacity_bps[l] = std::max(line - bg, 0.01 * line);
  }
  const int seeds = st->hash() ? st->options.hash_seeds : 1;
  const model::DrainMask none;
  // Seeds after the first take the first's routes and, where their flows
  // hash identically (every flow inside a leaf), its solved components;
  // they are independent of each other.
  // Each baseline is summarised and its FluidProblem freed as soon as it
  // is solved: drained runs need its routes and solution only.
  st->baseline.resize(static_cast<size_t>(seeds));
  st->baseline_outcomes.resize(static_cast<size_t>(seeds));
  State::ProblemPool pool;
  // (Not a task of the runner's: Create runs the seeds one after another.)
  auto keep = [&](size_t k, Scenario sc) {
    // The outcome; the solve also kept what the seed's drained runs need
    // to route only the components a drain touches (sc.footprint,
    // RunFrom::footprint), and the first seed keeps what the report then
    // takes from its baseline (KeepReportData).
    st->baseline_outcomes[k] = Summarize(*st, sc, runner);
    if (k == 0 && !sc.footprint.empty()) st->KeepReportData(sc, runner);
    pool.Give(std::move(sc.problem));
    sc.problem = FluidProblem{};
    if (st->hash()) {
      const size_t nd = st->workload.demands.size();
      sc.demand_aggs.assign(nd + 1, 0);
      for (uint32_t d : sc.agg_demand) ++sc.demand_aggs[d + 1];
      for (size_t i = 0; i < nd; ++i) sc.demand_aggs[i + 1] += sc.demand_aggs[i];
      Free(sc.agg_demand);
      // The arrays packing leaves, and bottleneck0 but the first seed's
      // (the report's), for the next seed's solve.
      FluidSolution::Columns spare;
      if (k > 0) spare.bottleneck0 = std::move(sc.solution.bottleneck0);
      sc.solution.Pack(runner, &spare);
      pool.GiveColumns(std::move(spare));
    }
    st->baseline[k] = std::move(sc);
  };
  State::RunFrom first_from;
  first_from.pool = &pool;
  first_from.runner = &runner;  // the first seed runs alone
  first_from.footprint = st->partial_runs();
  auto first = st->Run(none, first_from, st->options.seed, stop);
  if (!first) return tl::unexpected(first.error());
  keep(0, std::move(*first));
  // The other seeds one after another, each routing its demands and
  // solving its components on the runner's threads: one problem in memory
  // instead of one per thread (32k MoE, 8 seeds, 2 threads: with a seed per
  // thread the process peaked at 1.36-1.58 GB; Create's peak is now
  // 0.95-0.97 GB, docs/performance.md).
  for (size_t k = 1; k < static_cast<size_t>(seeds); ++k) {
    State::RunFrom from;
    from.reuse = &st->baseline[0];
    from.same_keys = &st->baseline[0].table;  // same mask, same demands
    from.pool = &pool;
    from.runner = &runner;
    from.footprint = st->partial_runs();
    auto sc = st->Run(none, from, st->options.seed + k, stop);
    if (!sc) return tl::unexpected(sc.error());
    keep(k, std::move(*sc));
  }
  if (st->hash()) {
    // What the seeds' runs freed, hundreds of MB in the allocator's arenas
    // between the baselines, back to the kernel before the drained runs
    // (32k MoE, 8 seeds, 2 threads: resident 902 MB after Create without
    // it; the process's peak 1.06-1.08 GB -> 0.94-1.01 GB, two runs each,
    // before the release in Simulate below). Not in the spray
    // modes, whose drained run is a fraction of a second and would pay to
    // fault the memory in again.
    pool.Clear();
    ReleaseFreeMemory();
  }
  return std::shared_ptr<const FlowSimulator>(new FlowSimulator(std::move(st)));
}

Result<FlowReport> FlowSimulator::Simulate(const model::Drain& drain, std::stop_token stop,
                                           const TaskRunner& runner) const {
  const State& st = *state_;
  const FlowOptions& o = st.options;
  const model::DrainMask mask(st.topo(), drain);
  const size_t nseeds = st.baseline.size();

  // Hash modes: the drained routes once (as the first seed's run would
  // compute them, from the baseline's), borrowed by every seed's run.
  // And, for partial runs, every demand's choices under them (each run's
  // table borrows the same classes): once, not once per seed (on the 32k
  // MoE hash case ~9 ms of a thread per seed).
  RouteTable drained_routes;
  State::HashChoices choices;
  if (st.hash()) {
    State::RunFrom from;
    from.reuse = &st.baseline[0];
    from.runner = &runner;  // not a task: the seeds' runs start after it
    // With every NIC up, every demand registers the keys it registered in
    // the first baseline (registered from the demands, nothing drained):
    // those are copied, not registered again (~8.5 ms of one thread).
    if (EveryNicUp(st.topo(), mask)) from.same_keys = &st.baseline[0].table;
    st.RouteClasses(mask, from, false, true, true, drained_routes);
    if (st.partial_runs()) st.ChooseAll(mask, drained_routes, &runner, choices);
  }
  State::ProblemPool pool;
  // With a first baseline that has what the report takes from it
  // (Scenario::report_ready), the first seed's run may be partial too.
  const bool first_partial = st.baseline[0].report_ready();
  auto run = [&](size_t k, const TaskRunner* threads) {
    State::RunFrom from;
    from.pool = &pool;
    from.reuse = &st.baseline[k];
    from.reuse_outcome = &st.baseline_outcomes[k];
    if (st.hash()) from.routes = &drained_routes;  // same mask
    if (st.partial_runs()) from.choices = &choices;
    if (o.routing == FlowRouting::kHashResilient) from.previous_paths = &st.baseline[k];
    from.runner = threads;
    from.summary_only = k != 0 || first_partial;
    return st.Run(mask, from, o.seed + k, stop);
  };
  // Seeds as the runner's tasks, each keeping only its outcome (its
  // scenario freed as soon as it is summarised; a drained seed routes only
  // the components the drain touches) and the first seed its scenario for
  // the report, last, so that it is held for the shortest time. When the
  // first seed is the only one, or must route every demand (no report
  // data: partial runs off), it runs alone afterwards on the runner's
  // threads: routing every demand beside another seed's run, its whole
  // problem was the peak of the call (32k MoE, 8 seeds, 2 threads: 1.34
  // GB). Partial, it is one task among the others and the seeds split
  // evenly over the threads (32k MoE, 8 seeds, 2 threads: 4 + 4 runs of
  // about 0.6 s instead of 4 + 3 and then the first alone, one thread idle
  // through its solve: 2.46-2.58 s instead of 3.21-3.27 s,
  // docs/performance.md).
  const bool first_as_task = first_partial && nseeds > 1;
  const size_t ntasks = first_as_task ? nseeds : nseeds - 1;
  std::vector<SeedOutcome> outcomes(nseeds);
  std::vector<Status> status(nseeds);
  std::optional<Scenario> first;
  RunTasks(runner, ntasks, [&](size_t i) {
    const size_t k = (i + 1) % nseeds;  // the first seed last
    auto sc = run(k, nullptr);
    if (!sc) {
      status[k] = tl::unexpected(sc.error());
      return;
    }
    outcomes[k] = Summarize(st, *sc);
    if (k == 0) {
      first = std::move(*sc);
      return;
    }
    pool.Give(std::move(sc->problem));
    FluidSolution::Columns spare;
    sc->solution.GiveColumns(spare);
    pool.GiveColumns(std::move(spare));
  });
  for (const Status& s : status) {
    if (!s) return tl::unexpected(s.error());
  }
  if (!first_as_task) {
    pool.TrimToOne();  // the other threads' arrays would sit idle through it
    // And what the other seeds' runs freed back to the kernel: in the
    // allocator's arena of another thread, this one could not reuse it
    // (32k MoE, 8 seeds, 2 threads: 0.82-0.93 GB resident here, the call's
    // peak 1.00-1.08 GB at the end of this seed without it).
    if (st.hash() && nseeds > 1) ReleaseFreeMemory();
    auto d0 = run(0, &runner);
    if (!d0) return tl::unexpected(d0.error());
    outcomes[0] = Summarize(st, *d0, runner);
    first = std::move(*d0);
  }
  return BuildFlowReport(st, mask, *first, outcomes);
}

Result<FlowReport> SimulateFlows(const model::Snapshot& snapshot, const model::Drain& drain, const FlowOptions& options,
                                 std::stop_token stop, const TaskRunner& runner) {
  // Non-owning: the caller keeps `snapshot` alive for the call.
  model::SnapshotPtr view(model::SnapshotPtr{}, &snapshot);
  auto sim = FlowSimulator::Create(view, options, stop, runner);
  if (!sim) return tl::unexpected(sim.error());
  return (*sim)->Simulate(drain, stop, runner);
}

}  // namespace drainwise::sim
