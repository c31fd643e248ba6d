// The daemon's view of link telemetry from the connectors: kept as the
// latest interface rates, mapped onto whatever topology is current when
// asked (so a topology refresh never leaves stale link ids behind).
// Serves GET /v1/links, GET /v1/jobs/{id}/paths and the flow simulator's
// background load.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "connectors/telemetry.h"
#include "engine/view.h"
#include "model/error.h"
#include "model/snapshot.h"

namespace drainwise::app {

class LiveTelemetry {
 public:
  explicit LiveTelemetry(connectors::DegradedThresholds thresholds) : thresholds_(thresholds) {}

  void Set(std::shared_ptr<const std::vector<connectors::InterfaceTelemetry>> interfaces);
  bool empty() const;
  void SetThresholds(connectors::DegradedThresholds thresholds);

  // The telemetry mapped onto `snapshot`'s topology, for the serving view
  // (server::State::SetLinkStateSource); null when there is none.
  std::shared_ptr<const engine::LinkState> LinkStateFor(const model::Snapshot& snapshot) const;

  // Per directed link (2 * link + 0 for a -> b, 1 for b -> a) of `topology`;
  // empty when there is no telemetry.
  std::vector<double> BackgroundBps(const model::Topology& topology) const;
  // Links with telemetry; with degraded_only, those crossing a threshold,
  // each with its reasons.
  nlohmann::json LinksJson(const model::Topology& topology, bool degraded_only) const;
  // Degraded links of `topology`: link value -> reasons.
  std::vector<std::pair<model::LinkId, std::vector<std::string>>> Degraded(const model::Topology& topology) const;
  // The links `job`'s traffic crosses (per-hop spray over its host pairs,
  // by attachment class), with the share of its pair traffic on each, and
  // their load and health when known. Errors: kNotFound (job).
  Result<nlohmann::json> JobPaths(const model::Snapshot& snapshot, const std::string& job) const;

 private:
  connectors::LinkTelemetrySet Map(const model::Topology& topology) const;

  connectors::DegradedThresholds Thresholds() const;

  mutable std::mutex mu_;
  connectors::DegradedThresholds thresholds_;
  std::shared_ptr<const std::vector<connectors::InterfaceTelemetry>> interfaces_;
};

}  // namespace drainwise::app
