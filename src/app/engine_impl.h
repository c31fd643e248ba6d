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

std::unique_ptr<server::Engine> MakeEngine(advisor::AdvisorOptions options, policies::Policy policy,
                                           std::shared_ptr<spdlog::logger> log);

}  // namespace drainwise::app
