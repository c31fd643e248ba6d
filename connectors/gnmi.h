// gNMI: gnmic event output and OpenConfig interfaces in JSON_IETF, both with
// counter64 values as strings -> interface counters.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "connectors/telemetry.h"
#include "model/error.h"

namespace drainwise::connectors {

struct GnmiOptions {
  // Device name; when empty gnmic events use the `source` tag (":port"
  // stripped). Required for JSON_IETF documents, which do not name the target.
  std::string device;
};

// gnmic `--format event`: a JSON array of events, or several arrays/objects
// one after the other (file output). Per event: tags.interface_name,
// tags.source, timestamp (ns), values keyed by path whose last element is
// in-octets, out-octets, in-errors, out-errors, in-discards, out-discards,
// oper-status ("UP" = up) or port-speed ("SPEED_400GB"). Other values and
// events without an interface are ignored.
Result<CounterSample> ParseGnmicEvents(std::string_view text, const GnmiOptions& options, double time_s);

// {"openconfig-interfaces:interfaces": {"interface": [{name, state: {oper-status,
// counters: {...}}, "openconfig-if-ethernet:ethernet": {state: {port-speed}}}]}}
// (the module prefix is optional).
Result<CounterSample> ParseOpenconfigInterfaces(const nlohmann::json& doc, const GnmiOptions& options, double time_s);

// "SPEED_400GB" / "openconfig-if-ethernet:SPEED_100GB" / "SPEED_2500MB" -> bits/s.
std::optional<double> BpsFromOpenconfigSpeed(std::string_view speed);

}  // namespace drainwise::connectors
