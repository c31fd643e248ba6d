// The one way the daemon's configuration is loaded and validated: `drainwise
// serve` at start-up and on SIGHUP, and `drainwise config check`, call
// LoadDaemonConfig, so a file that passes the check starts the daemon and a
// bad one fails both with the same message.
//
// Everything that can be checked without opening the database or a socket
// is: the file and its fields, the advisor and simulation sections, the
// sources and profiles (connectors), the telemetry thresholds, the policy
// file, the tokens file and the TLS files.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "advisor/advisor.h"
#include "config/config.h"
#include "connectors/source.h"
#include "connectors/telemetry.h"
#include "model/error.h"
#include "policies/policy.h"
#include "server/auth.h"

namespace drainwise::app {

// Command-line values that override the file (empty = keep the file's).
struct ConfigOverrides {
  std::string listen;
  std::string db;
  std::string log_level;
};

struct DaemonConfig {
  config::Config config;            // the file with the overrides applied
  advisor::AdvisorOptions advisor;  // "advisor" + "simulation"
  connectors::ConnectorsConfig connectors;
  connectors::DegradedThresholds thresholds;
  std::optional<policies::Policy> policy;            // from policy_file; nullopt without one
  std::shared_ptr<const server::TokenTable> tokens;  // null without tokens_file
  nlohmann::json task;  // "task": defaults of every task-level request (engine::TaskDefaults)
};

// `path` empty: the defaults (then only the overrides are checked). Errors
// name the file or the field and the rule, prefixed by where: "config
// <path>: ...", "policy_file <path>: ...", "server.tokens_file: ...".
Result<DaemonConfig> LoadDaemonConfig(const std::string& path, const ConfigOverrides& overrides = {});

}  // namespace drainwise::app
