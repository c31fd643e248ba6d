// Bearer tokens with roles. The tokens file holds SHA-256 hashes, never the
// tokens: one line per token, `<sha256-hex> <role> [name]`, `#` comments.
// Roles nest: reader < operator < admin. Which role a route needs is a
// column of the route table (Api::Routes(), src/server/routes/table.cpp):
// roughly reader for reads, operator for assessments, plans, drains and
// observations, admin for whatever replaces a document or the calibration;
// health, readiness and the console's static files are open.
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

}  // namespace drainwise::server
