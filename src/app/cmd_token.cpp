// drainwise hash-token: the line to put in the tokens file for a token read
// from standard input (so the token never appears in a process list).
#include <iostream>
#include <string>

#include <fmt/format.h>

#include "app/commands.h"
#include "server/auth.h"

namespace drainwise::app {

void RegisterHashToken(CLI::App& app, int* exit_code) {
  auto role = std::make_shared<std::string>("reader");
  auto name = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("hash-token", "Print a tokens-file line for the token read from stdin");
  cmd->add_option("--role", *role, "reader | operator | admin")->capture_default_str();
  cmd->add_option("--name", *name, "Name shown in logs and 403 messages");
  cmd->callback([role, name, exit_code] {
    if (!server::ParseRole(*role)) {
      fmt::print(stderr, "drainwise hash-token: --role must be reader, operator or admin\n");
      *exit_code = 2;
      return;
    }
    std::string token;
    std::getline(std::cin, token);
    while (!token.empty() && (token.back() == '\r' || token.back() == ' ')) token.pop_back();
    if (token.size() < 16) {
      fmt::print(stderr, "drainwise hash-token: a token needs at least 16 characters\n");
      *exit_code = 2;
      return;
    }
    fmt::print("{} {}{}\n", server::Sha256Hex(token), *role, name->empty() ? "" : " " + *name);
    *exit_code = 0;
  });
}

}  // namespace drainwise::app
