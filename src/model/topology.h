// The fabric: switches, hosts and full-duplex links, immutable once built.
//
// Built from a TopologySpec (external names, as parsed from JSON or a
// connector) by BuildTopology(), which validates everything and names the
// offending item in its error. Adjacency is a flat CSR array so simulators can
// walk it without pointer chasing. A Topology is never modified: a drain is a
// mask applied on top of it (see drain.h), and a new document makes a new
// Topology.
//
// Thread safety: const methods are safe to call concurrently.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/error.h"
#include "model/ids.h"

namespace drainwise::model {

enum class NodeKind { kSwitch, kHost };

// Tier levels used for the well-known tier names; any other tier name needs an
// explicit level. Hosts are level 0.
inline constexpr int kLeafLevel = 1;
inline constexpr int kSpineLevel = 2;
inline constexpr int kSuperspineLevel = 3;

struct NodeSpec {
  std::string id;
  NodeKind kind = NodeKind::kSwitch;
  std::string tier;  // switches only: "leaf", "spine", "superspine" or custom
  int level = 0;     // 0 = derive from tier (hosts are always 0)
  std::string pod;
  std::string plane;
  std::map<std::string, std::string> domains;  // failure domains: rack, row, power...
  int gpus = 0;                                // hosts only
};

struct LinkSpec {
  std::string a;
  std::string b;
  double gbps = 0;  // capacity per direction (full duplex)
  std::string a_port;
  std::string b_port;
};

// How the fabric spreads traffic over its equal-cost paths, as the topology
// document declares it (docs/formats.md, "load_balancing"). The flow-level
// simulator uses it unless a request names its own routing.
struct LoadBalancing {
  // "spray", "spray-path", "hash", "hash-rehash" or "adaptive"
  // (sim::ParseFlowRouting's names); empty: not declared.
  std::string routing;
  int hash_seeds = 0;  // hash modes: seeds to average over; 0 = the configured count

  bool declared() const { return !routing.empty(); }
};

struct TopologySpec {
  std::string name;
  std::vector<NodeSpec> nodes;
  std::vector<LinkSpec> links;
  LoadBalancing load_balancing;
};

struct Node {
  std::string name;
  NodeKind kind = NodeKind::kSwitch;
  std::string tier;  // empty for hosts
  int level = 0;     // 0 for hosts, >= 1 for switches
  std::string pod;
  std::string plane;
  std::map<std::string, std::string> domains;
  int gpus = 0;

  bool is_host() const { return kind == NodeKind::kHost; }
  bool is_switch() const { return kind == NodeKind::kSwitch; }
};

struct Link {
  NodeId a;
  NodeId b;
  double capacity_bps = 0;  // per direction
  std::string a_port;
  std::string b_port;

  NodeId Other(NodeId n) const { return n == a ? b : a; }
};

// One entry of a node's adjacency: the link and the node at its far end.
struct Adjacency {
  LinkId link;
  NodeId peer;
};

class Topology {
 public:
  Topology() = default;

  const std::string& name() const { return name_; }
  const LoadBalancing& load_balancing() const { return load_balancing_; }
  size_t node_count() const { return nodes_.size(); }
  size_t link_count() const { return links_.size(); }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<Link>& links() const { return links_; }
  const Node& node(NodeId id) const { return nodes_[id.value]; }
  const Link& link(LinkId id) const { return links_[id.value]; }

  // Every link of `n` with its far end, in the order the links were declared.
  // For a host this is its list of NICs: NIC i is the i-th entry.
  std::span<const Adjacency> neighbors(NodeId n) const {
    return {adjacency_.data() + offsets_[n.value], adjacency_.data() + offsets_[n.value + 1]};
  }

  std::optional<NodeId> FindNode(std::string_view name) const;
  // "a -> b" with port names when present, for messages and reports.
  std::string LinkName(LinkId id) const;

  const std::vector<NodeId>& hosts() const { return hosts_; }
  const std::vector<NodeId>& switches() const { return switches_; }
  int max_level() const { return max_level_; }
  // Tier name of each distinct switch level, ordered by level.
  const std::map<int, std::string>& tiers() const { return tiers_; }
  int total_gpus() const { return total_gpus_; }

 private:
  friend Result<Topology> BuildTopology(const TopologySpec& spec);

  std::string name_;
  LoadBalancing load_balancing_;
  std::vector<Node> nodes_;
  std::vector<Link> links_;
  std::vector<uint32_t> offsets_;  // CSR: node n's adjacency is [offsets_[n], offsets_[n+1])
  std::vector<Adjacency> adjacency_;
  // Transparent hash and equality: FindNode(string_view) looks up without building a std::string.
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, NodeId, NameHash, std::equal_to<>> by_name_;
  std::vector<NodeId> hosts_;
  std::vector<NodeId> switches_;
  std::map<int, std::string> tiers_;
  int max_level_ = 0;
  int total_gpus_ = 0;
};

// Validates `spec` and builds the immutable topology. Errors (kInvalidArgument)
// name the offending node or link: duplicate ids, unknown endpoints, self
// loops, non-positive capacity, host-to-host links, switches of an unknown
// tier without a level. A host without links is allowed (it is cut off).
Result<Topology> BuildTopology(const TopologySpec& spec);

// Level for a well-known tier name, or 0 when the name is not one of them.
int LevelForTier(std::string_view tier);

}  // namespace drainwise::model
