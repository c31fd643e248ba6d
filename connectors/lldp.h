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

#include "connectors/diagnostics.h"
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
// without a chassis name are skipped (nothing to link to) and named in
// `diagnostics`.
Result<std::vector<LldpNeighbor>> ParseLldpctl(const nlohmann::json& doc, Diagnostics* diagnostics = nullptr);

struct LldpOptions {
  std::string name = "lldp";
  // Name hints: glob (whole name, case-insensitive) -> tier, first match
  // wins. Hints only confirm or complete what the structure says (below);
  // a hint that disagrees with the structure is a warning, and the structure
  // wins. The defaults need the tier word at the start of the name or after a
  // '-', so "StorageSW" is not a "tor".
  std::vector<std::pair<std::string, std::string>> tier_patterns = {{"superspine*", "superspine"},
                                                                    {"*-superspine*", "superspine"},
                                                                    {"core*", "superspine"},
                                                                    {"*-core*", "superspine"},
                                                                    {"spine*", "spine"},
                                                                    {"*-spine*", "spine"},
                                                                    {"leaf*", "leaf"},
                                                                    {"*-leaf*", "leaf"},
                                                                    {"tor*", "leaf"},
                                                                    {"*-tor*", "leaf"}};
  std::map<std::string, int> tier_levels;  // for tiers other than leaf/spine/superspine
  // Host interfaces that are fabric NICs (globs, case-insensitive), e.g.
  // {"rdma*", "ens10?np0"}. Empty: every interface. Neighbours seen through other interfaces (storage,
  // management, front-end networks) are kept out of the compute fabric.
  std::vector<std::string> fabric_ports;
  // Name normalisation, applied to every system name before anything else:
  // an explicit alias (case-insensitive) first, then, with strip_domain, the
  // DNS domain ("leaf01.dc1.example.com" -> "leaf01"; IP addresses are kept).
  // Names then match case-insensitively; the first spelling seen is kept.
  std::map<std::string, std::string> aliases;
  bool strip_domain = true;
  double default_gbps = 400;
  // "system:port" -> Gb/s, for links whose speed differs from the default;
  // when both ends are listed the lower wins.
  std::map<std::string, double> port_gbps;
  int gpus_per_host = 8;
};

// Merges reports (local system -> neighbours) into one topology. Tiers come
// from structure, not names:
//  - a report's local system is a host (reports are taken on hosts), unless a
//    name hint says it is a switch (a switch's own lldpctl);
//  - a neighbour seen from a host is a switch; a neighbour seen only from
//    switches and matching no hint is a host;
//  - switches adjacent to hosts are leaves, the next layer up spines, then
//    superspines ("tierN" above, or tier_levels' names).
// Where a host reaches both hinted switches and a switch no hint names, and no
// fabric_ports rule decides, that switch is ambiguous: it is kept out of the
// fabric and named in `diagnostics` (never silently made a rail leaf). So are
// switches that cannot be placed, host-host adjacencies and neighbours through
// non-fabric ports. A link seen from both ends becomes one link; when a port
// reports two different neighbours the first (by local system name, then port)
// wins.
// Errors: a report without a local system name; no link left, with the count
// each rule dropped ("0 of 14 LLDP neighbours gave a fabric link: ...").
Result<model::TopologySpec> MergeLldpReports(const std::map<std::string, std::vector<LldpNeighbor>>& reports,
                                             const LldpOptions& options = {}, Diagnostics* diagnostics = nullptr);

// The name normalisation of MergeLldpReports (aliases, domain stripping), for
// other sources keyed by the same names (telemetry by FQDN).
std::string NormaliseSystemName(std::string_view name, const LldpOptions& options);

}  // namespace drainwise::connectors
