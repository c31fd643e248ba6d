// Topology exports of lab and analysis tools: containerlab's
// topology-data.json, networkx node_link_data, Batfish layer-1 topology.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/error.h"
#include "model/topology.h"

namespace drainwise::connectors {

struct GraphOptions {
  std::string name;  // TopologySpec.name; empty = the document's own name if any
  // A node's role (containerlab label `role`, networkx attribute `role`) ->
  // tier; "host" (or any role listed in host_roles) makes a host. Nodes with
  // no known role are classified by `tier_patterns` on their name; unmatched
  // names are hosts.
  std::map<std::string, std::string> role_tiers = {
      {"leaf", "leaf"}, {"tor", "leaf"}, {"spine", "spine"}, {"superspine", "superspine"}, {"core", "superspine"}};
  std::vector<std::string> host_roles = {"host", "server", "gpu"};
  std::vector<std::pair<std::string, std::string>> tier_patterns = {{"*superspine*", "superspine"},
                                                                    {"*core*", "superspine"},
                                                                    {"*spine*", "spine"},
                                                                    {"*leaf*", "leaf"},
                                                                    {"*tor*", "leaf"}};
  double default_gbps = 400;  // when the document gives no speed
  int gpus_per_host = 8;
};

// containerlab topology-data.json: nodes{name: {labels{role}}}, links[{a{node,
// interface}, z{node, interface}}].
Result<model::TopologySpec> ParseContainerlabData(const nlohmann::json& doc, const GraphOptions& options = {});

// networkx node_link_data: nodes[{id, role?}], edges (>= 3.6) or links
// [{source, target, src_if?, dst_if?, speed_gbps?}]. Multigraph parallel edges
// are kept.
Result<model::TopologySpec> ParseNetworkxNodeLink(const nlohmann::json& doc, const GraphOptions& options = {});

// Batfish layer-1 topology: edges[{node1{hostname, interfaceName}, node2{...}}],
// listed in both directions: deduplicated. Roles from the name patterns.
Result<model::TopologySpec> ParseBatfishLayer1(const nlohmann::json& doc, const GraphOptions& options = {});

}  // namespace drainwise::connectors
