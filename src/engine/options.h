// The engine's options from the daemon configuration: the "simulation"
// section (flow-level defaults) and the "advisor" section. One parse and
// validation, shared by `drainwise serve` and `drainwise config check`.
#pragma once

#include <nlohmann/json.hpp>

#include "advisor/advisor.h"
#include "model/error.h"
#include "sim/flow_sim.h"

namespace drainwise::engine {

// Errors name "simulation.<field>" and the rule.
Result<sim::FlowOptions> ParseFlowOptions(const nlohmann::json& simulation);
// Errors name "advisor.<field>" (or "simulation.<field>") and the rule.
Result<advisor::AdvisorOptions> ParseAdvisorOptions(const nlohmann::json& advisor, const nlohmann::json& simulation);

}  // namespace drainwise::engine
