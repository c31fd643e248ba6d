// Several daemons on one PostgreSQL (issue 17), with the real binary on
// loopback: a throw-away cluster started by the test binary
// (tests/testing/postgres.h), two or more `drainwise serve --db
// postgresql://…` on ephemeral ports. Skipped, saying so, only when the
// PostgreSQL server binaries are not installed.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include "testing/daemon.h"
#include "testing/fabrics.h"
#include "testing/postgres.h"

using namespace drainwise;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

testing::PostgresCluster* Cluster() {
  std::string why;
  bool missing = false;
  auto* pg = testing::PostgresCluster::Shared(&why, &missing);
  if (!pg && missing) MESSAGE("skipped: " << why);
  if (!pg && !missing) FAIL_CHECK(why);
  return pg;
}

json Jobs(const std::string& id) {
  return {{"format", "drainwise.jobs/v1"}, {"jobs", {{{"id", id}, {"hosts", {"h0", "h2"}}}}}};
}

std::string Verdict(testing::Daemon& d, const std::string& spine) {
  auto r = d.Call("POST", "/v1/assessments", json{{"drain", {{"switches", {spine}}}}, {"modes", {"job"}}}.dump());
  REQUIRE_MESSAGE(r.status == 201, r.body);
  return r.Json()["verdict"];
}

double Metric(testing::Daemon& d, const std::string& name) {
  auto body = d.Get("/metrics").body;
  auto at = body.find("\n" + name + " ");
  if (at == std::string::npos) return -1;
  return std::atof(body.c_str() + at + name.size() + 2);
}

// Two daemons on a fresh database with the 2x2 fabric and one job h0-h2,
// stored through A and served by both.
struct Pair {
  std::string url;
  std::unique_ptr<testing::Daemon> a, b;
  explicit Pair(testing::PostgresCluster* pg, std::vector<std::string> extra = {}) {
    url = pg->NewDatabase();
    REQUIRE(!url.empty());
    std::vector<std::string> args = {"--db", url};
    args.insert(args.end(), extra.begin(), extra.end());
    a = std::make_unique<testing::Daemon>(args);
    REQUIRE_MESSAGE(a->started(), a->log());
    b = std::make_unique<testing::Daemon>(args);
    REQUIRE_MESSAGE(b->started(), b->log());
  }
  void LoadTwoByTwo() {
    REQUIRE(a->Call("PUT", "/v1/topology", testing::TwoByTwo().dump()).status == 201);
    REQUIRE(a->Call("PUT", "/v1/jobs", Jobs("j1").dump()).status == 201);
    REQUIRE_MESSAGE(testing::Eventually([&] { return b->Get("/v1/jobs").Json()["jobs"][0]["id"] == "j1"; },
                                        std::chrono::seconds(5)),
                    b->log());
  }
};

}  // namespace

TEST_CASE("two daemons on one PostgreSQL: a drain through A counts in B's next verdict; B's PUT /v1/jobs reaches A") {
  auto* pg = Cluster();
  if (!pg) return;
  Pair p(pg);
  p.LoadTwoByTwo();
  CHECK(p.b->Get("/v1/topology").Json()["name"] == "2x2");
  // Draining spine1 alone leaves the job h0-h2 a path through spine0.
  std::string before = Verdict(*p.b, "spine1");
  CHECK(before != "deny");
  auto drain = p.a->Call("POST", "/v1/drains", R"({"drain":{"switches":["spine0"]},"ticket":"CHG-A"})");
  REQUIRE_MESSAGE(drain.status == 201, drain.body);
  // B's very next request: spine0 is drained (recorded through A), so
  // spine1 as well cuts the job off. No waiting: B catches up before it
  // takes its view.
  CHECK(Verdict(*p.b, "spine1") == "deny");
  CHECK(p.b->Get("/v1/drains").Json()["drains"].size() == 1);

  // PUT /v1/jobs on B is served by A within a second (LISTEN/NOTIFY).
  auto start = Clock::now();
  auto put = p.b->Call("PUT", "/v1/jobs", Jobs("from-b").dump());
  REQUIRE_MESSAGE(put.status == 201, put.body);
  bool served = testing::Eventually([&] { return p.a->Get("/v1/jobs").Json()["jobs"][0]["id"] == "from-b"; },
                                    std::chrono::seconds(1));
  double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  MESSAGE("PUT /v1/jobs on B served by A after " << ms << " ms");
  CHECK_MESSAGE(served, p.a->log());
  CHECK(p.a->Get("/v1/snapshots").Json()["current"]["jobs_version"] == put.Json()["version"]);
  // An Idempotency-Key used through A is replayed by B: one assessment.
  std::string request = json{{"drain", {{"switches", {"spine1"}}}}, {"modes", {"job"}}, {"ticket", "CHG-IDEM"}}.dump();
  auto first = p.a->Call("POST", "/v1/assessments", request, {{"Idempotency-Key", "\"ha-1\""}});
  REQUIRE_MESSAGE(first.status == 201, first.body);
  auto replay = p.b->Call("POST", "/v1/assessments", request, {{"Idempotency-Key", "\"ha-1\""}});
  CHECK(replay.status == 200);
  CHECK(replay.Json()["id"] == first.Json()["id"]);
  CHECK(p.b->Get("/v1/assessments?ticket=CHG-IDEM").Json()["assessments"].size() == 1);
  // Both answer ready, and say that the store is shared.
  CHECK(p.a->Get("/readyz").Json()["status"] == "ready");
  CHECK(p.a->log().find("shared with other daemons") != std::string::npos);
}

TEST_CASE("two daemons on one PostgreSQL: concurrent writes through both get distinct versions, none lost") {
  auto* pg = Cluster();
  if (!pg) return;
  Pair p(pg);
  p.LoadTwoByTwo();
  constexpr int kThreads = 4, kPerThread = 10;  // 2 threads per daemon
  std::mutex mu;
  std::vector<int64_t> versions;
  std::set<std::string> drains;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      testing::Daemon& d = t % 2 ? *p.b : *p.a;
      for (int i = 0; i < kPerThread; ++i) {
        std::string name = "w" + std::to_string(t) + "-" + std::to_string(i);
        auto put = d.Call("PUT", "/v1/jobs", Jobs(name).dump());
        auto drain = d.Call("POST", "/v1/drains",
                            json{{"drain", {{"links", {{{"a", "h1"}, {"b", "leaf0"}}}}}}, {"ticket", name}}.dump());
        std::lock_guard lock(mu);
        if (put.status == 201)
          versions.push_back(put.Json()["version"].get<int64_t>());
        else
          failures++;
        if (drain.status == 201)
          drains.insert(name);
        else
          failures++;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(failures.load() == 0);
  std::set<int64_t> distinct(versions.begin(), versions.end());
  CHECK(distinct.size() == versions.size());
  CHECK(versions.size() == kThreads * kPerThread);
  // Every acknowledged version is stored, and both daemons list every drain.
  auto snaps = p.b->Get("/v1/snapshots?limit=1000").Json();
  std::set<int64_t> stored;
  for (const auto& v : snaps["versions"]) {
    if (v["kind"] == "jobs") stored.insert(v["version"].get<int64_t>());
  }
  for (auto v : distinct) CHECK(stored.count(v) == 1);
  for (auto* d : {p.a.get(), p.b.get()}) {
    std::set<std::string> listed;
    auto reply = d->Get("/v1/drains");
    json doc = reply.Json();  // named: a range-for over a temporary's member would dangle
    for (const auto& x : doc["drains"]) listed.insert(x["ticket"].get<std::string>());
    CHECK_MESSAGE(listed == drains, listed.size() << " listed, " << drains.size() << " acknowledged: " << reply.status
                                                  << " " << reply.body.substr(0, 300));
  }
  // Both end on the same, newest jobs version.
  int64_t newest = *distinct.rbegin();
  CHECK(testing::Eventually(
      [&] {
        return p.a->Get("/v1/snapshots").Json()["current"]["jobs_version"] == newest &&
               p.b->Get("/v1/snapshots").Json()["current"]["jobs_version"] == newest;
      },
      std::chrono::seconds(5)));
}

TEST_CASE("one poller per source: kill -9 of the polling daemon, the other polls within one refresh period") {
  auto* pg = Cluster();
  if (!pg) return;
  std::string dir = testing::MakeTempDir();
  std::ofstream(dir + "/topology.json") << testing::TwoByTwo().dump();
  constexpr double kRefreshS = 2;
  json cfg = {{"sources",
               {{{"name", "fabric"}, {"kind", "native"}, {"path", dir + "/topology.json"}, {"refresh_s", kRefreshS}}}}};
  std::ofstream(dir + "/config.json") << cfg.dump();
  Pair p(pg, {"--config", dir + "/config.json"});
  // A started first and holds the lease; B waits.
  REQUIRE_MESSAGE(testing::Eventually([&] { return Metric(*p.a, "drainwise_source_poller") == 1; }), p.a->log());
  REQUIRE_MESSAGE(testing::Eventually([&] { return p.b->Get("/v1/topology").Json()["name"] == "2x2"; }), p.b->log());
  CHECK(Metric(*p.b, "drainwise_source_poller") == 0);
  CHECK(p.b->Get("/v1/sources").Json()["sources"][0]["attempts"] == 0);
  CHECK(p.b->Get("/readyz").Json()["status"] == "ready");  // not "stale sources": A polls for it
  p.a->Kill();
  auto killed = Clock::now();
  bool took_over = testing::Eventually([&] { return p.b->Get("/v1/sources").Json()["sources"][0]["attempts"] > 0; },
                                       std::chrono::seconds(10));
  double s = std::chrono::duration<double>(Clock::now() - killed).count();
  MESSAGE("B polled " << s << " s after kill -9 of A (refresh_s " << kRefreshS << ")");
  REQUIRE_MESSAGE(took_over, p.b->log());
  CHECK(s < kRefreshS);
  CHECK(Metric(*p.b, "drainwise_source_poller") == 1);
  std::filesystem::remove_all(dir);
}

TEST_CASE("20 cycles of kill -9 during writes through two daemons lose no acknowledged write") {
  auto* pg = Cluster();
  if (!pg) return;
  Pair p(pg);
  p.LoadTwoByTwo();
  std::vector<std::string> args = {"--db", p.url};
  std::unique_ptr<testing::Daemon>* slots[2] = {&p.a, &p.b};
  std::atomic<unsigned short> ports[2];
  ports[0] = p.a->port();
  ports[1] = p.b->port();
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::set<std::string> acked_drains;
  std::set<int64_t> acked_versions;
  std::atomic<int> attempts{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < 2; ++w) {
    writers.emplace_back([&, w] {
      // At most 400 rounds each: with the 2 versions before, fewer than
      // store.keep_versions (1000) and GET /v1/snapshots' limit, so every
      // acknowledged version must still be listed.
      for (int i = 0; !stop.load() && i < 400; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        unsigned short port = ports[(i + w) % 2].load();
        if (port == 0) {
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
          continue;
        }
        std::string name = "c" + std::to_string(w) + "-" + std::to_string(i);
        attempts++;
        auto r =
            testing::HttpCall(port, "POST", "/v1/drains",
                              json{{"drain", {{"links", {{{"a", "h1"}, {"b", "leaf0"}}}}}}, {"ticket", name}}.dump());
        auto put = testing::HttpCall(port, "PUT", "/v1/jobs", Jobs(name).dump());
        std::lock_guard lock(mu);
        if (r.status == 201) acked_drains.insert(name);
        if (put.status == 201) acked_versions.insert(put.Json()["version"].get<int64_t>());
      }
    });
  }
  constexpr int kCycles = 20;
  auto deadline = Clock::now() + std::chrono::seconds(180);
  int cycles = 0;
  for (; cycles < kCycles && Clock::now() < deadline; ++cycles) {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    int victim = cycles % 2;
    ports[victim] = 0;
    (*slots[victim])->Kill();
    *slots[victim] = std::make_unique<testing::Daemon>(args);
    REQUIRE_MESSAGE((*slots[victim])->started(), (*slots[victim])->log());
    ports[victim] = (*slots[victim])->port();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  stop = true;
  for (auto& t : writers) t.join();
  CHECK(cycles == kCycles);
  MESSAGE(attempts.load() << " write attempts, " << acked_drains.size() << " drains and " << acked_versions.size()
                          << " jobs versions acknowledged over " << cycles << " kill -9 cycles");
  CHECK(acked_drains.size() > 20);
  std::set<std::string> listed;
  json drain_list = p.a->Get("/v1/drains").Json();
  for (const auto& x : drain_list["drains"]) listed.insert(x["ticket"].get<std::string>());
  for (const auto& name : acked_drains) CHECK_MESSAGE(listed.count(name) == 1, name);
  std::set<int64_t> stored;
  json version_list = p.b->Get("/v1/snapshots?limit=1000").Json();
  for (const auto& v : version_list["versions"]) {
    if (v["kind"] == "jobs") stored.insert(v["version"].get<int64_t>());
  }
  for (auto v : acked_versions) CHECK_MESSAGE(stored.count(v) == 1, v);
}

TEST_CASE("database stopped: reads answer from the last view (stale), writes get 503 + Retry-After; then resume") {
  auto* pg = Cluster();
  if (!pg) return;
  Pair p(pg);
  p.LoadTwoByTwo();
  REQUIRE(pg->Stop());
  // Reads from the view still answer; readiness and metrics say stale.
  CHECK(testing::Eventually([&] { return p.b->Get("/readyz").Json()["status"] == "stale"; }, std::chrono::seconds(10)));
  auto ready = p.b->Get("/readyz");
  CHECK(ready.status == 200);
  CHECK(ready.Json()["detail"].get<std::string>().find("database") != std::string::npos);
  CHECK(Metric(*p.b, "drainwise_store_stale") == 1);
  CHECK(p.b->Get("/v1/topology").status == 200);
  CHECK(p.a->Get("/v1/jobs").Json()["jobs"][0]["id"] == "j1");
  // Writes: 503 + Retry-After, nothing half-written.
  auto put = p.a->Call("PUT", "/v1/jobs", Jobs("while-down").dump());
  CHECK(put.status == 503);
  CHECK(put.headers.count("retry-after") == 1);
  auto drain = p.b->Call("POST", "/v1/drains", R"({"drain":{"switches":["spine0"]}})");
  CHECK(drain.status == 503);
  CHECK(p.a->Get("/v1/jobs").Json()["jobs"][0]["id"] == "j1");  // the failed PUT changed nothing

  REQUIRE(pg->Start());
  CHECK(testing::Eventually(
      [&] {
        return p.a->Get("/readyz").Json()["status"] == "ready" && p.b->Get("/readyz").Json()["status"] == "ready";
      },
      std::chrono::seconds(15)));
  CHECK(Metric(*p.a, "drainwise_store_stale") == 0);
  auto again = p.a->Call("PUT", "/v1/jobs", Jobs("after").dump());
  REQUIRE_MESSAGE(again.status == 201, again.body);
  CHECK(testing::Eventually([&] { return p.b->Get("/v1/jobs").Json()["jobs"][0]["id"] == "after"; },
                            std::chrono::seconds(2)));
  // Nothing of the failed writes was stored.
  CHECK(p.b->Get("/v1/drains").Json()["drains"].empty());
  // Jobs versions: the demo's v1, j1 v2, "after" v3: the PUT refused while
  // the database was down took no version number.
  CHECK(again.Json()["version"] == 3);
  json versions = p.b->Get("/v1/snapshots?limit=100").Json();
  std::set<int64_t> jobs_versions;
  for (const auto& v : versions["versions"]) {
    if (v["kind"] == "jobs") jobs_versions.insert(v["version"].get<int64_t>());
  }
  CHECK(jobs_versions == std::set<int64_t>{1, 2, 3});
}

TEST_CASE("drainwise check with several --server: a dead daemon is skipped, the next one answers") {
  auto* pg = Cluster();
  if (!pg) return;
  Pair p(pg);
  p.LoadTwoByTwo();
  unsigned short dead = p.a->port();
  p.a->Kill();  // its port now refuses connections
  std::string out, err;
  int rc = testing::RunDrainwise({"check", "--server", "http://127.0.0.1:" + std::to_string(dead), "--server",
                                  "http://127.0.0.1:" + std::to_string(p.b->port()), "--switch", "spine1", "--no-flow",
                                  "--format", "json", "--ticket", "CHG-FAILOVER", "--timeout", "30"},
                                 &out, &err);
  CHECK_MESSAGE(rc == 0, err);
  CHECK(err.find("trying http://127.0.0.1:" + std::to_string(p.b->port())) != std::string::npos);
  auto doc = json::parse(out, nullptr, false);
  REQUIRE_MESSAGE(doc.is_object(), out);
  CHECK(doc["verdict"] != "deny");
  // Stored once, in the shared database.
  CHECK(p.b->Get("/v1/assessments?ticket=CHG-FAILOVER").Json()["assessments"].size() == 1);
}

TEST_CASE("config: the store section's PostgreSQL settings are checked, the URL is taken from store.url") {
  std::string dir = testing::MakeTempDir();
  std::string out, err;
  auto write = [&](const std::string& name, const json& doc) {
    std::ofstream(dir + "/" + name) << doc.dump();
    return dir + "/" + name;
  };
  auto good = write("good.json", {{"store",
                                   {{"url", "postgresql://drainwise@127.0.0.1:9/drainwise"},
                                    {"password_file", dir + "/pw"},
                                    {"sslmode", "verify-full"},
                                    {"sslrootcert", dir + "/ca.pem"},
                                    {"connect_timeout_s", 3}}}});
  CHECK_MESSAGE(testing::RunDrainwise({"config", "check", good}, &out, &err) == 0, err);
  auto mode = write("mode.json", {{"store", {{"sslmode", "sometimes"}}}});
  CHECK(testing::RunDrainwise({"config", "check", mode}, &out, &err) == 1);
  CHECK(err.find("store.sslmode") != std::string::npos);
  auto both = write("both.json", {{"store", {{"password_file", "/x"}, {"password_env", "PW"}}}});
  CHECK(testing::RunDrainwise({"config", "check", both}, &out, &err) == 1);
  CHECK(err.find("not both") != std::string::npos);
  auto timeout = write("timeout.json", {{"store", {{"connect_timeout_s", 1}}}});
  CHECK(testing::RunDrainwise({"config", "check", timeout}, &out, &err) == 1);
  CHECK(err.find("store.connect_timeout_s") != std::string::npos);
  std::filesystem::remove_all(dir);
}
