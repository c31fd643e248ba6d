#include "sim/flow_sim.h"

#include <algorithm>

#include "sim/flow_sim_state.h"

namespace drainwise::sim {

namespace {

void RunTasks(const TaskRunner& runner, size_t n, const std::function<void(size_t)>& task) {
  if (n == 0) return;
  if (runner) {
    runner(n, task);
    return;
  }
  for (size_t i = 0; i < n; ++i) task(i);
}

}  // namespace

FlowSimulator::FlowSimulator(std::unique_ptr<State> state) : state_(std::move(state)) {}
FlowSimulator::~FlowSimulator() = default;
const FlowOptions& FlowSimulator::options() const { return state_->options; }
const model::Snapshot& FlowSimulator::snapshot() const { return *state_->snapshot; }

Result<std::shared_ptr<const FlowSimulator>> FlowSimulator::Create(model::SnapshotPtr snapshot, FlowOptions options,
                                                                   std::stop_token stop, const TaskRunner& runner) {
  if (!snapshot || !snapshot->topology || !snapshot->jobs) return InvalidArgument("flow simulation: empty snapshot");
  const model::Topology& topo = *snapshot->topology;
  if (auto ok = ValidateFlowOptions(options, topo); !ok) return tl::unexpected(ok.error().Wrap("flow options"));
  auto st = std::make_unique<State>();
  st->snapshot = std::move(snapshot);
  st->options = std::move(options);
  st->index = std::make_unique<RoutingIndex>(topo);
  st->workload = BuildWorkload(topo, *st->snapshot->jobs);
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
  auto keep = [&](size_t k, Scenario sc) {
    st->baseline_outcomes[k] = Summarize(*st, sc);
    sc.problem = FluidProblem{};
    st->baseline[k] = std::move(sc);
  };
  auto first = st->Run(none, {}, st->options.seed, stop);
  if (!first) return tl::unexpected(first.error());
  keep(0, std::move(*first));
  std::vector<Status> status(static_cast<size_t>(seeds));
  RunTasks(runner, static_cast<size_t>(seeds - 1), [&](size_t i) {
    const size_t k = i + 1;
    State::RunFrom from;
    from.reuse = &st->baseline[0];
    auto sc = st->Run(none, from, st->options.seed + k, stop);
    if (!sc) {
      status[k] = tl::unexpected(sc.error());
      return;
    }
    keep(k, std::move(*sc));
  });
  for (const Status& s : status) {
    if (!s) return tl::unexpected(s.error());
  }
  return std::shared_ptr<const FlowSimulator>(new FlowSimulator(std::move(st)));
}

Result<FlowReport> FlowSimulator::Simulate(const model::Drain& drain, std::stop_token stop,
                                           const TaskRunner& runner) const {
  const State& st = *state_;
  const FlowOptions& o = st.options;
  const model::DrainMask mask(st.topo(), drain);
  const size_t nseeds = st.baseline.size();

  auto run = [&](size_t k, const Scenario* routes) {
    State::RunFrom from;
    from.reuse = &st.baseline[k];
    if (routes != nullptr) from.routes = &routes->table;  // same mask: the drained routes once
    if (o.routing == FlowRouting::kHashResilient) from.previous_paths = &st.baseline[k];
    return st.Run(mask, from, o.seed + k, stop);
  };
  // The first seed's scenario stays for the report; later seeds keep only
  // their outcome, each scenario freed as soon as it is summarised.
  auto d0 = run(0, nullptr);
  if (!d0) return tl::unexpected(d0.error());
  std::vector<SeedOutcome> outcomes(nseeds);
  outcomes[0] = Summarize(st, *d0);
  std::vector<Status> status(nseeds);
  RunTasks(runner, nseeds - 1, [&](size_t i) {
    const size_t k = i + 1;
    auto sc = run(k, &*d0);
    if (!sc) {
      status[k] = tl::unexpected(sc.error());
      return;
    }
    outcomes[k] = Summarize(st, *sc);
  });
  for (const Status& s : status) {
    if (!s) return tl::unexpected(s.error());
  }
  return BuildFlowReport(st, mask, *d0, outcomes);
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
