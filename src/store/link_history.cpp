#include "store/link_history.h"

#include <sqlite3.h>

#include <cmath>
#include <set>

#include <fmt/format.h>

namespace drainwise::store {

namespace {

// A prepared statement, finalised on scope exit.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) { rc_ = sqlite3_prepare_v2(db, sql, -1, &s_, nullptr); }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  bool ok() const { return rc_ == SQLITE_OK; }
  sqlite3_stmt* get() { return s_; }
  void Reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }

 private:
  sqlite3_stmt* s_ = nullptr;
  int rc_ = SQLITE_ERROR;
};

tl::unexpected<Error> SqlError(sqlite3* db, std::string_view what) {
  return MakeError(ErrorCode::kIo, fmt::format("link history: {}: {}", what, sqlite3_errmsg(db)));
}

void BindText(sqlite3_stmt* s, int i, const std::string& v) {
  sqlite3_bind_text(s, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
}

std::string Column(sqlite3_stmt* s, int i) {
  auto p = sqlite3_column_text(s, i);
  return p ? reinterpret_cast<const char*>(p) : "";
}

}  // namespace

Result<std::unique_ptr<LinkHistory>> LinkHistory::Open(const LinkHistoryOptions& o) {
  if (o.path.empty()) return InvalidArgument("link_health.history.path: required");
  if (!(o.bucket_s >= 1)) return InvalidArgument("link_health.history.bucket_s: must be >= 1");
  if (!(o.retention_s >= o.bucket_s)) return InvalidArgument("link_health.history.retention_s: must be >= bucket_s");
  if (o.max_buckets_per_series < 2) return InvalidArgument("link_health.history.max_buckets_per_series: must be >= 2");
  if (o.max_series < 1) return InvalidArgument("link_health.history.max_series: must be >= 1");
  std::unique_ptr<LinkHistory> h(new LinkHistory(o));
  int rc = sqlite3_open_v2(o.path.c_str(), &h->db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                           nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = h->db_ ? sqlite3_errmsg(h->db_) : "out of memory";
    return MakeError(ErrorCode::kIo, fmt::format("link history {}: {}", o.path, msg));
  }
  sqlite3_busy_timeout(h->db_, 5000);
  if (o.path != ":memory:") {
    // WAL without an fsync per commit: a power cut may lose the last few
    // readings of a history that is an aid, not a record.
    if (auto st = h->Exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"); !st)
      return tl::unexpected(st.error());
  }
  // Its own tables, created here: the audit store's migrations never see them.
  if (auto st = h->Exec("CREATE TABLE IF NOT EXISTS link_history_series ("
                        " id INTEGER PRIMARY KEY, device TEXT NOT NULL, interface TEXT NOT NULL, signal TEXT NOT NULL,"
                        " last_write REAL NOT NULL, UNIQUE(device, interface, signal));"
                        "CREATE TABLE IF NOT EXISTS link_history ("
                        " series_id INTEGER NOT NULL, bucket INTEGER NOT NULL, sum REAL NOT NULL, min REAL NOT NULL,"
                        " max REAL NOT NULL, count INTEGER NOT NULL, PRIMARY KEY(series_id, bucket)) WITHOUT ROWID;");
      !st) {
    return tl::unexpected(st.error());
  }
  return h;
}

LinkHistory::~LinkHistory() {
  if (db_) sqlite3_close(db_);
}

Status LinkHistory::Exec(const char* sql) const {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    return MakeError(ErrorCode::kIo, "link history: " + msg);
  }
  return {};
}

Status LinkHistory::Record(const std::vector<HistoryReading>& readings) {
  std::lock_guard lock(mu_);
  if (auto st = Exec("BEGIN IMMEDIATE;"); !st) return st;
  auto fail = [&](std::string_view what) {
    auto e = SqlError(db_, what);
    Exec("ROLLBACK;");
    return e;
  };
  Stmt series(db_,
              "INSERT INTO link_history_series(device, interface, signal, last_write) VALUES(?1, ?2, ?3, ?4) "
              "ON CONFLICT(device, interface, signal) DO UPDATE SET last_write = max(last_write, excluded.last_write) "
              "RETURNING id;");
  Stmt upsert(db_,
              "INSERT INTO link_history(series_id, bucket, sum, min, max, count) VALUES(?1, ?2, ?3, ?3, ?3, 1) "
              "ON CONFLICT(series_id, bucket) DO UPDATE SET sum = sum + excluded.sum, min = min(min, excluded.min), "
              "max = max(max, excluded.max), count = count + 1;");
  if (!series.ok() || !upsert.ok()) return fail("prepare");
  double newest = -INFINITY;
  for (const auto& r : readings) {
    if (!std::isfinite(r.value) || !std::isfinite(r.time_s)) continue;
    newest = std::max(newest, r.time_s);
    series.Reset();
    BindText(series.get(), 1, r.device);
    BindText(series.get(), 2, r.interface);
    BindText(series.get(), 3, r.signal);
    sqlite3_bind_double(series.get(), 4, r.time_s);
    if (sqlite3_step(series.get()) != SQLITE_ROW) return fail("series");
    int64_t id = sqlite3_column_int64(series.get(), 0);
    while (sqlite3_step(series.get()) == SQLITE_ROW) {
    }
    upsert.Reset();
    sqlite3_bind_int64(upsert.get(), 1, id);
    sqlite3_bind_int64(upsert.get(), 2, static_cast<int64_t>(std::floor(r.time_s / options_.bucket_s)));
    sqlite3_bind_double(upsert.get(), 3, r.value);
    if (sqlite3_step(upsert.get()) != SQLITE_DONE) return fail("bucket");
  }
  if (std::isfinite(newest)) {
    if (auto st = Prune(newest); !st) {
      Exec("ROLLBACK;");
      return st;
    }
  }
  return Exec("COMMIT;");
}

// Within the caller's transaction.
Status LinkHistory::Prune(double newest_s) {
  // Retention, relative to the newest reading (not the wall clock, so a
  // replayed feed is bounded the same way).
  {
    Stmt s(db_, "DELETE FROM link_history WHERE bucket < ?1;");
    if (!s.ok()) return SqlError(db_, "prepare retention");
    sqlite3_bind_int64(s.get(), 1,
                       static_cast<int64_t>(std::floor((newest_s - options_.retention_s) / options_.bucket_s)));
    if (sqlite3_step(s.get()) != SQLITE_DONE) return SqlError(db_, "retention");
  }
  // Series beyond max_series (least recently written first) go with their rows.
  {
    Stmt s(db_,
           "DELETE FROM link_history_series WHERE id IN (SELECT id FROM link_history_series "
           "ORDER BY last_write DESC, id DESC LIMIT -1 OFFSET ?1);");
    if (!s.ok()) return SqlError(db_, "prepare series bound");
    sqlite3_bind_int64(s.get(), 1, options_.max_series);
    if (sqlite3_step(s.get()) != SQLITE_DONE) return SqlError(db_, "series bound");
  }
  if (auto st = Exec("DELETE FROM link_history WHERE series_id NOT IN (SELECT id FROM link_history_series);"); !st)
    return st;
  // Buckets per series beyond the newest max_buckets_per_series.
  {
    Stmt s(db_,
           "DELETE FROM link_history WHERE (series_id, bucket) IN (SELECT series_id, bucket FROM (SELECT series_id, "
           "bucket, ROW_NUMBER() OVER (PARTITION BY series_id ORDER BY bucket DESC) AS rn FROM link_history) "
           "WHERE rn > ?1);");
    if (!s.ok()) return SqlError(db_, "prepare bucket bound");
    sqlite3_bind_int64(s.get(), 1, options_.max_buckets_per_series);
    if (sqlite3_step(s.get()) != SQLITE_DONE) return SqlError(db_, "bucket bound");
  }
  // Series left without buckets (all past retention) are forgotten.
  return Exec("DELETE FROM link_history_series WHERE id NOT IN (SELECT DISTINCT series_id FROM link_history);");
}

Result<std::vector<HistorySeries>> LinkHistory::Read(const std::string& device) const {
  std::lock_guard lock(mu_);
  Stmt s(db_,
         "SELECT s.device, s.interface, s.signal, h.bucket, h.sum, h.min, h.max, h.count FROM link_history h "
         "JOIN link_history_series s ON s.id = h.series_id WHERE ?1 = '' OR s.device = ?1 "
         "ORDER BY s.device, s.interface, s.signal, h.bucket;");
  if (!s.ok()) return SqlError(db_, "prepare read");
  BindText(s.get(), 1, device);
  std::vector<HistorySeries> out;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    std::string d = Column(s.get(), 0), i = Column(s.get(), 1), g = Column(s.get(), 2);
    if (out.empty() || out.back().device != d || out.back().interface != i || out.back().signal != g) {
      out.push_back({d, i, g, {}});
    }
    HistoryBucket b;
    b.start_s = static_cast<double>(sqlite3_column_int64(s.get(), 3)) * options_.bucket_s;
    b.count = sqlite3_column_int64(s.get(), 7);
    b.mean = sqlite3_column_double(s.get(), 4) / static_cast<double>(std::max<int64_t>(1, b.count));
    b.min = sqlite3_column_double(s.get(), 5);
    b.max = sqlite3_column_double(s.get(), 6);
    out.back().buckets.push_back(b);
  }
  if (rc != SQLITE_DONE) return SqlError(db_, "read");
  return out;
}

Result<int64_t> LinkHistory::RowCount() const {
  std::lock_guard lock(mu_);
  Stmt s(db_, "SELECT count(*) FROM link_history;");
  if (!s.ok() || sqlite3_step(s.get()) != SQLITE_ROW) return SqlError(db_, "count");
  return sqlite3_column_int64(s.get(), 0);
}

Result<int64_t> LinkHistory::SeriesCount() const {
  std::lock_guard lock(mu_);
  Stmt s(db_, "SELECT count(*) FROM link_history_series;");
  if (!s.ok() || sqlite3_step(s.get()) != SQLITE_ROW) return SqlError(db_, "count");
  return sqlite3_column_int64(s.get(), 0);
}

}  // namespace drainwise::store
