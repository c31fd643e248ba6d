// The routing core shared by the simulators: shortest-path ECMP on a Clos
// fabric with a drain applied (docs/model.md, "Routing model").
//
// Model. Traffic between two hosts follows the shortest paths (hop count) of
// the fabric with the drain applied. Hosts never transit: a path is
//   source host -> NIC link -> switch ... switch -> NIC link -> destination host.
// A path is a sequence of *links*, so parallel links are distinct paths and
// distinct next hops. Two splitting rules are provided:
//   - per-hop spray (SprayMode::kPerHop): at every node the traffic is split
//     evenly over its next-hop links on a shortest path (ECMP as a fluid);
//   - per-path spray (kPerPath): every shortest path carries the same share,
//     so the fraction on a link is (paths through it) / (all paths).
//
// Vocabulary.
//   Attachment   where traffic enters or leaves the switch fabric: a host and
//                a subset of its NIC links (all of them, or a single NIC).
//                NIC i of a host is the i-th entry of topology.neighbors(host).
//   PathTree     distances (in hops) from every node to one destination
//                attachment under a DrainMask, over switches only.
//   RoutePair    the shortest-path DAG from a source attachment to the
//                destination of a PathTree, with path counts and spray
//                fractions on every directed link of the DAG.
//   Directed link id: 2 * link + (0 if traversed a -> b, 1 if b -> a).
//
// Cost. PathTree::Build is one BFS over the switch graph (O(switch links)).
// RoutePair touches only the DAG reachable from the source (plus the
// adjacency scans of its nodes). Neither allocates once its buffers have
// grown to the fabric's size: keep one PathTree / RouteWorkspace per thread
// and reuse them.
//
// Thread safety. RoutingIndex is immutable after construction and safe for
// concurrent const use. PathTree and RouteWorkspace are per-thread scratch:
// a const PathTree may be read by several threads at once, but Build() and
// RoutePair() on the same workspace must not race.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "model/drain.h"
#include "model/ids.h"
#include "model/topology.h"

namespace drainwise::sim {

using model::DrainMask;
using model::LinkId;
using model::NodeId;

// 2 * link + (0 if a -> b, else 1).
inline uint32_t DirectedLinkId(LinkId link, bool a_to_b) { return 2 * link.value + (a_to_b ? 0 : 1); }
inline LinkId LinkOfDirected(uint32_t directed) { return LinkId(directed / 2); }
// Whether a directed link has a host at one end (a NIC link).
inline bool IsNicLink(const model::Topology& topo, uint32_t directed) {
  const model::Link& link = topo.link(LinkOfDirected(directed));
  return topo.node(link.a).is_host() || topo.node(link.b).is_host();
}

inline constexpr uint16_t kUnreachable = std::numeric_limits<uint16_t>::max();

// One hop of the switch-only adjacency, with the directed id of traversing
// `link` from the owning node towards `peer`.
struct Hop {
  uint32_t peer;      // NodeId value
  uint32_t link;      // LinkId value
  uint32_t directed;  // DirectedLinkId(link, owner == link.a)
};

// Where traffic enters or leaves the fabric: `host` and some of its NIC links
// (a subspan of topology.neighbors(host)). Cheap to copy; views the topology.
struct Attachment {
  NodeId host;
  std::span<const model::Adjacency> nics;
};

// Per-topology precomputation, built once per Snapshot and shared.
class RoutingIndex {
 public:
  // REQUIRES: `topology` outlives the index.
  explicit RoutingIndex(const model::Topology& topology);

  const model::Topology& topology() const { return *topology_; }
  size_t node_count() const { return topology_->node_count(); }
  size_t link_count() const { return topology_->link_count(); }
  size_t directed_link_count() const { return 2 * topology_->link_count(); }

  // Switch neighbors of `n` (empty for a host): the only hops a path may
  // take between its first and its last NIC link.
  std::span<const Hop> switch_hops(NodeId n) const {
    return {hops_.data() + offsets_[n.value], hops_.data() + offsets_[n.value + 1]};
  }
  double capacity_bps(LinkId l) const { return capacity_bps_[l.value]; }
  double capacity_bps_directed(uint32_t directed) const { return capacity_bps_[directed / 2]; }
  bool is_host(NodeId n) const { return is_host_[n.value] != 0; }

  // All NICs of `host` / NIC number `nic` of `host` (REQUIRES nic < NIC count).
  Attachment HostAttachment(NodeId host) const { return {host, topology_->neighbors(host)}; }
  Attachment NicAttachment(NodeId host, size_t nic) const { return {host, topology_->neighbors(host).subspan(nic, 1)}; }

  // Attachment classes: hosts whose NIC links go to the same multiset of
  // (switch, capacity) are interchangeable for routing (every metric between
  // hosts depends only on the class of each end, unless a drain names one of
  // their NIC links). Class ids are dense, 0..class_count()-1, numbered in
  // order of each class's first host id, so they do not depend on the order
  // of links in the input. Switches have no class (kNoClass).
  static constexpr uint32_t kNoClass = std::numeric_limits<uint32_t>::max();
  size_t class_count() const { return class_offsets_.size() - 1; }
  uint32_t class_of(NodeId host) const { return class_of_[host.value]; }
  // Hosts of class `c`, ascending ids; the first is its representative.
  std::span<const NodeId> class_hosts(uint32_t c) const {
    return {class_hosts_.data() + class_offsets_[c], class_hosts_.data() + class_offsets_[c + 1]};
  }
  NodeId class_representative(uint32_t c) const { return class_hosts_[class_offsets_[c]]; }

 private:
  const model::Topology* topology_;
  std::vector<uint32_t> offsets_;
  std::vector<Hop> hops_;
  std::vector<double> capacity_bps_;
  std::vector<uint8_t> is_host_;
  std::vector<uint32_t> class_of_;
  std::vector<uint32_t> class_offsets_;
  std::vector<NodeId> class_hosts_;
};

// Distances to one destination attachment under a mask: distance(n) is the
// number of links on a shortest path from n to the destination host, through
// switches only (kUnreachable when none). The destination host has distance
// 0; a switch directly attached by one of the attachment's live NICs has 1.
// Distances of other hosts are not computed (kUnreachable): use RoutePair.
class PathTree {
 public:
  PathTree() = default;

  // Recomputes the tree in place (no allocation once sized). path_count()
  // is always filled (it comes with the BFS); `with_counts` is ignored and
  // kept for source compatibility.
  void Build(const RoutingIndex& index, const DrainMask& mask, Attachment destination, bool with_counts = false);

  // As Build, but the BFS stops as soon as every switch in `targets` has its
  // distance (or nothing more is reachable). Distances up to the farthest
  // target's are exact, farther ones are left kUnreachable, and path counts
  // are not computed (has_counts() is false). Enough for RoutePair from any
  // source attachment whose NIC switches are all in `targets`, at a fraction
  // of a full BFS when they are near (same pod). Added for the flow-level
  // simulator, which routes many leaf pairs per snapshot.
  void BuildUntil(const RoutingIndex& index, const DrainMask& mask, Attachment destination,
                  std::span<const uint32_t> targets);

  Attachment destination() const { return destination_; }
  uint16_t distance(NodeId n) const { return dist_[n.value]; }
  std::span<const uint16_t> distances() const { return dist_; }
  // Number of shortest paths from switch n to the destination host (0 when
  // unreachable).
  double path_count(NodeId n) const { return count_[n.value]; }
  // Switches in order of increasing distance (BFS order): reachable ones only.
  std::span<const uint32_t> order() const { return order_; }
  bool has_counts() const { return has_counts_; }

  // True when `mask` leaves every distance of this tree unchanged, i.e. every
  // live node the tree reached still has a live next hop; then RoutePair
  // with this tree and `mask` routes exactly as a tree rebuilt under `mask`
  // (path_count() is stale, RoutePair's counts are not). Only the
  // neighborhood of the down elements is examined.
  // REQUIRES: the tree was built under a mask whose down set is contained in
  // `mask`'s (typically: the empty mask).
  bool StillShortestUnder(const RoutingIndex& index, const DrainMask& mask) const;

 private:
  friend class RouteWorkspace;
  Attachment destination_{};
  std::vector<uint16_t> dist_;
  std::vector<double> count_;
  std::vector<uint32_t> order_;
  std::vector<uint8_t> target_;  // BuildUntil scratch: 1 for a target not yet reached
  bool has_counts_ = false;
};

enum class SprayMode : uint8_t { kPerHop, kPerPath };

// One directed link of a pair's shortest-path DAG.
struct DagLink {
  uint32_t from;      // NodeId value
  uint32_t to;        // NodeId value
  uint32_t link;      // LinkId value
  uint32_t directed;  // directed link id
  double hop_share;   // fraction of the pair's traffic here under per-hop spray
  double path_share;  // (shortest paths through this link) / (all shortest paths)
};

// Summary of RoutePair.
struct PairRoute {
  bool connected = false;
  uint16_t hops = kUnreachable;  // links on a shortest path
  double paths = 0;              // number of shortest paths (parallel links multiply)
};

// Scratch for RoutePair; one per thread, reused across calls.
class RouteWorkspace {
 public:
  RouteWorkspace() = default;

  // The shortest-path DAG from `source` to tree.destination() under `mask`,
  // using the distances of `tree` (built under `mask`, or one for which
  // tree.StillShortestUnder(mask) holds). Fills links(): every directed link
  // of the DAG with its per-hop and per-path shares (both always computed;
  // shares of all links into the destination host sum to 1 when connected).
  // REQUIRES: source.host != tree.destination().host.
  PairRoute Route(const RoutingIndex& index, const DrainMask& mask, const PathTree& tree, Attachment source);

  // As Route, but only per-hop shares, and a link is "tainted" when it or a
  // node before it on the path is down in `taint` (e.g. the drain, while
  // routing on the undrained fabric). Returns the share of the traffic that
  // reaches the destination untouched in *clean_share (1 - crossing share).
  // hop_share is filled; path_share is left 0.
  PairRoute RouteTracking(const RoutingIndex& index, const DrainMask& mask, const PathTree& tree, Attachment source,
                          const DrainMask& taint, double* clean_share);

  // Links of the last Route(), grouped by distance to the destination
  // (farthest first). Valid until the next call.
  std::span<const DagLink> links() const { return links_; }

 private:
  PairRoute RouteImpl(const RoutingIndex& index, const DrainMask& mask, const PathTree& tree, Attachment source,
                      const DrainMask* taint, double* clean_share, bool path_shares);
  void Reserve(size_t nodes);

  std::vector<DagLink> links_;
  std::vector<double> frac_;    // per node: per-hop share arriving
  std::vector<double> clean_;   // per node: untainted share arriving (RouteTracking)
  std::vector<double> fwd_;     // per node: shortest paths from the source
  std::vector<double> bwd_;     // per node: shortest paths to the destination
  std::vector<uint32_t> seen_;  // per node: epoch of the last visit
  std::vector<uint32_t> frontier_, next_;
  uint32_t epoch_ = 0;
};

// Single-flow throughput of the last route under per-hop (or per-path)
// spray: min over DAG links of capacity / share. 0 when not connected.
double SprayThroughputBps(const RoutingIndex& index, std::span<const DagLink> links,
                          SprayMode mode = SprayMode::kPerHop);

}  // namespace drainwise::sim
