// The audit trail and the versioned documents, in one SQLite database (WAL).
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
// Thread safety: all methods may be called from any thread; one connection is
// shared behind a mutex (SQLite serialises writers anyway).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "model/error.h"

struct sqlite3;

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
};
inline constexpr int kIdempotencyPruneBatch = 256;

class Store {
 public:
  // Opens or creates the database at `path` (":memory:" for tests) and
  // migrates it. Errors: kIo with the path and SQLite's message.
  //
  // One daemon per database: for a file database, Open() first takes an
  // exclusive flock(2) on "<path>.lock" (created if missing, never removed)
  // and writes this process's pid and options.listen_address into it; the
  // lock lasts as long as the Store. When another process holds it, Open()
  // fails with kConflict naming the database and that process's pid and
  // address, without touching the database.
  static Result<std::unique_ptr<Store>> Open(const std::string& path, StoreOptions options = {});
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Stores `body` as the next version of `info.kind` unless the latest version
  // has the same hash; returns the version that now holds it and whether it
  // is new.
  struct PutResult {
    int64_t version = 0;
    bool created = false;
  };
  Result<PutResult> PutDocument(DocumentInfo info, const std::string& body);
  Result<std::optional<Document>> LatestDocument(DocKind kind);
  Result<std::optional<Document>> GetDocument(DocKind kind, int64_t version);
  // Newest first, at most `limit`.
  Result<std::vector<DocumentInfo>> ListDocuments(std::optional<DocKind> kind, int limit);

  // Stores the record; when record.idempotency_key is set, also the entry
  // (record.principal, key) -> (record.idempotency_fingerprint, record.id),
  // in the same transaction, and prunes expired entries.
  // Errors: kConflict when the id exists or the principal's key is in use
  // and unexpired (the caller may FindIdempotency again and replay).
  Status PutAssessment(const AssessmentRecord& record);
  Result<std::optional<AssessmentRecord>> GetAssessment(const std::string& id);
  // The principal's entry for `key` unless it expired (created_at +
  // idempotency_ttl_s <= now, unix seconds).
  Result<std::optional<IdempotencyEntry>> FindIdempotency(const std::string& principal, const std::string& key,
                                                          int64_t now);
  // DEPRECATED (global keys, no expiry): the newest assessment stored with
  // `key` by any principal. Kept until the API uses FindIdempotency.
  Result<std::optional<AssessmentRecord>> FindByIdempotencyKey(const std::string& key);
  // Newest first; empty ticket = any.
  Result<std::vector<AssessmentRecord>> ListAssessments(const std::string& ticket, int limit);

  // Zero record.topology_version / jobs_version are filled in with the
  // latest stored versions.
  Status PutDrain(const DrainRecord& record);
  Result<bool> EndDrain(const std::string& id, int64_t ended_at);  // false: unknown or already ended
  Result<std::vector<DrainRecord>> ListDrains(bool active_only);

  Result<int64_t> PutObservation(const ObservationRecord& record);
  Result<std::vector<ObservationRecord>> ListObservations(const std::string& job_id, int limit);

  // "ok" when SQLite's integrity_check passes.
  Result<std::string> IntegrityCheck();

  // A tiny write (one row of a probe table) through a connection of its own,
  // waiting at most options.probe_timeout_ms for SQLite's write lock. Never
  // takes the mutex of the other methods, so a slow request does not delay
  // it; a disk that hangs in fsync hangs it too (StoreProber notices).
  // Errors: kUnavailable (busy past the timeout) or kIo, naming the database.
  Status ProbeWrite();

  // Rewrites the lock file with the address actually bound (with port 0 the
  // port is known only after Open). No-op for ":memory:".
  Status SetListenAddress(const std::string& address);

  int schema_version() const { return schema_version_; }
  const std::string& path() const { return path_; }
  const StoreOptions& options() const { return options_; }

 private:
  Store(sqlite3* db, std::string path, StoreOptions options);
  Status Migrate();
  Status Exec(const char* sql);
  Status PruneIdempotencyLocked(int64_t now);
  int64_t Now() const;

  std::mutex mu_;
  sqlite3* db_;
  std::string path_;
  StoreOptions options_;
  int schema_version_ = 0;
  int lock_fd_ = -1;  // the flock on "<path>.lock"; -1 for ":memory:"
  std::mutex probe_mu_;
  sqlite3* probe_db_ = nullptr;  // ProbeWrite's own connection (file databases)
};

// The lock file that guards `db_path` (see Store::Open).
std::string LockPath(const std::string& db_path);

// FNV-1a 64 of `text`, hex: the content hash of documents.
std::string ContentHash(std::string_view text);

}  // namespace drainwise::store
