#include "connectors/util.h"

#include <cctype>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "model/topology.h"

namespace drainwise::connectors::internal {

Result<std::vector<json>> ParseConcatenatedJson(std::string_view text) {
  std::vector<json> out;
  size_t pos = 0;
  auto skip_ws = [&] {
    while (pos < text.size() && std::isspace(static_cast<unsigned char>(text[pos]))) ++pos;
  };
  skip_ws();
  while (pos < text.size()) {
    // nlohmann's SAX-free way to read one value at a time: parse with
    // allow_exceptions and find where the value ends by scanning brackets is
    // fragile, so we scan for the matching end of the top-level value here
    // (strings and escapes aware), then parse that slice.
    size_t start = pos;
    int depth = 0;
    bool in_string = false;
    bool escaped = false;
    bool scalar = text[pos] != '{' && text[pos] != '[';
    for (; pos < text.size(); ++pos) {
      char c = text[pos];
      if (in_string) {
        if (escaped)
          escaped = false;
        else if (c == '\\')
          escaped = true;
        else if (c == '"')
          in_string = false;
        if (scalar && !in_string) {
          ++pos;
          break;
        }
        continue;
      }
      if (c == '"') {
        in_string = true;
        continue;
      }
      if (scalar) {
        if (std::isspace(static_cast<unsigned char>(c))) break;
        continue;
      }
      if (c == '{' || c == '[')
        ++depth;
      else if (c == '}' || c == ']') {
        if (--depth == 0) {
          ++pos;
          break;
        }
      }
    }
    std::string_view slice = text.substr(start, pos - start);
    try {
      out.push_back(json::parse(slice.begin(), slice.end()));
    } catch (const json::parse_error& e) {
      return InvalidArgument(fmt::format("malformed JSON value {} at byte {}: {}", out.size(),
                                         start + (e.byte > 0 ? e.byte - 1 : 0), e.what()));
    } catch (const json::exception& e) {  // a number out of range (out_of_range.406), found by fuzzing
      return InvalidArgument(fmt::format("malformed JSON value {} at byte {}: {}", out.size(), start, e.what()));
    }
    skip_ws();
  }
  return out;
}

bool GlobMatch(std::string_view p, std::string_view t) {
  size_t pi = 0, ti = 0, star = std::string_view::npos, mark = 0;
  while (ti < t.size()) {
    if (pi < p.size() && (p[pi] == '?' || p[pi] == t[ti])) {
      ++pi;
      ++ti;
    } else if (pi < p.size() && p[pi] == '*') {
      star = pi++;
      mark = ti;
    } else if (star != std::string_view::npos) {
      pi = star + 1;
      ti = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

std::string StripPort(std::string_view s) {
  if (!s.empty() && s.front() == '[') {
    auto close = s.find(']');
    if (close != std::string_view::npos) return std::string(s.substr(1, close - 1));
  }
  auto colon = s.rfind(':');
  // More than one colon without brackets is a bare IPv6 address: keep it.
  if (colon == std::string_view::npos || s.find(':') != colon) return std::string(s);
  return std::string(s.substr(0, colon));
}

bool NaturalLess(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    bool da = std::isdigit(static_cast<unsigned char>(a[i]));
    bool db = std::isdigit(static_cast<unsigned char>(b[j]));
    if (da && db) {
      size_t ie = i, je = j;
      while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie]))) ++ie;
      while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je]))) ++je;
      auto na = a.substr(i, ie - i), nb = b.substr(j, je - j);
      while (na.size() > 1 && na.front() == '0') na.remove_prefix(1);
      while (nb.size() > 1 && nb.front() == '0') nb.remove_prefix(1);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = ie;
      j = je;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

std::optional<double> NumberOrNumericString(const json& j) {
  if (j.is_number()) {
    double d = j.get<double>();
    return std::isfinite(d) ? std::optional<double>(d) : std::nullopt;
  }
  if (!j.is_string()) return std::nullopt;
  const auto& s = j.get_ref<const std::string&>();
  if (s.empty()) return std::nullopt;
  // Integers first so 64-bit counters above 2^53 keep what precision a double has.
  uint64_t u = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), u);
  if (ec == std::errc() && p == s.data() + s.size()) return static_cast<double>(u);
  double d = 0;
  auto [p2, ec2] = std::from_chars(s.data(), s.data() + s.size(), d);
  if (ec2 == std::errc() && p2 == s.data() + s.size() && std::isfinite(d)) return d;
  return std::nullopt;
}

uint64_t Fnv1a64(std::string_view data, uint64_t h) {
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_prefix(0), s.remove_suffix(1);
  return s;
}

std::string TierNameOfLevel(int level) {
  switch (level) {
    case model::kLeafLevel:
      return "leaf";
    case model::kSpineLevel:
      return "spine";
    case model::kSuperspineLevel:
      return "superspine";
    default:
      return fmt::format("tier{}", level);
  }
}

const json& PrometheusData(const json& doc, std::string_view type, std::string_view alt_type) {
  codec::ObjectReader top(doc, "");
  std::string status = top.String("status");
  if (status != "success") {
    throw codec::FieldError("status", fmt::format("'{}': {}", status, top.StringOr("error", "")));
  }
  codec::ObjectReader data(top.Raw("data"), "data");
  std::string got = data.String("resultType");
  if (got != type && (alt_type.empty() || got != alt_type)) {
    throw codec::FieldError("data.resultType", alt_type.empty()
                                                   ? fmt::format("'{}' (expected {})", got, type)
                                                   : fmt::format("'{}' (expected {} or {})", got, type, alt_type));
  }
  return top.Raw("data");
}

}  // namespace drainwise::connectors::internal
