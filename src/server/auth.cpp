#include "server/auth.h"

#include <openssl/evp.h>

#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace drainwise::server {

std::string_view RoleName(Role role) {
  switch (role) {
    case Role::kReader:
      return "reader";
    case Role::kOperator:
      return "operator";
    case Role::kAdmin:
      return "admin";
  }
  return "reader";
}

std::optional<Role> ParseRole(std::string_view name) {
  if (name == "reader") return Role::kReader;
  if (name == "operator") return Role::kOperator;
  if (name == "admin") return Role::kAdmin;
  return std::nullopt;
}

std::string Sha256Hex(std::string_view text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(text.data(), text.size(), digest, &len, EVP_sha256(), nullptr);
  std::string out;
  for (unsigned i = 0; i < len; ++i) out += fmt::format("{:02x}", digest[i]);
  return out;
}

Result<TokenTable> TokenTable::Parse(std::string_view text, std::string_view origin) {
  TokenTable t;
  std::istringstream in{std::string(text)};
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    auto hash_pos = line.find('#');
    if (hash_pos != std::string::npos) line.resize(hash_pos);
    std::istringstream fields(line);
    std::string hash, role, name;
    if (!(fields >> hash)) continue;
    fields >> role >> name;
    auto where = fmt::format("{}:{}", origin, n);
    if (hash.size() != 64 || hash.find_first_not_of("0123456789abcdef") != std::string::npos) {
      return InvalidArgument(fmt::format("{}: expected a lower-case hex SHA-256 hash (64 characters)", where));
    }
    auto r = ParseRole(role);
    if (!r) return InvalidArgument(fmt::format("{}: role '{}' is not reader, operator or admin", where, role));
    t.by_hash_[hash] = Principal{*r, name.empty() ? fmt::format("token-{}", n) : name};
  }
  return t;
}

Result<TokenTable> TokenTable::Load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return MakeError(ErrorCode::kIo, fmt::format("tokens file {}: cannot open", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return Parse(ss.str(), path);
}

std::optional<Principal> TokenTable::Find(std::string_view token) const {
  auto it = by_hash_.find(Sha256Hex(token));
  if (it == by_hash_.end()) return std::nullopt;
  return it->second;
}

}  // namespace drainwise::server
