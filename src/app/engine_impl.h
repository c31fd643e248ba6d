// The server::Engine that main() wires in: the advisor (simulators +
// policies) and the renderers of src/report.
#pragma once

#include <memory>

#include <nlohmann/json.hpp>
#include <spdlog/logger.h>

#include "advisor/advisor.h"
#include "model/error.h"
#include "policies/policy.h"
#include "server/engine.h"

namespace drainwise::app {

// Flow-level options from the config's "simulation" section (field errors
// name "simulation.<field>"); advisor options from "advisor".
Result<sim::FlowOptions> ParseFlowOptions(const nlohmann::json& simulation);
Result<advisor::AdvisorOptions> ParseAdvisorOptions(const nlohmann::json& advisor, const nlohmann::json& simulation);

// Parses the request fields shared by the API and the CLI: drain, any_of,
// modes, routing, recommend. Errors name the field.
Result<advisor::Request> ParseAssessRequest(const nlohmann::json& request, const model::Topology& topology);

// The engine with the daemon's live inputs on top of server::Engine.
class DaemonEngine : public server::Engine {
 public:
  // Link telemetry for topology `topology_version`: background load per
  // directed link for the flow-level pass (empty = none), and the degraded
  // links an assessment flags when the drain pushes traffic onto them. Used
  // only while the snapshot's topology version matches.
  virtual void SetLinkState(int64_t topology_version, std::vector<double> background_bps,
                            std::vector<std::pair<model::LinkId, std::vector<std::string>>> degraded) = 0;
};

std::unique_ptr<DaemonEngine> MakeEngine(advisor::AdvisorOptions options, policies::Policy policy,
                                         std::shared_ptr<spdlog::logger> log);

}  // namespace drainwise::app
