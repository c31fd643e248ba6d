// The PostgreSQL backend of Store: several `drainwise serve` on one database.
//
// Consistency lives in the database, not in the daemons:
// - version numbers: PutDocument takes a transaction-scoped advisory lock
//   per document kind, reads the latest version and inserts the next one;
//   (kind, version) is the primary key, so two daemons can never hand out
//   the same number, and concurrent writers queue in the server;
// - idempotency keys: (principal, key) is a primary key, claimed with
//   INSERT … ON CONFLICT in the transaction that stores the record;
// - every write is one transaction that also sends NOTIFY on the channel
//   "drainwise_changes" with "<instance> <what>": the notification leaves
//   with the commit, never before and never for a rolled-back write.
//
// Connections (libpq; each behind its own mutex): the main one for the
// methods, one for ProbeWrite, one LISTENing for the other daemons' changes
// (a thread of its own, see SetChangeListener), one holding leases
// (HoldLease). Every connection is re-established on demand after a failure:
// a call that finds the server unreachable fails with kUnavailable (the
// server maps it to 503 + Retry-After) and changes nothing; a read, or a
// write whose COMMIT was not yet sent, is retried once on a fresh connection,
// so the first request after a server restart succeeds.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "store/store.h"

namespace drainwise::store {

class PgConnection;

class PgStore final : public Store {
 public:
  // As Store::Open for a "postgresql://…" URL: connects (options.postgres),
  // applies the missing migrations under an advisory lock (so that daemons
  // started together migrate once) and refuses a newer schema.
  static Result<std::unique_ptr<Store>> Open(const std::string& url, StoreOptions options);
  ~PgStore() override;

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
  // Upserts this daemon's row of write_probe (statement_timeout =
  // options.probe_timeout_ms).
  Status ProbeWrite() override;
  // Kept in write_probe.listen: which daemons share the database.
  Status SetListenAddress(const std::string& address) override;

  bool shared() const override { return true; }
  void SetChangeListener(ChangeListener listener) override;
  bool Fresh(std::string* why = nullptr) const override;
  Result<bool> HoldLease(const std::string& name) override;
  Result<int64_t> ChangeCount() override;
  Result<int64_t> LatestVersion(DocKind kind) override;

  // This daemon's name in notifications and write_probe: "<host>:<pid>:<n>".
  const std::string& instance() const { return instance_; }

 private:
  PgStore(std::string url, std::string redacted, StoreOptions options);
  Status Migrate();
  void Listen(std::stop_token stop);
  int64_t Now() const;

  std::string instance_;
  std::unique_ptr<PgConnection> main_;  // guarded by main_mu_
  std::mutex main_mu_;
  std::unique_ptr<PgConnection> probe_;  // guarded by probe_mu_
  std::mutex probe_mu_;
  std::unique_ptr<PgConnection> lease_;  // guarded by lease_mu_
  std::mutex lease_mu_;
  std::vector<std::string> leases_held_;  // guarded by lease_mu_

  std::unique_ptr<PgConnection> listen_conn_;  // only the listen thread uses it
  ChangeListener listener_;
  std::atomic<bool> listening_{false};
  mutable std::mutex listen_error_mu_;
  std::string listen_error_;    // guarded by listen_error_mu_
  std::jthread listen_thread_;  // last: stops before the members above go
};

}  // namespace drainwise::store
