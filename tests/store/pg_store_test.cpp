// What only the PostgreSQL backend promises: several Store instances (as
// several daemons) on one database number versions and claim idempotency
// keys without duplicates, hear each other's writes, share one lease, and
// survive the server going away. The cases common to both backends are the
// FOR_EACH_STORE_BACKEND ones of the other files.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "store/store.h"
#include "testing/daemon.h"
#include "testing/postgres.h"

using namespace drainwise;

namespace {

testing::PostgresCluster* Cluster() {
  std::string why;
  bool missing = false;
  auto* pg = testing::PostgresCluster::Shared(&why, &missing);
  if (!pg && missing) MESSAGE("skipped: " << why);
  if (!pg && !missing) FAIL_CHECK(why);
  return pg;
}

std::unique_ptr<store::Store> OpenOrFail(const std::string& url, store::StoreOptions options = {}) {
  auto s = store::Store::Open(url, std::move(options));
  REQUIRE_MESSAGE(s.has_value(), s.error().message);
  return std::move(*s);
}

}  // namespace

TEST_CASE("postgresql: concurrent writers through two stores get distinct, gapless versions") {
  auto* pg = Cluster();
  if (!pg) return;
  std::string url = pg->NewDatabase();
  auto a = OpenOrFail(url, {.keep_versions = 0});
  auto b = OpenOrFail(url, {.keep_versions = 0});
  CHECK(a->shared());
  // 2 stores x 2 threads x 25 distinct bodies = 100 new versions; numbering
  // serialises in the server, so they are exactly 1..100.
  constexpr int kPerThread = 25;
  std::mutex mu;
  std::vector<int64_t> versions;
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    store::Store* s = t % 2 ? b.get() : a.get();
    threads.emplace_back([&, s, t] {
      for (int i = 0; i < kPerThread; ++i) {
        store::DocumentInfo info;
        info.kind = store::DocKind::kJobs;
        auto put = s->PutDocument(info, "{\"t\":" + std::to_string(t) + ",\"i\":" + std::to_string(i) + "}");
        if (!put || !put->created) {
          errors++;
          continue;
        }
        std::lock_guard lock(mu);
        versions.push_back(put->version);
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(errors.load() == 0);
  std::set<int64_t> distinct(versions.begin(), versions.end());
  CHECK(distinct.size() == versions.size());
  REQUIRE(versions.size() == 4 * kPerThread);
  CHECK(*distinct.begin() == 1);
  CHECK(*distinct.rbegin() == 4 * kPerThread);
  CHECK(a->ListDocuments(store::DocKind::kJobs, 1000)->size() == 4 * kPerThread);
}

TEST_CASE("postgresql: one idempotency key claimed concurrently through two stores is stored once") {
  auto* pg = Cluster();
  if (!pg) return;
  std::string url = pg->NewDatabase();
  auto a = OpenOrFail(url);
  auto b = OpenOrFail(url);
  for (int round = 0; round < 10; ++round) {
    std::string key = "k" + std::to_string(round);
    std::atomic<int> ok{0}, conflict{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      store::Store* s = t % 2 ? b.get() : a.get();
      threads.emplace_back([&, s, t] {
        store::AssessmentRecord r;
        r.id = key + "-" + std::to_string(t);
        r.principal = "alice (operator)";
        r.idempotency_key = key;
        r.idempotency_fingerprint = "fp";
        r.request = r.result = "{}";
        auto st = s->PutAssessment(r);
        if (st)
          ok++;
        else if (st.error().code == ErrorCode::kConflict)
          conflict++;
      });
    }
    for (auto& t : threads) t.join();
    CAPTURE(round);
    CHECK(ok.load() == 1);
    CHECK(conflict.load() == 3);
    auto e = a->FindIdempotency("alice (operator)", key);
    REQUIRE(e->has_value());
    CHECK(b->GetAssessment((*e)->record_id)->has_value());
  }
  CHECK(a->ListAssessments("", 100)->size() == 10);
}

TEST_CASE("postgresql: a write through one store is heard by the other, not by itself") {
  auto* pg = Cluster();
  if (!pg) return;
  std::string url = pg->NewDatabase();
  auto a = OpenOrFail(url);
  auto b = OpenOrFail(url);
  std::mutex mu;
  std::vector<std::string> heard_a, heard_b;
  a->SetChangeListener([&](const std::string& w) {
    std::lock_guard lock(mu);
    heard_a.push_back(w);
  });
  b->SetChangeListener([&](const std::string& w) {
    std::lock_guard lock(mu);
    heard_b.push_back(w);
  });
  auto has = [&](std::vector<std::string>& v, const std::string& w) {
    std::lock_guard lock(mu);
    return std::find(v.begin(), v.end(), w) != v.end();
  };
  // Each listener starts with "reconnected" (catch up on what came before).
  REQUIRE(testing::Eventually([&] { return has(heard_a, "reconnected") && has(heard_b, "reconnected"); },
                              std::chrono::seconds(10)));
  CHECK(a->Fresh());
  store::DrainRecord d;
  d.id = "d-1";
  d.spec = "{}";
  auto start = std::chrono::steady_clock::now();
  REQUIRE(b->PutDrain(d).has_value());
  REQUIRE(testing::Eventually([&] { return has(heard_a, "drains"); }, std::chrono::seconds(5)));
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  CHECK(ms < 1000);
  store::DocumentInfo info;
  info.kind = store::DocKind::kTopology;
  REQUIRE(a->PutDocument(info, "{}").has_value());
  REQUIRE(testing::Eventually([&] { return has(heard_b, "topology"); }, std::chrono::seconds(5)));
  // Neither hears its own writes.
  CHECK_FALSE(has(heard_b, "drains"));
  CHECK_FALSE(has(heard_a, "topology"));
  // An identical document is no write: nothing is sent.
  REQUIRE_FALSE(a->PutDocument(info, "{}")->created);
  a->SetChangeListener(nullptr);
  b->SetChangeListener(nullptr);
}

TEST_CASE("postgresql: one holder of a lease at a time; it passes on when the holder goes") {
  auto* pg = Cluster();
  if (!pg) return;
  std::string url = pg->NewDatabase();
  auto a = OpenOrFail(url);
  auto b = OpenOrFail(url);
  CHECK(*a->HoldLease("sources"));
  CHECK(*a->HoldLease("sources"));  // kept
  CHECK_FALSE(*b->HoldLease("sources"));
  CHECK(*b->HoldLease("other"));  // leases are per name
  a.reset();                      // its connections close: the server releases the lock
  CHECK(testing::Eventually([&] { return *b->HoldLease("sources"); }, std::chrono::seconds(5)));
}

TEST_CASE("postgresql: the password comes from a file; a wrong one is an error without the password") {
  auto* pg = Cluster();
  if (!pg) return;
  std::string url = pg->NewDatabase();
  std::string bare = url.substr(0, url.find(':', 13)) + url.substr(url.find('@'));  // without ":password"
  CHECK(bare.find(pg->password()) == std::string::npos);
  store::StoreOptions options;
  options.postgres.password_file = pg->password_file();
  auto s = store::Store::Open(bare, options);
  REQUIRE_MESSAGE(s.has_value(), s.error().message);
  CHECK((*s)->path() == bare);

  auto dir = testing::MakeTempDir();
  std::ofstream(dir + "/wrong") << "not-the-password\n";
  options.postgres.password_file = dir + "/wrong";
  auto bad = store::Store::Open(bare, options);
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().message.find("password authentication failed") != std::string::npos);
  CHECK(bad.error().message.find("not-the-password") == std::string::npos);
  // A password in the URL is not repeated in messages or path().
  auto with = store::Store::Open(url, {});
  REQUIRE(with.has_value());
  CHECK((*with)->path().find(pg->password()) == std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("postgresql: with the server stopped calls fail with kUnavailable and change nothing; then resume") {
  auto* pg = Cluster();
  if (!pg) return;
  std::string url = pg->NewDatabase();
  auto s = OpenOrFail(url, {.probe_timeout_ms = 1000});
  std::atomic<int> reconnected{0};
  s->SetChangeListener([&](const std::string& w) {
    if (w == "reconnected") reconnected++;
  });
  REQUIRE(testing::Eventually([&] { return reconnected.load() == 1; }, std::chrono::seconds(10)));
  store::DocumentInfo info;
  info.kind = store::DocKind::kTopology;
  REQUIRE(s->PutDocument(info, "{\"v\":1}").has_value());

  REQUIRE(pg->Stop());
  auto put = s->PutDocument(info, "{\"v\":2}");
  REQUIRE_FALSE(put.has_value());
  CHECK(put.error().code == ErrorCode::kUnavailable);
  auto read = s->LatestDocument(store::DocKind::kTopology);
  REQUIRE_FALSE(read.has_value());
  CHECK(read.error().code == ErrorCode::kUnavailable);
  CHECK_FALSE(s->ProbeWrite().has_value());
  CHECK(testing::Eventually([&] { return !s->Fresh(); }, std::chrono::seconds(5)));
  std::string why;
  CHECK_FALSE(s->Fresh(&why));
  CHECK_FALSE(why.empty());

  REQUIRE(pg->Start());
  // The first call after the restart succeeds (a stale connection is retried once).
  auto again = s->LatestDocument(store::DocKind::kTopology);
  REQUIRE_MESSAGE(again.has_value(), again.error().message);
  CHECK((*again)->body == "{\"v\":1}");  // the failed put wrote nothing
  auto put2 = s->PutDocument(info, "{\"v\":2}");
  REQUIRE(put2.has_value());
  CHECK(put2->version == 2);
  CHECK(s->ProbeWrite().has_value());
  // The listener reconnects and says so: the daemon reloads what it missed.
  CHECK(testing::Eventually([&] { return reconnected.load() == 2 && s->Fresh(); }, std::chrono::seconds(10)));
  s->SetChangeListener(nullptr);
}

TEST_CASE("postgresql: a database migrated by a newer drainwise is refused") {
  auto* pg = Cluster();
  if (!pg) return;
  std::string url = pg->NewDatabase();
  {
    auto s = OpenOrFail(url);
    CHECK(s->schema_version() == 1);
    // A second Open finds the schema current and changes nothing.
    auto again = OpenOrFail(url);
    CHECK(again->schema_version() == 1);
  }
  std::string cmd = "psql -q '" + url + "' -c 'INSERT INTO schema_migrations VALUES (99, 0)' >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    MESSAGE("psql missing; newer-schema case skipped");
    return;
  }
  auto s = store::Store::Open(url);
  REQUIRE_FALSE(s.has_value());
  CHECK(s.error().message.find("schema version 99 is newer") != std::string::npos);
}
