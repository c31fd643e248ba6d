// The SQLite backend of Store (WAL, synchronous=FULL): the embedded default,
// one daemon per database file (see Store::Open for the lock).
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "store/store.h"

struct sqlite3;

namespace drainwise::store {

class SqliteStore final : public Store {
 public:
  // As Store::Open, for a file path or ":memory:".
  static Result<std::unique_ptr<Store>> Open(const std::string& path, StoreOptions options);
  ~SqliteStore() override;

  Result<PutResult> PutDocument(DocumentInfo info, const std::string& body) override;
  Result<std::optional<Document>> LatestDocument(DocKind kind) override;
  Result<std::optional<Document>> GetDocument(DocKind kind, int64_t version) override;
  Result<std::vector<DocumentInfo>> ListDocuments(std::optional<DocKind> kind, int limit) override;
  Status PutAssessment(const AssessmentRecord& record) override;
  Result<std::optional<AssessmentRecord>> GetAssessment(const std::string& id) override;
  Result<std::optional<IdempotencyEntry>> FindIdempotency(const std::string& principal,
                                                          const std::string& key) override;
  Result<std::optional<AssessmentRecord>> FindByIdempotencyKey(const std::string& key) override;
  Result<std::vector<AssessmentRecord>> ListAssessments(const std::string& ticket, int limit) override;
  Status PutDrain(const DrainRecord& record) override;
  Result<bool> EndDrain(const std::string& id, int64_t ended_at) override;
  Result<std::vector<DrainRecord>> ListDrains(bool active_only) override;
  Result<int64_t> PutObservation(const ObservationRecord& record) override;
  Result<std::vector<ObservationRecord>> ListObservations(const std::string& job_id, int limit) override;
  Result<std::string> IntegrityCheck() override;
  Status ProbeWrite() override;
  Status SetListenAddress(const std::string& address) override;

 private:
  SqliteStore(sqlite3* db, std::string path, StoreOptions options);
  Status Migrate();
  Status Exec(const char* sql);
  Status PruneIdempotencyLocked(int64_t now);
  int64_t Now() const;

  std::mutex mu_;
  sqlite3* db_;
  int lock_fd_ = -1;  // the flock on "<path>.lock"; -1 for ":memory:"
  std::mutex probe_mu_;
  sqlite3* probe_db_ = nullptr;  // ProbeWrite's own connection (file databases)
};

}  // namespace drainwise::store
