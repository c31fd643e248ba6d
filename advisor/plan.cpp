#include "advisor/advisor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <thread>
#include <unordered_set>

#include <fmt/format.h>

#include "advisor/prediction.h"

namespace drainwise::advisor {

using model::Drain;
using model::JobId;
using model::NodeId;
using policies::Decision;
using namespace internal;

Result<Plan> Advisor::PlanDrains(const Context& ctx, std::span<const NodeId> switches, bool flow,
                                 const policies::Policy& policy, std::stop_token stop) const {
  Plan plan;
  if (switches.empty()) return plan;
  const sim::FlowOptions flow_options =
      sim::WithDeclaredLoadBalancing(options_.flow, ctx.snapshot->topology->load_balancing());
  // Single-switch impact orders the list: the gentlest switches first, so
  // they can share batches.
  struct Single {
    NodeId sw;
    Prediction p;
  };
  std::vector<Single> singles;
  for (NodeId s : switches) {
    Drain d;
    d.switches = {s};
    auto sc = Simulate(ctx, d, false, flow_options, policy, stop);
    if (!sc) return tl::unexpected(sc.error());
    singles.push_back({s, Predict(*sc)});
  }
  const auto& topo = *ctx.snapshot->topology;
  std::stable_sort(singles.begin(), singles.end(), [&](const Single& a, const Single& b) {
    if (BetterPrediction(a.p, b.p) != BetterPrediction(b.p, a.p)) return BetterPrediction(a.p, b.p);
    return topo.node(a.sw).name < topo.node(b.sw).name;
  });

  auto evaluate = [&](const std::vector<NodeId>& batch) -> Result<Scenario> {
    Drain d;
    d.switches = batch;
    std::sort(d.switches.begin(), d.switches.end());
    return Simulate(ctx, d, flow, flow_options, policy, stop);
  };
  std::vector<bool> placed(singles.size(), false);
  for (size_t i = 0; i < singles.size(); ++i) {
    if (placed[i]) continue;
    std::vector<NodeId> batch = {singles[i].sw};
    placed[i] = true;
    auto current = evaluate(batch);
    if (!current) return tl::unexpected(current.error());
    if (current->verdict.decision == Decision::kAllow) {
      // Grow the batch with any later switch that keeps it allowed.
      for (size_t k = i + 1; k < singles.size(); ++k) {
        if (placed[k] || singles[k].p.decision != Decision::kAllow) continue;
        auto trial = batch;
        trial.push_back(singles[k].sw);
        auto sc = evaluate(trial);
        if (!sc) return tl::unexpected(sc.error());
        if (sc->verdict.decision == Decision::kAllow) {
          batch = std::move(trial);
          current = std::move(sc);
          placed[k] = true;
        }
      }
    }
    PlanBatch pb;
    pb.switches = batch;
    std::sort(pb.switches.begin(), pb.switches.end(),
              [&](NodeId a, NodeId b) { return topo.node(a).name < topo.node(b).name; });
    pb.verdict = current->verdict;
    pb.predicted = Predict(*current);
    if (current->verdict.decision != Decision::kAllow) {
      // A switch that does not pass alone: bring the migrations that fix it.
      Request req;
      req.drain.switches = batch;
      req.flow = flow;
      req.window = TimeWindow{ctx.now, ctx.now};  // a plan drains now: no waits
      auto a = Assess(ctx, req, policy, stop);
      if (!a) return tl::unexpected(a.error());
      for (int idx : a->allow_after) {
        if (a->recommendations[idx].kind == RecommendationKind::kMigrate) {
          pb.migrations.push_back(a->recommendations[idx]);
        }
      }
      if (!pb.migrations.empty() && a->allow_after_predicted) {
        pb.predicted = *a->allow_after_predicted;
      }
      if (pb.predicted.decision != Decision::kAllow) {
        plan.all_allowed = false;
        plan.notes.push_back(fmt::format("{}: {} even alone{}", topo.node(batch.front()).name,
                                         policies::DecisionName(pb.predicted.decision),
                                         a->notes.empty() ? "" : " (" + a->notes.front() + ")"));
      }
    }
    plan.batches.push_back(std::move(pb));
  }
  return plan;
}

}  // namespace drainwise::advisor
