// Small helpers shared by the connector parsers. Internal to connectors/.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "codec/json_reader.h"
#include "model/error.h"

namespace drainwise::connectors::internal {

using json = nlohmann::json;

// Runs `fn`, turning codec::FieldError and nlohmann exceptions into an
// InvalidArgument whose message starts with `what` ("netbox devices: ...").
template <class Fn>
auto Guard(std::string_view what, Fn&& fn) -> Result<decltype(fn())> {
  auto prefix = [&](const char* m) { return what.empty() ? std::string(m) : std::string(what) + ": " + m; };
  try {
    return fn();
  } catch (const codec::FieldError& e) {
    return InvalidArgument(prefix(e.what()));
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument(prefix(e.what()));
  }
}

// A sequence of JSON values written one after the other (chakra_jsonizer,
// gnmic file output, JSON lines). The error names the value index and byte.
Result<std::vector<json>> ParseConcatenatedJson(std::string_view text);

// Shell-style glob: '*' any run, '?' one character. Case-sensitive.
bool GlobMatch(std::string_view pattern, std::string_view text);

// "leaf-a01:8080" -> "leaf-a01"; "[fd00::1]:9100" -> "fd00::1"; "host" -> "host".
std::string StripPort(std::string_view host_port);

// Natural order: "worker-2" < "worker-10".
bool NaturalLess(std::string_view a, std::string_view b);

// A JSON number or a string holding a number (64-bit counters and Chakra
// int64 values come as strings). nullopt when neither.
std::optional<double> NumberOrNumericString(const json& j);

// Stable 64-bit FNV-1a content hash.
uint64_t Fnv1a64(std::string_view data, uint64_t seed = 1469598103934665603ull);

std::string ToLower(std::string_view s);

// The `data` object of a Prometheus HTTP API answer (/api/v1/query,
// /api/v1/query_range): throws codec::FieldError naming `status` unless it is
// "success", and `data.resultType` unless it is `type` or `alt_type`.
const json& PrometheusData(const json& doc, std::string_view type, std::string_view alt_type = {});

// The tier name of a switch level: 1 leaf, 2 spine, 3 superspine, higher "tierN".
std::string TierNameOfLevel(int level);
std::string_view Trim(std::string_view s);

}  // namespace drainwise::connectors::internal
