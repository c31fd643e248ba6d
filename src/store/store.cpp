#include "store/store.h"

#include "store/pg_store.h"
#include "store/sqlite_store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

namespace drainwise::store {

namespace {

// Schema migrations, applied in order; never edit a shipped one, add another.
constexpr const char* kMigrations[] = {
    // 1: versioned documents, assessments, drains.
    R"sql(
    CREATE TABLE documents (
      kind        TEXT    NOT NULL,
      version     INTEGER NOT NULL,
      source      TEXT    NOT NULL,
      created_at  INTEGER NOT NULL,
      hash        TEXT    NOT NULL,
      items       INTEGER NOT NULL DEFAULT 0,
      links       INTEGER NOT NULL DEFAULT 0,
      body        TEXT    NOT NULL,
      PRIMARY KEY (kind, version)
    );
    CREATE TABLE assessments (
      id               TEXT PRIMARY KEY,
      created_at       INTEGER NOT NULL,
      kind             TEXT NOT NULL,
      ticket           TEXT NOT NULL DEFAULT '',
      requested_by     TEXT NOT NULL DEFAULT '',
      topology_version INTEGER NOT NULL,
      jobs_version     INTEGER NOT NULL,
      verdict          TEXT NOT NULL DEFAULT '',
      idempotency_key  TEXT,
      request          TEXT NOT NULL,
      result           TEXT NOT NULL
    );
    CREATE INDEX assessments_ticket ON assessments(ticket, created_at);
    CREATE UNIQUE INDEX assessments_idempotency ON assessments(idempotency_key)
      WHERE idempotency_key IS NOT NULL;
    CREATE TABLE drains (
      id           TEXT PRIMARY KEY,
      ticket       TEXT NOT NULL DEFAULT '',
      requested_by TEXT NOT NULL DEFAULT '',
      started_at   INTEGER NOT NULL,
      expected_end INTEGER,
      ended_at     INTEGER,
      spec         TEXT NOT NULL
    );
    )sql",
    // 2: observed iteration times for calibration.
    R"sql(
    CREATE TABLE observations (
      id          INTEGER PRIMARY KEY AUTOINCREMENT,
      job_id      TEXT NOT NULL,
      observed_at INTEGER NOT NULL,
      iteration_s REAL NOT NULL,
      predicted_s REAL NOT NULL DEFAULT 0,
      drain_key   TEXT NOT NULL DEFAULT '',
      body        TEXT NOT NULL
    );
    CREATE INDEX observations_job ON observations(job_id, observed_at);
    )sql",
    // 3: idempotency keys scoped to the authenticated principal, with the
    // request fingerprint and an expiry (IETF Idempotency-Key draft); the
    // principal on every record (the audit trail); the versions a drain was
    // started on (retention keeps them while it is active); a write probe.
    // Keys from before were global and cannot be scoped to a principal: they
    // are not carried over. Drains active at the upgrade are taken to run on
    // the latest stored versions.
    R"sql(
    ALTER TABLE assessments ADD COLUMN principal TEXT NOT NULL DEFAULT '';
    ALTER TABLE assessments ADD COLUMN idempotency_fingerprint TEXT NOT NULL DEFAULT '';
    DROP INDEX assessments_idempotency;
    CREATE INDEX assessments_idempotency ON assessments(idempotency_key) WHERE idempotency_key IS NOT NULL;
    CREATE INDEX assessments_topology_version ON assessments(topology_version);
    CREATE INDEX assessments_jobs_version ON assessments(jobs_version);
    CREATE TABLE idempotency_keys (
      principal   TEXT    NOT NULL,
      key         TEXT    NOT NULL,
      fingerprint TEXT    NOT NULL,
      record_id   TEXT    NOT NULL,
      created_at  INTEGER NOT NULL,
      PRIMARY KEY (principal, key)
    );
    CREATE INDEX idempotency_keys_created ON idempotency_keys(created_at);
    ALTER TABLE drains ADD COLUMN principal TEXT NOT NULL DEFAULT '';
    ALTER TABLE drains ADD COLUMN topology_version INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE drains ADD COLUMN jobs_version INTEGER NOT NULL DEFAULT 0;
    UPDATE drains SET
      topology_version = (SELECT COALESCE(MAX(version), 0) FROM documents WHERE kind = 'topology'),
      jobs_version = (SELECT COALESCE(MAX(version), 0) FROM documents WHERE kind = 'jobs')
      WHERE ended_at IS NULL;
    ALTER TABLE documents ADD COLUMN principal TEXT NOT NULL DEFAULT '';
    CREATE TABLE write_probe (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      at INTEGER NOT NULL
    );
    )sql",
};
constexpr int kSchemaVersion = static_cast<int>(std::size(kMigrations));

class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) { rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr); }
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  bool ok() const { return rc_ == SQLITE_OK; }
  Stmt& Bind(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& Bind(int i, int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  Stmt& Bind(int i, double v) {
    sqlite3_bind_double(stmt_, i, v);
    return *this;
  }
  Stmt& Bind(int i, std::optional<int64_t> v) {
    if (v)
      sqlite3_bind_int64(stmt_, i, *v);
    else
      sqlite3_bind_null(stmt_, i);
    return *this;
  }
  Stmt& BindNullIfEmpty(int i, const std::string& v) {
    if (v.empty())
      sqlite3_bind_null(stmt_, i);
    else
      Bind(i, v);
    return *this;
  }
  // SQLITE_ROW, SQLITE_DONE or an error code.
  int Step() { return sqlite3_step(stmt_); }
  std::string Text(int col) const {
    auto p = sqlite3_column_text(stmt_, col);
    return p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(stmt_, col)) : "";
  }
  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  double Real(int col) const { return sqlite3_column_double(stmt_, col); }
  std::optional<int64_t> OptInt(int col) const {
    if (sqlite3_column_type(stmt_, col) == SQLITE_NULL) return std::nullopt;
    return Int(col);
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int rc_;
};

tl::unexpected<Error> DbError(sqlite3* db, std::string_view what) {
  return MakeError(ErrorCode::kIo, fmt::format("database: {}: {}", what, sqlite3_errmsg(db)));
}

int64_t NowSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

constexpr const char* kAssessmentColumns =
    "id, created_at, kind, ticket, requested_by, topology_version, jobs_version, verdict, "
    "COALESCE(idempotency_key, ''), request, result, principal, idempotency_fingerprint";

AssessmentRecord ReadAssessment(const Stmt& s) {
  AssessmentRecord r;
  r.id = s.Text(0);
  r.created_at = s.Int(1);
  r.kind = s.Text(2);
  r.ticket = s.Text(3);
  r.requested_by = s.Text(4);
  r.topology_version = s.Int(5);
  r.jobs_version = s.Int(6);
  r.verdict = s.Text(7);
  r.idempotency_key = s.Text(8);
  r.request = s.Text(9);
  r.result = s.Text(10);
  r.principal = s.Text(11);
  r.idempotency_fingerprint = s.Text(12);
  return r;
}

}  // namespace

std::string_view DocKindName(DocKind kind) {
  switch (kind) {
    case DocKind::kTopology:
      return "topology";
    case DocKind::kJobs:
      return "jobs";
    case DocKind::kPolicy:
      return "policy";
    case DocKind::kCalibration:
      return "calibration";
  }
  return "topology";
}

std::string ContentHash(std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return fmt::format("{:016x}", h);
}

std::string LockPath(const std::string& db_path) { return db_path + ".lock"; }

namespace {

// The lock file's one line: "pid 1234, listening on 127.0.0.1:8080".
std::string LockHolderText(const std::string& listen) {
  return fmt::format("pid {}, listening on {}", static_cast<long>(::getpid()), listen.empty() ? "?" : listen);
}

Status WriteLockHolder(int fd, const std::string& db, const std::string& listen) {
  std::string text = LockHolderText(listen) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    return MakeError(ErrorCode::kIo,
                     fmt::format("database {}: cannot write lock file {}: {}", db, LockPath(db), std::strerror(errno)));
  }
  return {};
}

// What the lock file says about the process holding it, printable.
std::string ReadLockHolder(int fd) {
  char buf[512];
  ssize_t n = ::pread(fd, buf, sizeof buf, 0);
  std::string out;
  for (ssize_t i = 0; i < n; ++i) {
    unsigned char c = static_cast<unsigned char>(buf[i]);
    if (c == '\n') break;
    out += c < 0x20 || c == 0x7f ? '?' : static_cast<char>(c);
  }
  return out;
}

// An exclusive flock on "<db>.lock", held for the life of the fd (closed on
// exec, so a child process never inherits it). flock, not fcntl locks: the
// latter are per process, so a second Open() in the same process (tests)
// would not see the first one's lock.
Result<int> LockDatabase(const std::string& db, const std::string& listen) {
  const std::string lock_path = LockPath(db);
  int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return MakeError(ErrorCode::kIo,
                     fmt::format("database {}: cannot open lock file {}: {}", db, lock_path, std::strerror(errno)));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    std::string holder = ReadLockHolder(fd);
    ::close(fd);
    if (err == EWOULDBLOCK) {
      return MakeError(ErrorCode::kConflict,
                       fmt::format("database {} is in use by another drainwise serve ({}; lock file {}): "
                                   "one daemon per database; stop that one or point --db elsewhere",
                                   db, holder.empty() ? "pid not yet recorded" : holder, lock_path));
    }
    return MakeError(ErrorCode::kIo, fmt::format("database {}: cannot lock {}: {}", db, lock_path, std::strerror(err)));
  }
  if (auto st = WriteLockHolder(fd, db, listen); !st) {
    ::close(fd);
    return tl::unexpected(st.error());
  }
  return fd;
}

}  // namespace

SqliteStore::SqliteStore(sqlite3* db, std::string path, StoreOptions options)
    : Store(std::move(path), std::move(options)), db_(db) {}

bool IsPostgresUrl(std::string_view path) {
  return path.starts_with("postgresql://") || path.starts_with("postgres://");
}

Result<std::unique_ptr<Store>> Store::Open(const std::string& path, StoreOptions options) {
  if (IsPostgresUrl(path)) return PgStore::Open(path, std::move(options));
  return SqliteStore::Open(path, std::move(options));
}

SqliteStore::~SqliteStore() {
  sqlite3_close_v2(probe_db_);
  sqlite3_close_v2(db_);
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock; the file stays (see Open)
}

Result<std::unique_ptr<Store>> SqliteStore::Open(const std::string& path, StoreOptions options) {
  if (options.idempotency_ttl_s < 1) {
    return InvalidArgument(
        fmt::format("database {}: idempotency_ttl_s must be >= 1, got {}", path, options.idempotency_ttl_s));
  }
  if (options.keep_versions < 0) {
    return InvalidArgument(fmt::format("database {}: keep_versions must be >= 0, got {}", path, options.keep_versions));
  }
  const bool file = path != ":memory:";
  // The lock comes first: a second daemon must not even migrate the database.
  int lock_fd = -1;
  if (file) {
    auto fd = LockDatabase(path, options.listen_address);
    if (!fd) return tl::unexpected(fd.error());
    lock_fd = *fd;
  }
  sqlite3* db = nullptr;
  int rc =
      sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close_v2(db);
    if (lock_fd >= 0) ::close(lock_fd);
    return MakeError(ErrorCode::kIo, fmt::format("database {}: cannot open: {}", path, msg));
  }
  sqlite3_busy_timeout(db, 5000);
  std::unique_ptr<SqliteStore> store(new SqliteStore(db, path, std::move(options)));
  store->lock_fd_ = lock_fd;
  // WAL: readers never block the writer; synchronous=FULL so an acknowledged
  // write survives a crash or power loss.
  if (file) {
    if (auto st = store->Exec("PRAGMA journal_mode=WAL;"); !st) return tl::unexpected(st.error().Wrap(path));
  }
  if (auto st = store->Exec("PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;"); !st) {
    return tl::unexpected(st.error().Wrap(path));
  }
  if (auto st = store->Migrate(); !st) return tl::unexpected(st.error().Wrap(path));
  if (file) {
    // ProbeWrite's own connection, so that it never queues behind the
    // mutex of a long read or write on the main one.
    rc = sqlite3_open_v2(path.c_str(), &store->probe_db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX, nullptr);
    if (rc != SQLITE_OK) {
      return MakeError(ErrorCode::kIo,
                       fmt::format("database {}: cannot open a second connection: {}", path,
                                   store->probe_db_ ? sqlite3_errmsg(store->probe_db_) : sqlite3_errstr(rc)));
    }
    sqlite3_busy_timeout(store->probe_db_, store->options_.probe_timeout_ms);
    char* err = nullptr;
    if (sqlite3_exec(store->probe_db_, "PRAGMA synchronous=FULL;", nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : sqlite3_errmsg(store->probe_db_);
      sqlite3_free(err);
      return MakeError(ErrorCode::kIo, fmt::format("database {}: {}", path, msg));
    }
  }
  return std::unique_ptr<Store>(std::move(store));
}

int64_t SqliteStore::Now() const { return options_.clock ? options_.clock() : NowSeconds(); }

Status SqliteStore::SetListenAddress(const std::string& address) {
  std::lock_guard lock(mu_);
  options_.listen_address = address;
  if (lock_fd_ < 0) return {};
  return WriteLockHolder(lock_fd_, path_, address);
}

Status SqliteStore::ProbeWrite() {
  std::unique_lock<std::mutex> main_lock;
  sqlite3* db = probe_db_;
  if (!db) {  // ":memory:": the only connection
    main_lock = std::unique_lock(mu_);
    db = db_;
  }
  std::lock_guard lock(probe_mu_);
  Stmt s(db, "INSERT INTO write_probe(id, at) VALUES (1, ?) ON CONFLICT(id) DO UPDATE SET at = excluded.at");
  auto fail = [&](ErrorCode code, std::string_view detail) {
    return MakeError(code, fmt::format("database {}: write probe: {}{}", path_, detail, sqlite3_errmsg(db)));
  };
  if (!s.ok()) return fail(ErrorCode::kIo, "");
  s.Bind(1, Now());
  int rc = s.Step();
  if (rc == SQLITE_DONE) return {};
  int primary = rc & 0xff;
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) {
    return fail(ErrorCode::kUnavailable, fmt::format("busy for more than {} ms: ", options_.probe_timeout_ms));
  }
  return fail(ErrorCode::kIo, "");
}

Status SqliteStore::Exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    return MakeError(ErrorCode::kIo, "database: " + msg);
  }
  return {};
}

Status SqliteStore::Migrate() {
  std::lock_guard lock(mu_);
  if (auto st = Exec("CREATE TABLE IF NOT EXISTS schema_migrations ("
                     "version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL);");
      !st) {
    return st;
  }
  int current = 0;
  {
    Stmt s(db_, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations");
    if (!s.ok() || s.Step() != SQLITE_ROW) return DbError(db_, "reading schema version");
    current = static_cast<int>(s.Int(0));
  }
  if (current > kSchemaVersion) {
    return MakeError(ErrorCode::kIo, fmt::format("database schema version {} is newer than this drainwise ({}); "
                                                 "upgrade drainwise or point --db elsewhere",
                                                 current, kSchemaVersion));
  }
  for (int v = current + 1; v <= kSchemaVersion; ++v) {
    if (auto st = Exec("BEGIN IMMEDIATE;"); !st) return st;
    auto st = Exec(kMigrations[v - 1]);
    if (st) {
      Stmt s(db_, "INSERT INTO schema_migrations(version, applied_at) VALUES (?, ?)");
      s.Bind(1, static_cast<int64_t>(v)).Bind(2, NowSeconds());
      if (s.Step() != SQLITE_DONE) st = DbError(db_, "recording migration");
    }
    if (!st) {
      (void)Exec("ROLLBACK;");
      return tl::unexpected(st.error().Wrap(fmt::format("migration {}", v)));
    }
    if (auto c = Exec("COMMIT;"); !c) return c;
  }
  schema_version_ = kSchemaVersion;
  return {};
}

Result<Store::PutResult> SqliteStore::PutDocument(DocumentInfo info, const std::string& body) {
  std::lock_guard lock(mu_);
  const std::string kind(DocKindName(info.kind));
  info.hash = ContentHash(body);
  if (info.created_at == 0) info.created_at = Now();
  if (auto st = Exec("BEGIN IMMEDIATE;"); !st) return tl::unexpected(st.error());
  auto rollback = [&](tl::unexpected<Error> e) {
    (void)Exec("ROLLBACK;");
    return e;
  };
  int64_t latest = 0;
  std::string latest_hash;
  {
    Stmt s(db_, "SELECT version, hash FROM documents WHERE kind = ? ORDER BY version DESC LIMIT 1");
    s.Bind(1, kind);
    int rc = s.Step();
    if (rc == SQLITE_ROW) {
      latest = s.Int(0);
      latest_hash = s.Text(1);
    } else if (rc != SQLITE_DONE) {
      return rollback(DbError(db_, "reading latest version"));
    }
  }
  if (latest > 0 && latest_hash == info.hash) {
    (void)Exec("ROLLBACK;");
    return PutResult{latest, false};
  }
  {
    Stmt s(db_,
           "INSERT INTO documents(kind, version, source, created_at, hash, items, links, body, principal) "
           "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
    s.Bind(1, kind).Bind(2, latest + 1).Bind(3, info.source).Bind(4, info.created_at).Bind(5, info.hash);
    s.Bind(6, info.items).Bind(7, info.links).Bind(8, body).Bind(9, info.principal);
    if (s.Step() != SQLITE_DONE) return rollback(DbError(db_, "storing document"));
  }
  if (options_.keep_versions > 0) {
    // Beyond the newest keep_versions, a topology or jobs version stays
    // while an assessment or plan, or an active drain, was made on it: every
    // stored assessment can show its snapshot. (Indexed lookups per old
    // version; the versions of ended drains become prunable on a later put.)
    std::string referenced;
    if (info.kind == DocKind::kTopology || info.kind == DocKind::kJobs) {
      const char* column = info.kind == DocKind::kTopology ? "topology_version" : "jobs_version";
      referenced = fmt::format(
          " AND NOT EXISTS (SELECT 1 FROM assessments a WHERE a.{0} = documents.version)"
          " AND NOT EXISTS (SELECT 1 FROM drains d WHERE d.ended_at IS NULL AND d.{0} = documents.version)",
          column);
    }
    Stmt s(db_, fmt::format("DELETE FROM documents WHERE kind = ? AND version <= ?{}", referenced).c_str());
    s.Bind(1, kind).Bind(2, latest + 1 - options_.keep_versions);
    if (s.Step() != SQLITE_DONE) return rollback(DbError(db_, "pruning old versions"));
  }
  if (auto st = Exec("COMMIT;"); !st) return rollback(tl::unexpected(st.error()));
  return PutResult{latest + 1, true};
}

namespace {
constexpr const char* kDocColumns = "kind, version, source, created_at, hash, items, links, principal";
DocumentInfo ReadDocInfo(const Stmt& s) {
  DocumentInfo i;
  std::string kind = s.Text(0);
  i.kind = kind == "jobs"          ? DocKind::kJobs
           : kind == "policy"      ? DocKind::kPolicy
           : kind == "calibration" ? DocKind::kCalibration
                                   : DocKind::kTopology;
  i.version = s.Int(1);
  i.source = s.Text(2);
  i.created_at = s.Int(3);
  i.hash = s.Text(4);
  i.items = s.Int(5);
  i.links = s.Int(6);
  i.principal = s.Text(7);
  return i;
}
}  // namespace

Result<std::optional<Document>> SqliteStore::LatestDocument(DocKind kind) { return GetDocument(kind, 0); }

Result<std::optional<Document>> SqliteStore::GetDocument(DocKind kind, int64_t version) {
  std::lock_guard lock(mu_);
  std::string sql = fmt::format("SELECT {}, body FROM documents WHERE kind = ? {} ORDER BY version DESC LIMIT 1",
                                kDocColumns, version > 0 ? "AND version = ?" : "");
  Stmt s(db_, sql.c_str());
  s.Bind(1, std::string(DocKindName(kind)));
  if (version > 0) s.Bind(2, version);
  int rc = s.Step();
  if (rc == SQLITE_DONE) return std::optional<Document>();
  if (rc != SQLITE_ROW) return DbError(db_, "reading document");
  Document d;
  d.info = ReadDocInfo(s);
  d.body = s.Text(8);
  return std::optional<Document>(std::move(d));
}

Result<std::vector<DocumentInfo>> SqliteStore::ListDocuments(std::optional<DocKind> kind, int limit) {
  std::lock_guard lock(mu_);
  std::string sql = fmt::format("SELECT {} FROM documents {} ORDER BY created_at DESC, version DESC LIMIT ?",
                                kDocColumns, kind ? "WHERE kind = ?" : "");
  Stmt s(db_, sql.c_str());
  int i = 1;
  if (kind) s.Bind(i++, std::string(DocKindName(*kind)));
  s.Bind(i, static_cast<int64_t>(limit));
  std::vector<DocumentInfo> out;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) out.push_back(ReadDocInfo(s));
  if (rc != SQLITE_DONE) return DbError(db_, "listing documents");
  return out;
}

Status SqliteStore::PruneIdempotencyLocked(int64_t now) {
  // Bounded, so that a write after a long idle period does not stall on a
  // large backlog; the rest goes with later writes (Find ignores them anyway).
  Stmt s(db_,
         "DELETE FROM idempotency_keys WHERE rowid IN "
         "(SELECT rowid FROM idempotency_keys WHERE created_at <= ? ORDER BY created_at LIMIT ?)");
  s.Bind(1, now - options_.idempotency_ttl_s).Bind(2, static_cast<int64_t>(kIdempotencyPruneBatch));
  if (s.Step() != SQLITE_DONE) return DbError(db_, "pruning expired idempotency keys");
  return {};
}

Status SqliteStore::PutAssessment(const AssessmentRecord& r) {
  std::lock_guard lock(mu_);
  const int64_t now = Now();
  const int64_t created_at = r.created_at ? r.created_at : now;
  if (auto st = Exec("BEGIN IMMEDIATE;"); !st) return st;
  auto rollback = [&](tl::unexpected<Error> e) -> Status {
    (void)Exec("ROLLBACK;");
    return e;
  };
  if (!r.idempotency_key.empty()) {
    if (auto st = PruneIdempotencyLocked(now); !st) return rollback(tl::unexpected(st.error()));
    Stmt s(db_, "SELECT record_id FROM idempotency_keys WHERE principal = ? AND key = ? AND created_at > ?");
    s.Bind(1, r.principal).Bind(2, r.idempotency_key).Bind(3, now - options_.idempotency_ttl_s);
    int rc = s.Step();
    if (rc == SQLITE_ROW) {
      return rollback(
          MakeError(ErrorCode::kConflict, fmt::format("idempotency key '{}' of {} is in use by '{}'", r.idempotency_key,
                                                      r.principal.empty() ? "this client" : r.principal, s.Text(0))));
    }
    if (rc != SQLITE_DONE) return rollback(DbError(db_, "reading idempotency key"));
  }
  {
    Stmt s(db_,
           "INSERT INTO assessments(id, created_at, kind, ticket, requested_by, topology_version, jobs_version, "
           "verdict, idempotency_key, request, result, principal, idempotency_fingerprint) "
           "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)");
    s.Bind(1, r.id).Bind(2, created_at).Bind(3, r.kind).Bind(4, r.ticket);
    s.Bind(5, r.requested_by).Bind(6, r.topology_version).Bind(7, r.jobs_version).Bind(8, r.verdict);
    s.BindNullIfEmpty(9, r.idempotency_key).Bind(10, r.request).Bind(11, r.result);
    s.Bind(12, r.principal).Bind(13, r.idempotency_fingerprint);
    int rc = s.Step();
    if (rc == SQLITE_CONSTRAINT) {
      return rollback(MakeError(ErrorCode::kConflict, fmt::format("assessment '{}' exists", r.id)));
    }
    if (rc != SQLITE_DONE) return rollback(DbError(db_, "storing assessment"));
  }
  if (!r.idempotency_key.empty()) {
    // REPLACE: an expired entry for the same key that pruning has not
    // reached yet is overwritten.
    Stmt s(db_,
           "INSERT OR REPLACE INTO idempotency_keys(principal, key, fingerprint, record_id, created_at) "
           "VALUES (?,?,?,?,?)");
    s.Bind(1, r.principal).Bind(2, r.idempotency_key).Bind(3, r.idempotency_fingerprint).Bind(4, r.id);
    s.Bind(5, now);
    if (s.Step() != SQLITE_DONE) return rollback(DbError(db_, "storing idempotency key"));
  }
  if (auto st = Exec("COMMIT;"); !st) return rollback(tl::unexpected(st.error()));
  return {};
}

Result<std::optional<IdempotencyEntry>> SqliteStore::FindIdempotency(const std::string& principal,
                                                                     const std::string& key) {
  const int64_t now = Now();
  std::lock_guard lock(mu_);
  Stmt s(db_,
         "SELECT principal, key, fingerprint, record_id, created_at FROM idempotency_keys "
         "WHERE principal = ? AND key = ? AND created_at > ?");
  s.Bind(1, principal).Bind(2, key).Bind(3, now - options_.idempotency_ttl_s);
  int rc = s.Step();
  if (rc == SQLITE_DONE) return std::optional<IdempotencyEntry>();
  if (rc != SQLITE_ROW) return DbError(db_, "reading idempotency key");
  IdempotencyEntry e;
  e.principal = s.Text(0);
  e.key = s.Text(1);
  e.fingerprint = s.Text(2);
  e.record_id = s.Text(3);
  e.created_at = s.Int(4);
  return std::optional<IdempotencyEntry>(std::move(e));
}

Result<std::optional<AssessmentRecord>> SqliteStore::GetAssessment(const std::string& id) {
  std::lock_guard lock(mu_);
  Stmt s(db_, fmt::format("SELECT {} FROM assessments WHERE id = ?", kAssessmentColumns).c_str());
  s.Bind(1, id);
  int rc = s.Step();
  if (rc == SQLITE_DONE) return std::optional<AssessmentRecord>();
  if (rc != SQLITE_ROW) return DbError(db_, "reading assessment");
  return std::optional<AssessmentRecord>(ReadAssessment(s));
}

Result<std::optional<AssessmentRecord>> SqliteStore::FindByIdempotencyKey(const std::string& key) {
  std::lock_guard lock(mu_);
  Stmt s(db_, fmt::format("SELECT {} FROM assessments WHERE idempotency_key = ? ORDER BY created_at DESC, rowid DESC "
                          "LIMIT 1",
                          kAssessmentColumns)
                  .c_str());
  s.Bind(1, key);
  int rc = s.Step();
  if (rc == SQLITE_DONE) return std::optional<AssessmentRecord>();
  if (rc != SQLITE_ROW) return DbError(db_, "reading assessment");
  return std::optional<AssessmentRecord>(ReadAssessment(s));
}

Result<std::vector<AssessmentRecord>> SqliteStore::ListAssessments(const std::string& ticket, int limit) {
  std::lock_guard lock(mu_);
  std::string sql = fmt::format("SELECT {} FROM assessments {} ORDER BY created_at DESC, rowid DESC LIMIT ?",
                                kAssessmentColumns, ticket.empty() ? "" : "WHERE ticket = ?");
  Stmt s(db_, sql.c_str());
  int i = 1;
  if (!ticket.empty()) s.Bind(i++, ticket);
  s.Bind(i, static_cast<int64_t>(limit));
  std::vector<AssessmentRecord> out;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) out.push_back(ReadAssessment(s));
  if (rc != SQLITE_DONE) return DbError(db_, "listing assessments");
  return out;
}

Status SqliteStore::PutDrain(const DrainRecord& r) {
  std::lock_guard lock(mu_);
  // Zero versions: the latest stored ones, read in the same statement.
  Stmt s(db_,
         "INSERT INTO drains(id, ticket, requested_by, started_at, expected_end, ended_at, spec, principal, "
         "topology_version, jobs_version) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,"
         "CASE WHEN ?9 > 0 THEN ?9 ELSE "
         "(SELECT COALESCE(MAX(version), 0) FROM documents WHERE kind = 'topology') END,"
         "CASE WHEN ?10 > 0 THEN ?10 ELSE "
         "(SELECT COALESCE(MAX(version), 0) FROM documents WHERE kind = 'jobs') END)");
  s.Bind(1, r.id).Bind(2, r.ticket).Bind(3, r.requested_by).Bind(4, r.started_at ? r.started_at : Now());
  s.Bind(5, r.expected_end).Bind(6, r.ended_at).Bind(7, r.spec).Bind(8, r.principal);
  s.Bind(9, r.topology_version).Bind(10, r.jobs_version);
  int rc = s.Step();
  if (rc == SQLITE_CONSTRAINT) return MakeError(ErrorCode::kConflict, fmt::format("drain '{}' exists", r.id));
  if (rc != SQLITE_DONE) return DbError(db_, "storing drain");
  return {};
}

Result<bool> SqliteStore::EndDrain(const std::string& id, int64_t ended_at) {
  std::lock_guard lock(mu_);
  Stmt s(db_, "UPDATE drains SET ended_at = ? WHERE id = ? AND ended_at IS NULL");
  s.Bind(1, ended_at).Bind(2, id);
  if (s.Step() != SQLITE_DONE) return DbError(db_, "ending drain");
  return sqlite3_changes(db_) > 0;
}

Result<std::vector<DrainRecord>> SqliteStore::ListDrains(bool active_only) {
  std::lock_guard lock(mu_);
  std::string sql = fmt::format(
      "SELECT id, ticket, requested_by, started_at, expected_end, ended_at, spec, principal, topology_version, "
      "jobs_version FROM drains {} "
      "ORDER BY started_at, id",
      active_only ? "WHERE ended_at IS NULL" : "");
  Stmt s(db_, sql.c_str());
  std::vector<DrainRecord> out;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) {
    DrainRecord r;
    r.id = s.Text(0);
    r.ticket = s.Text(1);
    r.requested_by = s.Text(2);
    r.started_at = s.Int(3);
    r.expected_end = s.OptInt(4);
    r.ended_at = s.OptInt(5);
    r.spec = s.Text(6);
    r.principal = s.Text(7);
    r.topology_version = s.Int(8);
    r.jobs_version = s.Int(9);
    out.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) return DbError(db_, "listing drains");
  return out;
}

Result<int64_t> SqliteStore::PutObservation(const ObservationRecord& r) {
  std::lock_guard lock(mu_);
  Stmt s(db_,
         "INSERT INTO observations(job_id, observed_at, iteration_s, predicted_s, drain_key, body) "
         "VALUES (?,?,?,?,?,?)");
  s.Bind(1, r.job_id).Bind(2, r.observed_at ? r.observed_at : Now()).Bind(3, r.iteration_s);
  s.Bind(4, r.predicted_s).Bind(5, r.drain_key).Bind(6, r.body);
  if (s.Step() != SQLITE_DONE) return DbError(db_, "storing observation");
  return sqlite3_last_insert_rowid(db_);
}

Result<std::vector<ObservationRecord>> SqliteStore::ListObservations(const std::string& job_id, int limit) {
  std::lock_guard lock(mu_);
  std::string sql = fmt::format(
      "SELECT id, job_id, observed_at, iteration_s, predicted_s, drain_key, body FROM observations {} "
      "ORDER BY observed_at DESC, id DESC LIMIT ?",
      job_id.empty() ? "" : "WHERE job_id = ?");
  Stmt s(db_, sql.c_str());
  int i = 1;
  if (!job_id.empty()) s.Bind(i++, job_id);
  s.Bind(i, static_cast<int64_t>(limit));
  std::vector<ObservationRecord> out;
  int rc;
  while ((rc = s.Step()) == SQLITE_ROW) {
    ObservationRecord r;
    r.id = s.Int(0);
    r.job_id = s.Text(1);
    r.observed_at = s.Int(2);
    r.iteration_s = s.Real(3);
    r.predicted_s = s.Real(4);
    r.drain_key = s.Text(5);
    r.body = s.Text(6);
    out.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) return DbError(db_, "listing observations");
  return out;
}

Result<std::string> SqliteStore::IntegrityCheck() {
  std::lock_guard lock(mu_);
  Stmt s(db_, "PRAGMA integrity_check");
  if (s.Step() != SQLITE_ROW) return DbError(db_, "integrity check");
  return s.Text(0);
}

}  // namespace drainwise::store
