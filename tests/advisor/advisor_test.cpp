// The advisor on hand-built fabrics and on the demo preset, with the default
// policy (policies/default.json).
#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "advisor/advisor.h"
#include "advisor/sim_cache.h"
#include "codec/json_reader.h"
#include "codec/native.h"
#include "fabric/generator.h"
#include "testing/fabrics.h"

using namespace drainwise;
using nlohmann::json;

namespace {

policies::Policy DefaultPolicy() {
  auto p = policies::DefaultPolicy();
  REQUIRE(p.has_value());
  return *p;
}

// Three leaves, two spines, 100G everywhere, single-homed hosts:
//   leaf0: h0 h1    leaf1: h2 h3    leaf2: h4 h5 (free)
// spine0 and spine1 share the power feed "feed-a"; leaf2 is alone on "feed-b".
json ThreeLeaves() {
  json nodes = json::array({
      {{"id", "spine0"}, {"kind", "switch"}, {"tier", "spine"}, {"domains", {{"power", "feed-a"}}}},
      {{"id", "spine1"}, {"kind", "switch"}, {"tier", "spine"}, {"domains", {{"power", "feed-a"}}}},
  });
  json links = json::array();
  for (int l = 0; l < 3; ++l) {
    std::string leaf = "leaf" + std::to_string(l);
    nodes.push_back({{"id", leaf}, {"kind", "switch"}, {"tier", "leaf"}, {"domains", {{"power", "feed-" + leaf}}}});
    for (auto spine : {"spine0", "spine1"}) links.push_back({{"a", leaf}, {"b", spine}, {"gbps", 100}});
    for (int h = 0; h < 2; ++h) {
      std::string host = "h" + std::to_string(2 * l + h);
      nodes.push_back({{"id", host}, {"kind", "host"}, {"gpus", 1}});
      links.push_back({{"a", host}, {"b", leaf}, {"gbps", 100}});
    }
  }
  return {{"format", "drainwise.topology/v1"}, {"name", "three-leaves"}, {"nodes", nodes}, {"links", links}};
}

json Jobs(int priority) {
  json iteration = {{"compute_ms", 100}, {"collectives", {{{"kind", "allreduce"}, {"bytes", 1e9}}}}};
  return {{"format", "drainwise.jobs/v1"},
          {"jobs",
           {{{"id", "critical"},
             {"priority", priority},
             {"hosts", {"h0", "h2"}},
             {"iteration", iteration},
             {"checkpoint", {{"interval_s", 600}, {"restart_cost_s", 120}}}},
            {{"id", "batch"},
             {"priority", 0},
             {"hosts", {"h1", "h3"}},
             {"iteration", iteration},
             {"expected_end", "2026-12-01T06:00:00Z"}}}}};
}

advisor::Context Ctx(model::SnapshotPtr s) { return advisor::Context{std::move(s), {}, 1796083200}; }

advisor::Request DrainReq(const model::Topology& t, json drain, bool flow) {
  advisor::Request r;
  r.drain = testing::DrainOf(t, drain);
  r.flow = flow;
  return r;
}

bool HasReason(const policies::Verdict& v, const std::string& rule) {
  return std::any_of(v.reasons.begin(), v.reasons.end(), [&](const auto& r) { return r.rule == rule; });
}

}  // namespace

TEST_CASE("a leaf drain that cuts off a priority job is denied; moving it makes the drain allowed") {
  auto snap = testing::SnapshotFromJson(ThreeLeaves(), Jobs(100));
  advisor::Advisor adv({});
  for (bool flow : {false, true}) {
    CAPTURE(flow);
    auto a = adv.Assess(Ctx(snap), DrainReq(*snap->topology, {{"switches", {"leaf0"}}}, flow), DefaultPolicy());
    REQUIRE(a.has_value());
    const auto& v = a->scenario.verdict;
    CHECK(v.decision == policies::Decision::kDeny);
    CHECK(HasReason(v, "no-disconnect-priority"));
    // Both jobs lose h0 / h1: "batch" (priority 0) is only warned about.
    CHECK(a->scenario.jobs_disconnected == 2);
    // Migrations: each job to the two free hosts of leaf2... but there are
    // only two free hosts, so the first (deny, priority 100) job gets them.
    std::vector<const advisor::Recommendation*> migrations;
    for (const auto& r : a->recommendations) {
      if (r.kind == advisor::RecommendationKind::kMigrate) migrations.push_back(&r);
    }
    REQUIRE(migrations.size() == 1);
    const auto& m = *migrations.front();
    CHECK(snap->jobs->job(m.job).id == "critical");
    std::set<std::string> to;
    for (auto h : m.to_hosts) to.insert(snap->topology->node(h).name);
    CHECK(to == std::set<std::string>{"h4", "h5"});
    CHECK(m.fixes_job);
    // Cost: restart 120 s + lost work. Started time unknown: half the
    // 600 s checkpoint interval = 300 s. 420 s x 2 GPUs = 0.2333 GPU-hours.
    CHECK(m.cost_s == doctest::Approx(420));
    CHECK(m.cost_gpu_hours == doctest::Approx(420.0 * 2 / 3600));
    // "batch" is still cut off by the drain: only a warning remains, so
    // moving "critical" alone does not make it allow.
    CHECK(m.predicted.decision == policies::Decision::kWarn);
    // Waiting: "critical" has no expected end; "batch" ends at 06:00, so
    // waiting for it alone is offered (6 h x 8 GPU-hours per hour = 48
    // GPU-hours) but leaves "critical" cut off: deny.
    std::vector<const advisor::Recommendation*> waits;
    for (const auto& r : a->recommendations) {
      if (r.kind == advisor::RecommendationKind::kWait) waits.push_back(&r);
    }
    REQUIRE(waits.size() == 1);
    CHECK(waits[0]->wait_until == *codec::ParseRfc3339("2026-12-01T06:00:00Z"));
    CHECK(waits[0]->cost_gpu_hours == doctest::Approx(48));
    CHECK(waits[0]->predicted.decision == policies::Decision::kDeny);
    // Together, moving "critical" and waiting for "batch" clear every rule:
    // the only set that does, at 48 + 0.23 GPU-hours.
    REQUIRE(a->allow_after.size() == 2);
    std::set<advisor::RecommendationKind> kinds;
    for (int i : a->allow_after) kinds.insert(a->recommendations[i].kind);
    CHECK(kinds == std::set<advisor::RecommendationKind>{advisor::RecommendationKind::kMigrate,
                                                         advisor::RecommendationKind::kWait});
    CHECK(a->allow_after_cost_gpu_hours == doctest::Approx(48 + 420.0 * 2 / 3600));
    REQUIRE(a->allow_after_predicted.has_value());
    CHECK(a->allow_after_predicted->decision == policies::Decision::kAllow);
  }
}

TEST_CASE("allow_after: the recommended migrations together turn deny into allow") {
  // Only the critical job runs; the batch job is gone, so moving critical
  // off leaf0 clears every rule.
  json jobs = Jobs(100);
  jobs["jobs"].erase(1);
  auto snap = testing::SnapshotFromJson(ThreeLeaves(), jobs);
  advisor::Advisor adv({});
  auto a = adv.Assess(Ctx(snap), DrainReq(*snap->topology, {{"switches", {"leaf0"}}}, true), DefaultPolicy());
  REQUIRE(a.has_value());
  CHECK(a->scenario.verdict.decision == policies::Decision::kDeny);
  REQUIRE(a->allow_after.size() == 1);
  const auto& m = a->recommendations[a->allow_after[0]];
  CHECK(m.kind == advisor::RecommendationKind::kMigrate);
  CHECK(m.predicted.decision == policies::Decision::kAllow);
  REQUIRE(a->allow_after_predicted.has_value());
  CHECK(a->allow_after_predicted->decision == policies::Decision::kAllow);
  // And the migrated snapshot, re-assessed from scratch, agrees.
  auto moved = advisor::WithJobMoved(*snap, m.job, m.to_hosts);
  auto again = adv.Assess(Ctx(moved), DrainReq(*moved->topology, {{"switches", {"leaf0"}}}, true), DefaultPolicy());
  REQUIRE(again.has_value());
  CHECK(again->scenario.verdict.decision == policies::Decision::kAllow);
}

TEST_CASE("an unused switch is allowed with no impact") {
  auto snap = testing::SnapshotFromJson(ThreeLeaves(), Jobs(100));
  advisor::Advisor adv({});
  auto a = adv.Assess(Ctx(snap), DrainReq(*snap->topology, {{"switches", {"leaf2"}}}, true), DefaultPolicy());
  REQUIRE(a.has_value());
  CHECK(a->scenario.verdict.decision == policies::Decision::kAllow);
  CHECK(a->scenario.jobs_affected == 0);
  CHECK(a->scenario.verdict.reasons.empty());
  CHECK(a->recommendations.empty());
  // Property: a drain no flow crosses leaves every rate as it was.
  REQUIRE(a->scenario.flow.has_value());
  for (const auto& j : a->scenario.flow->jobs) {
    CHECK(j.drained.comm_s == doctest::Approx(j.baseline.comm_s));
    REQUIRE(j.slowdown_pct.has_value());
    CHECK(*j.slowdown_pct == doctest::Approx(0.0));
  }
}

TEST_CASE("two switches on one power feed are denied by the fabric rule, and no migration is offered for it") {
  auto snap = testing::SnapshotFromJson(ThreeLeaves(), Jobs(0));
  advisor::Advisor adv({});
  auto a =
      adv.Assess(Ctx(snap), DrainReq(*snap->topology, {{"switches", {"spine0", "spine1"}}}, false), DefaultPolicy());
  REQUIRE(a.has_value());
  CHECK(a->scenario.verdict.decision == policies::Decision::kDeny);
  CHECK(HasReason(a->scenario.verdict, "power-domain"));
  CHECK(a->allow_after.empty());
  CHECK_FALSE(a->notes.empty());
}

TEST_CASE("active drains are applied and counted") {
  auto snap = testing::SnapshotFromJson(ThreeLeaves(), Jobs(0));
  advisor::Advisor adv({});
  auto ctx = Ctx(snap);
  ctx.active = testing::DrainOf(*snap->topology, {{"switches", {"spine0"}}});
  // spine1 alone would be fine, but with spine0 already down it cuts every
  // leaf off from the others and shares spine0's power feed.
  auto a = adv.Assess(ctx, DrainReq(*snap->topology, {{"switches", {"spine1"}}}, false), DefaultPolicy());
  REQUIRE(a.has_value());
  CHECK(a->scenario.verdict.decision == policies::Decision::kDeny);
  CHECK(HasReason(a->scenario.verdict, "power-domain"));
  CHECK(a->scenario.jobs_disconnected == 2);
  // Without the active drain, spine1 alone halves paths but cuts nothing.
  auto b = adv.Assess(Ctx(snap), DrainReq(*snap->topology, {{"switches", {"spine1"}}}, false), DefaultPolicy());
  REQUIRE(b.has_value());
  CHECK(b->scenario.jobs_disconnected == 0);
}

TEST_CASE("wait: the drain passes once the rule breakers have ended") {
  // Only the batch job (expected end known) is hurt by draining leaf1... and
  // so is critical (h2). Make critical live on leaf0 + leaf2 instead.
  json jobs = Jobs(0);
  jobs["jobs"][0]["hosts"] = {"h0", "h4"};
  auto snap = testing::SnapshotFromJson(ThreeLeaves(), jobs);
  advisor::Advisor adv({});
  auto a = adv.Assess(Ctx(snap), DrainReq(*snap->topology, {{"switches", {"leaf1"}}}, false), DefaultPolicy());
  REQUIRE(a.has_value());
  CHECK(a->scenario.verdict.decision == policies::Decision::kWarn);  // batch (priority 0) cut off
  auto wait = std::find_if(a->recommendations.begin(), a->recommendations.end(),
                           [](const auto& r) { return r.kind == advisor::RecommendationKind::kWait; });
  REQUIRE(wait != a->recommendations.end());
  CHECK(wait->wait_until == *codec::ParseRfc3339("2026-12-01T06:00:00Z"));
  CHECK(wait->predicted.decision == policies::Decision::kAllow);
}

TEST_CASE("demo: migrations never land on busy hosts or on hosts the drain touches") {
  auto preset = *fabric::FindPreset("demo");
  auto spec = fabric::GenerateFabric(preset.fabric);
  auto jobs = fabric::GenerateJobs(spec, preset.fabric, preset.jobs);
  auto topo = std::make_shared<const model::Topology>(*model::BuildTopology(spec));
  auto snap = model::MakeSnapshot(topo, 1, jobs, 1);
  advisor::Advisor adv({});
  auto drain = testing::DrainOf(*topo, {{"switches", {"p0-leaf3-r0"}}});
  advisor::Request req;
  req.drain = drain;
  req.flow = true;
  auto a = adv.Assess(Ctx(snap), req, DefaultPolicy());
  REQUIRE(a.has_value());
  CHECK(a->scenario.verdict.decision == policies::Decision::kDeny);
  REQUIRE_FALSE(a->allow_after.empty());
  CHECK(a->allow_after_predicted->decision == policies::Decision::kAllow);
  model::DrainMask mask(*topo, drain);
  int migrations = 0;
  for (const auto& r : a->recommendations) {
    if (r.kind != advisor::RecommendationKind::kMigrate) continue;
    ++migrations;
    CHECK(r.to_hosts.size() == r.from_hosts.size());
    for (auto h : r.to_hosts) {
      CHECK(snap->jobs->HostIsFree(h));
      for (const auto& adj : topo->neighbors(h)) {
        CHECK_FALSE(mask.link_down(adj.link));
        CHECK_FALSE(mask.node_down(adj.peer));
      }
      // Same shape: as many NICs as the job's hosts had.
      CHECK(topo->neighbors(h).size() == topo->neighbors(r.from_hosts.front()).size());
    }
  }
  CHECK(migrations >= 1);
}

TEST_CASE("demo: a spine-plane plan keeps every batch allowed") {
  auto preset = *fabric::FindPreset("demo");
  auto spec = fabric::GenerateFabric(preset.fabric);
  auto jobs = fabric::GenerateJobs(spec, preset.fabric, preset.jobs);
  auto topo = std::make_shared<const model::Topology>(*model::BuildTopology(spec));
  auto snap = model::MakeSnapshot(topo, 1, jobs, 1);
  std::vector<model::NodeId> plane;
  for (auto s : topo->switches()) {
    if (topo->node(s).plane == "plane-0" && topo->node(s).level >= model::kSpineLevel) plane.push_back(s);
  }
  REQUIRE(plane.size() == 4);  // p0-spine0, p1-spine0, ss0-0, ss0-1
  advisor::Advisor adv({});
  auto policy = DefaultPolicy();
  auto plan = adv.PlanDrains(Ctx(snap), plane, true, policy);
  REQUIRE(plan.has_value());
  CHECK(plan->all_allowed);
  size_t drained = 0;
  for (const auto& b : plan->batches) {
    drained += b.switches.size();
    CHECK(b.predicted.decision == policies::Decision::kAllow);
    // Re-check each batch independently: allowed as planned.
    advisor::Request req;
    req.drain.switches = b.switches;
    std::sort(req.drain.switches.begin(), req.drain.switches.end());
    req.flow = true;
    auto a = adv.Assess(Ctx(snap), req, policy);
    REQUIRE(a.has_value());
    if (b.migrations.empty()) CHECK(a->scenario.verdict.decision == policies::Decision::kAllow);
  }
  CHECK(drained == plane.size());
  // The plane rule (warn) keeps two switches of one plane out of one batch.
  CHECK(plan->batches.size() >= 2);
}

TEST_CASE("alternatives are ranked safest first") {
  auto snap = testing::SnapshotFromJson(ThreeLeaves(), Jobs(100));
  advisor::Advisor adv({});
  advisor::Request req;
  for (auto s : {"leaf0", "leaf2", "spine0"})
    req.any_of.push_back(testing::DrainOf(*snap->topology, {{"switches", {s}}}));
  auto a = adv.Assess(Ctx(snap), req, DefaultPolicy());
  REQUIRE(a.has_value());
  std::vector<std::string> order;
  for (const auto& r : a->recommendations) {
    if (r.kind == advisor::RecommendationKind::kAlternative) {
      order.push_back(snap->topology->node(r.alternative.switches.front()).name);
    }
  }
  // leaf2 touches nothing; spine0 halves paths (allowed); leaf0 cuts jobs off.
  CHECK(order == std::vector<std::string>{"leaf2", "spine0", "leaf0"});
  // The scenario itself is the best alternative.
  CHECK(snap->topology->node(a->scenario.drain.switches.front()).name == "leaf2");
}

TEST_CASE("the snapshot's SimCache serves every advisor; migrations simulate on caches of their own") {
  auto snap = testing::SnapshotFromJson(ThreeLeaves(), Jobs(100));
  auto cache = std::make_shared<advisor::SimCache>(snap);
  advisor::Context ctx{snap, {}, 1796083200, cache};
  advisor::AdvisorOptions slow;
  slow.flow.goodput = 0.5;
  advisor::Advisor a1({}), a2(slow);  // two calibrations, one snapshot
  auto req = DrainReq(*snap->topology, {{"switches", {"leaf0"}}}, true);
  auto r1 = a1.Assess(ctx, req, DefaultPolicy());
  REQUIRE(r1.has_value());
  // One job index, one flow simulator (the migrations' moved snapshots did
  // not land in the snapshot's cache).
  CHECK(cache->stats().job_indexes_built == 1);
  CHECK(cache->stats().flow_sims_built == 1);
  auto r2 = a2.Assess(ctx, req, DefaultPolicy());
  REQUIRE(r2.has_value());
  CHECK(cache->stats().job_indexes_built == 1);  // shared
  CHECK(cache->stats().flow_sims_built == 2);    // another goodput: another flow model
  CHECK(cache->stats().flow_sims_held == 2);
  CHECK(a1.JobIndex(ctx) == a2.JobIndex(ctx));
  // Same answer as an advisor with caches of its own.
  advisor::Advisor own({});
  auto r3 = own.Assess(Ctx(snap), req, DefaultPolicy());
  REQUIRE(r3.has_value());
  CHECK(r3->scenario.verdict.decision == r1->scenario.verdict.decision);
  CHECK(r3->recommendations.size() == r1->recommendations.size());
  // A cache of another snapshot is not used.
  auto other = testing::SnapshotFromJson(ThreeLeaves(), Jobs(100));
  advisor::Context wrong{other, {}, 1796083200, cache};
  REQUIRE(a1.Assess(wrong, DrainReq(*other->topology, {{"switches", {"leaf0"}}}, false), DefaultPolicy()).has_value());
  CHECK(cache->stats().job_indexes_built == 1);
  CHECK(a1.JobIndex(wrong) != a1.JobIndex(ctx));
}
