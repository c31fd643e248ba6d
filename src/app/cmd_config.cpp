// drainwise config check|show FILE: validates a daemon configuration the way
// `drainwise serve` would at start-up, without opening the database or a
// socket, so packaging, CI and operators can check a file before a restart.
// Exit codes: 0 valid, 1 invalid, 2 usage.
#include <cstdio>
#include <fstream>

#include <fmt/format.h>

#include "app/commands.h"
#include "app/engine_impl.h"
#include "config/config.h"
#include "policies/policy.h"
#include "server/auth.h"

namespace drainwise::app {

namespace {

// Everything serve checks before it binds: the file, the advisor and
// simulation sections, the policy, the tokens and the TLS files. Returns a
// one-line summary, or the first error naming the file or field at fault.
Result<std::string> CheckConfig(const std::string& path) {
  auto cfg = config::LoadConfigFile(path);
  if (!cfg) return tl::unexpected(cfg.error());
  auto advisor = ParseAdvisorOptions(cfg->advisor, cfg->simulation);
  if (!advisor) return tl::unexpected(advisor.error().Wrap("config " + path));
  std::string policy_name = "built-in default";
  if (!cfg->policy_file.empty()) {
    auto policy = policies::LoadPolicyFile(cfg->policy_file);
    if (!policy) return tl::unexpected(policy.error().Wrap("policy_file " + cfg->policy_file));
    policy_name = fmt::format("'{}' from {}", policy->name, cfg->policy_file);
  }
  std::string auth = "off";
  if (!cfg->server.tokens_file.empty()) {
    auto tokens = server::TokenTable::Load(cfg->server.tokens_file);
    if (!tokens) return tl::unexpected(tokens.error().Wrap("server.tokens_file"));
    auth = fmt::format("{} tokens", tokens->size());
  }
  for (const auto& [field, file] : {std::pair{"server.tls_cert", cfg->server.tls_cert},
                                    std::pair{"server.tls_key", cfg->server.tls_key}}) {
    if (!file.empty() && !std::ifstream(file)) {
      return tl::unexpected(Error{ErrorCode::kIo, fmt::format("{}: cannot read {}", field, file)});
    }
  }
  if (cfg->server.tls_cert.empty() != cfg->server.tls_key.empty()) {
    return InvalidArgument("server.tls_cert and server.tls_key: set both or neither");
  }
  return fmt::format("{}: valid (listen {}{}, db {}, policy {}, auth {}, {} sources)", path, cfg->server.listen,
                     cfg->server.tls_cert.empty() ? "" : " with TLS", cfg->db_path, policy_name, auth,
                     cfg->sources.size());
}

}  // namespace

void RegisterConfig(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("config", "Check or show a daemon configuration file");
  cmd->require_subcommand(1);
  auto file = std::make_shared<std::string>();
  auto* check = cmd->add_subcommand("check", "Validate FILE as `drainwise serve --config FILE` would (exit 0 valid, 1 not)");
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
