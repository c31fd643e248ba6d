#include "sim/flow_sim.h"

#include <algorithm>

#include "sim/flow_sim_state.h"

namespace drainwise::sim {

FlowSimulator::FlowSimulator(std::unique_ptr<State> state) : state_(std::move(state)) {}
FlowSimulator::~FlowSimulator() = default;
const FlowOptions& FlowSimulator::options() const { return state_->options; }
const model::Snapshot& FlowSimulator::snapshot() const { return *state_->snapshot; }

Result<std::shared_ptr<const FlowSimulator>> FlowSimulator::Create(model::SnapshotPtr snapshot, FlowOptions options,
                                                                   std::stop_token stop) {
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
  for (int k = 0; k < seeds; ++k) {
    // Seeds after the first take the first's routes and, where their flows
    // hash identically (every flow inside a leaf), its solved components.
    State::RunFrom from;
    if (k > 0) from.reuse = &st->baseline[0];
    auto sc = st->Run(none, from, st->options.seed + static_cast<uint64_t>(k), stop);
    if (!sc) return tl::unexpected(sc.error());
    st->baseline.push_back(std::move(*sc));
  }
  return std::shared_ptr<const FlowSimulator>(new FlowSimulator(std::move(st)));
}

Result<FlowReport> FlowSimulator::Simulate(const model::Drain& drain, std::stop_token stop) const {
  const State& st = *state_;
  const FlowOptions& o = st.options;
  const model::DrainMask mask(st.topo(), drain);
  const size_t nseeds = st.baseline.size();

  std::vector<Scenario> drained;
  drained.reserve(nseeds);
  for (size_t k = 0; k < nseeds; ++k) {
    State::RunFrom from;
    from.reuse = &st.baseline[k];
    if (k > 0) from.routes = &drained[0].table;  // same mask: the drained routes once
    if (o.routing == FlowRouting::kHashResilient) from.previous_paths = &st.baseline[k];
    auto sc = st.Run(mask, from, o.seed + k, stop);
    if (!sc) return tl::unexpected(sc.error());
    drained.push_back(std::move(*sc));
  }

  return BuildFlowReport(st, mask, drained);
}

Result<FlowReport> SimulateFlows(const model::Snapshot& snapshot, const model::Drain& drain,
                                 const FlowOptions& options, std::stop_token stop) {
  // Non-owning: the caller keeps `snapshot` alive for the call.
  model::SnapshotPtr view(model::SnapshotPtr{}, &snapshot);
  auto sim = FlowSimulator::Create(view, options, stop);
  if (!sim) return tl::unexpected(sim.error());
  return (*sim)->Simulate(drain, stop);
}

}  // namespace drainwise::sim
