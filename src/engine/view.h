// What one answer is computed from: the snapshot, the drains in progress, the
// policy, the calibration, the link state and the advisors built on them,
// published together as one immutable View. A request takes one view and
// uses only it from start to end, so its answer never mixes versions (as a
// LevelDB reader holds one Version).
//
// The daemon's single writer (server::State) derives each new view from the
// one it replaces with the With* functions below; the snapshot's simulator
// caches (advisor::SimCache) travel with the snapshot, so a calibration or
// link-state change keeps them and rebuilds only what depends on it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "advisor/advisor.h"
#include "advisor/calibration.h"
#include "advisor/sim_cache.h"
#include "model/drain.h"
#include "model/snapshot.h"
#include "policies/policy.h"
#include "sim/task_runner.h"

namespace drainwise::engine {

// Link telemetry mapped onto one topology version.
struct LinkState {
  int64_t topology_version = -1;       // the link ids below belong to this topology
  std::vector<double> background_bps;  // per directed link (2 * link + dir); empty = none
  std::vector<std::pair<model::LinkId, std::vector<std::string>>> degraded;  // link and its reasons
};

// The transport parameters in force and where they came from.
struct Calibration {
  // The configuration's advisor and flow options with the calibrated
  // goodput, per-hop latency and per-message overhead applied.
  advisor::AdvisorOptions options;
  std::string source = "configuration";  // configuration | operator | fit
  // Of a fit (absent for the configuration's and an operator's parameters).
  std::optional<int64_t> fitted_at;  // unix seconds
  std::optional<int64_t> observations;
  std::optional<double> rmse_s;
  std::optional<double> median_rel_error;
  std::optional<double> p90_rel_error;
  // The configuration's transport parameters (the centre a fit is pulled
  // towards); kept by the serving state when a fit or an operator's
  // parameters replace the configuration's. See ConfiguredParams.
  std::optional<advisor::CalibrationParams> configured;
};

// The configuration's transport parameters under `calibration`: its own
// when it is the configuration's, else the ones recorded in `configured`
// (the compiled-in defaults when none was recorded).
advisor::CalibrationParams ConfiguredParams(const Calibration& calibration);

// What the topology's sources disagree on (connectors/topology_merge.h), for
// the topology version it was computed on: by device (for the policies) and
// as the documents GET /v1/topology/drift serves, so that answer always
// belongs to the topology GET /v1/topology serves.
struct TopologyDrift {
  int64_t topology_version = -1;
  std::map<std::string, std::vector<std::string>> by_device;
  nlohmann::json document;  // DriftToJson
  std::string text;         // DriftToText
};

struct View {
  uint64_t version = 0;         // +1 per publication; never goes back
  model::SnapshotPtr snapshot;  // null until the first topology
  int64_t published_at = 0;     // unix seconds of the snapshot's publication
  model::Drain active;          // drains in progress, resolved on `snapshot`
  int active_drain_count = 0;   // recorded drains in progress (some may name vanished elements)
  std::shared_ptr<const policies::Policy> policy;
  std::shared_ptr<const Calibration> calibration;
  std::shared_ptr<const LinkState> link_state;  // of snapshot's topology version, else null
  // Derived (WithDerived): the advisor of the calibration in force, and the
  // one that also subtracts the link state's background load (null without).
  std::shared_ptr<const advisor::Advisor> advisor;
  std::shared_ptr<const advisor::Advisor> advisor_background;
  // The helper threads both advisors run flow simulations' parts on
  // (advisor.flow_threads - 1 of them; null for 1), kept from view to view
  // while that count stays: the advisors are rebuilt on every calibration
  // or telemetry change, and each would otherwise start threads of its own.
  std::shared_ptr<sim::TaskPool> flow_pool;
  std::shared_ptr<const advisor::SimCache> cache;  // the snapshot's; null without a snapshot
  // Of the connectors' merged topology; used only while it is of the
  // snapshot's topology version (a topology PUT over the API has no drift).
  std::shared_ptr<const TopologyDrift> drift;

  // The advisor assessments use: with the measured background when there is one.
  const advisor::Advisor& AssessingAdvisor() const { return advisor_background ? *advisor_background : *advisor; }
  // The drift of the snapshot's topology version, else null.
  const TopologyDrift* CurrentDrift() const {
    return drift && snapshot && drift->topology_version == snapshot->topology_version ? drift.get() : nullptr;
  }
  advisor::Context AdvisorContext(int64_t now) const {
    std::shared_ptr<const std::map<std::string, std::vector<std::string>>> by_device;
    if (CurrentDrift() && !drift->by_device.empty()) {
      by_device = std::shared_ptr<const std::map<std::string, std::vector<std::string>>>(drift, &drift->by_device);
    }
    return advisor::Context{snapshot, active, now, cache, std::move(by_device)};
  }
};

// `calibration` on new configuration options `base`: a fitted or
// operator-set calibration keeps its transport parameters (goodput, per-hop
// latency, per-message overhead); everything else comes from `base`.
Calibration Rebase(const Calibration& calibration, const advisor::AdvisorOptions& base);

// Recomputes the derived members of `view` after its inputs changed:
// advisors when the calibration or link state changed (cheap: no
// precomputation; the flow pool is kept unless advisor.flow_threads
// changed), the cache only when the snapshot changed. A link state
// of another topology version is dropped.
void UpdateDerived(View& view, const View* previous);

}  // namespace drainwise::engine
