// server::State, the serving view's single writer: concurrent writers never
// lose an update or publish an older view, and a telemetry (link-state)
// refresh keeps the snapshot's simulator caches.
#include <doctest/doctest.h>

#include <atomic>
#include <string>
#include <thread>

#include "advisor/sim_cache.h"
#include "codec/native.h"
#include "server/state.h"
#include "store/store.h"
#include "testing/fabrics.h"

using namespace drainwise;
using nlohmann::json;

namespace {

json JobsNumbered(int i) {
  return {{"format", "drainwise.jobs/v1"}, {"jobs", {{{"id", "put-" + std::to_string(i)}, {"hosts", {"h0", "h2"}}}}}};
}

int Suffix(const std::string& s) { return std::stoi(s.substr(s.rfind('-') + 1)); }

}  // namespace

TEST_CASE("concurrent PUT /v1/jobs and connector refreshes never lose either update; versions only grow") {
  auto db = std::move(*store::Store::Open(":memory:"));
  server::State state(db.get());
  json topo = testing::TwoByTwo();
  topo["name"] = "fabric-0";
  REQUIRE(state.PutBoth(topo, JobsNumbered(0), "test").has_value());

  constexpr int kRounds = 60;
  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  std::string first_failure;
  std::mutex failure_mu;
  auto fail = [&](std::string what) {
    if (failures++ == 0) {
      std::lock_guard lock(failure_mu);
      first_failure = std::move(what);
    }
  };
  // PUT /v1/jobs: once a PUT returns, no later view may serve older jobs.
  std::thread jobs_writer([&] {
    for (int i = 1; i <= kRounds; ++i) {
      auto put = state.PutJobs(JobsNumbered(i), "api");
      if (!put) return fail("PutJobs: " + put.error().message);
      auto view = state.view();
      int served = Suffix(view->snapshot->jobs->jobs().front().id);
      if (served < i) fail("jobs put-" + std::to_string(i) + " lost: view serves put-" + std::to_string(served));
    }
  });
  // A connector with a topology only (jobs kept): once it returns, no later
  // view may serve an older topology, and the jobs are whatever was PUT last.
  std::thread connector([&] {
    for (int i = 1; i <= kRounds; ++i) {
      json t = testing::TwoByTwo();
      t["name"] = "fabric-" + std::to_string(i);
      auto spec = codec::ParseTopology(t);
      if (!spec) return fail("ParseTopology: " + spec.error().message);
      auto put = state.PutSpecs(&*spec, nullptr, "source:test");
      if (!put) return fail("PutSpecs: " + put.error().message);
      int served = Suffix(state.view()->snapshot->topology->name());
      if (served < i) {
        fail("topology fabric-" + std::to_string(i) + " lost: view serves fabric-" + std::to_string(served));
      }
    }
  });
  // Drain changes in between, and a reader that never sees a version go back.
  std::thread drains([&] {
    for (int i = 0; i < kRounds; ++i) {
      if (auto st = state.ReloadDrains(); !st) return fail("ReloadDrains: " + st.error().message);
    }
  });
  std::thread reader([&] {
    uint64_t last = 0;
    int64_t last_jobs = 0, last_topology = 0;
    while (!done) {
      auto v = state.view();
      if (v->version < last) fail("view version went back");
      if (v->snapshot->jobs_version < last_jobs || v->snapshot->topology_version < last_topology) {
        fail("document versions went back");
      }
      last = v->version;
      last_jobs = v->snapshot->jobs_version;
      last_topology = v->snapshot->topology_version;
    }
  });
  jobs_writer.join();
  connector.join();
  drains.join();
  done = true;
  reader.join();
  CHECK_MESSAGE(failures == 0, first_failure);
  auto v = state.view();
  CHECK(v->snapshot->jobs->jobs().front().id == "put-" + std::to_string(kRounds));
  CHECK(v->snapshot->topology->name() == "fabric-" + std::to_string(kRounds));
  // The store agrees with what is served.
  auto stored = db->LatestDocument(store::DocKind::kJobs);
  REQUIRE(stored.has_value());
  REQUIRE(stored->has_value());
  CHECK((*stored)->info.version == v->snapshot->jobs_version);
  CHECK((*stored)->body.find("put-" + std::to_string(kRounds)) != std::string::npos);
}

TEST_CASE("a telemetry refresh publishes a new view that keeps the snapshot and its simulator caches") {
  auto db = std::move(*store::Store::Open(":memory:"));
  server::State state(db.get());
  json jobs = {{"format", "drainwise.jobs/v1"}, {"jobs", {{{"id", "j1"}, {"hosts", {"h0", "h2"}}}}}};
  REQUIRE(state.PutBoth(testing::TwoByTwo(), jobs, "test").has_value());
  double background = 0;
  state.SetLinkStateSource([&](const model::Snapshot& snap) {
    auto ls = std::make_shared<engine::LinkState>();
    ls->topology_version = snap.topology_version;
    ls->background_bps.assign(2 * snap.topology->link_count(), background);
    return ls;
  });
  auto before = state.view();
  REQUIRE(before->cache != nullptr);
  auto index = before->cache->JobIndex();  // warm the job-level cache
  CHECK(before->cache->stats().job_indexes_built == 1);

  background = 5e9;
  state.RefreshLinkState();
  auto after = state.view();
  CHECK(after->version == before->version + 1);
  CHECK(after->snapshot == before->snapshot);
  CHECK(after->cache == before->cache);  // the same caches, warm
  CHECK(after->cache->JobIndex() == index);
  CHECK(after->cache->stats().job_indexes_built == 1);
  REQUIRE(after->link_state != nullptr);
  CHECK(after->link_state->background_bps.front() == 5e9);
  CHECK(after->advisor_background != nullptr);
  CHECK(before->link_state == nullptr);  // the old view is unchanged

  // A new jobs document is a new snapshot: new caches, link state mapped again.
  json more = {{"format", "drainwise.jobs/v1"}, {"jobs", {{{"id", "j2"}, {"hosts", {"h1", "h3"}}}}}};
  REQUIRE(state.PutJobs(more, "test").has_value());
  auto next = state.view();
  CHECK(next->cache != after->cache);
  REQUIRE(next->link_state != nullptr);  // same topology: link state kept
  CHECK(next->link_state->topology_version == next->snapshot->topology_version);
}

TEST_CASE("drains, policy and calibration changes each publish a newer view") {
  auto db = std::move(*store::Store::Open(":memory:"));
  server::State state(db.get());
  json jobs = {{"format", "drainwise.jobs/v1"}, {"jobs", {{{"id", "j1"}, {"hosts", {"h0", "h2"}}}}}};
  REQUIRE(state.PutBoth(testing::TwoByTwo(), jobs, "test").has_value());
  auto v0 = state.view();
  store::DrainRecord rec;
  rec.id = "d-1";
  rec.started_at = 1;
  rec.spec = R"({"switches":["spine0"]})";
  REQUIRE(db->PutDrain(rec).has_value());
  REQUIRE(state.ReloadDrains().has_value());
  auto v1 = state.view();
  CHECK(v1->version > v0->version);
  CHECK(v1->drains.size() == 1);
  CHECK(v1->active.switches.size() == 1);
  CHECK(v1->cache == v0->cache);  // drains do not change the snapshot

  policies::Policy p = *policies::DefaultPolicy();
  p.name = "stricter";
  state.SetPolicy(p);
  auto v2 = state.view();
  CHECK(v2->version == v1->version + 1);
  CHECK(v2->policy->name == "stricter");
  CHECK(v2->drains.size() == 1);  // carried over

  engine::Calibration c;
  c.options.flow.goodput = 0.7;
  c.source = "operator";
  state.SetCalibration(c);
  auto v3 = state.view();
  CHECK(v3->version == v2->version + 1);
  CHECK(v3->advisor->options().flow.goodput == doctest::Approx(0.7));
  CHECK(v3->policy->name == "stricter");
  CHECK(v3->cache == v0->cache);
}
