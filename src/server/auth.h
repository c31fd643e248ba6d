// Bearer tokens with roles. The tokens file holds SHA-256 hashes, never the
// tokens: one line per token, `<sha256-hex> <role> [name]`, `#` comments.
// Roles nest: reader (GET) < operator (assessments, plans, drains,
// observations) < admin (PUT topology, jobs, policy). Health and readiness
// are always open so orchestrators can probe them.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>

#include "model/error.h"

namespace drainwise::server {

enum class Role { kReader = 1, kOperator = 2, kAdmin = 3 };
std::string_view RoleName(Role role);
std::optional<Role> ParseRole(std::string_view name);

struct Principal {
  Role role = Role::kReader;
  std::string name;
};

class TokenTable {
 public:
  // Errors: kIo (cannot read), kInvalidArgument naming the line.
  static Result<TokenTable> Load(const std::string& path);
  static Result<TokenTable> Parse(std::string_view text, std::string_view origin);

  // The principal holding `token` (the raw bearer token), if any.
  std::optional<Principal> Find(std::string_view token) const;
  size_t size() const { return by_hash_.size(); }

 private:
  std::unordered_map<std::string, Principal> by_hash_;
};

// Lower-case hex SHA-256 of `text`.
std::string Sha256Hex(std::string_view text);

// The role a request needs: nullopt for open routes.
std::optional<Role> RequiredRole(std::string_view method, std::string_view path);

}  // namespace drainwise::server
