#include "app/daemon_config.h"

#include <fstream>

#include <fmt/format.h>

#include "app/link_health_monitor.h"
#include "engine/options.h"
#include "engine/task_request.h"

namespace drainwise::app {

Result<DaemonConfig> LoadDaemonConfig(const std::string& path, const ConfigOverrides& overrides) {
  DaemonConfig out;
  const std::string where = path.empty() ? "config" : "config " + path;
  if (!path.empty()) {
    auto c = config::LoadConfigFile(path);
    if (!c) return tl::unexpected(c.error());
    out.config = std::move(*c);
  }
  auto& cfg = out.config;
  if (!overrides.listen.empty()) cfg.server.listen = overrides.listen;
  if (!overrides.db.empty()) cfg.db_path = overrides.db;
  if (!overrides.log_level.empty()) cfg.log_level = overrides.log_level;

  auto advisor = engine::ParseAdvisorOptions(cfg.advisor, cfg.simulation);
  if (!advisor) return tl::unexpected(advisor.error().Wrap(where));
  out.advisor = std::move(*advisor);

  if (auto task = engine::CheckTaskDefaults(cfg.task); !task) return tl::unexpected(task.error().Wrap(where));
  out.task = cfg.task;

  auto connectors =
      connectors::ParseConnectorsConfig(nlohmann::json{{"sources", cfg.sources}, {"profiles", cfg.profiles}});
  if (!connectors) return tl::unexpected(connectors.error().Wrap(where));
  out.connectors = std::move(*connectors);

  // Checked here so `drainwise config check` refuses what `serve` would; serve parses it again.
  if (auto lh = ParseLinkHealthOptions(cfg.link_health, cfg.db_path); !lh)
    return tl::unexpected(lh.error().Wrap(where));

  // ParseConfig checked the types and signs of the thresholds.
  auto& t = out.thresholds;
  t.max_errors_per_s = cfg.telemetry.value("max_errors_per_s", t.max_errors_per_s);
  t.max_discards_per_s = cfg.telemetry.value("max_discards_per_s", t.max_discards_per_s);
  t.max_utilization = cfg.telemetry.value("max_utilization", t.max_utilization);

  if (!cfg.policy_file.empty()) {
    auto policy = policies::LoadPolicyFile(cfg.policy_file);
    if (!policy) return tl::unexpected(policy.error().Wrap("policy_file " + cfg.policy_file));
    out.policy = std::move(*policy);
  }
  if (!cfg.server.tokens_file.empty()) {
    auto tokens = server::TokenTable::Load(cfg.server.tokens_file);
    if (!tokens) return tl::unexpected(tokens.error().Wrap("server.tokens_file"));
    out.tokens = std::make_shared<const server::TokenTable>(std::move(*tokens));
  }
  for (const auto& [field, file] :
       {std::pair{"server.tls_cert", cfg.server.tls_cert}, std::pair{"server.tls_key", cfg.server.tls_key}}) {
    if (!file.empty() && !std::ifstream(file)) {
      return tl::unexpected(Error{ErrorCode::kIo, fmt::format("{}: cannot read {}", field, file)});
    }
  }
  if (cfg.server.tls_cert.empty() != cfg.server.tls_key.empty()) {
    return InvalidArgument("server.tls_cert and server.tls_key: set both or neither");
  }
  return out;
}

}  // namespace drainwise::app
