// The audit trail: every record keeps the authenticated principal apart from
// the client's requested_by, and a database from before (schema 2) is
// upgraded in place without losing a record.
#include <doctest/doctest.h>

#include <sqlite3.h>

#include <filesystem>

#include "store/store.h"
#include "testing/daemon.h"
#include "testing/postgres.h"

using namespace drainwise;

TEST_CASE("assessments, drains and documents return the principal they were stored with") {
  FOR_EACH_STORE_BACKEND(backend) {
    auto s = store::Store::Open(backend.NewDatabase());
    REQUIRE(s.has_value());
    auto& st = **s;
    store::DocumentInfo info;
    info.kind = store::DocKind::kPolicy;
    info.principal = "ci-bot (admin)";
    REQUIRE(st.PutDocument(info, "{}").has_value());
    CHECK((*st.LatestDocument(store::DocKind::kPolicy))->info.principal == "ci-bot (admin)");
    CHECK(st.ListDocuments(store::DocKind::kPolicy, 10)->front().principal == "ci-bot (admin)");

    store::AssessmentRecord a;
    a.id = "a-1";
    a.request = a.result = "{}";
    a.requested_by = "alice\nforged row";  // the client's claim, kept verbatim
    a.principal = "anonymous (127.0.0.1:5555)";
    REQUIRE(st.PutAssessment(a).has_value());
    auto got = st.GetAssessment("a-1");
    CHECK((*got)->principal == "anonymous (127.0.0.1:5555)");
    CHECK((*got)->requested_by == "alice\nforged row");
    CHECK(st.ListAssessments("", 10)->front().principal == "anonymous (127.0.0.1:5555)");

    store::DrainRecord d;
    d.id = "d-1";
    d.spec = "{}";
    d.requested_by = "bob";
    d.principal = "oncall (operator)";
    REQUIRE(st.PutDrain(d).has_value());
    CHECK(st.ListDrains(false)->front().principal == "oncall (operator)");
    CHECK(st.ListDrains(false)->front().requested_by == "bob");
  }
}

TEST_CASE("a schema-2 database is migrated: records kept, active drains pinned to the latest versions") {
  std::string dir = testing::MakeTempDir();
  std::string path = dir + "/old.db";
  {
    // The schema of migrations 1 and 2 as shipped (store.cpp), with data.
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    const char* sql = R"sql(
      CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL);
      INSERT INTO schema_migrations VALUES (1, 0), (2, 0);
      CREATE TABLE documents (kind TEXT NOT NULL, version INTEGER NOT NULL, source TEXT NOT NULL,
        created_at INTEGER NOT NULL, hash TEXT NOT NULL, items INTEGER NOT NULL DEFAULT 0,
        links INTEGER NOT NULL DEFAULT 0, body TEXT NOT NULL, PRIMARY KEY (kind, version));
      CREATE TABLE assessments (id TEXT PRIMARY KEY, created_at INTEGER NOT NULL, kind TEXT NOT NULL,
        ticket TEXT NOT NULL DEFAULT '', requested_by TEXT NOT NULL DEFAULT '',
        topology_version INTEGER NOT NULL, jobs_version INTEGER NOT NULL, verdict TEXT NOT NULL DEFAULT '',
        idempotency_key TEXT, request TEXT NOT NULL, result TEXT NOT NULL);
      CREATE INDEX assessments_ticket ON assessments(ticket, created_at);
      CREATE UNIQUE INDEX assessments_idempotency ON assessments(idempotency_key)
        WHERE idempotency_key IS NOT NULL;
      CREATE TABLE drains (id TEXT PRIMARY KEY, ticket TEXT NOT NULL DEFAULT '',
        requested_by TEXT NOT NULL DEFAULT '', started_at INTEGER NOT NULL, expected_end INTEGER,
        ended_at INTEGER, spec TEXT NOT NULL);
      CREATE TABLE observations (id INTEGER PRIMARY KEY AUTOINCREMENT, job_id TEXT NOT NULL,
        observed_at INTEGER NOT NULL, iteration_s REAL NOT NULL, predicted_s REAL NOT NULL DEFAULT 0,
        drain_key TEXT NOT NULL DEFAULT '', body TEXT NOT NULL);
      INSERT INTO documents VALUES ('topology', 1, 'demo', 10, 'h1', 0, 0, '{}'),
                                   ('topology', 2, 'api', 20, 'h2', 0, 0, '{"a":1}'),
                                   ('jobs', 1, 'demo', 10, 'h3', 0, 0, '{}');
      INSERT INTO assessments VALUES ('a-1', 30, 'assessment', 'CHG-1', 'alice', 2, 1, 'deny', 'old-key',
                                      '{}', '{}');
      INSERT INTO drains VALUES ('d-1', 'CHG-1', 'alice', 40, NULL, NULL, '{}'),
                                ('d-0', 'CHG-0', 'alice', 5, NULL, 8, '{}');
    )sql";
    REQUIRE(sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
  }
  {
    // At t = 100, well inside any TTL of a key made at t = 30.
    auto s = store::Store::Open(path, {.clock = [] { return int64_t{100}; }});
    REQUIRE_MESSAGE(s.has_value(), s.error().message);
    CHECK((*s)->schema_version() == 3);
    auto a = (*s)->GetAssessment("a-1");
    REQUIRE(a->has_value());
    CHECK((*a)->verdict == "deny");
    CHECK((*a)->principal.empty());
    CHECK((*a)->idempotency_key == "old-key");
    // Pre-migration keys were global: no principal owns them now.
    CHECK_FALSE((*s)->FindIdempotency("", "old-key")->has_value());
    auto drains = (*s)->ListDrains(false);
    REQUIRE(drains->size() == 2);
    for (const auto& d : *drains) {
      CAPTURE(d.id);
      // The active drain runs on the latest versions; the ended one is not pinned.
      CHECK(d.topology_version == (d.id == "d-1" ? 2 : 0));
      CHECK(d.jobs_version == (d.id == "d-1" ? 1 : 0));
    }
    CHECK(*(*s)->IntegrityCheck() == "ok");
  }
  std::filesystem::remove_all(dir);
}
