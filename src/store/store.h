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
// Thread safety: all methods may be called from any thread; one connection is
// shared behind a mutex (SQLite serialises writers anyway).
#pragma once

#include <cstdint>
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
  std::string source;      // "api", "demo", "file:/etc/…", "netbox:prod"...
  int64_t created_at = 0;  // unix seconds
  std::string hash;        // content hash: a refresh that changes nothing is not a new version
  int64_t items = 0;       // nodes / jobs / rules
  int64_t links = 0;       // topology only
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
  std::string verdict;  // allow | warn | deny, or "" when no verdict
  std::string idempotency_key;
  std::string request;  // JSON
  std::string result;   // JSON
};

struct DrainRecord {
  std::string id;
  std::string ticket;
  std::string requested_by;
  int64_t started_at = 0;
  std::optional<int64_t> expected_end;
  std::optional<int64_t> ended_at;
  std::string spec;  // drain JSON
};

struct ObservationRecord {
  int64_t id = 0;
  std::string job_id;
  int64_t observed_at = 0;
  double iteration_s = 0;
  double predicted_s = 0;   // prediction for the same conditions, 0 when none
  std::string drain_key;    // "" for undrained
  std::string body;         // JSON as received
};

struct StoreOptions {
  // Keep at most this many versions per document kind (older ones pruned); 0 = all.
  int64_t keep_versions = 1000;
};

class Store {
 public:
  // Opens or creates the database at `path` (":memory:" for tests) and
  // migrates it. Errors: kIo with the path and SQLite's message.
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

  Status PutAssessment(const AssessmentRecord& record);
  Result<std::optional<AssessmentRecord>> GetAssessment(const std::string& id);
  Result<std::optional<AssessmentRecord>> FindByIdempotencyKey(const std::string& key);
  // Newest first; empty ticket = any.
  Result<std::vector<AssessmentRecord>> ListAssessments(const std::string& ticket, int limit);

  Status PutDrain(const DrainRecord& record);
  Result<bool> EndDrain(const std::string& id, int64_t ended_at);  // false: unknown or already ended
  Result<std::vector<DrainRecord>> ListDrains(bool active_only);

  Result<int64_t> PutObservation(const ObservationRecord& record);
  Result<std::vector<ObservationRecord>> ListObservations(const std::string& job_id, int limit);

  // "ok" when SQLite's integrity_check passes.
  Result<std::string> IntegrityCheck();
  int schema_version() const { return schema_version_; }
  const std::string& path() const { return path_; }

 private:
  Store(sqlite3* db, std::string path, StoreOptions options);
  Status Migrate();
  Status Exec(const char* sql);

  std::mutex mu_;
  sqlite3* db_;
  std::string path_;
  StoreOptions options_;
  int schema_version_ = 0;
};

// FNV-1a 64 of `text`, hex: the content hash of documents.
std::string ContentHash(std::string_view text);

}  // namespace drainwise::store
