#include "server/routes/target.h"

#include <vector>

#include <fmt/format.h>

namespace drainwise::server::routing {

namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// RFC 3986 pchar without pct-encoded: unreserved / sub-delims / ':' / '@'.
bool IsRawPathChar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  constexpr std::string_view kUnreserved = "-._~", kSubDelims = "!$&'()*+,;=", kOther = ":@";
  return kUnreserved.find(c) != std::string_view::npos || kSubDelims.find(c) != std::string_view::npos ||
         kOther.find(c) != std::string_view::npos;
}

bool IsControl(unsigned char c) { return c < 0x20 || c == 0x7f; }

// Decodes %XX escapes (and '+' as a space when `plus_is_space`). `part`
// names the part in errors ("path", "query").
Result<std::string> Decode(std::string_view s, std::string_view part, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '%') {
      int hi = i + 1 < s.size() ? HexValue(s[i + 1]) : -1;
      int lo = i + 2 < s.size() ? HexValue(s[i + 2]) : -1;
      if (hi < 0 || lo < 0) {
        return InvalidArgument(
            fmt::format("{}: invalid percent-encoding '{}': '%' must start two hex digits", part, s.substr(i, 3)));
      }
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::vector<std::string_view> Segments(std::string_view path) {
  std::vector<std::string_view> out;
  size_t start = 1;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    out.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

Result<std::string> NormalisePath(std::string_view raw) {
  for (size_t i = 0; i < raw.size(); ++i) {
    char c = raw[i];
    if (c == '/' || c == '%' || IsRawPathChar(c)) continue;
    return InvalidArgument(
        fmt::format("path: byte 0x{:02x} at offset {} must be percent-encoded", static_cast<unsigned char>(c), i));
  }
  // Decode segment by segment so an encoded '/' is seen for what it is.
  std::string path;
  size_t start = 1;
  while (start <= raw.size()) {
    size_t end = raw.find('/', start);
    if (end == std::string_view::npos) end = raw.size();
    std::string_view seg = raw.substr(start, end - start);
    auto decoded = Decode(seg, "path", false);
    if (!decoded) return tl::unexpected(decoded.error());
    if (decoded->find('/') != std::string::npos) {
      return InvalidArgument(
          fmt::format("path: segment '{}' encodes a '/' (%2F); a segment may not contain a slash", seg));
    }
    for (unsigned char ch : *decoded) {
      if (IsControl(ch)) {
        return InvalidArgument(fmt::format("path: segment '{}' encodes control character 0x{:02x}", seg, ch));
      }
    }
    bool root = raw.size() == 1;  // "/" is the one path with an empty segment
    if (decoded->empty() && !root) {
      return InvalidArgument(fmt::format("path: empty segment at offset {} ('//' or a trailing '/')", start));
    }
    if (*decoded == "." || *decoded == "..") {
      return InvalidArgument(fmt::format("path: dot segment '{}' ('.' and '..' are not resolved)", seg));
    }
    path.push_back('/');
    path += *decoded;
    start = end + 1;
  }
  return path;
}

}  // namespace

Result<Target> NormaliseTarget(std::string_view target) {
  if (target.empty() || target.front() != '/') {
    return InvalidArgument(
        fmt::format("target '{}': expected an absolute path starting with '/' (origin-form)", target.substr(0, 64)));
  }
  size_t q = target.find('?');
  Target out;
  auto path = NormalisePath(target.substr(0, q));
  if (!path) return tl::unexpected(path.error());
  out.path = std::move(*path);
  if (q == std::string_view::npos) return out;
  std::string_view query = target.substr(q + 1);
  size_t start = 0;
  while (start < query.size()) {
    size_t end = query.find('&', start);
    if (end == std::string_view::npos) end = query.size();
    std::string_view kv = query.substr(start, end - start);
    size_t eq = kv.find('=');
    auto key = Decode(kv.substr(0, eq), "query", true);
    if (!key) return tl::unexpected(key.error());
    auto value = eq == std::string_view::npos ? Result<std::string>("") : Decode(kv.substr(eq + 1), "query", true);
    if (!value) return tl::unexpected(value.error());
    if (!key->empty()) {
      auto [it, fresh] = out.query.emplace(*key, *value);
      if (!fresh) it->second = it->second.empty() ? *value : it->second + "," + *value;
    }
    start = end + 1;
  }
  return out;
}

bool MatchPattern(std::string_view pattern, std::string_view path, std::map<std::string, std::string>* params) {
  auto ps = Segments(pattern);
  auto xs = Segments(path);
  if (ps.size() != xs.size()) return false;
  for (size_t i = 0; i < ps.size(); ++i) {
    if (ps[i].size() > 2 && ps[i].front() == '{' && ps[i].back() == '}') {
      if (xs[i].empty()) return false;
      if (params) (*params)[std::string(ps[i].substr(1, ps[i].size() - 2))] = std::string(xs[i]);
    } else if (ps[i] != xs[i]) {
      return false;
    }
  }
  return true;
}

}  // namespace drainwise::server::routing
