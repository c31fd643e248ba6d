// The daemon's live picture: the current snapshot, published atomically, and
// the documents behind it, persisted in the store before they are served.
//
// Writers (PUT handlers, connectors) validate a document completely, store
// it, then publish a new immutable Snapshot; a rejected document changes
// nothing. Readers take a SnapshotPtr and keep a consistent view for as long
// as they hold it.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/drain.h"
#include "model/snapshot.h"
#include "store/store.h"

namespace drainwise::server {

struct PutOutcome {
  int64_t version = 0;
  bool created = false;  // false: identical to the latest version
  std::vector<std::string> dropped_jobs;
};

struct ActiveDrain {
  store::DrainRecord record;
  model::DrainSpec spec;
};

class State {
 public:
  explicit State(store::Store* store);

  // Publishes the latest stored topology and jobs. Returns false when the
  // store holds no topology yet.
  Result<bool> LoadLatest();

  // Validates `doc` (drainwise.topology/v1), stores it as the next version
  // and publishes it with the current jobs re-resolved against it.
  Result<PutOutcome> PutTopology(const nlohmann::json& doc, const std::string& source);
  // Validates `doc` (drainwise.jobs/v1) strictly against the current topology.
  Result<PutOutcome> PutJobs(const nlohmann::json& doc, const std::string& source);
  // Both at once (a connector or the demo): topology first, then jobs; jobs
  // that do not resolve are dropped, not rejected.
  Result<PutOutcome> PutBoth(const nlohmann::json& topology, const nlohmann::json& jobs,
                             const std::string& source);

  // From connectors: either document may be absent (keep the current one).
  // Lenient like PutBoth: jobs on hosts the topology lacks are dropped and
  // listed, never the whole document.
  Result<PutOutcome> PutSpecs(const model::TopologySpec* topology, const model::JobsSpec* jobs,
                              const std::string& source);

  model::SnapshotPtr snapshot() const;
  int64_t published_at() const;  // unix seconds of the last publication

  // Drains in progress, resolved against the current topology (a drain whose
  // elements vanished from the topology keeps the ones that remain).
  std::vector<ActiveDrain> active_drains() const;
  model::Drain ActiveDrainUnion(const model::Topology& topology) const;
  Status ReloadDrains();

  store::Store& store() { return *store_; }

 private:
  Result<PutOutcome> Publish(std::shared_ptr<const model::Topology> topology, int64_t topology_version,
                             model::JobsSpec jobs, int64_t jobs_version);

  store::Store* store_;
  std::mutex write_mu_;  // serialises writers: validate, store, publish
  mutable std::mutex mu_;
  model::SnapshotPtr snapshot_;
  model::JobsSpec jobs_spec_;
  int64_t published_at_ = 0;
  std::vector<ActiveDrain> drains_;
};

}  // namespace drainwise::server
