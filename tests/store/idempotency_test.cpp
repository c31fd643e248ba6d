// Idempotency keys as the IETF Idempotency-Key draft scopes them: per
// principal, with the first request's fingerprint, expiring after
// idempotency_ttl_s. The clock is injected, so expiry is exact.
#include <doctest/doctest.h>

#include <sqlite3.h>

#include <filesystem>

#include "store/store.h"
#include "testing/daemon.h"
#include "testing/postgres.h"

using namespace drainwise;

namespace {

store::AssessmentRecord Record(const std::string& id, const std::string& principal, const std::string& key,
                               const std::string& fingerprint) {
  store::AssessmentRecord r;
  r.id = id;
  r.principal = principal;
  r.idempotency_key = key;
  r.idempotency_fingerprint = fingerprint;
  r.request = "{}";
  r.result = "{}";
  return r;
}

int64_t CountRows(const std::string& db, const char* table) {
  sqlite3* h = nullptr;
  REQUIRE(sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  std::string sql = std::string("SELECT COUNT(*) FROM ") + table;
  REQUIRE(sqlite3_prepare_v2(h, sql.c_str(), -1, &s, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(s) == SQLITE_ROW);
  int64_t n = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  sqlite3_close(h);
  return n;
}

}  // namespace

TEST_CASE("an idempotency key belongs to one principal and remembers its fingerprint and record") {
  FOR_EACH_STORE_BACKEND(backend) {
    int64_t now = 1'000'000;
    auto s = store::Store::Open(backend.NewDatabase(), {.idempotency_ttl_s = 60, .clock = [&] { return now; }});
    REQUIRE(s.has_value());
    auto& st = **s;
    REQUIRE(st.PutAssessment(Record("a-1", "alice (operator)", "k1", "fp-1")).has_value());
    auto e = st.FindIdempotency("alice (operator)", "k1");
    REQUIRE(e.has_value());
    REQUIRE(e->has_value());
    CHECK((*e)->record_id == "a-1");
    CHECK((*e)->fingerprint == "fp-1");
    CHECK((*e)->created_at == now);
    CHECK((*e)->principal == "alice (operator)");
    // The record carries both too.
    auto rec = st.GetAssessment("a-1");
    CHECK((*rec)->principal == "alice (operator)");
    CHECK((*rec)->idempotency_fingerprint == "fp-1");

    // Another principal's key of the same name is another key.
    CHECK_FALSE(st.FindIdempotency("bob (operator)", "k1")->has_value());
    CHECK_FALSE(st.FindIdempotency("anonymous (127.0.0.1)", "k1")->has_value());
    REQUIRE(st.PutAssessment(Record("a-2", "bob (operator)", "k1", "fp-2")).has_value());
    CHECK((*st.FindIdempotency("bob (operator)", "k1"))->record_id == "a-2");
    CHECK((*st.FindIdempotency("alice (operator)", "k1"))->record_id == "a-1");

    // The same principal and key while it lives: refused, nothing stored.
    auto dup = st.PutAssessment(Record("a-3", "alice (operator)", "k1", "fp-3"));
    REQUIRE_FALSE(dup.has_value());
    CHECK(dup.error().code == ErrorCode::kConflict);
    CHECK(dup.error().message.find("'k1'") != std::string::npos);
    CHECK(dup.error().message.find("a-1") != std::string::npos);
    CHECK_FALSE(st.GetAssessment("a-3")->has_value());

    // No key, no entry; records without keys never collide.
    REQUIRE(st.PutAssessment(Record("a-4", "alice (operator)", "", "")).has_value());
    REQUIRE(st.PutAssessment(Record("a-5", "alice (operator)", "", "")).has_value());
    CHECK_FALSE(st.FindIdempotency("alice (operator)", "")->has_value());
  }
}

TEST_CASE("idempotency keys expire after idempotency_ttl_s and can then be used again") {
  FOR_EACH_STORE_BACKEND(backend) {
    int64_t now = 1'000'000;
    auto s = store::Store::Open(backend.NewDatabase(), {.idempotency_ttl_s = 60, .clock = [&] { return now; }});
    REQUIRE(s.has_value());
    auto& st = **s;
    REQUIRE(st.PutAssessment(Record("a-1", "alice (admin)", "k", "fp-1")).has_value());
    // Stored at t = 1000000: alive through t + 59, expired from t + 60.
    now += 59;
    CHECK(st.FindIdempotency("alice (admin)", "k")->has_value());
    now += 1;
    CHECK_FALSE(st.FindIdempotency("alice (admin)", "k")->has_value());
    REQUIRE(st.PutAssessment(Record("a-2", "alice (admin)", "k", "fp-2")).has_value());
    auto e = st.FindIdempotency("alice (admin)", "k");
    REQUIRE(e->has_value());
    CHECK((*e)->record_id == "a-2");
    CHECK((*e)->fingerprint == "fp-2");
    CHECK((*e)->created_at == now);
    // The first record stays in the audit trail.
    CHECK(st.GetAssessment("a-1")->has_value());
  }
}

TEST_CASE("the expiry is configurable and must be positive") {
  FOR_EACH_STORE_BACKEND(backend) {
    auto bad = store::Store::Open(backend.NewDatabase(), {.idempotency_ttl_s = 0});
    REQUIRE_FALSE(bad.has_value());
    CHECK(bad.error().message.find("idempotency_ttl_s") != std::string::npos);
    CHECK(store::StoreOptions{}.idempotency_ttl_s == 86400);  // the documented default: 24 h
  }
}

TEST_CASE("expired keys are pruned on later writes, a bounded batch at a time") {
  std::string dir = testing::MakeTempDir();
  std::string path = dir + "/s.db";
  int64_t now = 5'000'000;
  auto s = store::Store::Open(path, {.idempotency_ttl_s = 100, .clock = [&] { return now; }});
  REQUIRE(s.has_value());
  const int n = store::kIdempotencyPruneBatch + 44;  // 300
  for (int i = 0; i < n; ++i) {
    REQUIRE((*s)->PutAssessment(Record("a-" + std::to_string(i), "p", "k" + std::to_string(i), "f")).has_value());
  }
  CHECK(CountRows(path, "idempotency_keys") == n);
  now += 100;  // all 300 expired
  // One write prunes 256 of them and adds its own: 300 - 256 + 1 = 45.
  REQUIRE((*s)->PutAssessment(Record("b-1", "p", "fresh-1", "f")).has_value());
  CHECK(CountRows(path, "idempotency_keys") == n - store::kIdempotencyPruneBatch + 1);
  // The next prunes the other 44 and adds one: the two fresh keys remain.
  REQUIRE((*s)->PutAssessment(Record("b-2", "p", "fresh-2", "f")).has_value());
  CHECK(CountRows(path, "idempotency_keys") == 2);
  // Pruning keys never removes the assessments.
  CHECK(CountRows(path, "assessments") == n + 2);
  s->reset();
  std::filesystem::remove_all(dir);
}
