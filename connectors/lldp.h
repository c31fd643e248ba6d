// lldpd's `lldpctl -f json` and `-f json0` -> neighbours -> links.
//
// lldpctl does not name the local system, so each report comes with the name
// of the host or switch it was taken on (file name, config).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/error.h"
#include "model/topology.h"

namespace drainwise::connectors {

struct LldpNeighbor {
  std::string local_port;     // our interface ("eth0")
  std::string remote_system;  // chassis name ("leaf-a01")
  std::string remote_port;    // port id when it is an ifname/local, else the port description
};

// One report. Accepts both shapes of -f json (one interface = object keyed by
// name, several = list of one-key objects; values or lists) and -f json0
// (everything wrapped in lists, values as [{"value": ...}]). Interfaces
// without a chassis name are skipped (nothing to link to).
Result<std::vector<LldpNeighbor>> ParseLldpctl(const nlohmann::json& doc);

struct LldpOptions {
  std::string name = "lldp";
  // Node name glob -> tier, first match wins; unmatched names are hosts.
  std::vector<std::pair<std::string, std::string>> tier_patterns = {
      {"*superspine*", "superspine"}, {"*core*", "superspine"}, {"*spine*", "spine"},
      {"*leaf*", "leaf"},             {"*tor*", "leaf"}};
  std::map<std::string, int> tier_levels;  // for tiers other than leaf/spine/superspine
  double default_gbps = 400;
  // "system:port" -> Gb/s, for links whose speed differs from the default;
  // when both ends are listed the lower wins.
  std::map<std::string, double> port_gbps;
  int gpus_per_host = 8;
};

// Merges reports (local system -> neighbours) into one topology. A link seen
// from both ends becomes one link; when a port reports two different
// neighbours the first (by local system name, then port) wins. Host-host
// adjacencies are dropped. Nodes are every system seen.
Result<model::TopologySpec> MergeLldpReports(const std::map<std::string, std::vector<LldpNeighbor>>& reports,
                                             const LldpOptions& options = {});

}  // namespace drainwise::connectors
