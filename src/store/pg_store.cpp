#include "store/pg_store.h"

#include <libpq-fe.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <utility>

#include <fmt/format.h>

namespace drainwise::store {

namespace {

// Schema migrations, applied in order; never edit a shipped one, add another.
// Version 1 is SQLite's versions 1-3 in one step (PostgreSQL had none of
// their history), with `seq` standing in for SQLite's rowid order.
constexpr const char* kMigrations[] = {
    // 1: versioned documents, assessments (with the principal and the
    // idempotency fingerprint), principal-scoped idempotency keys, drains
    // with the versions they were started on, observations, and one write
    // probe row per daemon (which also says where it listens); the count of
    // committed writes (Store::ChangeCount).
    R"sql(
    CREATE TABLE documents (
      kind        TEXT    NOT NULL,
      version     BIGINT  NOT NULL,
      source      TEXT    NOT NULL,
      created_at  BIGINT  NOT NULL,
      hash        TEXT    NOT NULL,
      items       BIGINT  NOT NULL DEFAULT 0,
      links       BIGINT  NOT NULL DEFAULT 0,
      body        TEXT    NOT NULL,
      principal   TEXT    NOT NULL DEFAULT '',
      PRIMARY KEY (kind, version)
    );
    CREATE TABLE assessments (
      seq                     BIGSERIAL UNIQUE,
      id                      TEXT PRIMARY KEY,
      created_at              BIGINT NOT NULL,
      kind                    TEXT NOT NULL,
      ticket                  TEXT NOT NULL DEFAULT '',
      requested_by            TEXT NOT NULL DEFAULT '',
      topology_version        BIGINT NOT NULL,
      jobs_version            BIGINT NOT NULL,
      verdict                 TEXT NOT NULL DEFAULT '',
      idempotency_key         TEXT,
      request                 TEXT NOT NULL,
      result                  TEXT NOT NULL,
      principal               TEXT NOT NULL DEFAULT '',
      idempotency_fingerprint TEXT NOT NULL DEFAULT ''
    );
    CREATE INDEX assessments_ticket ON assessments(ticket, created_at);
    CREATE INDEX assessments_idempotency ON assessments(idempotency_key) WHERE idempotency_key IS NOT NULL;
    CREATE INDEX assessments_topology_version ON assessments(topology_version);
    CREATE INDEX assessments_jobs_version ON assessments(jobs_version);
    CREATE TABLE idempotency_keys (
      principal   TEXT   NOT NULL,
      key         TEXT   NOT NULL,
      fingerprint TEXT   NOT NULL,
      record_id   TEXT   NOT NULL,
      created_at  BIGINT NOT NULL,
      PRIMARY KEY (principal, key)
    );
    CREATE INDEX idempotency_keys_created ON idempotency_keys(created_at);
    CREATE TABLE drains (
      id               TEXT PRIMARY KEY,
      ticket           TEXT NOT NULL DEFAULT '',
      requested_by     TEXT NOT NULL DEFAULT '',
      started_at       BIGINT NOT NULL,
      expected_end     BIGINT,
      ended_at         BIGINT,
      spec             TEXT NOT NULL,
      principal        TEXT NOT NULL DEFAULT '',
      topology_version BIGINT NOT NULL DEFAULT 0,
      jobs_version     BIGINT NOT NULL DEFAULT 0
    );
    CREATE TABLE observations (
      id          BIGSERIAL PRIMARY KEY,
      job_id      TEXT NOT NULL,
      observed_at BIGINT NOT NULL,
      iteration_s DOUBLE PRECISION NOT NULL,
      predicted_s DOUBLE PRECISION NOT NULL DEFAULT 0,
      drain_key   TEXT NOT NULL DEFAULT '',
      body        TEXT NOT NULL
    );
    CREATE INDEX observations_job ON observations(job_id, observed_at);
    CREATE TABLE change_counter (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      n  BIGINT NOT NULL
    );
    INSERT INTO change_counter VALUES (1, 0);
    CREATE TABLE write_probe (
      daemon TEXT PRIMARY KEY,
      at     BIGINT NOT NULL,
      listen TEXT NOT NULL DEFAULT ''
    );
    )sql",
};
constexpr int kSchemaVersion = static_cast<int>(std::size(kMigrations));

// Advisory lock classes (the first key of the two-int form): "dw" + n.
constexpr int kMigrationLock = 0x64770001;
constexpr int kDocumentLock = 0x64770002;  // second key: the DocKind
constexpr int kLeaseLock = 0x64770003;     // second key: hashtext(lease name)
constexpr const char* kChannel = "drainwise_changes";

int64_t NowSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

using Param = std::optional<std::string>;  // nullopt = NULL
Param P(const std::string& v) { return v; }
Param P(int64_t v) { return std::to_string(v); }
Param P(double v) { return fmt::format("{}", v); }
Param P(std::optional<int64_t> v) { return v ? Param(std::to_string(*v)) : std::nullopt; }
Param NullIfEmpty(const std::string& v) { return v.empty() ? std::nullopt : Param(v); }

class PgResult {
 public:
  explicit PgResult(PGresult* r) : r_(r, &PQclear) {}
  int rows() const { return PQntuples(r_.get()); }
  std::string Text(int row, int col) const {
    return std::string(PQgetvalue(r_.get(), row, col), PQgetlength(r_.get(), row, col));
  }
  int64_t Int(int row, int col) const { return std::strtoll(PQgetvalue(r_.get(), row, col), nullptr, 10); }
  double Real(int row, int col) const { return std::strtod(PQgetvalue(r_.get(), row, col), nullptr); }
  bool Null(int row, int col) const { return PQgetisnull(r_.get(), row, col) != 0; }
  std::optional<int64_t> OptInt(int row, int col) const {
    return Null(row, col) ? std::nullopt : std::optional<int64_t>(Int(row, col));
  }
  int64_t affected() const { return std::strtoll(PQcmdTuples(r_.get()), nullptr, 10); }

 private:
  std::unique_ptr<PGresult, void (*)(PGresult*)> r_;
};

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

// The URL without a password in its user info or its query string.
std::string RedactUrl(const std::string& url) {
  std::string out = url;
  auto scheme = out.find("://");
  if (scheme != std::string::npos) {
    auto at = out.find('@', scheme + 3);
    auto slash = out.find('/', scheme + 3);
    if (at != std::string::npos && (slash == std::string::npos || at < slash)) {
      auto colon = out.find(':', scheme + 3);
      if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
    }
  }
  auto pw = out.find("password=");
  if (pw != std::string::npos) {
    auto end = out.find('&', pw);
    out.replace(pw + 9, (end == std::string::npos ? out.size() : end) - pw - 9, "***");
  }
  return out;
}

}  // namespace

// One libpq connection, (re)made on demand. Not thread-safe: each user
// holds the mutex that goes with it.
class PgConnection {
 public:
  PgConnection(std::vector<std::pair<std::string, std::string>> params, std::string name, std::string role)
      : params_(std::move(params)), name_(std::move(name)), role_(std::move(role)) {}
  ~PgConnection() { Drop(); }

  bool ok() const { return conn_ && PQstatus(conn_) == CONNECTION_OK; }
  PGconn* raw() { return conn_; }
  void Drop() {
    if (conn_) PQfinish(conn_);
    conn_ = nullptr;
  }

  // Connects unless connected. Errors: kUnavailable naming the database.
  Status Connect() {
    if (ok()) return {};
    Drop();
    std::vector<const char*> keys, values;
    for (const auto& [k, v] : params_) {
      keys.push_back(k.c_str());
      values.push_back(v.c_str());
    }
    keys.push_back(nullptr);
    values.push_back(nullptr);
    conn_ = PQconnectdbParams(keys.data(), values.data(), /*expand_dbname=*/1);
    if (!ok()) {
      std::string msg = conn_ ? Trimmed(PQerrorMessage(conn_)) : "out of memory";
      Drop();
      return MakeError(ErrorCode::kUnavailable, fmt::format("database {} unreachable ({}): {}", name_, role_, msg));
    }
    // The server's notices ("relation … already exists, skipping") are not
    // ours to print on stderr; errors come back through the results.
    PQsetNoticeProcessor(conn_, [](void*, const char*) {}, nullptr);
    return {};
  }

  // One statement; with no parameters several may be given (migrations).
  // Errors: kUnavailable when the connection is lost (or the server shuts
  // down, or a timeout / serialization failure: worth retrying), kConflict
  // for a unique violation, kIo otherwise.
  Result<PgResult> Exec(const std::string& sql, const std::vector<Param>& params = {}) {
    if (!conn_) return MakeError(ErrorCode::kUnavailable, fmt::format("database {}: not connected", name_));
    PGresult* raw;
    if (params.empty()) {
      raw = PQexec(conn_, sql.c_str());
    } else {
      std::vector<const char*> values;
      for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
      raw = PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr, nullptr,
                         0);
    }
    PgResult r(raw);
    auto status = PQresultStatus(raw);
    if (raw && (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK)) return r;
    std::string state =
        raw && PQresultErrorField(raw, PG_DIAG_SQLSTATE) ? PQresultErrorField(raw, PG_DIAG_SQLSTATE) : "";
    std::string msg = Trimmed(raw ? PQresultErrorMessage(raw) : PQerrorMessage(conn_));
    if (msg.empty()) msg = Trimmed(PQerrorMessage(conn_));
    ErrorCode code = ErrorCode::kIo;
    if (PQstatus(conn_) != CONNECTION_OK || state.starts_with("08") || state.starts_with("57P") || state == "57014" ||
        state == "40001" || state == "40P01" || state == "55P03") {
      code = ErrorCode::kUnavailable;
    } else if (state == "23505") {
      code = ErrorCode::kConflict;
    }
    return MakeError(code, fmt::format("database {}: {}", name_, msg));
  }

  bool commit_sent = false;  // set by Tx::Commit: a failure after it may have committed

 private:
  std::vector<std::pair<std::string, std::string>> params_;
  std::string name_;
  std::string role_;
  PGconn* conn_ = nullptr;
};

namespace {

// BEGIN … COMMIT; rolls back when not committed (and the connection lives).
class Tx {
 public:
  explicit Tx(PgConnection& c) : c_(c) {}
  ~Tx() {
    if (begun_ && !done_ && c_.ok()) (void)c_.Exec("ROLLBACK");
  }
  Status Begin() {
    auto r = c_.Exec("BEGIN");
    if (!r) return tl::unexpected(r.error());
    begun_ = true;
    return {};
  }
  Status Commit() {
    c_.commit_sent = true;
    auto r = c_.Exec("COMMIT");
    done_ = true;
    if (!r) return tl::unexpected(r.error());
    return {};
  }

 private:
  PgConnection& c_;
  bool begun_ = false;
  bool done_ = false;
};

template <class T>
Result<T> Failed(const Result<PgResult>& r) {
  return tl::unexpected(r.error());
}

constexpr const char* kAssessmentColumns =
    "id, created_at, kind, ticket, requested_by, topology_version, jobs_version, verdict, "
    "COALESCE(idempotency_key, ''), request, result, principal, idempotency_fingerprint";

AssessmentRecord ReadAssessment(const PgResult& s, int row) {
  AssessmentRecord r;
  r.id = s.Text(row, 0);
  r.created_at = s.Int(row, 1);
  r.kind = s.Text(row, 2);
  r.ticket = s.Text(row, 3);
  r.requested_by = s.Text(row, 4);
  r.topology_version = s.Int(row, 5);
  r.jobs_version = s.Int(row, 6);
  r.verdict = s.Text(row, 7);
  r.idempotency_key = s.Text(row, 8);
  r.request = s.Text(row, 9);
  r.result = s.Text(row, 10);
  r.principal = s.Text(row, 11);
  r.idempotency_fingerprint = s.Text(row, 12);
  return r;
}

constexpr const char* kDocColumns = "kind, version, source, created_at, hash, items, links, principal";
DocumentInfo ReadDocInfo(const PgResult& s, int row) {
  DocumentInfo i;
  std::string kind = s.Text(row, 0);
  i.kind = kind == "jobs"          ? DocKind::kJobs
           : kind == "policy"      ? DocKind::kPolicy
           : kind == "calibration" ? DocKind::kCalibration
                                   : DocKind::kTopology;
  i.version = s.Int(row, 1);
  i.source = s.Text(row, 2);
  i.created_at = s.Int(row, 3);
  i.hash = s.Text(row, 4);
  i.items = s.Int(row, 5);
  i.links = s.Int(row, 6);
  i.principal = s.Text(row, 7);
  return i;
}

std::string HostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "host";
  return buf;
}

std::atomic<int> g_instances{0};

// Runs `body` on `conn` (held by the caller), connecting first; once more on
// a fresh connection when the first attempt lost the connection before a
// COMMIT was sent (a stale connection after a server restart).
template <class F>
auto WithRetry(PgConnection& conn, F&& body) -> decltype(body(conn)) {
  for (int attempt = 0;; ++attempt) {
    if (auto st = conn.Connect(); !st) return tl::unexpected(st.error());
    conn.commit_sent = false;
    auto r = body(conn);
    if (r || attempt > 0 || conn.ok() || conn.commit_sent) return r;
  }
}

}  // namespace

PgStore::PgStore(std::string url, std::string redacted, StoreOptions options)
    : Store(std::move(redacted), std::move(options)) {
  instance_ = fmt::format("{}:{}:{}", HostName(), static_cast<long>(::getpid()), g_instances.fetch_add(1));
  (void)url;
}

PgStore::~PgStore() {
  listen_thread_ = {};  // joins before the connections go
}

Result<std::unique_ptr<Store>> PgStore::Open(const std::string& url, StoreOptions options) {
  const std::string redacted = RedactUrl(url);
  if (options.idempotency_ttl_s < 1) {
    return InvalidArgument(
        fmt::format("database {}: idempotency_ttl_s must be >= 1, got {}", redacted, options.idempotency_ttl_s));
  }
  if (options.keep_versions < 0) {
    return InvalidArgument(
        fmt::format("database {}: keep_versions must be >= 0, got {}", redacted, options.keep_versions));
  }
  const auto& pg = options.postgres;
  std::vector<std::pair<std::string, std::string>> params = {{"dbname", url}};
  if (!pg.password_file.empty()) {
    std::ifstream in(pg.password_file);
    std::string line;
    if (!in || !std::getline(in, line)) {
      return MakeError(ErrorCode::kIo,
                       fmt::format("database {}: store.password_file {}: cannot read", redacted, pg.password_file));
    }
    params.emplace_back("password", Trimmed(line));
  } else if (!pg.password_env.empty()) {
    const char* v = std::getenv(pg.password_env.c_str());
    if (!v) {
      return InvalidArgument(fmt::format("database {}: store.password_env: ${} is not set", redacted, pg.password_env));
    }
    params.emplace_back("password", v);
  }
  if (!pg.sslmode.empty()) params.emplace_back("sslmode", pg.sslmode);
  if (!pg.sslrootcert.empty()) params.emplace_back("sslrootcert", pg.sslrootcert);
  if (!pg.sslcert.empty()) params.emplace_back("sslcert", pg.sslcert);
  if (!pg.sslkey.empty()) params.emplace_back("sslkey", pg.sslkey);
  params.emplace_back("connect_timeout", std::to_string(std::max(2, pg.connect_timeout_s)));
  params.emplace_back("application_name", "drainwise");
  // A server that vanishes without closing the connection (a partition) is
  // noticed within about 10 s rather than the kernel's two hours.
  params.emplace_back("keepalives", "1");
  params.emplace_back("keepalives_idle", "5");
  params.emplace_back("keepalives_interval", "2");
  params.emplace_back("keepalives_count", "3");
  params.emplace_back("tcp_user_timeout", "10000");

  std::unique_ptr<PgStore> store(new PgStore(url, redacted, std::move(options)));
  auto with_timeout = [&](int ms) {
    auto p = params;
    p.emplace_back("options", fmt::format("-c statement_timeout={} -c lock_timeout={}", ms, ms));
    return p;
  };
  store->main_ = std::make_unique<PgConnection>(with_timeout(30000), redacted, "main");
  store->probe_ =
      std::make_unique<PgConnection>(with_timeout(std::max(1, store->options_.probe_timeout_ms)), redacted, "probe");
  store->lease_ = std::make_unique<PgConnection>(with_timeout(5000), redacted, "lease");
  store->listen_conn_ = std::make_unique<PgConnection>(with_timeout(5000), redacted, "notifications");
  if (auto st = store->Migrate(); !st) return tl::unexpected(st.error());
  return std::unique_ptr<Store>(std::move(store));
}

int64_t PgStore::Now() const { return options_.clock ? options_.clock() : NowSeconds(); }

Status PgStore::Migrate() {
  std::lock_guard lock(main_mu_);
  if (auto st = main_->Connect(); !st) return st;
  // One migration per transaction, each under the migration lock and after
  // re-reading the version: daemons started together migrate once.
  for (;;) {
    Tx tx(*main_);
    if (auto st = tx.Begin(); !st) return st;
    if (auto r = main_->Exec(fmt::format("SELECT pg_advisory_xact_lock({}, 0)", kMigrationLock)); !r)
      return tl::unexpected(r.error());
    if (auto r = main_->Exec("CREATE TABLE IF NOT EXISTS schema_migrations ("
                             "version INTEGER PRIMARY KEY, applied_at BIGINT NOT NULL)");
        !r) {
      return tl::unexpected(r.error());
    }
    auto cur = main_->Exec("SELECT COALESCE(MAX(version), 0) FROM schema_migrations");
    if (!cur) return tl::unexpected(cur.error());
    int current = static_cast<int>(cur->Int(0, 0));
    if (current > kSchemaVersion) {
      return MakeError(ErrorCode::kIo, fmt::format("database {}: schema version {} is newer than this drainwise ({}); "
                                                   "upgrade drainwise or point --db elsewhere",
                                                   path_, current, kSchemaVersion));
    }
    if (current == kSchemaVersion) {
      schema_version_ = current;
      return tx.Commit();
    }
    const int v = current + 1;
    if (auto r = main_->Exec(kMigrations[v - 1]); !r) {
      return tl::unexpected(r.error().Wrap(fmt::format("migration {}", v)));
    }
    if (auto r = main_->Exec("INSERT INTO schema_migrations(version, applied_at) VALUES ($1, $2)",
                             {P(int64_t{v}), P(NowSeconds())});
        !r) {
      return tl::unexpected(r.error().Wrap("recording migration"));
    }
    if (auto st = tx.Commit(); !st) return st;
  }
}

namespace {
// The last statements of every write transaction: count it, tell the others.
// (Last, so that the counter row, which every writer updates, is held only
// until the COMMIT right after.)
Status Notify(PgConnection& c, const std::string& instance, std::string_view what) {
  if (auto r = c.Exec("UPDATE change_counter SET n = n + 1 WHERE id = 1"); !r) return tl::unexpected(r.error());
  auto r = c.Exec("SELECT pg_notify($1, $2)", {P(std::string(kChannel)), P(instance + " " + std::string(what))});
  if (!r) return tl::unexpected(r.error());
  return {};
}
}  // namespace

Result<Store::PutResult> PgStore::PutDocument(DocumentInfo info, const std::string& body) {
  const std::string kind(DocKindName(info.kind));
  info.hash = ContentHash(body);
  if (info.created_at == 0) info.created_at = Now();
  std::lock_guard lock(main_mu_);
  return WithRetry(*main_, [&](PgConnection& c) -> Result<PutResult> {
    Tx tx(c);
    if (auto st = tx.Begin(); !st) return tl::unexpected(st.error());
    // Versions of one kind are numbered one writer at a time, across daemons.
    if (auto r = c.Exec("SELECT pg_advisory_xact_lock($1::int, $2::int)",
                        {P(int64_t{kDocumentLock}), P(static_cast<int64_t>(info.kind))});
        !r)
      return Failed<PutResult>(r);
    auto latest_r =
        c.Exec("SELECT version, hash FROM documents WHERE kind = $1 ORDER BY version DESC LIMIT 1", {P(kind)});
    if (!latest_r) return Failed<PutResult>(latest_r);
    int64_t latest = latest_r->rows() ? latest_r->Int(0, 0) : 0;
    if (latest > 0 && latest_r->Text(0, 1) == info.hash) return PutResult{latest, false};  // Tx rolls back
    if (auto r = c.Exec("INSERT INTO documents(kind, version, source, created_at, hash, items, links, body, principal) "
                        "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                        {P(kind), P(latest + 1), P(info.source), P(info.created_at), P(info.hash), P(info.items),
                         P(info.links), P(body), P(info.principal)});
        !r)
      return Failed<PutResult>(r);
    if (options_.keep_versions > 0) {
      std::string referenced;
      if (info.kind == DocKind::kTopology || info.kind == DocKind::kJobs) {
        const char* column = info.kind == DocKind::kTopology ? "topology_version" : "jobs_version";
        referenced = fmt::format(
            " AND NOT EXISTS (SELECT 1 FROM assessments a WHERE a.{0} = documents.version)"
            " AND NOT EXISTS (SELECT 1 FROM drains d WHERE d.ended_at IS NULL AND d.{0} = documents.version)",
            column);
      }
      if (auto r = c.Exec(fmt::format("DELETE FROM documents WHERE kind = $1 AND version <= $2::bigint{}", referenced),
                          {P(kind), P(latest + 1 - options_.keep_versions)});
          !r)
        return Failed<PutResult>(r);
    }
    if (auto st = Notify(c, instance_, kind); !st) return tl::unexpected(st.error());
    if (auto st = tx.Commit(); !st) return tl::unexpected(st.error());
    return PutResult{latest + 1, true};
  });
}

Result<std::optional<Document>> PgStore::LatestDocument(DocKind kind) { return GetDocument(kind, 0); }

Result<std::optional<Document>> PgStore::GetDocument(DocKind kind, int64_t version) {
  std::lock_guard lock(main_mu_);
  return WithRetry(*main_, [&](PgConnection& c) -> Result<std::optional<Document>> {
    std::string sql = fmt::format("SELECT {}, body FROM documents WHERE kind = $1 {} ORDER BY version DESC LIMIT 1",
                                  kDocColumns, version > 0 ? "AND version = $2::bigint" : "");
    std::vector<Param> params = {P(std::string(DocKindName(kind)))};
    if (version > 0) params.push_back(P(version));
    auto r = c.Exec(sql, params);
    if (!r) return Failed<std::optional<Document>>(r);
    if (!r->rows()) return std::optional<Document>();
    Document d;
    d.info = ReadDocInfo(*r, 0);
    d.body = r->Text(0, 8);
    return std::optional<Document>(std::move(d));
  });
}

Result<std::vector<DocumentInfo>> PgStore::ListDocuments(std::optional<DocKind> kind, int limit) {
  std::lock_guard lock(main_mu_);
  return WithRetry(*main_, [&](PgConnection& c) -> Result<std::vector<DocumentInfo>> {
    std::vector<Param> params;
    if (kind) params.push_back(P(std::string(DocKindName(*kind))));
    params.push_back(P(static_cast<int64_t>(limit)));
    auto r = c.Exec(fmt::format("SELECT {} FROM documents {} ORDER BY created_at DESC, version DESC LIMIT ${}",
                                kDocColumns, kind ? "WHERE kind = $1" : "", params.size()),
                    params);
    if (!r) return Failed<std::vector<DocumentInfo>>(r);
    std::vector<DocumentInfo> out;
    for (int i = 0; i < r->rows(); ++i) out.push_back(ReadDocInfo(*r, i));
    return out;
  });
}

Status PgStore::PutAssessment(const AssessmentRecord& rec) {
  std::lock_guard lock(main_mu_);
  const int64_t now = Now();
  const int64_t created_at = rec.created_at ? rec.created_at : now;
  const int64_t cutoff = now - options_.idempotency_ttl_s;
  auto in_use = [&](const std::string& by) {
    return MakeError(ErrorCode::kConflict,
                     fmt::format("idempotency key '{}' of {} is in use by '{}'", rec.idempotency_key,
                                 rec.principal.empty() ? "this client" : rec.principal, by));
  };
  return WithRetry(*main_, [&](PgConnection& c) -> Status {
    Tx tx(c);
    if (auto st = tx.Begin(); !st) return st;
    if (!rec.idempotency_key.empty()) {
      // Bounded pruning, as in SQLite: the rest goes with later writes.
      if (auto r = c.Exec("DELETE FROM idempotency_keys WHERE ctid IN (SELECT ctid FROM idempotency_keys "
                          "WHERE created_at <= $1::bigint ORDER BY created_at LIMIT $2::bigint)",
                          {P(cutoff), P(static_cast<int64_t>(kIdempotencyPruneBatch))});
          !r)
        return tl::unexpected(r.error());
      auto r =
          c.Exec("SELECT record_id FROM idempotency_keys WHERE principal = $1 AND key = $2 AND created_at > $3::bigint",
                 {P(rec.principal), P(rec.idempotency_key), P(cutoff)});
      if (!r) return tl::unexpected(r.error());
      if (r->rows()) return in_use(r->Text(0, 0));
    }
    auto ins = c.Exec(
        "INSERT INTO assessments(id, created_at, kind, ticket, requested_by, topology_version, jobs_version, "
        "verdict, idempotency_key, request, result, principal, idempotency_fingerprint) "
        "VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13) ON CONFLICT (id) DO NOTHING",
        {P(rec.id), P(created_at), P(rec.kind), P(rec.ticket), P(rec.requested_by), P(rec.topology_version),
         P(rec.jobs_version), P(rec.verdict), NullIfEmpty(rec.idempotency_key), P(rec.request), P(rec.result),
         P(rec.principal), P(rec.idempotency_fingerprint)});
    if (!ins) return tl::unexpected(ins.error());
    if (ins->affected() == 0) return MakeError(ErrorCode::kConflict, fmt::format("assessment '{}' exists", rec.id));
    if (!rec.idempotency_key.empty()) {
      // Claims the key unless another daemon's unexpired claim got there
      // first (its transaction committed while this one waited on the key).
      auto k = c.Exec(
          "INSERT INTO idempotency_keys(principal, key, fingerprint, record_id, created_at) "
          "VALUES ($1,$2,$3,$4,$5) ON CONFLICT (principal, key) DO UPDATE SET fingerprint = excluded.fingerprint, "
          "record_id = excluded.record_id, created_at = excluded.created_at "
          "WHERE idempotency_keys.created_at <= $6::bigint RETURNING record_id",
          {P(rec.principal), P(rec.idempotency_key), P(rec.idempotency_fingerprint), P(rec.id), P(now), P(cutoff)});
      if (!k) return tl::unexpected(k.error());
      if (k->rows() == 0) return in_use("a concurrent request");
    }
    if (auto st = Notify(c, instance_, "assessments"); !st) return st;
    return tx.Commit();
  });
}

Result<std::optional<IdempotencyEntry>> PgStore::FindIdempotency(const std::string& principal, const std::string& key) {
  const int64_t now = Now();
  std::lock_guard lock(main_mu_);
  return WithRetry(*main_, [&](PgConnection& c) -> Result<std::optional<IdempotencyEntry>> {
    auto r = c.Exec(
        "SELECT principal, key, fingerprint, record_id, created_at FROM idempotency_keys "
        "WHERE principal = $1 AND key = $2 AND created_at > $3::bigint",
        {P(principal), P(key), P(now - options_.idempotency_ttl_s)});
    if (!r) return Failed<std::optional<IdempotencyEntry>>(r);
    if (!r->rows()) return std::optional<IdempotencyEntry>();
    IdempotencyEntry e;
    e.principal = r->Text(0, 0);
    e.key = r->Text(0, 1);
    e.fingerprint = r->Text(0, 2);
    e.record_id = r->Text(0, 3);
    e.created_at = r->Int(0, 4);
    return std::optional<IdempotencyEntry>(std::move(e));
  });
}

Result<std::optional<AssessmentRecord>> PgStore::GetAssessment(const std::string& id) {
  std::lock_guard lock(main_mu_);
  return WithRetry(*main_, [&](PgConnection& c) -> Result<std::optional<AssessmentRecord>> {
    auto r = c.Exec(fmt::format("SELECT {} FROM assessments WHERE id = $1", kAssessmentColumns), {P(id)});
    if (!r) return Failed<std::optional<AssessmentRecord>>(r);
    if (!r->rows()) return std::optional<AssessmentRecord>();
    return std::optional<AssessmentRecord>(ReadAssessment(*r, 0));
  });
}

Result<std::optional<AssessmentRecord>> PgStore::FindByIdempotencyKey(const std::string& key) {
  std::lock_guard lock(main_mu_);
  return WithRetry(*main_, [&](PgConnection& c) -> Result<std::optional<AssessmentRecord>> {
    auto r = c.Exec(fmt::format("SELECT {} FROM assessments WHERE idempotency_key = $1 "
                                "ORDER BY created_at DESC, seq DESC LIMIT 1",
                                kAssessmentColumns),
                    {P(key)});
    if (!r) return Failed<std::optional<AssessmentRecord>>(r);
    if (!r->rows()) return std::optional<AssessmentRecord>();
    return std::optional<AssessmentRecord>(ReadAssessment(*r, 0));
  });
}

Result<std::vector<AssessmentRecord>> PgStore::ListAssessments(const std::string& ticket, int limit) {
  std::lock_guard lock(main_mu_);
  return WithRetry(*main_, [&](PgConnection& c) -> Result<std::vector<AssessmentRecord>> {
    std::vector<Param> params;
    if (!ticket.empty()) params.push_back(P(ticket));
    params.push_back(P(static_cast<int64_t>(limit)));
    auto r = c.Exec(fmt::format("SELECT {} FROM assessments {} ORDER BY created_at DESC, seq DESC LIMIT ${}::bigint",
                                kAssessmentColumns, ticket.empty() ? "" : "WHERE ticket = $1", params.size()),
                    params);
    if (!r) return Failed<std::vector<AssessmentRecord>>(r);
    std::vector<AssessmentRecord> out;
    for (int i = 0; i < r->rows(); ++i) out.push_back(ReadAssessment(*r, i));
    return out;
  });
}

Status PgStore::PutDrain(const DrainRecord& d) {
  std::lock_guard lock(main_mu_);
  const int64_t started = d.started_at ? d.started_at : Now();
  return WithRetry(*main_, [&](PgConnection& c) -> Status {
    Tx tx(c);
    if (auto st = tx.Begin(); !st) return st;
    auto r = c.Exec(
        "INSERT INTO drains(id, ticket, requested_by, started_at, expected_end, ended_at, spec, principal, "
        "topology_version, jobs_version) VALUES ($1,$2,$3,$4,$5::bigint,$6::bigint,$7,$8,"
        "CASE WHEN $9::bigint > 0 THEN $9::bigint ELSE "
        "(SELECT COALESCE(MAX(version), 0) FROM documents WHERE kind = 'topology') END,"
        "CASE WHEN $10::bigint > 0 THEN $10::bigint ELSE "
        "(SELECT COALESCE(MAX(version), 0) FROM documents WHERE kind = 'jobs') END) ON CONFLICT (id) DO NOTHING",
        {P(d.id), P(d.ticket), P(d.requested_by), P(started), P(d.expected_end), P(d.ended_at), P(d.spec),
         P(d.principal), P(d.topology_version), P(d.jobs_version)});
    if (!r) return tl::unexpected(r.error());
    if (r->affected() == 0) return MakeError(ErrorCode::kConflict, fmt::format("drain '{}' exists", d.id));
    if (auto st = Notify(c, instance_, "drains"); !st) return st;
    return tx.Commit();
  });
}

Result<bool> PgStore::EndDrain(const std::string& id, int64_t ended_at) {
  std::lock_guard lock(main_mu_);
  return WithRetry(*main_, [&](PgConnection& c) -> Result<bool> {
    Tx tx(c);
    if (auto st = tx.Begin(); !st) return tl::unexpected(st.error());
    auto r = c.Exec("UPDATE drains SET ended_at = $1::bigint WHERE id = $2 AND ended_at IS NULL", {P(ended_at), P(id)});
    if (!r) return Failed<bool>(r);
    if (r->affected() == 0) return false;
    if (auto st = Notify(c, instance_, "drains"); !st) return tl::unexpected(st.error());
    if (auto st = tx.Commit(); !st) return tl::unexpected(st.error());
    return true;
  });
}

Result<std::vector<DrainRecord>> PgStore::ListDrains(bool active_only) {
  std::lock_guard lock(main_mu_);
  return WithRetry(*main_, [&](PgConnection& c) -> Result<std::vector<DrainRecord>> {
    auto r = c.Exec(fmt::format(
        "SELECT id, ticket, requested_by, started_at, expected_end, ended_at, spec, principal, topology_version, "
        "jobs_version FROM drains {} ORDER BY started_at, id",
        active_only ? "WHERE ended_at IS NULL" : ""));
    if (!r) return Failed<std::vector<DrainRecord>>(r);
    std::vector<DrainRecord> out;
    for (int i = 0; i < r->rows(); ++i) {
      DrainRecord d;
      d.id = r->Text(i, 0);
      d.ticket = r->Text(i, 1);
      d.requested_by = r->Text(i, 2);
      d.started_at = r->Int(i, 3);
      d.expected_end = r->OptInt(i, 4);
      d.ended_at = r->OptInt(i, 5);
      d.spec = r->Text(i, 6);
      d.principal = r->Text(i, 7);
      d.topology_version = r->Int(i, 8);
      d.jobs_version = r->Int(i, 9);
      out.push_back(std::move(d));
    }
    return out;
  });
}

Result<int64_t> PgStore::PutObservation(const ObservationRecord& o) {
  std::lock_guard lock(main_mu_);
  const int64_t observed = o.observed_at ? o.observed_at : Now();
  return WithRetry(*main_, [&](PgConnection& c) -> Result<int64_t> {
    Tx tx(c);
    if (auto st = tx.Begin(); !st) return tl::unexpected(st.error());
    auto r = c.Exec(
        "INSERT INTO observations(job_id, observed_at, iteration_s, predicted_s, drain_key, body) "
        "VALUES ($1,$2,$3,$4,$5,$6) RETURNING id",
        {P(o.job_id), P(observed), P(o.iteration_s), P(o.predicted_s), P(o.drain_key), P(o.body)});
    if (!r) return Failed<int64_t>(r);
    int64_t id = r->Int(0, 0);
    if (auto st = Notify(c, instance_, "observations"); !st) return tl::unexpected(st.error());
    if (auto st = tx.Commit(); !st) return tl::unexpected(st.error());
    return id;
  });
}

Result<std::vector<ObservationRecord>> PgStore::ListObservations(const std::string& job_id, int limit) {
  std::lock_guard lock(main_mu_);
  return WithRetry(*main_, [&](PgConnection& c) -> Result<std::vector<ObservationRecord>> {
    std::vector<Param> params;
    if (!job_id.empty()) params.push_back(P(job_id));
    params.push_back(P(static_cast<int64_t>(limit)));
    auto r = c.Exec(fmt::format("SELECT id, job_id, observed_at, iteration_s, predicted_s, drain_key, body "
                                "FROM observations {} ORDER BY observed_at DESC, id DESC LIMIT ${}::bigint",
                                job_id.empty() ? "" : "WHERE job_id = $1", params.size()),
                    params);
    if (!r) return Failed<std::vector<ObservationRecord>>(r);
    std::vector<ObservationRecord> out;
    for (int i = 0; i < r->rows(); ++i) {
      ObservationRecord o;
      o.id = r->Int(i, 0);
      o.job_id = r->Text(i, 1);
      o.observed_at = r->Int(i, 2);
      o.iteration_s = r->Real(i, 3);
      o.predicted_s = r->Real(i, 4);
      o.drain_key = r->Text(i, 5);
      o.body = r->Text(i, 6);
      out.push_back(std::move(o));
    }
    return out;
  });
}

Result<std::string> PgStore::IntegrityCheck() {
  std::lock_guard lock(main_mu_);
  return WithRetry(*main_, [&](PgConnection& c) -> Result<std::string> {
    auto r = c.Exec("SELECT 1");
    if (!r) return Failed<std::string>(r);
    return std::string("ok");
  });
}

Status PgStore::ProbeWrite() {
  std::lock_guard lock(probe_mu_);
  return WithRetry(*probe_, [&](PgConnection& c) -> Status {
    auto r = c.Exec(
        "INSERT INTO write_probe(daemon, at, listen) VALUES ($1, $2, $3) "
        "ON CONFLICT (daemon) DO UPDATE SET at = excluded.at, listen = excluded.listen",
        {P(instance_), P(Now()), P(options_.listen_address)});
    if (!r) return tl::unexpected(r.error().Wrap("write probe"));
    return {};
  });
}

Status PgStore::SetListenAddress(const std::string& address) {
  {
    std::lock_guard lock(probe_mu_);
    options_.listen_address = address;
  }
  return ProbeWrite();
}

void PgStore::SetChangeListener(ChangeListener listener) {
  listen_thread_ = {};  // stops and joins the previous one
  listening_ = false;
  listener_ = std::move(listener);
  if (listener_) listen_thread_ = std::jthread([this](std::stop_token stop) { Listen(stop); });
}

bool PgStore::Fresh(std::string* why) const {
  if (listening_.load()) return true;
  if (why) {
    std::lock_guard lock(listen_error_mu_);
    *why = listen_error_.empty() ? "not yet listening for other daemons' changes" : listen_error_;
  }
  return false;
}

void PgStore::Listen(std::stop_token stop) {
  // Its own connection: LISTEN, then wait on the socket. Every (re)connect
  // delivers "reconnected" first: what other daemons wrote while this one
  // was not listening is caught up by a full reload.
  PgConnection& conn = *listen_conn_;
  auto fail = [&](const std::string& why) {
    listening_ = false;
    std::lock_guard lock(listen_error_mu_);
    listen_error_ = why;
  };
  auto sleep = [&](std::chrono::milliseconds d) {
    auto until = std::chrono::steady_clock::now() + d;
    while (!stop.stop_requested() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  };
  auto last_ping = std::chrono::steady_clock::now();
  while (!stop.stop_requested()) {
    if (!conn.ok()) {
      if (auto st = conn.Connect(); !st) {
        fail(st.error().message);
        sleep(std::chrono::milliseconds(250));
        continue;
      }
      if (auto r = conn.Exec(fmt::format("LISTEN {}", kChannel)); !r) {
        fail(r.error().message);
        conn.Drop();
        sleep(std::chrono::milliseconds(250));
        continue;
      }
      listening_ = true;
      last_ping = std::chrono::steady_clock::now();
      if (listener_) listener_("reconnected");
    }
    pollfd p{PQsocket(conn.raw()), POLLIN, 0};
    (void)::poll(&p, 1, 200);
    if (PQconsumeInput(conn.raw()) == 0 || PQstatus(conn.raw()) != CONNECTION_OK) {
      fail(fmt::format("database {}: change notifications lost: {}", path_, Trimmed(PQerrorMessage(conn.raw()))));
      conn.Drop();
      continue;
    }
    while (PGnotify* n = PQnotifies(conn.raw())) {
      std::string payload = n->extra ? n->extra : "";
      PQfreemem(n);
      auto space = payload.find(' ');
      if (space == std::string::npos) continue;
      if (payload.compare(0, space, instance_) == 0) continue;  // our own write: already published
      if (listener_) listener_(payload.substr(space + 1));
    }
    // A server that went away without a word is found by a query.
    if (std::chrono::steady_clock::now() - last_ping > std::chrono::seconds(2)) {
      last_ping = std::chrono::steady_clock::now();
      if (auto r = conn.Exec("SELECT 1"); !r) {
        fail(r.error().message);
        conn.Drop();
      }
    }
  }
}

Result<int64_t> PgStore::ChangeCount() {
  std::lock_guard lock(main_mu_);
  return WithRetry(*main_, [&](PgConnection& c) -> Result<int64_t> {
    auto r = c.Exec("SELECT n FROM change_counter WHERE id = 1");
    if (!r) return Failed<int64_t>(r);
    return r->rows() ? r->Int(0, 0) : int64_t{0};
  });
}

Result<int64_t> PgStore::LatestVersion(DocKind kind) {
  std::lock_guard lock(main_mu_);
  return WithRetry(*main_, [&](PgConnection& c) -> Result<int64_t> {
    auto r = c.Exec("SELECT COALESCE(MAX(version), 0) FROM documents WHERE kind = $1",
                    {P(std::string(DocKindName(kind)))});
    if (!r) return Failed<int64_t>(r);
    return r->Int(0, 0);
  });
}

Result<bool> PgStore::HoldLease(const std::string& name) {
  std::lock_guard lock(lease_mu_);
  if (!lease_->ok()) {
    leases_held_.clear();  // a lost connection took its advisory locks with it
    if (auto st = lease_->Connect(); !st) return tl::unexpected(st.error());
  }
  bool held = std::find(leases_held_.begin(), leases_held_.end(), name) != leases_held_.end();
  if (held) {
    if (auto r = lease_->Exec("SELECT 1"); !r) {
      leases_held_.clear();
      lease_->Drop();
      return tl::unexpected(r.error());
    }
    return true;
  }
  auto r = lease_->Exec("SELECT pg_try_advisory_lock($1::int, hashtext($2))", {P(int64_t{kLeaseLock}), P(name)});
  if (!r) {
    if (!lease_->ok()) lease_->Drop();
    return tl::unexpected(r.error());
  }
  if (r->Text(0, 0) != "t") return false;
  leases_held_.push_back(name);
  return true;
}

}  // namespace drainwise::store
