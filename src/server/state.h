// The daemon's live picture, published as one immutable ServingView: the
// snapshot (topology + jobs), the drains in progress, the policy, the
// calibration, the link state and the advisors built on them.
//
// One writer. Every change (PUT handlers, connector refreshes, drains, the
// policy, the calibration, telemetry) goes through a method here that takes
// the writer lock, derives the next view from the current one and publishes
// it with version + 1; nothing else publishes. A change therefore always
// builds on the latest published state: concurrent PUT /v1/jobs, a connector
// refresh and drain changes all land, in order, and no writer can publish a
// view older than the one it replaces.
//
// Readers call view() once per request and use only that view: an answer
// never mixes versions. A document is validated completely and stored before
// the view that serves it is published; a rejected document changes nothing.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/view.h"
#include "model/drain.h"
#include "model/snapshot.h"
#include "policies/policy.h"
#include "store/store.h"

namespace drainwise::server {

struct PutOutcome {
  int64_t version = 0;
  bool created = false;  // false: identical to the latest version
  std::vector<std::string> dropped_jobs;
  model::SnapshotPtr snapshot;  // the snapshot this put published, or the one it left in force
};

struct ActiveDrain {
  store::DrainRecord record;
  model::DrainSpec spec;
};

// engine::View plus what only the server needs.
struct ServingView : engine::View {
  std::vector<ActiveDrain> drains;  // records of the drains in progress
};
using ViewPtr = std::shared_ptr<const ServingView>;

class State {
 public:
  // Starts with no snapshot, the built-in default policy and the default
  // calibration (engine::Calibration{}).
  explicit State(store::Store* store);

  // The view in force. Never null; its snapshot is null until the first topology.
  ViewPtr view() const;

  // Publishes the latest stored topology, jobs and active drains. Returns
  // false when the store holds no topology yet.
  Result<bool> LoadLatest();

  // Validates `doc` (drainwise.topology/v1), stores it as the next version
  // and publishes it with the current jobs re-resolved against it.
  // `principal` is who stored it (the audit trail, as for every write).
  Result<PutOutcome> PutTopology(const nlohmann::json& doc, const std::string& source,
                                 const std::string& principal = "");
  // Validates `doc` (drainwise.jobs/v1) strictly against the current topology.
  Result<PutOutcome> PutJobs(const nlohmann::json& doc, const std::string& source, const std::string& principal = "");
  // Both at once (a connector or the demo): topology first, then jobs; jobs
  // that do not resolve are dropped, not rejected.
  Result<PutOutcome> PutBoth(const nlohmann::json& topology, const nlohmann::json& jobs, const std::string& source);
  // From connectors: either document may be absent (keep the current one,
  // as of when the writer lock is taken). Lenient like PutBoth.
  // `drift`, when given with a topology, is what the connectors' sources
  // disagree on about it; it is published with that topology version (its
  // own topology_version is set here).
  Result<PutOutcome> PutSpecs(const model::TopologySpec* topology, const model::JobsSpec* jobs,
                              const std::string& source, std::optional<engine::TopologyDrift> drift = std::nullopt);

  // For a store shared with other daemons: publishes the latest stored
  // topology and jobs (with the active drains) when their versions differ
  // from the view's, else only re-reads the drains. Returns whether a new
  // snapshot was published; false, changing nothing, when the store holds
  // no topology.
  Result<bool> LoadLatestIfChanged();

  // Re-reads the drains in progress from the store and publishes them,
  // resolved against the current topology (a drain whose elements vanished
  // keeps the ones that remain).
  Status ReloadDrains();

  // The policy and the calibration in force (validated by the caller). A
  // calibration whose source is not "configuration" contributes only its
  // transport parameters; the other options stay as in force.
  void SetPolicy(policies::Policy policy);
  void SetCalibration(engine::Calibration calibration);
  // New configuration options (SIGHUP) under the calibration in force
  // (engine::Rebase), in one step of the writer.
  void SetAdvisorOptions(const advisor::AdvisorOptions& base);

  // Link state: `source` maps the latest telemetry onto a snapshot's
  // topology (null: none). It is called, under the writer lock, for every
  // new topology and by RefreshLinkState(); a link-state change keeps the
  // snapshot's simulator caches.
  using LinkStateSource = std::function<std::shared_ptr<const engine::LinkState>(const model::Snapshot&)>;
  void SetLinkStateSource(LinkStateSource source);
  void RefreshLinkState();

  store::Store& store() { return *store_; }

  // view()->snapshot, for readers that need nothing else of the view.
  model::SnapshotPtr snapshot() const { return view()->snapshot; }

 private:
  // REQUIRES: write_mu_ held. Derives the rest of `next` (drain union, link
  // state, advisors, caches) from `previous` and publishes it.
  void PublishLocked(ServingView next, bool new_snapshot);
  Result<PutOutcome> PublishSnapshotLocked(std::shared_ptr<const model::Topology> topology, int64_t topology_version,
                                           model::JobsSpec jobs, int64_t jobs_version);
  Result<PutOutcome> PutBothLocked(const nlohmann::json& topology, const nlohmann::json& jobs,
                                   const std::string& source);
  Result<std::vector<ActiveDrain>> ReadDrainsLocked();

  store::Store* store_;
  std::mutex write_mu_;                // the single writer: validate, store, publish
  model::JobsSpec jobs_spec_;          // the jobs document of the current snapshot (GUARDED_BY write_mu_)
  LinkStateSource link_state_source_;  // GUARDED_BY write_mu_
  mutable std::mutex view_mu_;         // guards view_ (the pointer only)
  ViewPtr view_;
};

// Drains in progress resolved on `topology`, element by element (one
// vanished switch does not hide the rest).
model::Drain ResolveActive(const std::vector<ActiveDrain>& drains, const model::Topology& topology);

}  // namespace drainwise::server
