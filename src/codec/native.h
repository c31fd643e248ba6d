// drainwise's own JSON formats (docs/formats.md): drainwise.topology/v1,
// drainwise.jobs/v1 and the drain object. Parse errors name the field path;
// semantic checks (unknown nodes, duplicate ids) happen in the model's
// BuildTopology / ResolveJobs / ResolveDrain.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "model/drain.h"
#include "model/error.h"
#include "model/jobs.h"
#include "model/topology.h"

namespace drainwise::codec {

inline constexpr std::string_view kTopologyFormat = "drainwise.topology/v1";
inline constexpr std::string_view kJobsFormat = "drainwise.jobs/v1";

Result<model::TopologySpec> ParseTopology(const nlohmann::json& doc);
Result<model::JobsSpec> ParseJobs(const nlohmann::json& doc);
Result<model::DrainSpec> ParseDrain(const nlohmann::json& doc);

nlohmann::json TopologySpecToJson(const model::TopologySpec& spec);
nlohmann::json TopologyToJson(const model::Topology& topology);
nlohmann::json JobsSpecToJson(const model::JobsSpec& spec);
nlohmann::json JobToJson(const model::Job& job, const model::Topology& topology);
nlohmann::json DrainSpecToJson(const model::DrainSpec& spec);

// Parse + build/resolve in one step, for files and request bodies.
Result<model::Topology> LoadTopology(const nlohmann::json& doc);
Result<model::TopologySpec> ReadTopologySpecFile(const std::string& path);
Result<model::JobsSpec> ReadJobsSpecFile(const std::string& path);
Result<model::DrainSpec> ReadDrainSpecFile(const std::string& path);
Result<nlohmann::json> ReadJsonFile(const std::string& path);

}  // namespace drainwise::codec
