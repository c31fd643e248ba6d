#include <doctest/doctest.h>

#include <filesystem>

#include "store/store.h"
#include "testing/daemon.h"
#include "testing/postgres.h"

using namespace drainwise;

TEST_CASE("documents are versioned; identical content is not a new version") {
  FOR_EACH_STORE_BACKEND(backend) {
    auto s = store::Store::Open(backend.NewDatabase());
    REQUIRE(s.has_value());
    auto& st = **s;
    CHECK(st.schema_version() == (backend.name == "sqlite" ? 3 : 1));  // PostgreSQL: SQLite's 1-3 in one
    store::DocumentInfo info{store::DocKind::kTopology, 0, "api", 0, "", 10, 20};
    auto v1 = st.PutDocument(info, "{\"a\":1}");
    REQUIRE(v1.has_value());
    CHECK(v1->version == 1);
    CHECK(v1->created);
    auto again = st.PutDocument(info, "{\"a\":1}");
    CHECK(again->version == 1);
    CHECK_FALSE(again->created);
    auto v2 = st.PutDocument(info, "{\"a\":2}");
    CHECK(v2->version == 2);
    auto latest = st.LatestDocument(store::DocKind::kTopology);
    REQUIRE(latest.has_value());
    REQUIRE(latest->has_value());
    CHECK((*latest)->body == "{\"a\":2}");
    CHECK((*latest)->info.items == 10);
    CHECK((*latest)->info.links == 20);
    CHECK((*st.GetDocument(store::DocKind::kTopology, 1))->body == "{\"a\":1}");
    CHECK_FALSE(st.LatestDocument(store::DocKind::kJobs)->has_value());
    CHECK(st.ListDocuments(std::nullopt, 10)->size() == 2);
  }
}

TEST_CASE("old versions are pruned beyond keep_versions") {
  FOR_EACH_STORE_BACKEND(backend) {
    auto s = store::Store::Open(backend.NewDatabase(), {.keep_versions = 3});
    REQUIRE(s.has_value());
    for (int i = 0; i < 5; ++i) {
      store::DocumentInfo info;
      info.kind = store::DocKind::kJobs;
      (*s)->PutDocument(info, "{\"v\":" + std::to_string(i) + "}");
    }
    auto list = (*s)->ListDocuments(store::DocKind::kJobs, 100);
    CHECK(list->size() == 3);
    CHECK(list->front().version == 5);
  }
}

TEST_CASE("assessments, idempotency keys and drains survive a reopen") {
  FOR_EACH_STORE_BACKEND(backend) {
    std::string dir = testing::MakeTempDir();
    std::string path = backend.NewDatabase(dir);
    {
      auto s = store::Store::Open(path);
      REQUIRE(s.has_value());
      store::AssessmentRecord r;
      r.id = "a-1";
      r.ticket = "CHG-1";
      r.verdict = "deny";
      r.idempotency_key = "k1";
      r.request = "{}";
      r.result = "{\"x\":1}";
      r.topology_version = 3;
      r.jobs_version = 4;
      REQUIRE((*s)->PutAssessment(r).has_value());
      r.id = "a-2";
      auto dup = (*s)->PutAssessment(r);  // same idempotency key
      REQUIRE_FALSE(dup.has_value());
      CHECK(dup.error().code == ErrorCode::kConflict);
      store::DrainRecord d{"d-1", "CHG-1", "alice", 100, std::nullopt, std::nullopt, "{\"switches\":[\"s1\"]}"};
      REQUIRE((*s)->PutDrain(d).has_value());
      d.id = "d-2";
      REQUIRE((*s)->PutDrain(d).has_value());
      CHECK(*(*s)->EndDrain("d-1", 200));
      CHECK_FALSE(*(*s)->EndDrain("d-1", 300));  // already ended
      CHECK_FALSE(*(*s)->EndDrain("nope", 300));
    }
    auto s = store::Store::Open(path);
    REQUIRE(s.has_value());
    auto a = (*s)->GetAssessment("a-1");
    REQUIRE(a->has_value());
    CHECK((*a)->verdict == "deny");
    CHECK((*a)->topology_version == 3);
    CHECK((*s)->FindByIdempotencyKey("k1")->value().id == "a-1");
    CHECK((*s)->ListAssessments("CHG-1", 10)->size() == 1);
    CHECK((*s)->ListAssessments("CHG-2", 10)->empty());
    auto active = (*s)->ListDrains(true);
    REQUIRE(active->size() == 1);
    CHECK(active->front().id == "d-2");
    CHECK((*s)->ListDrains(false)->size() == 2);
    CHECK(*(*s)->IntegrityCheck() == "ok");
    std::filesystem::remove_all(dir);
  }
}

TEST_CASE("a database from a newer drainwise is refused with a clear error") {
  std::string dir = testing::MakeTempDir();
  std::string path = dir + "/s.db";
  {
    auto s = store::Store::Open(path);
    REQUIRE(s.has_value());
  }
  {
    // Simulate a future schema.
    std::string cmd = "sqlite3 '" + path + "' \"INSERT INTO schema_migrations VALUES (99, 0)\"";
    if (std::system(cmd.c_str()) != 0) {
      MESSAGE("sqlite3 CLI missing; skipping");
      return;
    }
  }
  auto s = store::Store::Open(path);
  REQUIRE_FALSE(s.has_value());
  CHECK(s.error().message.find("schema version 99 is newer") != std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("an unwritable path is an error naming it, not a crash") {
  auto s = store::Store::Open("/nonexistent-dir/x/y.db");
  REQUIRE_FALSE(s.has_value());
  CHECK(s.error().code == ErrorCode::kIo);
  CHECK(s.error().message.find("/nonexistent-dir/x/y.db") != std::string::npos);
}
