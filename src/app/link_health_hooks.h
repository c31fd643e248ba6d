// The link health routes' answers (GET /v1/links/health, GET /v1/jobs/at-risk,
// GET /v1/jobs/{id}/network) and metrics, from the LinkHealthMonitor, the
// engine's what-ifs and the stored observations. docs/link-health.md.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>

#include <nlohmann/json.hpp>

#include "app/link_health_monitor.h"
#include "engine/engine.h"
#include "server/api.h"
#include "server/metrics.h"
#include "server/state.h"

namespace drainwise::app {

class LinkHealthService {
 public:
  LinkHealthService(LinkHealthMonitor* monitor, server::State* state, engine::Engine* engine)
      : monitor_(monitor), state_(state), engine_(engine) {}

  // Sets hooks.links_health, jobs_at_risk and job_network.
  void Install(server::ApiHooks& hooks);
  // drainwise_link_health_score, drainwise_links_degrading, drainwise_jobs_at_risk.
  void Declare(server::Metrics& metrics);
  void Scrape(server::Metrics& metrics);
  // Recomputes the at-risk list for the metrics (the monitor's OnReport).
  void Refresh();

  // Adds "health" to each link of a GET /v1/jobs/{id}/paths answer.
  void AnnotatePaths(const model::SnapshotPtr& snapshot, nlohmann::json& paths);

  Result<server::HookAnswer> LinksHealth(const server::RoutedRequest& rr);
  Result<server::HookAnswer> JobsAtRisk(const server::RoutedRequest& rr);
  Result<server::HookAnswer> JobNetwork(const server::RoutedRequest& rr);

 private:
  Result<nlohmann::json> AtRisk(const engine::View& view, const LinkHealthReport& report, advisor::Severity min,
                                std::stop_token stop);

  LinkHealthMonitor* monitor_;
  server::State* state_;
  engine::Engine* engine_;
  std::mutex mu_;
  std::shared_ptr<const LinkHealthReport> scraped_;  // the report the metrics show
  int64_t at_risk_jobs_ = -1;                        // -1 until first computed
};

}  // namespace drainwise::app
