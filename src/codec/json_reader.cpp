#include "codec/json_reader.h"

#include <cmath>
#include <ctime>

#include <fmt/format.h>

namespace drainwise::codec {

std::string_view JsonTypeName(const json& j) {
  switch (j.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::object:
      return "object";
    case json::value_t::array:
      return "array";
    case json::value_t::string:
      return "string";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float:
      return "number";
    default:
      return "unknown";
  }
}

ObjectReader::ObjectReader(const json& j, std::string path) : j_(j), path_(std::move(path)) {
  if (!j_.is_object()) {
    throw FieldError(path_, fmt::format("expected an object, got {}", JsonTypeName(j_)));
  }
}

bool ObjectReader::Has(std::string_view key) const {
  auto it = j_.find(key);
  return it != j_.end() && !it->is_null();
}

std::string ObjectReader::Child(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

const json& ObjectReader::Raw(std::string_view key) const {
  // Callers should check Has() first; one that did not (found by fuzzing:
  // a Prometheus reply without "data") dereferenced end(). Refuse instead.
  auto it = j_.find(key);
  if (it == j_.end()) throw FieldError(Child(key), "required");
  return *it;
}

std::string ObjectReader::String(std::string_view key) const {
  if (!Has(key)) throw FieldError(Child(key), "required");
  const json& v = Raw(key);
  if (!v.is_string()) throw FieldError(Child(key), fmt::format("expected a string, got {}", JsonTypeName(v)));
  return v.get<std::string>();
}

std::string ObjectReader::StringOr(std::string_view key, std::string fallback) const {
  return Has(key) ? String(key) : std::move(fallback);
}

double ObjectReader::Number(std::string_view key) const {
  if (!Has(key)) throw FieldError(Child(key), "required");
  const json& v = Raw(key);
  if (!v.is_number()) throw FieldError(Child(key), fmt::format("expected a number, got {}", JsonTypeName(v)));
  double d = v.get<double>();
  if (!std::isfinite(d)) throw FieldError(Child(key), "not a finite number");
  return d;
}

double ObjectReader::NumberOr(std::string_view key, double fallback) const { return Has(key) ? Number(key) : fallback; }

std::optional<double> ObjectReader::OptNumber(std::string_view key) const {
  if (!Has(key)) return std::nullopt;
  return Number(key);
}

int64_t ObjectReader::Int(std::string_view key) const {
  double d = Number(key);
  if (d != std::floor(d) || std::fabs(d) > 9.0e15) throw FieldError(Child(key), "expected an integer");
  return static_cast<int64_t>(d);
}

int64_t ObjectReader::IntOr(std::string_view key, int64_t fallback) const { return Has(key) ? Int(key) : fallback; }

bool ObjectReader::BoolOr(std::string_view key, bool fallback) const {
  if (!Has(key)) return fallback;
  const json& v = Raw(key);
  if (!v.is_boolean()) throw FieldError(Child(key), fmt::format("expected true or false, got {}", JsonTypeName(v)));
  return v.get<bool>();
}

std::vector<std::string> ObjectReader::StringList(std::string_view key) const {
  std::vector<std::string> out;
  if (!Has(key)) return out;
  const json& v = Raw(key);
  if (!v.is_array()) throw FieldError(Child(key), fmt::format("expected an array, got {}", JsonTypeName(v)));
  out.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string()) {
      throw FieldError(fmt::format("{}[{}]", Child(key), i),
                       fmt::format("expected a string, got {}", JsonTypeName(v[i])));
    }
    out.push_back(v[i].get<std::string>());
  }
  return out;
}

std::map<std::string, std::string> ObjectReader::StringMap(std::string_view key) const {
  std::map<std::string, std::string> out;
  if (!Has(key)) return out;
  const json& v = Raw(key);
  if (!v.is_object()) throw FieldError(Child(key), fmt::format("expected an object, got {}", JsonTypeName(v)));
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (it.value().is_string()) {
      out.emplace(it.key(), it.value().get<std::string>());
    } else if (it.value().is_number() || it.value().is_boolean()) {
      out.emplace(it.key(), it.value().dump());
    } else {
      throw FieldError(Child(key) + "." + it.key(), "expected a string");
    }
  }
  return out;
}

std::vector<ObjectReader> ObjectReader::Objects(std::string_view key) const {
  std::vector<ObjectReader> out;
  if (!Has(key)) return out;
  const json& v = Raw(key);
  if (!v.is_array()) throw FieldError(Child(key), fmt::format("expected an array, got {}", JsonTypeName(v)));
  out.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) out.emplace_back(v[i], fmt::format("{}[{}]", Child(key), i));
  return out;
}

const json& ObjectReader::Array(std::string_view key) const {
  if (!Has(key)) throw FieldError(Child(key), "required");
  const json& v = Raw(key);
  if (!v.is_array()) throw FieldError(Child(key), fmt::format("expected an array, got {}", JsonTypeName(v)));
  return v;
}

void ObjectReader::RejectUnknown(std::initializer_list<std::string_view> known) const {
  for (auto it = j_.begin(); it != j_.end(); ++it) {
    bool ok = false;
    for (auto k : known) ok = ok || it.key() == k;
    if (!ok) throw FieldError(Child(it.key()), "unknown field");
  }
}

Result<json> ParseJsonText(std::string_view text) {
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    // Drop nlohmann's "[json.exception.parse_error.101] " prefix: operators
    // need the position and the reason, not the library's error id.
    std::string_view what = e.what();
    if (auto pos = what.find("] "); what.rfind("[json.exception", 0) == 0 && pos != std::string_view::npos) {
      what.remove_prefix(pos + 2);
    }
    return InvalidArgument(fmt::format("malformed JSON at byte {}: {}", e.byte, what));
  } catch (const json::exception& e) {
    // Not a syntax error but still the input's fault: a number out of range
    // ("1e99999", found by fuzzing) throws out_of_range.406.
    std::string_view what = e.what();
    if (auto pos = what.find("] "); pos != std::string_view::npos) what.remove_prefix(pos + 2);
    return InvalidArgument(fmt::format("malformed JSON: {}", what));
  }
}

std::optional<int64_t> ParseRfc3339(std::string_view s) {
  // YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM)
  auto digits = [&](size_t pos, size_t n) -> std::optional<int> {
    if (pos + n > s.size()) return std::nullopt;
    int v = 0;
    for (size_t i = pos; i < pos + n; ++i) {
      if (s[i] < '0' || s[i] > '9') return std::nullopt;
      v = v * 10 + (s[i] - '0');
    }
    return v;
  };
  if (s.size() < 20) return std::nullopt;
  auto Y = digits(0, 4), M = digits(5, 2), D = digits(8, 2), h = digits(11, 2), m = digits(14, 2), sec = digits(17, 2);
  if (!Y || !M || !D || !h || !m || !sec || s[4] != '-' || s[7] != '-' ||
      (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || s[13] != ':' || s[16] != ':') {
    return std::nullopt;
  }
  if (*M < 1 || *M > 12 || *D < 1 || *D > 31 || *h > 23 || *m > 59 || *sec > 60) return std::nullopt;
  size_t pos = 19;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    size_t start = pos;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') ++pos;
    if (pos == start) return std::nullopt;
  }
  int offset_s = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    auto oh = digits(pos + 1, 2), om = digits(pos + 4, 2);
    if (!oh || !om || pos + 3 >= s.size() || s[pos + 3] != ':') return std::nullopt;
    offset_s = (*oh * 3600 + *om * 60) * (s[pos] == '+' ? 1 : -1);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != s.size()) return std::nullopt;
  // Days from civil (Howard Hinnant's algorithm), no time zone database needed.
  int y = *Y - (*M <= 2);
  int era = (y >= 0 ? y : y - 399) / 400;
  unsigned yoe = static_cast<unsigned>(y - era * 400);
  unsigned mp = static_cast<unsigned>(*M + (*M > 2 ? -3 : 9));
  unsigned doy = (153 * mp + 2) / 5 + static_cast<unsigned>(*D) - 1;
  unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  int64_t days = static_cast<int64_t>(era) * 146097 + static_cast<int64_t>(doe) - 719468;
  return days * 86400 + *h * 3600 + *m * 60 + *sec - offset_s;
}

std::string FormatRfc3339(int64_t t) {
  std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                     tm.tm_min, tm.tm_sec);
}

}  // namespace drainwise::codec
