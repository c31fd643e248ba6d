// The ring phase drift term (sim/flow_ring_phase.h, docs/model.md "Ring
// phase drift"): golden numbers on a 2 x 2 fabric, worked out by hand.
#include <doctest/doctest.h>

#include "flowsim/flow_testing.h"

namespace drainwise {
namespace {

using flowtest::Jobs;
using nlohmann::json;

// Four one-GPU hosts in ring order h0 -> h2 -> h1 -> h3 -> h0: every edge
// crosses between the leaves.
json CrossRing(double bytes) {
  return Jobs(json::array(
      {{{"id", "ring"},
        {"hosts", {"h0", "h2", "h1", "h3"}},
        {"gpus_per_host", 1},
        {"iteration",
         {{"compute_ms", 0}, {"collectives", json::array({{{"kind", "allreduce"}, {"bytes", bytes}}})}}}}}));
}

sim::FlowOptions WithTheta(double theta) {
  sim::FlowOptions o = sim::FlowOptions::Exact();
  o.per_hop_latency_s = 1e-6;
  o.per_message_overhead_s = 5e-6;
  o.ring_phase_overlap = theta;
  return o;
}

TEST_CASE("ring phase drift: a drained ring's congestion hidden up to theta of its step latency") {
  // 2 x 2 at 100G everywhere, one GPU per host: N = 4 ranks, B = 1 MB.
  // Each edge carries 2 (N-1)/N B = 1.5 MB = 12e6 bits; two edges leave
  // each leaf over its 2 x 100G uplinks: 100G each, B0 = 120 us. Drain
  // spine1: one 100G uplink for two edges, 50G each, B = 240 us.
  // L = 2 (N-1) = 6 steps x (2 x 4 hops x 1 us + 5 us) = 78 us both sides.
  //   theta 0   drained 240 + 78           = 318 us, (318 / 198 - 1) = +60.6 %
  //   theta 0.5 credit min(240 - 120, 39)  = 39 us: 279 us, +40.9 %
  //   theta 1   credit min(120, 78)        = 78 us: 240 us = max(B0 + L, B), +21.2 %
  const json topo = flowtest::TwoByTwo(100, 100, 1);
  const json drain = {{"switches", {"spine1"}}};
  const double expect_drained_us[] = {318, 279, 240};
  const double expect_pct[] = {120.0 / 198 * 100, 81.0 / 198 * 100, 42.0 / 198 * 100};
  const double thetas[] = {0, 0.5, 1};
  for (int i = 0; i < 3; ++i) {
    CAPTURE(thetas[i]);
    auto run = flowtest::Simulate(topo, CrossRing(1e6), drain, WithTheta(thetas[i]));
    const auto& j = run.Job("ring");
    CHECK(j.baseline.comm_s * 1e6 == doctest::Approx(198).epsilon(1e-6));  // the baseline never moves
    CHECK(j.drained.latency_s * 1e6 == doctest::Approx(78).epsilon(1e-6));
    CHECK(j.drained.comm_s * 1e6 == doctest::Approx(expect_drained_us[i]).epsilon(1e-6));
    REQUIRE(j.slowdown_pct.has_value());
    CHECK(*j.slowdown_pct == doctest::Approx(expect_pct[i]).epsilon(1e-6));
  }
  // Stated in the model block only when on.
  CHECK(flowtest::Simulate(topo, CrossRing(1e6), drain, WithTheta(0.5)).report.model.ring_phase_overlap == 0.5);
}

TEST_CASE("ring phase drift leaves jobs that are not all-ring alone") {
  // The same crossing traffic as explicit one-step flows: no step latency
  // to hide congestion in, so theta changes nothing.
  const json jobs = Jobs(flowtest::FlowsJob(
      "flows", {{"h0", "h2", 1.5e6}, {"h2", "h1", 1.5e6}, {"h1", "h3", 1.5e6}, {"h3", "h0", 1.5e6}}));
  const json topo = flowtest::TwoByTwo(100, 100, 1);
  const json drain = {{"switches", {"spine1"}}};
  auto off = flowtest::Simulate(topo, jobs, drain, WithTheta(0));
  auto on = flowtest::Simulate(topo, jobs, drain, WithTheta(1));
  CHECK(on.Job("flows").drained.comm_s == off.Job("flows").drained.comm_s);
  CHECK(*on.Job("flows").slowdown_pct == *off.Job("flows").slowdown_pct);
}

}  // namespace
}  // namespace drainwise
