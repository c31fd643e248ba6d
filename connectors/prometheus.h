// Prometheus: the text exposition format (0.0.4), the HTTP API's
// /api/v1/query result, and interface counters from node_exporter and the
// SNMP exporter's if_mib module.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "connectors/telemetry.h"
#include "model/error.h"

namespace drainwise::connectors {

struct PromSample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;                     // NaN and ±Inf allowed
  std::optional<int64_t> timestamp_ms;  // as written after the value
};

// Text format: '#' lines (HELP, TYPE, others) and blank lines are skipped;
// `name{label="value",...} value [timestamp_ms]` with label escapes \\ \" \n,
// an optional trailing comma, values as Go floats incl. NaN/+Inf/-Inf.
// Errors name the line ("line 7: label value: missing closing quote").
Result<std::vector<PromSample>> ParsePrometheusText(std::string_view text);

// {"status":"success","data":{"resultType":"vector"|"matrix","result":[...]}}:
// vector samples as they are; for a matrix the last point of each series.
// The name comes from the __name__ label. Timestamps (float s) become ms.
Result<std::vector<PromSample>> ParsePrometheusQuery(const nlohmann::json& doc);

struct PrometheusTelemetryOptions {
  // The device is `device` when set, else the value of `device_label`
  // (":port" stripped, then `strip_suffix` removed when it ends the name).
  std::string device;
  std::string device_label = "instance";
  std::string strip_suffix;  // e.g. ".dc1.example.net"
  std::vector<std::string> skip_interfaces = {"lo"};
};

// Picks the interface metrics out of `samples`:
//   node_exporter (interface label `device`): node_network_{receive,transmit}_
//     {bytes,errs,drop}_total, node_network_speed_bytes (bytes/s, -1 = unknown),
//     node_network_up;
//   SNMP exporter (label `ifName`, else `ifDescr`): ifHCInOctets, ifHCOutOctets,
//     ifInErrors, ifOutErrors, ifInDiscards, ifOutDiscards, ifHighSpeed
//     (Mbit/s), ifOperStatus (1 = up).
// Other metrics are ignored. A sample's own timestamp becomes the
// interface's time_s; `time_s` is the sample time otherwise.
// Error: an interface metric without a device (no option, no label).
Result<CounterSample> CountersFromPrometheus(const std::vector<PromSample>& samples,
                                             const PrometheusTelemetryOptions& options, double time_s);

}  // namespace drainwise::connectors
