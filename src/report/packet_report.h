// JSON document and terminal tables of a packet-level what-if
// (sim/packet/packet_sim.h), for `drainwise simulate --mode packet` and the
// REST background runs alike. Units are in the names: seconds (_s),
// utilisation as a fraction of line rate.
//
//   {"jobs":[{"id", "name", "flows", "bystander",
//             "baseline":{"connected", "completed", "comm_s", "iteration_s"},
//             "drained":{... same ...},
//             "slowdown_pct",                 // null unless both sides completed
//             "flow":{"baseline_comm_s", "drained_comm_s", "slowdown_pct"},
//             "flow_minus_packet_pct"}],     // flow slowdown - packet slowdown (points)
//    "blast_radius":{"jobs", "hosts", "switches", "links", "flows"},
//    "runs":{"baseline":{"simulated_s", "wall_s", "packets", "ecn_marks", "drops"}, "drained":{...}},
//    "links":[{"from", "to", "link", "baseline_utilisation", "drained_utilisation",
//              "drained_max_queue_packets", "drained_ecn_marks", "drained_drops"}],  // busiest drained first
//    "model":{"routing", "transport", "per_hop_delay_s", "per_message_overhead_s", "mtu_bytes",
//             "ecn_threshold_packets", "buffer_packets", "flow_routing"}}
//
// Pure functions; no I/O.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "model/snapshot.h"
#include "sim/packet/packet_sim.h"

namespace drainwise::report {

nlohmann::json PacketReportToJson(const sim::PacketReport& report, const model::Snapshot& snapshot, int max_links = 50);

// The per-job packet vs flow side-by-side table, the busiest links, and the
// runs' sizes.
std::string PacketReportText(const nlohmann::json& packet, int max_rows = 20);

}  // namespace drainwise::report
