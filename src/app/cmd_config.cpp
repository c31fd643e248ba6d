// drainwise config check|show FILE: validates a daemon configuration the way
// `drainwise serve` would at start-up, without opening the database or a
// socket, so packaging, CI and operators can check a file before a restart.
// Exit codes: 0 valid, 1 invalid, 2 usage.
#include <cstdio>

#include <fmt/format.h>

#include "app/commands.h"
#include "app/daemon_config.h"
#include "config/config.h"

namespace drainwise::app {

namespace {

// Everything serve checks before it binds, through the same function
// (LoadDaemonConfig): the file, the advisor and simulation sections, the
// sources and profiles, the policy, the tokens and the TLS files. Returns a
// one-line summary, or the first error naming the file or field at fault.
Result<std::string> CheckConfig(const std::string& path) {
  auto loaded = LoadDaemonConfig(path);
  if (!loaded) return tl::unexpected(loaded.error());
  const auto& cfg = loaded->config;
  std::string policy_name = "built-in default";
  if (loaded->policy) policy_name = fmt::format("'{}' from {}", loaded->policy->name, cfg.policy_file);
  std::string auth = loaded->tokens ? fmt::format("{} tokens", loaded->tokens->size()) : "off";
  return fmt::format("{}: valid (listen {}{}, db {}, policy {}, auth {}, {} sources)", path, cfg.server.listen,
                     cfg.server.tls_cert.empty() ? "" : " with TLS", cfg.db_path, policy_name, auth,
                     loaded->connectors.sources.size());
}

}  // namespace

void RegisterConfig(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("config", "Check or show a daemon configuration file");
  cmd->require_subcommand(1);
  auto file = std::make_shared<std::string>();
  auto* check =
      cmd->add_subcommand("check", "Validate FILE as `drainwise serve --config FILE` would (exit 0 valid, 1 not)");
  check->add_option("file", *file, "JSON configuration file")->required();
  check->callback([file, exit_code] {
    auto r = CheckConfig(*file);
    if (!r) {
      std::fprintf(stderr, "%s\n", r.error().message.c_str());
      *exit_code = 1;
      return;
    }
    std::printf("%s\n", r->c_str());
    *exit_code = 0;
  });
  auto* show = cmd->add_subcommand("show", "Print FILE with every default filled in");
  show->add_option("file", *file, "JSON configuration file")->required();
  show->callback([file, exit_code] {
    auto cfg = config::LoadConfigFile(*file);
    if (!cfg) {
      std::fprintf(stderr, "%s\n", cfg.error().message.c_str());
      *exit_code = 1;
      return;
    }
    std::printf("%s\n", config::ConfigToJson(*cfg).dump(2).c_str());
    *exit_code = 0;
  });
}

}  // namespace drainwise::app
