// The engine library on its own: typed requests from JSON (the codec), the
// engine on a hand-built view, and the view's derived parts (advisors,
// caches) across calibration and link-state changes.
#include <doctest/doctest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "advisor/sim_cache.h"
#include "engine/codec.h"
#include "engine/engine.h"
#include "engine/view.h"
#include "testing/fabrics.h"

using namespace drainwise;
using nlohmann::json;

namespace {

json TwoJobs() {
  json iteration = {{"compute_ms", 100}, {"collectives", {{{"kind", "allreduce"}, {"bytes", 1e9}}}}};
  return {{"format", "drainwise.jobs/v1"},
          {"jobs",
           {{{"id", "j1"}, {"priority", 100}, {"hosts", {"h0", "h2"}}, {"iteration", iteration}},
            {{"id", "j2"}, {"priority", 0}, {"hosts", {"h1", "h3"}}, {"iteration", iteration}}}}};
}

engine::View MakeView(model::SnapshotPtr snapshot) {
  engine::View v;
  v.version = 1;
  v.snapshot = std::move(snapshot);
  auto policy = policies::DefaultPolicy();
  REQUIRE(policy.has_value());
  v.policy = std::make_shared<const policies::Policy>(*policy);
  v.calibration = std::make_shared<const engine::Calibration>();
  engine::UpdateDerived(v, nullptr);
  return v;
}

std::shared_ptr<spdlog::logger> QuietLog() {
  auto log = std::make_shared<spdlog::logger>("engine-test");  // no sinks: silent
  return log;
}

}  // namespace

TEST_CASE("codec: assessment and plan requests are typed and resolved; errors name the field") {
  auto topo = testing::TopologyFromJson(testing::TwoByTwo());
  auto a = engine::ParseAssessRequest(
      {{"drain", {{"switches", {"spine0"}}}}, {"modes", {"job", "flow"}}, {"ticket", "CHG-1"}}, topo);
  REQUIRE(a.has_value());
  CHECK(a->flow);
  REQUIRE(a->drain.switches.size() == 1);
  CHECK(topo.node(a->drain.switches[0]).name == "spine0");
  CHECK(a->recommend);

  auto any = engine::ParseAssessRequest({{"any_of", {"spine0", {{"switches", {"spine1"}}}}}}, topo);
  REQUIRE(any.has_value());
  CHECK(any->any_of.size() == 2);
  CHECK(any->drain.empty());

  auto none = engine::ParseAssessRequest(json::object(), topo);
  REQUIRE(!none.has_value());
  CHECK(none.error().message.find("drain") != std::string::npos);
  auto mode = engine::ParseAssessRequest({{"drain", {{"switches", {"spine0"}}}}, {"modes", {"packet"}}}, topo);
  REQUIRE(!mode.has_value());
  CHECK(mode.error().message.find("modes") != std::string::npos);
  CHECK(mode.error().message.find("packet") != std::string::npos);
  auto unknown = engine::ParseAssessRequest({{"drain", {{"switches", {"spine9"}}}}}, topo);
  REQUIRE(!unknown.has_value());
  CHECK(unknown.error().message.find("spine9") != std::string::npos);
  auto extra = engine::ParseAssessRequest({{"drain", {{"switches", {"spine0"}}}}, {"dran", 1}}, topo);
  REQUIRE(!extra.has_value());
  CHECK(extra.error().message.find("dran") != std::string::npos);

  auto plan = engine::ParsePlanRequest({{"switches", {"spine1", "spine0"}}, {"modes", {"flow"}}}, topo);
  REQUIRE(plan.has_value());
  CHECK(plan->switches.size() == 2);
  CHECK(plan->flow);
  auto empty_plan = engine::ParsePlanRequest({{"switches", json::array()}}, topo);
  REQUIRE(!empty_plan.has_value());
  CHECK(empty_plan.error().message.find("switches") != std::string::npos);

  auto tier = engine::ResolveCandidates("spine", {}, topo);
  REQUIRE(tier.has_value());
  CHECK(tier->switches.size() == 2);
  auto no_tier = engine::ResolveCandidates("superspine", {}, topo);
  REQUIRE(!no_tier.has_value());
  CHECK(no_tier.error().message.find("superspine") != std::string::npos);
  CHECK(no_tier.error().message.find("spine") != std::string::npos);
}

TEST_CASE("codec: a calibration document round-trips; bad values name the field") {
  advisor::AdvisorOptions base;
  base.max_migrations = 3;  // not a calibration field: kept from the base
  json doc = {{"format", "drainwise.calibration/v1"},
              {"goodput", 0.8},
              {"per_hop_latency_us", 2.5},
              {"per_message_overhead_us", 7},
              {"fitted_at", "2026-12-01T00:00:00Z"},
              {"observations", 12},
              {"rmse_s", 0.01}};
  auto c = engine::ParseCalibration(doc, base);
  REQUIRE(c.has_value());
  CHECK(c->source == "fit");
  CHECK(c->options.flow.goodput == doctest::Approx(0.8));
  CHECK(c->options.flow.per_hop_latency_s == doctest::Approx(2.5e-6));
  CHECK(c->options.max_migrations == 3);
  auto again = engine::ParseCalibration(engine::CalibrationDocument(*c), base);
  REQUIRE(again.has_value());
  CHECK(engine::CalibrationDocument(*again) == engine::CalibrationDocument(*c));

  json operator_doc = {{"format", "drainwise.calibration/v1"},
                       {"goodput", 0.9},
                       {"per_hop_latency_us", 1},
                       {"per_message_overhead_us", 5}};
  auto op = engine::ParseCalibration(operator_doc, base);
  REQUIRE(op.has_value());
  CHECK(op->source == "operator");

  for (auto [field, value] :
       {std::pair{"goodput", 0.0}, std::pair{"goodput", 1.5}, std::pair{"per_hop_latency_us", -1.0}}) {
    json bad = operator_doc;
    bad[field] = value;
    auto r = engine::ParseCalibration(bad, base);
    REQUIRE(!r.has_value());
    CHECK(r.error().message.find(field) != std::string::npos);
  }
}

TEST_CASE("engine: an assessment on one view, rendered by the codec with that view's calibration") {
  auto view = MakeView(testing::SnapshotFromJson(testing::TwoByTwo(), TwoJobs()));
  auto eng = engine::MakeEngine(QuietLog());
  const auto& topo = *view.snapshot->topology;
  // Draining both spines cuts every cross-leaf pair: both jobs disconnected, deny.
  auto req = engine::ParseAssessRequest({{"drain", {{"switches", {"spine0", "spine1"}}}}, {"modes", {"flow"}}}, topo);
  REQUIRE(req.has_value());
  auto out = eng->Assess(view, *req, {1796083200, {}});
  REQUIRE(out.has_value());
  CHECK(out->assessment.scenario.jobs_disconnected == 2);
  CHECK(out->assessment.scenario.verdict.decision == policies::Decision::kDeny);
  CHECK(!out->background_from_telemetry);
  json doc = engine::AssessmentJson(*out, view);
  CHECK(engine::VerdictOf(doc) == "deny");
  CHECK(doc["model"]["calibration"]["source"] == "configuration");
  CHECK(doc["timings_ms"].contains("total"));

  // One spine: every pair keeps half its paths; nobody disconnected.
  auto one = engine::ParseAssessRequest({{"drain", {{"switches", {"spine0"}}}}}, topo);
  auto o1 = eng->Assess(view, *one, {1796083200, {}});
  REQUIRE(o1.has_value());
  CHECK(o1->assessment.scenario.jobs_disconnected == 0);
  CHECK(o1->assessment.scenario.jobs_affected == 2);

  // A cancelled call is an error, not a result.
  std::stop_source stop;
  stop.request_stop();
  auto cancelled = eng->Assess(view, *req, {1796083200, stop.get_token()});
  REQUIRE(!cancelled.has_value());
  CHECK(cancelled.error().code == ErrorCode::kCancelled);
}

TEST_CASE("engine: plans, candidates and predictions are typed") {
  auto view = MakeView(testing::SnapshotFromJson(testing::TwoByTwo(), TwoJobs()));
  auto eng = engine::MakeEngine(QuietLog());
  const auto& topo = *view.snapshot->topology;
  auto plan_req = engine::ParsePlanRequest({{"switches", {"spine0", "spine1"}}}, topo);
  REQUIRE(plan_req.has_value());
  auto plan = eng->Plan(view, *plan_req, {1796083200, {}});
  REQUIRE(plan.has_value());
  // Both spines at once cut every job off: they cannot share a batch.
  CHECK(plan->plan.batches.size() == 2);
  json plan_doc = engine::PlanJson(*plan, view);
  CHECK(plan_doc["batches"].size() == 2);

  auto cand_req = engine::ResolveCandidates("spine", {}, topo);
  REQUIRE(cand_req.has_value());
  auto cands = eng->DrainCandidates(view, *cand_req, {1796083200, {}});
  REQUIRE(cands.has_value());
  CHECK(cands->candidates.size() == 2);
  json cand_doc = engine::CandidatesJson(*cands, view);
  CHECK(cand_doc["tier"] == "spine");
  CHECK(cand_doc["topology_version"] == view.snapshot->topology_version);

  auto j1 = view.snapshot->jobs->FindJob("j1");
  REQUIRE(j1.has_value());
  auto base = eng->PredictIteration(view, *j1, {}, {1796083200, {}});
  auto drained = eng->PredictIteration(view, *j1, testing::DrainOf(topo, {{"switches", {"spine0"}}}), {1796083200, {}});
  REQUIRE(base.has_value());
  REQUIRE(drained.has_value());
  CHECK(*base > 0.1);       // at least the 100 ms of compute
  CHECK(*drained > *base);  // half the uplinks: a slower allreduce
  auto cut =
      eng->PredictIteration(view, *j1, testing::DrainOf(topo, {{"switches", {"spine0", "spine1"}}}), {1796083200, {}});
  REQUIRE(cut.has_value());
  CHECK(*cut == 0.0);  // cut off: no prediction
}

TEST_CASE("view: a link-state refresh keeps the snapshot's caches; only the background simulator is new") {
  auto snapshot = testing::SnapshotFromJson(testing::TwoByTwo(), TwoJobs());
  auto v1 = MakeView(snapshot);
  auto eng = engine::MakeEngine(QuietLog());
  const auto& topo = *snapshot->topology;
  auto req = engine::ParseAssessRequest({{"drain", {{"switches", {"spine0"}}}}, {"modes", {"flow"}}}, topo);
  REQUIRE(req.has_value());
  REQUIRE(eng->Assess(v1, *req, {1796083200, {}}).has_value());
  auto stats = v1.cache->stats();
  CHECK(stats.job_indexes_built == 1);
  CHECK(stats.flow_sims_built == 1);

  // Telemetry arrives: 10G of background on every directed link.
  engine::View v2 = v1;
  auto ls = std::make_shared<engine::LinkState>();
  ls->topology_version = snapshot->topology_version;
  ls->background_bps.assign(2 * topo.link_count(), 10e9);
  v2.link_state = ls;
  v2.version = 2;
  engine::UpdateDerived(v2, &v1);
  CHECK(v2.cache == v1.cache);      // the same caches, not a copy
  CHECK(v2.advisor == v1.advisor);  // the calibration did not change
  REQUIRE(v2.advisor_background != nullptr);
  auto out = eng->Assess(v2, *req, {1796083200, {}});
  REQUIRE(out.has_value());
  CHECK(out->background_from_telemetry);
  stats = v2.cache->stats();
  CHECK(stats.job_indexes_built == 1);  // the job level does not depend on link state
  CHECK(stats.flow_sims_built == 2);    // one more: the background changes the flow model's capacities
  CHECK(stats.flow_sims_held == 2);

  // Same telemetry again, in a newer view: nothing is rebuilt.
  engine::View v3 = v2;
  v3.version = 3;
  engine::UpdateDerived(v3, &v2);
  REQUIRE(eng->Assess(v3, *req, {1796083200, {}}).has_value());
  CHECK(v3.cache->stats().flow_sims_built == 2);

  // New telemetry: its simulator replaces the previous background's (bounded).
  engine::View v4 = v3;
  auto ls2 = std::make_shared<engine::LinkState>(*ls);
  ls2->background_bps.assign(2 * topo.link_count(), 20e9);
  v4.link_state = ls2;
  engine::UpdateDerived(v4, &v3);
  REQUIRE(eng->Assess(v4, *req, {1796083200, {}}).has_value());
  stats = v4.cache->stats();
  CHECK(stats.flow_sims_built == 3);
  CHECK(stats.flow_sims_held == 2);  // no background + the latest background
  CHECK(stats.job_indexes_built == 1);

  // A link state of another topology version is not used.
  engine::View v5 = v4;
  auto stale = std::make_shared<engine::LinkState>(*ls2);
  stale->topology_version = snapshot->topology_version + 1;
  v5.link_state = stale;
  engine::UpdateDerived(v5, &v4);
  CHECK(v5.link_state == nullptr);
  CHECK(v5.advisor_background == nullptr);

  // A new snapshot gets caches of its own.
  engine::View v6 = v5;
  v6.snapshot = testing::SnapshotFromJson(testing::TwoByTwo(), TwoJobs());
  engine::UpdateDerived(v6, &v5);
  CHECK(v6.cache != v5.cache);
  CHECK(v6.cache->snapshot() == v6.snapshot);
}

TEST_CASE("view: a calibration change keeps the caches and rebuilds the advisor with the new parameters") {
  auto v1 = MakeView(testing::SnapshotFromJson(testing::TwoByTwo(), TwoJobs()));
  engine::View v2 = v1;
  auto c = std::make_shared<engine::Calibration>(*v1.calibration);
  c->options.flow.goodput = 0.5;
  c->source = "operator";
  v2.calibration = c;
  engine::UpdateDerived(v2, &v1);
  CHECK(v2.cache == v1.cache);
  CHECK(v2.advisor != v1.advisor);
  CHECK(v2.advisor->options().flow.goodput == doctest::Approx(0.5));
  CHECK(v1.advisor->options().flow.goodput == doctest::Approx(0.95));  // the old view is untouched
}

namespace {

// The thread other than the caller's that runs one of two tasks of
// `runner`: each task waits (at most 10 s) until both have started, so
// they run at once, on two threads. A default id when they did not.
std::thread::id HelperOf(const sim::TaskRunner& runner) {
  std::mutex mu;
  std::condition_variable cv;
  int started = 0;
  std::thread::id helper;
  const auto caller = std::this_thread::get_id();
  bool both = true;
  runner(2, [&](size_t) {
    std::unique_lock lock(mu);
    if (std::this_thread::get_id() != caller) helper = std::this_thread::get_id();
    ++started;
    cv.notify_all();
    if (!cv.wait_for(lock, std::chrono::seconds(10), [&] { return started == 2; })) both = false;
  });
  return both ? helper : std::thread::id{};
}

}  // namespace

TEST_CASE("view: the advisors share one kept flow pool until advisor.flow_threads changes") {
  auto base = MakeView(testing::SnapshotFromJson(testing::TwoByTwo(), TwoJobs()));
  CHECK(base.flow_pool == nullptr);  // flow_threads 1 (the default): no helper threads
  CHECK(!base.advisor->flow_runner());

  engine::View v1 = base;
  auto two = std::make_shared<engine::Calibration>(*base.calibration);
  two->options.flow_threads = 2;
  v1.calibration = two;
  engine::UpdateDerived(v1, &base);
  REQUIRE(v1.flow_pool != nullptr);
  CHECK(v1.flow_pool->helpers() == 1);
  const std::thread::id helper = HelperOf(v1.advisor->flow_runner());
  REQUIRE(helper != std::thread::id{});

  // New telemetry: a new background advisor, on the same helper.
  engine::View v2 = v1;
  auto ls = std::make_shared<engine::LinkState>();
  ls->topology_version = v2.snapshot->topology_version;
  ls->background_bps.assign(2 * v2.snapshot->topology->link_count(), 10e9);
  v2.link_state = ls;
  engine::UpdateDerived(v2, &v1);
  REQUIRE(v2.advisor_background != nullptr);
  CHECK(v2.flow_pool == v1.flow_pool);
  CHECK(HelperOf(v2.advisor_background->flow_runner()) == helper);

  // A new calibration with the same thread count: a new advisor, the same pool.
  engine::View v3 = v2;
  auto fit = std::make_shared<engine::Calibration>(*two);
  fit->options.flow.goodput = 0.5;
  v3.calibration = fit;
  engine::UpdateDerived(v3, &v2);
  CHECK(v3.advisor != v2.advisor);
  CHECK(v3.flow_pool == v1.flow_pool);
  CHECK(HelperOf(v3.advisor->flow_runner()) == helper);

  // Another count: a pool of its own; back to 1: none.
  engine::View v4 = v3;
  auto three = std::make_shared<engine::Calibration>(*fit);
  three->options.flow_threads = 3;
  v4.calibration = three;
  engine::UpdateDerived(v4, &v3);
  REQUIRE(v4.flow_pool != nullptr);
  CHECK(v4.flow_pool != v1.flow_pool);
  CHECK(v4.flow_pool->helpers() == 2);
  engine::View v5 = v4;
  v5.calibration = base.calibration;
  engine::UpdateDerived(v5, &v4);
  CHECK(v5.flow_pool == nullptr);
  CHECK(!v5.advisor->flow_runner());
}
