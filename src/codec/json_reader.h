// Typed field access on nlohmann::json with errors that name the field path
// ("jobs[3].iteration.collectives[0].bytes: expected a number, got string").
//
// Used inside codecs only: FieldError is thrown while walking a document and
// caught by the codec's public entry point, which returns it as an Error. It
// never crosses a module boundary.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/error.h"

namespace drainwise::codec {

using json = nlohmann::json;

class FieldError : public std::runtime_error {
 public:
  FieldError(std::string path, std::string message)
      : std::runtime_error(path.empty() ? message : path + ": " + message) {}
};

// A view of one JSON object at a known path.
class ObjectReader {
 public:
  ObjectReader(const json& j, std::string path);

  const std::string& path() const { return path_; }
  bool Has(std::string_view key) const;
  std::string Child(std::string_view key) const;
  const json& Raw(std::string_view key) const;  // throws FieldError "required" when absent

  std::string String(std::string_view key) const;  // required
  std::string StringOr(std::string_view key, std::string fallback) const;
  double Number(std::string_view key) const;  // required
  double NumberOr(std::string_view key, double fallback) const;
  std::optional<double> OptNumber(std::string_view key) const;
  int64_t Int(std::string_view key) const;
  int64_t IntOr(std::string_view key, int64_t fallback) const;
  bool BoolOr(std::string_view key, bool fallback) const;
  std::vector<std::string> StringList(std::string_view key) const;           // absent = empty
  std::map<std::string, std::string> StringMap(std::string_view key) const;  // absent = empty
  // Each element of an array field (absent = none) as an object reader.
  std::vector<ObjectReader> Objects(std::string_view key) const;
  const json& Array(std::string_view key) const;  // required array
  // Fails when the object has a key outside `known` (typos must not be silent).
  void RejectUnknown(std::initializer_list<std::string_view> known) const;

 private:
  const json& j_;
  std::string path_;
};

std::string_view JsonTypeName(const json& j);

// Parses text as JSON; the error names the byte offset.
Result<json> ParseJsonText(std::string_view text);

// RFC 3339 timestamps ("2026-11-30T13:00:00Z", with optional fraction and
// offset) to unix seconds and back (UTC, "Z").
std::optional<int64_t> ParseRfc3339(std::string_view text);
std::string FormatRfc3339(int64_t unix_seconds);

}  // namespace drainwise::codec
