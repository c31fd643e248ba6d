// The JSON shape of a verdict (docs/policies.md, "Verdict JSON").
#include <cmath>
#include <limits>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "policies/evaluate.h"
#include "policies/verdict_json.h"
#include "testing/fabrics.h"

namespace drainwise::policies {
namespace {

using nlohmann::json;

TEST_CASE("a verdict renders every reason and unchecked limit") {
  // TwoByTwo, drain leaf0, priority-80 job j1 cut off, no slowdown measured:
  // the default policy denies (and warns) on the disconnect and notes the two
  // slowdown rules it could not check.
  model::Topology t = testing::TopologyFromJson(testing::TwoByTwo());
  Impact impact;
  impact.topology = &t;
  impact.drain = testing::DrainOf(t, {{"switches", {"leaf0"}}});
  JobImpact j;
  j.id = "j1";
  j.priority = 80;
  j.connected = false;
  j.path_fraction = 0;
  j.bandwidth_fraction = 0;
  impact.jobs = {j};
  auto policy = DefaultPolicy();
  REQUIRE(policy.has_value());
  auto v = Evaluate(*policy, impact);
  REQUIRE(v.has_value());

  json expected = json::parse(R"({
    "decision": "deny",
    "policy": "default",
    "reasons": [
      {"rule": "no-disconnect-priority", "action": "deny", "scope": "job", "subject": "j1", "job": "j1",
       "metric": "forbid_disconnect", "measured": false, "limit": true,
       "message": "job 'j1' (priority 80) would lose connectivity between its hosts"},
      {"rule": "no-disconnect", "action": "warn", "scope": "job", "subject": "j1", "job": "j1",
       "metric": "forbid_disconnect", "measured": false, "limit": true,
       "message": "job 'j1' (priority 80) would lose connectivity between its hosts"}
    ],
    "unchecked": [
      {"rule": "slowdown-priority", "action": "deny", "metric": "max_slowdown_pct", "jobs": ["j1"],
       "message": "slowdown not measured (the flow-level simulation did not run) for the selected jobs listed"},
      {"rule": "slowdown", "action": "warn", "metric": "max_slowdown_pct", "jobs": ["j1"],
       "message": "slowdown not measured (the flow-level simulation did not run) for the selected jobs listed"}
    ]
  })");
  CHECK(VerdictToJson(*v) == expected);
}

TEST_CASE("fabric reasons carry their elements; values keep their type") {
  Reason r;
  r.rule = "power-domain";
  r.action = Action::kDeny;
  r.subject = "power 'feed-a'";
  r.elements = {"s0", "s1"};
  r.metric = "no_shared_domain";
  r.measured = 2.0;
  r.limit = 1.0;
  r.message = "m";
  json j = ReasonToJson(r);
  CHECK(j["scope"] == "fabric");
  CHECK_FALSE(j.contains("job"));
  CHECK(j["elements"] == json({"s0", "s1"}));
  CHECK(j["measured"] == 2.0);

  CHECK(ValueToJson(Value{}).is_null());
  CHECK(ValueToJson(Value(std::string("mon 08:59 UTC"))) == "mon 08:59 UTC");
  CHECK(ValueToJson(Value(std::numeric_limits<double>::infinity())) == "inf");
  Verdict empty;
  CHECK(VerdictToJson(empty) ==
        json({{"decision", "allow"}, {"policy", ""}, {"reasons", json::array()}, {"unchecked", json::array()}}));
}

}  // namespace
}  // namespace drainwise::policies
