// The campaign scheduler on a fabric small enough to check by hand.
#include <doctest/doctest.h>

#include <algorithm>

#include "advisor/advisor.h"
#include "advisor/campaign.h"
#include "codec/json_reader.h"
#include "testing/fabrics.h"

using namespace drainwise;
using nlohmann::json;

namespace {

constexpr int64_t kT0 = 1796083200;  // 2026-12-01T00:00:00Z, the window's start and "now"
constexpr int64_t kHour = 3600;

// Two spines and four leaves with two 8-GPU hosts each (single-homed):
//   leaf0: h0 h1 (job A)   leaf1: h2 h3 (job B)   leaf2: h4 h5   leaf3: h6 h7
// Power feeds: the leaves 0 and 1 share "feed-l", the spines share "feed-s".
json CampaignFabric() {
  json nodes = json::array();
  json links = json::array();
  for (int s = 0; s < 2; ++s) {
    nodes.push_back({{"id", "spine" + std::to_string(s)},
                     {"kind", "switch"},
                     {"tier", "spine"},
                     {"domains", {{"power", "feed-s"}}}});
  }
  for (int l = 0; l < 4; ++l) {
    std::string leaf = "leaf" + std::to_string(l);
    nodes.push_back({{"id", leaf},
                     {"kind", "switch"},
                     {"tier", "leaf"},
                     {"domains", {{"power", l < 2 ? "feed-l" : "feed-" + leaf}}}});
    for (auto spine : {"spine0", "spine1"}) links.push_back({{"a", leaf}, {"b", spine}, {"gbps", 400}});
    for (int h = 0; h < 2; ++h) {
      std::string host = "h" + std::to_string(2 * l + h);
      nodes.push_back({{"id", host}, {"kind", "host"}, {"gpus", 8}});
      links.push_back({{"a", host}, {"b", leaf}, {"gbps", 400}});
    }
  }
  return {{"format", "drainwise.topology/v1"}, {"name", "campaign-fabric"}, {"nodes", nodes}, {"links", links}};
}

// A: 16 GPUs on leaf0, ends at T0 + 30 h (day 2), a 2-hour restart and an
//    hourly checkpoint of unknown phase: moving it costs (7200 + 1800) s x 16
//    GPUs = 40 GPU-hours.
// B: 16 GPUs on leaf1, no end, checkpoint every 30 minutes since it started
//    at T0 - 25 min (checkpoints at T0 + 5 min, T0 + 35 min, ...), 5-minute
//    restart: 300 s x 16 = 1.33 GPU-hours right after a checkpoint, 8 GPU-hours
//    at T0 (25 minutes of work lost).
json Jobs() {
  json it = {{"compute_ms", 100}, {"collectives", {{{"kind", "allreduce"}, {"bytes", 1e9}}}}};
  return {{"format", "drainwise.jobs/v1"},
          {"jobs",
           {{{"id", "A"},
             {"priority", 100},
             {"hosts", {"h0", "h1"}},
             {"iteration", it},
             {"expected_end", codec::FormatRfc3339(kT0 + 30 * kHour)},
             {"checkpoint", {{"interval_s", 3600}, {"restart_cost_s", 7200}}}},
            {{"id", "B"},
             {"priority", 100},
             {"hosts", {"h2", "h3"}},
             {"iteration", it},
             {"started_at", codec::FormatRfc3339(kT0 - 1500)},
             {"checkpoint", {{"interval_s", 1800}, {"restart_cost_s", 300}}}}}}};
}

policies::Policy Policy() {
  auto p = policies::ParsePolicy(json::parse(R"({
    "format": "drainwise.policy/v1", "name": "campaign-test",
    "job_rules": [{"name": "no-disconnect-priority", "action": "deny",
                   "select": {"priority_at_least": 50}, "forbid_disconnect": true}],
    "fabric_rules": [{"name": "power-domain", "action": "deny", "no_shared_domain": "power"}]})"));
  REQUIRE(p.has_value());
  return *p;
}

advisor::CampaignItem Item(const model::Topology& t, const char* sw) {
  advisor::CampaignItem it;
  it.drain = testing::DrainOf(t, {{"switches", {sw}}});
  it.duration_s = 3600;
  return it;
}

std::string SwitchOf(const model::Topology& t, const advisor::CampaignBatch& b) {
  std::string out;
  for (auto s : b.drain.switches) out += (out.empty() ? "" : "+") + t.node(s).name;
  return out;
}

}  // namespace

TEST_CASE("campaign: waits for a job ending on day 2, migrates the other right after a checkpoint") {
  auto snap = testing::SnapshotFromJson(CampaignFabric(), Jobs());
  const auto& topo = *snap->topology;
  advisor::AdvisorOptions opts;
  opts.delay_gpu_hours_per_hour = 0.5;  // an hour of delay of one item: 0.5 GPU-hours
  advisor::Advisor adv(opts);
  advisor::CampaignRequest req;
  for (auto sw : {"leaf0", "leaf1", "spine0", "spine1"}) req.items.push_back(Item(topo, sw));
  req.window = {kT0, kT0 + 7 * 24 * kHour};
  req.max_concurrent = 2;
  req.blackouts = {{kT0 + 2 * kHour, kT0 + 4 * kHour}};
  auto c = adv.PlanCampaign(advisor::Context{snap, {}, kT0}, req, Policy());
  REQUIRE(c.has_value());
  const auto& s = c->chosen;
  CAPTURE(c->notes);
  // Grouping (power feeds): leaf0 and leaf1 share one, the spines another,
  // so the items pair up as {leaf0, spine0} and {leaf1, spine1}.
  REQUIRE(s.batches.size() == 2);
  CHECK(s.unscheduled.empty());
  CHECK(s.all_allowed);
  // First {leaf1, spine1}: at T0 moving B loses 25 minutes (8 GPU-h); at
  // its checkpoint at T0 + 5 min only the restart (1.33 GPU-h) plus 5
  // minutes' delay of two items (2 x 5/60 x 0.5 = 0.083 GPU-h).
  const auto& b1 = s.batches[0];
  CHECK(SwitchOf(topo, b1) == "spine1+leaf1");  // in node id order
  CHECK(b1.start == kT0 + 300);
  CHECK(b1.end == kT0 + 300 + kHour);
  REQUIRE(b1.actions.size() == 1);
  CHECK(b1.actions[0].kind == advisor::CampaignActionKind::kMigrate);
  CHECK(snap->jobs->job(b1.actions[0].job).id == "B");
  CHECK(b1.actions[0].after_checkpoint);
  CHECK(b1.actions[0].at == kT0 + 300);
  CHECK(b1.migration_gpu_hours == doctest::Approx(300.0 * 16 / 3600));
  CHECK(b1.delay_gpu_hours == doctest::Approx(2 * 300.0 / 3600 * 0.5));
  CHECK(b1.predicted.decision == policies::Decision::kAllow);
  // Then {leaf0, spine0}: from T0 + 1h05 the next start outside the
  // blackout is T0 + 4 h: moving A costs 40 + 2 x 4 x 0.5 = 44 GPU-h; waiting
  // for A's end at T0 + 30 h costs 2 x 30 x 0.5 = 30 GPU-h: it waits.
  const auto& b2 = s.batches[1];
  CHECK(SwitchOf(topo, b2) == "spine0+leaf0");
  CHECK(b2.start == kT0 + 30 * kHour);
  REQUIRE(b2.actions.size() == 1);
  CHECK(b2.actions[0].kind == advisor::CampaignActionKind::kWait);
  CHECK(snap->jobs->job(b2.actions[0].job).id == "A");
  CHECK(b2.actions[0].at == kT0 + 30 * kHour);
  CHECK(b2.migration_gpu_hours == 0);
  CHECK(b2.delay_gpu_hours == doctest::Approx(30.0));
  CHECK(b2.predicted.decision == policies::Decision::kAllow);
  CHECK(s.gpu_hours() == doctest::Approx(300.0 * 16 / 3600 + 2 * 300.0 / 3600 * 0.5 + 30));

  // Constraints: at most two items at once, no batch overlaps the blackout
  // or another batch, everything inside the window.
  for (size_t i = 0; i < s.batches.size(); ++i) {
    const auto& b = s.batches[i];
    CHECK(b.items.size() <= 2);
    CHECK_FALSE((b.start < req.blackouts[0].end_unix_s && b.end > req.blackouts[0].start_unix_s));
    CHECK(b.start >= req.window.start_unix_s);
    CHECK(b.end <= req.window.end_unix_s);
    if (i > 0) CHECK(b.start >= s.batches[i - 1].end);
  }

  // The simple strategies, by hand:
  //   now: {leaf0, spine0} at T0 moving A (40); {leaf1, spine1} at T0 + 1 h
  //        moving B 25 minutes after its checkpoint (8) + 2 x 1 h x 0.5 = 49.
  //   after_jobs_end: {leaf0, spine0} at A's end T0 + 30 h (delay 30);
  //        {leaf1, spine1} at T0 + 31 h moving B (8) + delay 2 x 31 x 0.5 = 69.
  REQUIRE(c->strategies.size() == 2);
  const auto& now = c->strategies[0];
  const auto& after = c->strategies[1];
  CHECK(now.strategy == "now");
  CHECK(now.gpu_hours() == doctest::Approx(49));
  CHECK(after.strategy == "after_jobs_end");
  CHECK(after.gpu_hours() == doctest::Approx(69));
  CHECK(s.gpu_hours() <= now.gpu_hours());
  CHECK(s.gpu_hours() <= after.gpu_hours());
  CHECK(s.strategy == "search");
}

TEST_CASE("campaign: with a dear delay the job ending on day 2 is migrated instead; objective finish goes early") {
  auto snap = testing::SnapshotFromJson(CampaignFabric(), Jobs());
  const auto& topo = *snap->topology;
  advisor::AdvisorOptions opts;
  opts.delay_gpu_hours_per_hour = 8;  // the default: waiting 30 h for two items costs 480 GPU-h
  advisor::Advisor adv(opts);
  advisor::CampaignRequest req;
  for (auto sw : {"leaf0", "leaf1"}) req.items.push_back(Item(topo, sw));
  req.window = {kT0, kT0 + 7 * 24 * kHour};
  for (auto objective : {advisor::CampaignObjective::kGpuHours, advisor::CampaignObjective::kFinish}) {
    req.objective = objective;
    auto c = adv.PlanCampaign(advisor::Context{snap, {}, kT0}, req, Policy());
    REQUIRE(c.has_value());
    const auto& s = c->chosen;
    REQUIRE(s.batches.size() == 2);  // leaf0 and leaf1 share a power feed
    for (const auto& b : s.batches) {
      CHECK(b.predicted.decision == policies::Decision::kAllow);
      for (const auto& a : b.actions) CHECK(a.kind == advisor::CampaignActionKind::kMigrate);
    }
    CHECK(s.finish < kT0 + 30 * kHour);
  }
}

TEST_CASE("campaign: a deadline before any feasible start leaves the item unscheduled, and the request is checked") {
  auto snap = testing::SnapshotFromJson(CampaignFabric(), Jobs());
  const auto& topo = *snap->topology;
  advisor::Advisor adv({});
  advisor::CampaignRequest req;
  req.items.push_back(Item(topo, "spine0"));
  req.items.back().deadline = kT0 + 3 * kHour;
  req.window = {kT0, kT0 + 7 * 24 * kHour};
  req.blackouts = {{kT0, kT0 + 4 * kHour}};
  auto c = adv.PlanCampaign(advisor::Context{snap, {}, kT0}, req, Policy());
  REQUIRE(c.has_value());
  CHECK(c->chosen.batches.empty());
  CHECK(c->chosen.unscheduled == std::vector<int>{0});
  CHECK_FALSE(c->chosen.all_allowed);

  advisor::CampaignRequest bad = req;
  bad.items.clear();
  CHECK(adv.PlanCampaign(advisor::Context{snap, {}, kT0}, bad, Policy()).error().message.find("items") == 0);
  bad = req;
  bad.max_concurrent = 0;
  CHECK(adv.PlanCampaign(advisor::Context{snap, {}, kT0}, bad, Policy()).error().message.find("max_concurrent") !=
        std::string::npos);
}

TEST_CASE("campaign: a batch's reservation hosts are the drained leaf's and the moved job's") {
  auto snap = testing::SnapshotFromJson(CampaignFabric(), Jobs());
  const auto& topo = *snap->topology;
  advisor::CampaignBatch b;
  b.drain = testing::DrainOf(topo, {{"switches", {"leaf2"}}});
  advisor::CampaignAction a;
  a.kind = advisor::CampaignActionKind::kMigrate;
  a.job = *snap->jobs->FindJob("B");
  a.from_hosts = snap->jobs->job(a.job).hosts;
  b.actions.push_back(a);
  CHECK(advisor::ReservationHosts(*snap, b) == std::vector<std::string>{"h2", "h3", "h4", "h5"});
}
