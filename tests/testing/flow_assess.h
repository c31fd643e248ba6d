// A flow-level assessment of draining spine1 of testing::TwoByTwo with the
// default policy, no recommendations: what the advisor tests of flow options
// (tests/advisor/load_balancing_test.cpp, flow_threads_test.cpp) assess.
#pragma once

#include <optional>

#include <doctest/doctest.h>

#include "advisor/advisor.h"
#include "testing/fabrics.h"

namespace drainwise::testing {

inline sim::FlowReport AssessSpine1Flow(const advisor::Advisor& adv, const model::SnapshotPtr& snap,
                                        std::optional<sim::FlowRouting> routing = std::nullopt) {
  advisor::Request r;
  r.drain = DrainOf(*snap->topology, {{"switches", {"spine1"}}});
  r.flow = true;
  r.recommend = false;
  r.routing = routing;
  auto policy = policies::DefaultPolicy();
  REQUIRE(policy.has_value());
  auto a = adv.Assess(advisor::Context{snap, {}, 1796083200, nullptr, nullptr}, r, *policy);
  REQUIRE(a.has_value());
  REQUIRE(a->scenario.flow.has_value());
  return *a->scenario.flow;
}

}  // namespace drainwise::testing
