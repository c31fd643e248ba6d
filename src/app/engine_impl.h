// The server::Engine that main() wires in: simulators + advisor + policies,
// with the JSON/text renderers of src/report.
#pragma once

#include <memory>

#include <nlohmann/json.hpp>
#include <spdlog/logger.h>

#include "server/engine.h"

namespace drainwise::app {

std::unique_ptr<server::Engine> MakeEngine(const nlohmann::json& simulation_options,
                                           const nlohmann::json& advisor_options,
                                           std::shared_ptr<spdlog::logger> log);

}  // namespace drainwise::app
