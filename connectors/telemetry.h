// Link telemetry: interface counters -> rates -> per-link load and health.
//
// Model-only (no I/O): the Prometheus and gNMI parsers produce
// CounterSamples; two samples give InterfaceTelemetry rates; interfaces map to
// the topology's links through their port names (Link.a_port / b_port).
// Units: bits per second for traffic and speeds, events per second for
// errors and discards, seconds for time.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "connectors/topology_merge.h"
#include "model/ids.h"
#include "model/topology.h"

namespace drainwise::connectors {

// Raw cumulative counters of one interface at one time.
struct InterfaceCounters {
  std::string device;     // node name as in the topology ("leaf-a01", "gpu001")
  std::string interface;  // port name ("swp1", "eth1")
  std::optional<double> rx_bytes, tx_bytes;
  std::optional<double> rx_errors, tx_errors;
  std::optional<double> rx_discards, tx_discards;
  std::optional<double> speed_bps;  // negotiated speed, when reported
  std::optional<bool> oper_up;
  std::optional<double> time_s;  // the counters' own timestamp (unix s), when reported
};

// Every interface of one scrape or event batch.
struct CounterSample {
  double time_s = 0;  // when it was taken (unix s); used when an interface has no time_s
  std::vector<InterfaceCounters> interfaces;
};

// Rates of one interface between two samples.
struct InterfaceTelemetry {
  std::string device;
  std::string interface;
  bool has_rates = false;  // false for an interface seen only once (or no time elapsed)
  double rx_bps = 0, tx_bps = 0;
  double rx_errors_per_s = 0, tx_errors_per_s = 0;
  double rx_discards_per_s = 0, tx_discards_per_s = 0;
  bool counter_reset = false;  // some counter went backwards (reboot, clear): its delta is its new value
  std::optional<double> speed_bps;
  std::optional<bool> oper_up;
};

// Rates of every interface of `current` that `previous` also has (matched by
// device + interface); interfaces new in `current` come back with has_rates
// false but their speed and status. A counter lower than before was reset:
// its increase is taken to be its current value (as Prometheus' rate() does).
std::vector<InterfaceTelemetry> ComputeRates(const CounterSample& previous, const CounterSample& current);

// Telemetry of one link, in the link's own direction (a -> b).
struct LinkTelemetry {
  model::LinkId link;
  bool has_rates = false;
  double a_to_b_bps = 0;  // when both ends report, the larger of the two measurements
  double b_to_a_bps = 0;
  double errors_per_s = 0;          // rx + tx errors, both ends
  double discards_per_s = 0;        // rx + tx discards, both ends
  std::optional<bool> oper_up;      // false when either end is down
  std::optional<double> speed_bps;  // lowest reported end speed
  double capacity_bps = 0;          // from the topology

  // Busier direction / capacity (0 when capacity is unknown).
  double Utilization() const;
};

struct LinkTelemetrySet {
  std::vector<LinkTelemetry> links;    // one per link with any data, by LinkId
  std::vector<std::string> unmatched;  // "device:interface" with no link (sorted)
};

// Maps interface telemetry onto `topology`: interface P of device D is the
// a end of a link with a == D and a_port == P, or its b end. The a end's tx
// is a -> b traffic, its rx b -> a; the b end the other way round. Links
// without port names cannot be matched.
// Telemetry keys devices as its exporter does (gnmic by target address,
// SNMP by FQDN): `names` maps them first (aliases: "10.0.0.11" -> "leaf-a01";
// then domain stripping), and device names then match the topology's
// case-insensitively. What still matches nothing is listed in `unmatched`.
LinkTelemetrySet MapToLinks(const model::Topology& topology, const std::vector<InterfaceTelemetry>& interfaces,
                            const NameOptions& names = {});

// Background load per link and direction for the flow simulator: index
// [link.value] -> {a_to_b_bps, b_to_a_bps}; links without rates carry 0.
std::vector<std::pair<double, double>> BackgroundBps(const model::Topology& topology, const LinkTelemetrySet& set);

struct DegradedThresholds {
  double max_errors_per_s = 1;  // above this the link is degraded
  double max_discards_per_s = 100;
  double max_utilization = 0.9;  // busier direction / capacity
};

// Why a link is degraded ("oper down", "errors 3.2/s > 1/s", ...); empty = healthy.
std::vector<std::string> DegradedReasons(const LinkTelemetry& link, const DegradedThresholds& thresholds);

}  // namespace drainwise::connectors
