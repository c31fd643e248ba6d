// Verdicts on hand-built fabrics and hand-filled impacts. The measures a
// simulator would produce are written in by hand here, so each case isolates
// one rule; fabric measures are computed by the evaluator from the topology.
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "codec/json_reader.h"
#include "fabric/generator.h"
#include "policies/evaluate.h"
#include "policies/policy.h"
#include "testing/fabrics.h"

namespace drainwise::policies {
namespace {

using nlohmann::json;
using testing::DrainOf;
using testing::TopologyFromJson;

Policy MustParse(const json& doc) {
  auto p = ParsePolicy(doc);
  REQUIRE_MESSAGE(p.has_value(), p.error().message);
  return *p;
}

Policy Default() {
  auto p = DefaultPolicy();
  REQUIRE_MESSAGE(p.has_value(), p.error().message);
  return *p;
}

Policy FabricOnly(json fabric_rules) {
  return MustParse({{"format", "drainwise.policy/v1"}, {"name", "t"}, {"fabric_rules", std::move(fabric_rules)}});
}

Policy JobsOnly(json job_rules) {
  return MustParse({{"format", "drainwise.policy/v1"}, {"name", "t"}, {"job_rules", std::move(job_rules)}});
}

Verdict MustEvaluate(const Policy& p, const Impact& impact) {
  auto v = Evaluate(p, impact);
  REQUIRE_MESSAGE(v.has_value(), v.error().message);
  return *v;
}

JobImpact Job(std::string id, int priority) {
  JobImpact j;
  j.id = std::move(id);
  j.priority = priority;
  return j;
}

std::vector<std::string> RulesFired(const Verdict& v) {
  std::vector<std::string> out;
  for (const Reason& r : v.reasons) out.push_back(r.rule);
  return out;
}

int64_t At(const char* rfc3339) {
  auto t = codec::ParseRfc3339(rfc3339);
  REQUIRE(t.has_value());
  return *t;
}

// Four spines over two leaves, 100G everywhere, every leaf to every spine:
//
//   spine  plane    power
//   s0     plane-0  feed-a
//   s1     plane-1  feed-a
//   s2     plane-0  feed-b
//   s3     plane-1  feed-b
//
// Leaves l0 (h0, h1) and l1 (h2, h3) are in pod "pod-a" with no plane or
// power of their own. Spine-tier capacity: 8 x 100G = 800G; one spine = 200G
// = 25%, so draining two spines is 50% (at, not above, the default limit).
json FourSpines() {
  json nodes = json::array();
  json links = json::array();
  const char* planes[] = {"plane-0", "plane-1", "plane-0", "plane-1"};
  const char* feeds[] = {"feed-a", "feed-a", "feed-b", "feed-b"};
  for (int s = 0; s < 4; ++s) {
    nodes.push_back({{"id", "s" + std::to_string(s)},
                     {"kind", "switch"},
                     {"tier", "spine"},
                     {"plane", planes[s]},
                     {"domains", {{"power", feeds[s]}}}});
  }
  for (int l = 0; l < 2; ++l) {
    std::string leaf = "l" + std::to_string(l);
    nodes.push_back({{"id", leaf}, {"kind", "switch"}, {"tier", "leaf"}, {"pod", "pod-a"}});
    for (int s = 0; s < 4; ++s) links.push_back({{"a", leaf}, {"b", "s" + std::to_string(s)}, {"gbps", 100}});
  }
  for (int h = 0; h < 4; ++h) {
    std::string host = "h" + std::to_string(h);
    nodes.push_back({{"id", host}, {"kind", "host"}, {"gpus", 8}});
    links.push_back({{"a", host}, {"b", h < 2 ? "l0" : "l1"}, {"gbps", 100}});
  }
  return {{"format", "drainwise.topology/v1"}, {"name", "four-spines"}, {"nodes", nodes}, {"links", links}};
}

TEST_CASE("a drain that disconnects a priority job is denied by the default policy") {
  // TwoByTwo: job j1 spans h0 (leaf0) and h2 (leaf1); draining leaf0 cuts h0 off.
  model::Topology t = TopologyFromJson(testing::TwoByTwo());
  Impact impact;
  impact.topology = &t;
  impact.drain = DrainOf(t, {{"switches", {"leaf0"}}});
  JobImpact j = Job("j1", 80);
  j.job = model::JobId(0);
  j.connected = false;
  j.path_fraction = 0;
  j.bandwidth_fraction = 0;
  impact.jobs = {j};

  Verdict v = MustEvaluate(Default(), impact);
  CHECK(v.decision == Decision::kDeny);
  CHECK(v.policy == "default");
  // Fabric rules stay quiet: leaf0's links are 2 of the 4 spine-tier links
  // (50%, not above 50) and 2 of the 4 leaf-tier links (50%); one switch; no
  // domains in TwoByTwo.
  CHECK(RulesFired(v) == std::vector<std::string>{"no-disconnect-priority", "no-disconnect"});
  const Reason& r = v.reasons[0];
  CHECK(r.action == Action::kDeny);
  CHECK(r.job_rule);
  CHECK(r.job == "j1");
  CHECK(r.subject == "j1");
  CHECK(r.job_ref == model::JobId(0));
  CHECK(r.metric == "forbid_disconnect");
  CHECK(r.measured == Value(false));
  CHECK(r.limit == Value(true));
  CHECK(r.message == "job 'j1' (priority 80) would lose connectivity between its hosts");
  CHECK(v.reasons[1].action == Action::kWarn);

  CHECK(JobsViolating(v) == std::vector<std::string>{"j1"});
  CHECK(JobsViolating(v, Action::kDeny) == std::vector<std::string>{"j1"});
  CHECK(JobsViolating(v, Action::kWarn, "slowdown").empty());

  // The job-level pass only: slowdown is absent, so the two slowdown rules
  // that select j1 are noted, not fired. paths-top-priority does not select
  // a priority-80 job, so it is not listed.
  REQUIRE(v.unchecked.size() == 2);
  CHECK(v.unchecked[0].rule == "slowdown-priority");
  CHECK(v.unchecked[0].metric == "max_slowdown_pct");
  CHECK(v.unchecked[0].jobs == std::vector<std::string>{"j1"});
  CHECK(v.unchecked[1].rule == "slowdown");

  SUBCASE("a low-priority job cut off only warns") {
    impact.jobs[0].priority = 10;
    Verdict w = MustEvaluate(Default(), impact);
    CHECK(w.decision == Decision::kWarn);
    CHECK(RulesFired(w) == std::vector<std::string>{"no-disconnect"});
    CHECK(JobsViolating(w, Action::kDeny).empty());
    CHECK(JobsViolating(w) == std::vector<std::string>{"j1"});
  }
}

TEST_CASE("an unused switch with no impact is allowed") {
  // FourSpines, drain s3: 200 of 800G spine-tier capacity (25%), one switch,
  // nobody else drained to share a domain with. The job on h0,h2 keeps 3 of
  // its 4 spines: within every job limit.
  model::Topology t = TopologyFromJson(FourSpines());
  Impact impact;
  impact.topology = &t;
  impact.drain = DrainOf(t, {{"switches", {"s3"}}});
  JobImpact j = Job("j1", 100);
  j.path_fraction = 0.75;
  j.bandwidth_fraction = 0.75;
  j.min_paths_after = 3;
  j.slowdown_pct = 4;
  impact.jobs = {j};
  Verdict v = MustEvaluate(Default(), impact);
  CHECK(v.decision == Decision::kAllow);
  CHECK(v.reasons.empty());
  CHECK(v.unchecked.empty());

  impact.jobs.clear();  // an unaffected job need not be listed at all
  CHECK(MustEvaluate(Default(), impact).decision == Decision::kAllow);
}

TEST_CASE("an empty drain is always allowed") {
  model::Topology t = TopologyFromJson(FourSpines());
  Impact impact;
  impact.topology = &t;
  impact.active = {DrainOf(t, {{"switches", {"s0", "s1", "s2"}}})};  // already far over the limits
  JobImpact j = Job("j1", 100);
  j.connected = false;  // even a nonsensical measure: nothing changes, nothing to gate
  impact.jobs = {j};
  Verdict v = MustEvaluate(Default(), impact);
  CHECK(v.decision == Decision::kAllow);
  CHECK(v.reasons.empty());
}

// FourSpines with drift on s3 (LLDP saw a cable to it that NetBox does not
// plan) and on s1. Draining s3 trips the default policy's warn rule; a switch
// without drift does not; "crossed" also looks at the affected jobs' paths.
TEST_CASE("topology drift on a drained or crossed switch is a reason") {
  model::Topology t = TopologyFromJson(FourSpines());
  Impact impact;
  impact.topology = &t;
  impact.drain = DrainOf(t, {{"switches", {"s3"}}});
  impact.drift = {{"s3", {"cable s3:p9 - l0:p9 seen up, but no intent source plans it"}},
                  {"s1", {"cable l1:p1 - s1:p1 intended, but not seen up", "speed mismatch"}}};
  Verdict v = MustEvaluate(Default(), impact);
  CHECK(v.decision == Decision::kWarn);
  REQUIRE(v.reasons.size() == 1);
  CHECK(v.reasons[0].rule == "topology-drift");
  CHECK(v.reasons[0].subject == "s3");
  CHECK(v.reasons[0].message ==
        "s3 (drained) has topology drift: cable s3:p9 - l0:p9 seen up, but no intent source plans it");

  impact.drain = DrainOf(t, {{"switches", {"s2"}}});
  CHECK(MustEvaluate(Default(), impact).decision == Decision::kAllow);

  Policy crossed = FabricOnly({{{"name", "drift-on-path"}, {"action", "deny"}, {"no_drift", "crossed"}}});
  impact.crossed = {"s1", "s0"};
  Verdict c = MustEvaluate(crossed, impact);
  CHECK(c.decision == Decision::kDeny);
  REQUIRE(c.reasons.size() == 1);
  CHECK(c.reasons[0].message ==
        "s1 (on an affected job's path) has topology drift: cable l1:p1 - s1:p1 intended, but not seen up (and 1 "
        "more)");
  impact.drift.clear();
  CHECK(MustEvaluate(crossed, impact).decision == Decision::kAllow);

  auto bad = ParsePolicy({{"format", "drainwise.policy/v1"},
                          {"name", "t"},
                          {"fabric_rules", {{{"name", "d"}, {"action", "warn"}, {"no_drift", "everywhere"}}}}});
  REQUIRE_FALSE(bad.has_value());
  CAPTURE(bad.error().message);
  CHECK(bad.error().message.find("('d').no_drift: expected \"drained\"") != std::string::npos);
}

TEST_CASE("two drained switches on one power feed are denied by the fabric rule") {
  model::Topology t = TopologyFromJson(FourSpines());
  Impact impact;
  impact.topology = &t;

  SUBCASE("s0 and s1 share feed-a") {
    // 2 spines = 50% of the spine tier: exactly at the capacity limit, which passes.
    impact.drain = DrainOf(t, {{"switches", {"s1", "s0"}}});
    Verdict v = MustEvaluate(Default(), impact);
    CHECK(v.decision == Decision::kDeny);
    REQUIRE(RulesFired(v) == std::vector<std::string>{"power-domain"});
    const Reason& r = v.reasons[0];
    CHECK_FALSE(r.job_rule);
    CHECK(r.subject == "power 'feed-a'");
    CHECK(r.elements == std::vector<std::string>{"s0", "s1"});
    CHECK(r.measured == Value(2.0));
    CHECK(r.message == "drained switches s0, s1 would share power 'feed-a' (active drains included)");
    CHECK(JobsViolating(v).empty());  // a fabric rule names no job
  }
  SUBCASE("s0 and s2 share only a plane: warn") {
    impact.drain = DrainOf(t, {{"switches", {"s0", "s2"}}});
    Verdict v = MustEvaluate(Default(), impact);
    CHECK(v.decision == Decision::kWarn);
    REQUIRE(RulesFired(v) == std::vector<std::string>{"plane"});
    CHECK(v.reasons[0].subject == "plane 'plane-0'");
  }
  SUBCASE("s0 and s3 share nothing: allow") {
    impact.drain = DrainOf(t, {{"switches", {"s0", "s3"}}});
    CHECK(MustEvaluate(Default(), impact).decision == Decision::kAllow);
  }
  SUBCASE("an active drain counts: s0 in progress, s1 proposed") {
    impact.active = {DrainOf(t, {{"switches", {"s0"}}})};
    impact.drain = DrainOf(t, {{"switches", {"s1"}}});
    Verdict v = MustEvaluate(Default(), impact);
    CHECK(v.decision == Decision::kDeny);
    REQUIRE(RulesFired(v) == std::vector<std::string>{"power-domain"});
    CHECK(v.reasons[0].elements == std::vector<std::string>{"s0", "s1"});
  }
  SUBCASE("a pair already drained does not block an unrelated drain") {
    impact.active = {DrainOf(t, {{"switches", {"s0", "s1"}}})};
    impact.drain = DrainOf(t, {{"links", {{{"a", "h0"}, {"b", "l0"}}}}});
    CHECK(MustEvaluate(Default(), impact).decision == Decision::kAllow);
  }
}

TEST_CASE("max_switches_drained counts active drains") {
  model::Topology t = TopologyFromJson(FourSpines());
  Policy p = FabricOnly(json::array({{{"name", "two-at-once"}, {"action", "deny"}, {"max_switches_drained", 2}}}));
  Impact impact;
  impact.topology = &t;
  impact.drain = DrainOf(t, {{"switches", {"s2"}}});

  CHECK(MustEvaluate(p, impact).decision == Decision::kAllow);  // 1 switch

  impact.active = {DrainOf(t, {{"switches", {"s0"}}}), DrainOf(t, {{"switches", {"l1"}}})};
  Verdict v = MustEvaluate(p, impact);  // s0 + l1 (active) + s2 (proposed) = 3 > 2
  CHECK(v.decision == Decision::kDeny);
  REQUIRE(v.reasons.size() == 1);
  CHECK(v.reasons[0].subject == "fabric");
  CHECK(v.reasons[0].measured == Value(3.0));
  CHECK(v.reasons[0].limit == Value(2.0));
  CHECK(v.reasons[0].elements == std::vector<std::string>{"l1", "s0", "s2"});

  SUBCASE("re-proposing a switch already drained adds nothing") {
    impact.drain = DrainOf(t, {{"switches", {"s0"}}});
    CHECK(MustEvaluate(p, impact).decision == Decision::kAllow);
  }
  SUBCASE("scoped to a tier") {
    Policy spines = FabricOnly(
        json::array({{{"name", "spines"}, {"action", "warn"}, {"max_switches_drained", 1}, {"tier", "spine"}}}));
    Verdict w = MustEvaluate(spines, impact);  // s0, s2 are spines (2 > 1); l1 is not counted
    CHECK(w.decision == Decision::kWarn);
    REQUIRE(w.reasons.size() == 1);
    CHECK(w.reasons[0].measured == Value(2.0));
    CHECK(w.reasons[0].subject == "spine tier");
  }
}

// Two pods of two leaves and two spines, spine tier only per pod:
//
//   pod A: lA0-sA0 400G, lA0-sA1 400G, lA1-sA0 100G, lA1-sA1 100G  (1000G)
//   pod B: lB0-sB0, lB0-sB1, lB1-sB0, lB1-sB1, 100G each              (400G)
//   one host per leaf, 100G.
json TwoPods() {
  json nodes = json::array();
  json links = json::array();
  for (std::string pod : {"A", "B"}) {
    for (int i = 0; i < 2; ++i) {
      nodes.push_back({{"id", "s" + pod + std::to_string(i)}, {"kind", "switch"}, {"tier", "spine"}, {"pod", pod}});
      nodes.push_back({{"id", "l" + pod + std::to_string(i)}, {"kind", "switch"}, {"tier", "leaf"}, {"pod", pod}});
      nodes.push_back({{"id", "h" + pod + std::to_string(i)}, {"kind", "host"}, {"gpus", 8}});
      links.push_back({{"a", "h" + pod + std::to_string(i)}, {"b", "l" + pod + std::to_string(i)}, {"gbps", 100}});
    }
    for (int l = 0; l < 2; ++l) {
      for (int s = 0; s < 2; ++s) {
        double gbps = (pod == "A" && l == 0) ? 400 : 100;
        links.push_back({{"a", "l" + pod + std::to_string(l)}, {"b", "s" + pod + std::to_string(s)}, {"gbps", gbps}});
      }
    }
  }
  return {{"format", "drainwise.topology/v1"}, {"name", "two-pods"}, {"nodes", nodes}, {"links", links}};
}

TEST_CASE("capacity drained per tier and pod: golden numbers") {
  model::Topology t = TopologyFromJson(TwoPods());
  model::Drain sa0 = DrainOf(t, {{"switches", {"sA0"}}});

  // Per pod. Draining sA0 takes down lA0-sA0 (400G) and lA1-sA0 (100G):
  // spine tier, pod A = 500 / 1000 = 50%. Host links belong to the leaf tier
  // and are untouched; pod B is untouched.
  auto per_pod = CapacityDrained(t, sa0, true);
  REQUIRE(per_pod.size() == 4);  // ordered by level then pod: leaf A, leaf B, spine A, spine B
  CHECK(per_pod[0].tier == "leaf");
  CHECK(per_pod[0].pod == "A");
  CHECK(per_pod[0].total_bps == doctest::Approx(200e9));
  CHECK(per_pod[0].drained_bps == 0);
  CHECK(per_pod[2].tier == "spine");
  CHECK(per_pod[2].pod == "A");
  CHECK(per_pod[2].total_bps == doctest::Approx(1000e9));
  CHECK(per_pod[2].drained_bps == doctest::Approx(500e9));
  CHECK(per_pod[2].pct() == doctest::Approx(50.0));
  CHECK(per_pod[3].pct() == 0.0);

  // Fabric-wide: spine tier = 1000 + 400 = 1400G; 500 / 1400 = 35.714...%.
  auto fabric = CapacityDrained(t, sa0, false);
  REQUIRE(fabric.size() == 2);
  CHECK(fabric[1].tier == "spine");
  CHECK(fabric[1].pod == "");
  CHECK(fabric[1].pct() == doctest::Approx(100.0 * 500 / 1400));

  // The default policy's per-pod 50% rule: 50% alone passes. With link
  // lA1-sA1 (100G) already drained, pod A reaches (500 + 100) / 1000 = 60%.
  Impact impact;
  impact.topology = &t;
  impact.drain = sa0;
  CHECK(MustEvaluate(Default(), impact).decision == Decision::kAllow);

  impact.active = {DrainOf(t, {{"links", {{{"a", "lA1"}, {"b", "sA1"}}}}})};
  Verdict v = MustEvaluate(Default(), impact);
  CHECK(v.decision == Decision::kDeny);
  REQUIRE(RulesFired(v) == std::vector<std::string>{"pod-tier-capacity"});
  const Reason& r = v.reasons[0];
  CHECK(r.subject == "spine tier in pod 'A'");
  CHECK(std::get<double>(r.measured) == doctest::Approx(60.0));
  CHECK(r.limit == Value(50.0));
  CHECK(r.elements == std::vector<std::string>{"sA0"});  // the link drained on its own is not a switch
  CHECK(r.message ==
        "60% of the link capacity of the spine tier in pod 'A' would be out of service (600 of 1000 Gb/s, "
        "active drains included), above the 50% limit");

  SUBCASE("fabric-wide limit: 600 / 1400 = 42.86% > 40") {
    Policy p = FabricOnly(
        json::array({{{"name", "spine-40"}, {"action", "warn"}, {"max_capacity_drained_pct", 40}, {"tier", "spine"}}}));
    Verdict w = MustEvaluate(p, impact);
    CHECK(w.decision == Decision::kWarn);
    REQUIRE(w.reasons.size() == 1);
    CHECK(w.reasons[0].subject == "spine tier");
    CHECK(std::get<double>(w.reasons[0].measured) == doctest::Approx(100.0 * 600 / 1400));
  }
  SUBCASE("a pod over the limit from active drains alone does not block a drain elsewhere") {
    impact.active.push_back(sa0);                        // pod A at 60% already
    impact.drain = DrainOf(t, {{"switches", {"sB0"}}});  // pod B: 200 / 400 = 50%, at the limit
    CHECK(MustEvaluate(Default(), impact).decision == Decision::kAllow);
  }
  SUBCASE("a tier the topology lacks is noted, not fired") {
    Policy p = FabricOnly(
        json::array({{{"name", "ss"}, {"action", "deny"}, {"max_capacity_drained_pct", 0}, {"tier", "superspine"}}}));
    Verdict w = MustEvaluate(p, impact);
    CHECK(w.decision == Decision::kAllow);
    REQUIRE(w.unchecked.size() == 1);
    CHECK(w.unchecked[0].message == "topology 'two-pods' has no tier 'superspine'");
  }
}

TEST_CASE("the default policy on the generated demo fabric") {
  // demo: 2 pods x 4 spines; per pod 4 groups x 4 rails = 16 leaves, each
  // wired to every spine of its pod at 400G (64 leaf-spine links per pod).
  // Spine s of pod p has power "pod<p>-spine-feed-<s % 2>" and plane
  // "plane-<s>"; superspine ss<plane>-<k> has plane "plane-<plane>" and power
  // "core-feed-<k % 2>".
  auto preset = fabric::FindPreset("demo");
  REQUIRE(preset.has_value());
  auto built = model::BuildTopology(fabric::GenerateFabric(preset->fabric));
  REQUIRE_MESSAGE(built.has_value(), built.error().message);
  const model::Topology& t = *built;
  Impact impact;
  impact.topology = &t;
  auto verdict = [&](json switches) {
    impact.drain = DrainOf(t, {{"switches", std::move(switches)}});
    return MustEvaluate(Default(), impact);
  };

  // Two spines of pod0 on different feeds and planes: 32 of pod0's 64
  // leaf-spine links = 50%, at the limit.
  Verdict a = verdict({"p0-spine0", "p0-spine1"});
  CHECK(a.decision == Decision::kAllow);
  CHECK(a.reasons.empty());

  // spine0 and spine2 share pod0-spine-feed-0.
  Verdict b = verdict({"p0-spine0", "p0-spine2"});
  CHECK(b.decision == Decision::kDeny);
  REQUIRE(RulesFired(b) == std::vector<std::string>{"power-domain"});
  CHECK(b.reasons[0].subject == "power 'pod0-spine-feed-0'");

  // Three spines: 48 / 64 = 75% of pod0's spine tier, and a shared feed.
  Verdict c = verdict({"p0-spine0", "p0-spine1", "p0-spine3"});
  CHECK(c.decision == Decision::kDeny);
  CHECK(RulesFired(c) == std::vector<std::string>{"pod-tier-capacity", "power-domain"});
  CHECK(c.reasons[0].subject == "spine tier in pod 'pod0'");
  CHECK(std::get<double>(c.reasons[0].measured) == doctest::Approx(75.0));

  // Both superspines of plane 0: different feeds, same plane: warn. Their
  // links are 4 of the 16 spine-superspine links (25%).
  Verdict d = verdict({"ss0-0", "ss0-1"});
  CHECK(d.decision == Decision::kWarn);
  REQUIRE(RulesFired(d) == std::vector<std::string>{"plane"});
  CHECK(d.reasons[0].elements == std::vector<std::string>{"ss0-0", "ss0-1"});

  // Two rail-0 leaves of pod0 share the generator's leaf plane "rail-0" and
  // power feed "pod0-feed-0" (rail r is on feed r % 2): the default policy
  // denies and warns; a plane rule scoped to the spine tier ignores leaves.
  Verdict f = verdict({"p0-leaf0-r0", "p0-leaf1-r0"});
  CHECK(f.decision == Decision::kDeny);
  REQUIRE(RulesFired(f) == std::vector<std::string>{"power-domain", "plane"});
  CHECK(f.reasons[0].subject == "power 'pod0-feed-0'");
  CHECK(f.reasons[1].subject == "plane 'rail-0'");
  Policy spine_planes = FabricOnly(
      json::array({{{"name", "spine-plane"}, {"action", "warn"}, {"no_shared_domain", "plane"}, {"tier", "spine"}}}));
  CHECK(MustEvaluate(spine_planes, impact).decision == Decision::kAllow);
  impact.drain = DrainOf(t, {{"switches", {"p0-spine1", "p1-spine1"}}});  // plane-1 in both pods
  CHECK(MustEvaluate(spine_planes, impact).decision == Decision::kWarn);

  // Switch count, with a count-only policy: eight rail-0 leaves share the
  // plane "rail-0" and would add plane reasons under the default policy.
  Policy count_only =
      FabricOnly(json::array({{{"name", "max-switches"}, {"action", "deny"}, {"max_switches_drained", 8}}}));
  impact.drain = DrainOf(t, {{"switches",
                              {"p0-leaf0-r0", "p0-leaf1-r0", "p0-leaf2-r0", "p0-leaf3-r0", "p1-leaf0-r0", "p1-leaf1-r0",
                               "p1-leaf2-r0", "p1-leaf3-r0"}}});
  CHECK(MustEvaluate(count_only, impact).decision == Decision::kAllow);  // 8: at the limit
  impact.active = {DrainOf(t, {{"switches", {"p1-spine3"}}})};
  Verdict e = MustEvaluate(count_only, impact);  // 8 + 1 active = 9
  CHECK(e.decision == Decision::kDeny);
  CHECK(e.reasons.at(0).measured == Value(9.0));
}

TEST_CASE("change windows: inside passes, outside fires") {
  // 2026-11-30 is a Monday.
  model::Topology t = TopologyFromJson(FourSpines());
  Policy p =
      FabricOnly(json::array({{{"name", "windows"},
                               {"action", "deny"},
                               {"change_windows",
                                {{{"days", {"mon", "tue", "wed", "thu", "fri"}}, {"start", "09:00"}, {"end", "17:00"}},
                                 {{"days", {"sat"}}, {"start", "22:00"}, {"end", "02:00"}},
                                 {{"days", {"sun"}}, {"start", "23:00"}, {"end", "01:00"}}}}}}));
  Impact impact;
  impact.topology = &t;
  impact.drain = DrainOf(t, {{"switches", {"s0"}}});
  struct Case {
    const char* time;
    bool inside;
  };
  const Case cases[] = {
      {"2026-11-30T10:00:00Z", true},   // Monday, in 09:00-17:00
      {"2026-11-30T09:00:00Z", true},   // start is inclusive
      {"2026-11-30T08:59:59Z", false},  // a second early
      {"2026-11-30T17:00:00Z", false},  // end is exclusive
      {"2026-12-04T16:59:00Z", true},   // Friday
      {"2026-12-05T12:00:00Z", false},  // Saturday noon
      {"2026-12-05T23:30:00Z", true},   // Saturday night window...
      {"2026-12-06T01:30:00Z", true},   // ...runs past midnight into Sunday
      {"2026-12-06T02:00:00Z", false},  // and ends at 02:00
      {"2026-12-07T00:30:00Z", true},   // Sunday 23:00-01:00 wraps into Monday (end of the week)
      {"2026-12-07T01:00:00Z", false},
      {"1969-12-28T23:30:00Z", true},  // a Sunday before the epoch: floor division, not truncation
  };
  for (const Case& c : cases) {
    CAPTURE(c.time);
    impact.now_unix_s = At(c.time);
    Verdict v = MustEvaluate(p, impact);
    CHECK(v.decision == (c.inside ? Decision::kAllow : Decision::kDeny));
  }

  impact.now_unix_s = At("2026-11-30T08:59:59Z");
  Verdict v = MustEvaluate(p, impact);
  REQUIRE(v.reasons.size() == 1);
  CHECK(v.reasons[0].subject == "drain");
  CHECK(v.reasons[0].measured == Value(std::string("mon 08:59 UTC")));
  CHECK(v.reasons[0].message ==
        "a drain at 2026-11-30T08:59:59Z (mon 08:59 UTC) is outside every change window (mon,tue,wed,thu,fri "
        "09:00-17:00; sat 22:00-02:00; sun 23:00-01:00 UTC)");
}

TEST_CASE("job limits: slowdown, paths, bandwidth and path fractions") {
  model::Topology t = TopologyFromJson(FourSpines());
  Impact impact;
  impact.topology = &t;
  impact.drain = DrainOf(t, {{"switches", {"s0"}}});

  SUBCASE("default slowdown rules: deny above 25% for priority >= 50, warn above 10% for all") {
    struct Case {
      int priority;
      double slowdown;
      std::vector<std::string> fired;
    };
    const std::vector<Case> cases = {
        {80, 30, {"slowdown-priority", "slowdown"}},
        {80, 25, {"slowdown"}},  // 25 is at the deny limit: passes it
        {80, 10, {}},
        {80, 10.5, {"slowdown"}},
        {10, 90, {"slowdown"}},
    };
    for (const Case& c : cases) {
      CAPTURE(c.priority);
      CAPTURE(c.slowdown);
      JobImpact j = Job("j", c.priority);
      j.slowdown_pct = c.slowdown;
      impact.jobs = {j};
      Verdict v = MustEvaluate(Default(), impact);
      CHECK(RulesFired(v) == c.fired);
      CHECK(v.unchecked.empty());
    }
  }
  SUBCASE("min_paths_after for priority >= 100; absent means unchecked") {
    JobImpact j = Job("top", 100);
    j.slowdown_pct = 0;
    j.min_paths_after = 1;
    impact.jobs = {j};
    Verdict v = MustEvaluate(Default(), impact);
    CHECK(v.decision == Decision::kDeny);
    REQUIRE(RulesFired(v) == std::vector<std::string>{"paths-top-priority"});
    CHECK(v.reasons[0].measured == Value(1.0));
    CHECK(v.reasons[0].limit == Value(2.0));

    impact.jobs[0].min_paths_after = 2;
    CHECK(MustEvaluate(Default(), impact).decision == Decision::kAllow);

    impact.jobs[0].min_paths_after.reset();
    Verdict u = MustEvaluate(Default(), impact);
    CHECK(u.decision == Decision::kAllow);
    REQUIRE(u.unchecked.size() == 1);
    CHECK(u.unchecked[0].rule == "paths-top-priority");
    CHECK(u.unchecked[0].metric == "min_paths_after");
  }
  SUBCASE("fractions, selectors and JobsViolating per rule") {
    Policy p = JobsOnly(json::array({
        {{"name", "bw"},
         {"action", "deny"},
         {"select", {{"tenant", {"prod", "infra"}}}},
         {"min_bandwidth_fraction", 0.5}},
        {{"name", "paths"},
         {"action", "warn"},
         {"select", {{"labels", {{"team", "llm"}}}}},
         {"min_path_fraction", 0.75}},
        {{"name", "named"}, {"action", "warn"}, {"select", {{"jobs", {"c"}}}}, {"forbid_disconnect", true}},
    }));
    JobImpact a = Job("a", 0);  // prod, llm: bandwidth 40% < 50 (deny), paths 50% < 75 (warn)
    a.tenant = "prod";
    a.labels = {{"team", "llm"}};
    a.bandwidth_fraction = 0.4;
    a.path_fraction = 0.5;
    JobImpact b = Job("b", 0);  // batch tenant, llm: only the path rule selects it; 75% is at the limit
    b.tenant = "batch";
    b.labels = {{"team", "llm"}};
    b.bandwidth_fraction = 0.1;
    b.path_fraction = 0.75;
    JobImpact c = Job("c", 0);  // infra, no labels: bandwidth 50% at the limit; cut off
    c.tenant = "infra";
    c.bandwidth_fraction = 0.5;
    c.connected = false;
    impact.jobs = {a, b, c};
    Verdict v = MustEvaluate(p, impact);
    CHECK(v.decision == Decision::kDeny);
    CHECK(RulesFired(v) == std::vector<std::string>{"bw", "paths", "named"});
    CHECK(v.reasons[0].job == "a");
    CHECK(v.reasons[0].message == "job 'a' (priority 0) would keep 40% of its bandwidth, below the 50% limit");
    CHECK(v.reasons[1].job == "a");
    CHECK(v.reasons[2].job == "c");
    CHECK(JobsViolating(v) == std::vector<std::string>{"a", "c"});
    CHECK(JobsViolating(v, Action::kDeny) == std::vector<std::string>{"a"});
    CHECK(JobsViolating(v, Action::kWarn, "named") == std::vector<std::string>{"c"});
  }
}

TEST_CASE("invalid impacts are errors, not verdicts") {
  model::Topology t = TopologyFromJson(testing::TwoByTwo());
  Policy p = Default();
  Impact impact;
  CHECK(Evaluate(p, impact).error().message == "impact: no topology");

  impact.topology = &t;
  impact.drain.switches = {model::NodeId(99)};
  CHECK(Evaluate(p, impact).error().message == "drain: switch id 99 is not in topology '2x2'");

  impact.drain.switches = {*t.FindNode("h0")};
  CHECK(Evaluate(p, impact).error().message == "drain: 'h0' is a host, not a switch");

  impact.drain = DrainOf(t, {{"switches", {"leaf0"}}});
  impact.active = {model::Drain{{}, {model::LinkId(42)}}};
  CHECK(Evaluate(p, impact).error().message == "active[0]: link id 42 is not in topology '2x2'");

  impact.active.clear();
  JobImpact j = Job("j1", 1);
  j.bandwidth_fraction = std::nan("");
  impact.jobs = {j};
  auto v = Evaluate(p, impact);
  REQUIRE_FALSE(v.has_value());
  CHECK(v.error().code == ErrorCode::kInvalidArgument);
  CHECK(v.error().message == "jobs[0] ('j1').bandwidth_fraction: nan is not a finite number");
}

}  // namespace
}  // namespace drainwise::policies
