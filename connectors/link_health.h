// Link health signals from the exporters' own metric names, and the history
// Prometheus keeps (range queries). docs/link-health.md has the mapping per
// exporter. Model-only: no I/O.
//
// Signals are named as advisor/link_trends.h names them ("in_errors",
// "fec_corrected", "carrier_transitions", "rx_power_dbm", ...); counters
// become per-second rates, octets bits per second.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "connectors/topology_merge.h"
#include "model/error.h"
#include "model/ids.h"
#include "model/topology.h"

namespace drainwise::connectors {

// What one exporter metric (or gNMI leaf) measures.
struct HealthMetric {
  std::string signal;       // advisor::HealthSignalName
  bool cumulative = false;  // a counter: its rate is the signal
  double scale = 1;         // to the signal's unit (octets -> bits: 8; ifHighSpeed Mbit/s -> bit/s: 1e6)
};

// snmp_exporter IF-MIB / EtherLike-MIB names (ifInErrors, ifHCInOctets,
// dot3StatsFCSErrors, ...), node_exporter names (node_network_receive_errs_total,
// node_network_carrier_changes_total, ...), and node_exporter's ethtool
// collector for mlx5 NICs (node_ethtool_rx_corrected_bits_phy, ...).
// nullopt for any other metric.
std::optional<HealthMetric> HealthMetricForPrometheus(std::string_view metric_name);

// OpenConfig leaves as gnmic names them, by the path's last element (module
// prefixes and keys ignored): interfaces/.../counters/{in-errors,
// in-fcs-errors, carrier-transitions, in-discards, out-discards, ...},
// .../phy/fec/state/{corrected-bits, rs-fec-uncorrectable-blocks, ...},
// platform transceiver .../{input-power,output-power}/instant (dBm).
std::optional<HealthMetric> HealthMetricForGnmicPath(std::string_view path);

// One health reading of one interface.
struct HealthSample {
  std::string device;
  std::string interface;
  std::string signal;
  double time_s = 0;
  double value = 0;         // in the signal's unit; a counter's raw (scaled) value when cumulative
  bool cumulative = false;  // the caller turns consecutive values into a rate
};

// gnmic `--format event` output (as ParseGnmicEvents reads it): every value
// HealthMetricForGnmicPath knows. The interface is the tag interface_name,
// else name (OpenConfig's interface key), else component_name (transceivers).
// Errors: kInvalidArgument naming the event.
Result<std::vector<HealthSample>> HealthSamplesFromGnmicEvents(std::string_view text, const std::string& device,
                                                               double time_s);

// One series of a Prometheus range query.
struct RangeSeries {
  std::map<std::string, std::string> labels;      // __name__ included when present
  std::vector<std::pair<double, double>> points;  // (unix s, value), in the answer's order
};

// {"status":"success","data":{"resultType":"matrix","result":[{"metric":{...},
// "values":[[t,"v"],...]}]}}: every series with all its points ("NaN",
// "+Inf" allowed). Errors: kInvalidArgument naming the field, or the
// answer's own error for status "error".
Result<std::vector<RangeSeries>> ParsePrometheusRange(const nlohmann::json& doc);

// Which end of which link a device's interface is: the mapping of
// connectors/telemetry.h (aliases and domain stripping, then the topology's
// names case-insensitively, ports as in Link.a_port / b_port).
class LinkEndIndex {
 public:
  LinkEndIndex(const model::Topology& topology, NameOptions names = {});
  struct End {
    model::LinkId link;
    bool is_a = true;
  };
  std::optional<End> Find(std::string_view device, std::string_view interface) const;

 private:
  NameOptions names_;
  std::map<std::pair<std::string, std::string>, End> ends_;
};

}  // namespace drainwise::connectors
