// The audit trail and the versioned documents, in one database.
//
// Every accepted topology, jobs or policy document becomes a new numbered
// version with its source and time; assessments, plans and drains are stored
// with who asked and why. A restart resumes from the latest versions.
//
// Schema migrations are numbered; Open() applies the missing ones in a
// transaction each, so a database from an older drainwise is upgraded and a
// newer one is refused with a clear error.
//
// Every record carries the authenticated `principal` that made it ("<token
// name> (<role>)", or "anonymous (<peer address>)"), apart from the
// client-supplied `requested_by`; the store keeps both as given.
//
// Two backends behind one interface (class Store): SQLite (sqlite_store.h,
// the embedded default) and PostgreSQL (pg_store.h, several daemons).
//
// Thread safety: all methods may be called from any thread; each backend
// shares one connection behind a mutex (plus connections of their own for
// the write probe, the change notifications and the lease).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/error.h"

namespace drainwise::store {

enum class DocKind { kTopology, kJobs, kPolicy, kCalibration };
std::string_view DocKindName(DocKind kind);

struct DocumentInfo {
  DocKind kind = DocKind::kTopology;
  int64_t version = 0;
  std::string source;       // "api", "demo", "file:/etc/…", "netbox:prod"...
  int64_t created_at = 0;   // unix seconds
  std::string hash;         // content hash: a refresh that changes nothing is not a new version
  int64_t items = 0;        // nodes / jobs / rules
  int64_t links = 0;        // topology only
  std::string principal{};  // who stored it through the API; "" for the daemon itself (demo, sources)
};

struct Document {
  DocumentInfo info;
  std::string body;  // the JSON text as accepted
};

struct AssessmentRecord {
  std::string id;
  int64_t created_at = 0;
  std::string kind = "assessment";  // assessment | plan
  std::string ticket;
  std::string requested_by;
  int64_t topology_version = 0;
  int64_t jobs_version = 0;
  std::string verdict;          // allow | warn | deny, or "" when no verdict
  std::string idempotency_key;  // "" = none; else PutAssessment records (principal, key)
  std::string request;          // JSON
  std::string result;           // JSON
  std::string principal{};
  std::string idempotency_fingerprint{};  // hash of method + path + body, stored with the key
};

// An Idempotency-Key as the IETF draft scopes it: per principal, with the
// fingerprint of the request that first used it and the record it made.
struct IdempotencyEntry {
  std::string principal;
  std::string key;
  std::string fingerprint;
  std::string record_id;   // the assessment or plan id
  int64_t created_at = 0;  // unix seconds; the entry expires idempotency_ttl_s later
};

struct DrainRecord {
  std::string id;
  std::string ticket;
  std::string requested_by;
  int64_t started_at = 0;
  std::optional<int64_t> expected_end;
  std::optional<int64_t> ended_at;
  std::string spec;  // drain JSON
  std::string principal{};
  // The snapshot the drain was started on: retention keeps these versions
  // while the drain is active. 0 = the latest stored version at PutDrain.
  int64_t topology_version = 0;
  int64_t jobs_version = 0;
};

struct ObservationRecord {
  int64_t id = 0;
  std::string job_id;
  int64_t observed_at = 0;
  double iteration_s = 0;
  double predicted_s = 0;  // prediction for the same conditions, 0 when none
  std::string drain_key;   // "" for undrained
  std::string body;        // JSON as received
};

// PostgreSQL connection settings besides the URL (StoreOptions::postgres).
// The password is never in the configuration file itself: it comes from
// `password_file` (first line) or the environment variable `password_env`,
// else from the URL or libpq's own ~/.pgpass / PGPASSWORD.
struct PostgresOptions {
  std::string password_file{};
  std::string password_env{};
  std::string sslmode{};      // libpq's: disable, allow, prefer, require, verify-ca, verify-full ("" = libpq default)
  std::string sslrootcert{};  // CA bundle for verify-ca / verify-full
  std::string sslcert{};      // client certificate (mutual TLS)
  std::string sslkey{};
  int connect_timeout_s = 5;  // per connection attempt (libpq's minimum is 2)
};

struct StoreOptions {
  // Versions kept per document kind: the newest `keep_versions`, plus every
  // topology and jobs version that a stored assessment or plan, or an active
  // drain, was made on. Older ones are pruned when a new version of that kind
  // is stored. 0 = keep all.
  int64_t keep_versions = 1000;
  // An idempotency key is honoured for this long after its first use
  // (seconds, >= 1); expired keys are pruned on later writes, at most
  // kIdempotencyPruneBatch at a time.
  int64_t idempotency_ttl_s = 86400;
  // Written with the pid into the lock file "<db>.lock", so that a second
  // daemon on the same database can say which one holds it (see Open()).
  std::string listen_address{};
  // ProbeWrite(): how long it may wait for SQLite's write lock.
  int probe_timeout_ms = 2000;
  // Unix seconds for created_at defaults and key expiry; empty = the system
  // clock (tests inject their own).
  std::function<int64_t()> clock{};
  // PostgreSQL only (path "postgresql://…").
  PostgresOptions postgres{};
};
inline constexpr int kIdempotencyPruneBatch = 256;

// What another daemon changed in a shared database (Store::SetChangeListener):
// "topology", "jobs", "policy", "calibration" (a new document version),
// "drains", "assessments", "observations", or "reconnected" (the daemon may
// have missed changes while the database was unreachable: reload all).
// New kinds of records add their own name; a listener ignores names it does
// not know.
using ChangeListener = std::function<void(const std::string& what)>;

// The store's contract, implemented by SqliteStore (one daemon per file) and
// PgStore (several daemons on one PostgreSQL database). Adding a kind of
// record means adding its methods here and in both backends.
class Store {
 public:
  // Opens or creates the database and migrates it. `path` is a SQLite file
  // (":memory:" for tests) or a PostgreSQL URL ("postgresql://…" or
  // "postgres://…", see IsPostgresUrl). Errors: kIo with the path and the
  // database's message; kUnavailable when a PostgreSQL server cannot be
  // reached.
  //
  // SQLite: one daemon per database: for a file database, Open() first takes an
  // exclusive flock(2) on "<path>.lock" (created if missing, never removed)
  // and writes this process's pid and options.listen_address into it; the
  // lock lasts as long as the Store. When another process holds it, Open()
  // fails with kConflict naming the database and that process's pid and
  // address, without touching the database.
  //
  // PostgreSQL: any number of daemons share the database; versions,
  // idempotency keys and the audit trail are numbered and checked inside
  // its transactions (see pg_store.h).
  static Result<std::unique_ptr<Store>> Open(const std::string& path, StoreOptions options = {});
  virtual ~Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Stores `body` as the next version of `info.kind` unless the latest version
  // has the same hash; returns the version that now holds it and whether it
  // is new.
  struct PutResult {
    int64_t version = 0;
    bool created = false;
  };
  virtual Result<PutResult> PutDocument(DocumentInfo info, const std::string& body) = 0;
  virtual Result<std::optional<Document>> LatestDocument(DocKind kind) = 0;
  // version 0 = the latest.
  virtual Result<std::optional<Document>> GetDocument(DocKind kind, int64_t version) = 0;
  // Newest first, at most `limit`.
  virtual Result<std::vector<DocumentInfo>> ListDocuments(std::optional<DocKind> kind, int limit) = 0;

  // Stores the record; when record.idempotency_key is set, also the entry
  // (record.principal, key) -> (record.idempotency_fingerprint, record.id),
  // in the same transaction, and prunes expired entries.
  // Errors: kConflict when the id exists or the principal's key is in use
  // and unexpired (the caller may FindIdempotency again and replay).
  virtual Status PutAssessment(const AssessmentRecord& record) = 0;
  virtual Result<std::optional<AssessmentRecord>> GetAssessment(const std::string& id) = 0;
  // The principal's entry for `key` unless it expired (created_at +
  // idempotency_ttl_s <= now). `now` is the store's clock
  // (StoreOptions::clock, else the system's, unix seconds), the one it
  // stamps and prunes entries by: a lookup by another clock could find a
  // key expired that the store still holds, or the reverse.
  virtual Result<std::optional<IdempotencyEntry>> FindIdempotency(const std::string& principal,
                                                                  const std::string& key) = 0;
  // DEPRECATED (global keys, no expiry): the newest assessment stored with
  // `key` by any principal. Kept until the API uses FindIdempotency.
  virtual Result<std::optional<AssessmentRecord>> FindByIdempotencyKey(const std::string& key) = 0;
  // Newest first; empty ticket = any.
  virtual Result<std::vector<AssessmentRecord>> ListAssessments(const std::string& ticket, int limit) = 0;

  // Zero record.topology_version / jobs_version are filled in with the
  // latest stored versions.
  virtual Status PutDrain(const DrainRecord& record) = 0;
  virtual Result<bool> EndDrain(const std::string& id, int64_t ended_at) = 0;  // false: unknown or already ended
  virtual Result<std::vector<DrainRecord>> ListDrains(bool active_only) = 0;

  virtual Result<int64_t> PutObservation(const ObservationRecord& record) = 0;
  virtual Result<std::vector<ObservationRecord>> ListObservations(const std::string& job_id, int limit) = 0;

  // "ok" when the database's own check passes (SQLite: integrity_check;
  // PostgreSQL: the server answers).
  virtual Result<std::string> IntegrityCheck() = 0;

  // A tiny write (one row of a probe table) through a connection of its own,
  // waiting at most options.probe_timeout_ms. Never takes the mutex of the
  // other methods, so a slow request does not delay it; a disk that hangs
  // in fsync hangs it too (StoreProber notices).
  // Errors: kUnavailable (busy past the timeout, server unreachable) or kIo,
  // naming the database.
  virtual Status ProbeWrite() = 0;

  // Records the address actually bound (with port 0 the port is known only
  // after Open): SQLite rewrites its lock file (no-op for ":memory:").
  virtual Status SetListenAddress(const std::string& address) = 0;

  // --- Several daemons on one database (no-ops for SQLite) ---

  // True when other daemons may write to this database at the same time.
  virtual bool shared() const { return false; }
  // `listener` is called, on a thread of the store, for every change made
  // by another daemon (see ChangeListener), within about a second of its
  // commit. Null stops the notifications (and waits for a call in flight).
  virtual void SetChangeListener(ChangeListener listener) { (void)listener; }
  // False while changes of other daemons may be missed (the notification
  // channel is down), with the reason in `*why`; the serving view is then
  // stale until "reconnected" is delivered.
  virtual bool Fresh(std::string* why = nullptr) const {
    (void)why;
    return true;
  }
  // How many writes any daemon has committed to the database (PostgreSQL:
  // a counter bumped in every write transaction); a follower that read N
  // before reloading has applied every write up to N. SQLite: 0.
  virtual Result<int64_t> ChangeCount() { return int64_t{0}; }
  // The latest stored version of `kind`, 0 when none: LatestDocument
  // without the body.
  virtual Result<int64_t> LatestVersion(DocKind kind) {
    auto doc = LatestDocument(kind);
    if (!doc) return tl::unexpected(doc.error());
    return *doc ? (*doc)->info.version : int64_t{0};
  }
  // Takes or keeps the named lease (a PostgreSQL session advisory lock on a
  // connection of its own): true while this daemon holds it. The lease is
  // lost when the process or its connection dies, so another daemon calling
  // HoldLease gets it. SQLite: always true (one daemon per database).
  virtual Result<bool> HoldLease(const std::string& name) {
    (void)name;
    return true;
  }

  int schema_version() const { return schema_version_; }
  // The database: the SQLite path, or the PostgreSQL URL without its password.
  const std::string& path() const { return path_; }
  const StoreOptions& options() const { return options_; }

 protected:
  Store(std::string path, StoreOptions options) : path_(std::move(path)), options_(std::move(options)) {}

  std::string path_;
  StoreOptions options_;
  int schema_version_ = 0;
};

// "postgresql://…" or "postgres://…": Store::Open picks PostgreSQL.
bool IsPostgresUrl(std::string_view path);

// The lock file that guards `db_path` (see Store::Open).
std::string LockPath(const std::string& db_path);

// FNV-1a 64 of `text`, hex: the content hash of documents.
std::string ContentHash(std::string_view text);

}  // namespace drainwise::store
