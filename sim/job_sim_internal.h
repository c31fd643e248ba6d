// Internals of the job-level simulator (sim/job_sim.h), shared by its files:
// the per-snapshot index (job_sim_index.cpp), the per-thread workspace
// (job_sim_workspace.cpp), the fabric-level part (job_fabric_impact.cpp) and
// the per-job assessment (job_assessor.cpp). Not part of the public API.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "model/drain.h"
#include "model/error.h"
#include "sim/job_sim.h"
#include "sim/routing.h"

namespace drainwise::sim {

inline constexpr uint32_t kNoPair = std::numeric_limits<uint32_t>::max();

// Path counts are sums of products of small integers held in doubles: exact
// up to 2^53, so "reduced" can be a strict comparison with a relative guard.
inline bool Fewer(double after, double before) { return after < before * (1 - 1e-12); }

struct JobSimIndex::Impl {
  struct PairBefore {
    uint32_t src_class = 0;
    uint32_t dst_class = 0;
    uint16_t hops = kUnreachable;
    double paths = 0;
    double spray_bps = 0;
  };
  struct Member {
    uint32_t cls;
    uint32_t count;  // hosts of the job in this class
  };

  // Before-drain tree towards each class's representative (first host);
  // null for classes no job uses.
  std::vector<std::unique_ptr<PathTree>> class_tree;
  std::vector<PairBefore> pairs;
  // Per job: its members (classes with host counts) and the k x k matrix of
  // pair ids (kNoPair on the diagonal of a class holding one host).
  std::vector<uint32_t> member_offsets;
  std::vector<Member> members;
  std::vector<uint32_t> pair_offsets;
  std::vector<uint32_t> job_pairs;
  std::vector<int> job_gpus;
  // Per job: a bitset over node ids of the switches some pair's shortest
  // paths cross before any drain (prefilter: a job whose bits miss every
  // drained element is unaffected without per-pair work).
  size_t words_per_job = 0;
  std::vector<uint64_t> job_switch_bits;
  // Fabric-level: capacity group of every link (groups sorted by tier
  // levels, then pod) and each leaf's uplink count before any drain.
  std::vector<uint32_t> link_group;
  std::vector<CapacityChange> groups;
  std::vector<int> uplinks_before;

  // Bundles: the links from a node to one peer, parallel links together
  // (they share every split evenly). Node u's bundles are
  // bundles[bundle_offsets[u] .. bundle_offsets[u+1]); bundle_of[2l + side]
  // is the bundle of link l seen from its a (side 0) or b (side 1) end.
  struct Bundle {
    uint32_t peer;
    uint32_t first;  // into bundle_links
    uint32_t count;
    double min_capacity_bps;
  };
  std::vector<uint32_t> bundle_offsets;
  std::vector<Bundle> bundles;
  std::vector<uint32_t> bundle_links;
  std::vector<uint32_t> bundle_of;
  // Per used class B: for every switch, its next-hop bundles towards B's
  // representative on the undrained fabric (CSR over node ids).
  struct NextHop {
    uint32_t peer;
    uint32_t count;  // links in the bundle
  };
  struct NextHops {
    std::vector<uint32_t> offsets;
    std::vector<NextHop> entries;
    std::vector<uint32_t> total;   // per node: next-hop links
    std::vector<double> min_cap;   // per node: smallest next-hop link capacity
    std::vector<uint8_t> uniform;  // per node: every next-hop bundle has min_cap
  };
  std::vector<NextHops> class_next;

  bool JobCrosses(uint32_t job, NodeId n) const {
    return (job_switch_bits[job * words_per_job + n.value / 64] >> (n.value % 64)) & 1;
  }
};

// The host of class `c` to route from/to: the first (or second) host of the
// class that the drain does not touch.
NodeId CleanHost(const RoutingIndex& routing, uint32_t c, const std::vector<uint8_t>& dirty, int skip);

struct JobSimWorkspace::State {
  RouteWorkspace route;
  // Trees built during one assessment (towards a host, before or after).
  std::vector<std::unique_ptr<PathTree>> pool;
  size_t pool_used = 0;
  // Per node and "after" flag: epoch and the tree towards that host.
  std::vector<uint32_t> tree_epoch[2];
  std::vector<const PathTree*> tree_of[2];
  // Per class pair: epoch and the after-drain result.
  struct After {
    bool connected = false;
    double paths = 0;
    double spray_bps = 0;
    double clean_share = 1;
  };
  std::vector<uint32_t> pair_epoch;
  std::vector<After> after;
  std::vector<uint8_t> dirty;  // per node: a named drained link is one of its NICs
  std::vector<NodeId> dirty_hosts;
  uint32_t epoch = 0;
  const JobSimIndex* last_index = nullptr;

  // Bundles under the current drain: live link count and the smallest live
  // capacity (index values except for `touched` ones, restored in Begin).
  std::vector<uint32_t> live_count;
  std::vector<double> live_cap;
  std::vector<uint32_t> touched;
  std::vector<uint32_t> node_touched;  // epoch: endpoint of a down link
  std::vector<uint8_t> down;           // per node: drained switch (current drain)
  std::vector<uint32_t> down_degree;   // per node: its down links (current drain)
  std::vector<uint32_t> degree_list;   // nodes with down_degree set
  std::vector<NodeId> down_list;
  // Per class: epoch and the switches that lost every surviving shortest
  // path towards it ("dead"); dead_mark stamps the current class's set.
  std::vector<uint32_t> dest_epoch;
  std::vector<std::vector<uint32_t>> dead_lists;
  std::vector<uint32_t> dead_mark;
  // Per class: the live switches with a dead next hop towards it (a superset
  // is fine); pred_mark stamps the current class's set with dead_epoch. A
  // switch neither touched nor marked keeps its whole next-hop split, which
  // lets Fused skip the per-next-hop checks for it.
  std::vector<std::vector<uint32_t>> pred_lists;
  std::vector<uint32_t> pred_mark;
  std::vector<uint32_t> dead_links;  // per marked switch: next-hop links to dead peers
  uint32_t dead_epoch = 0;
  uint32_t current_dest = RoutingIndex::kNoClass;
  std::vector<uint32_t> worklist;
  // Fused route scratch, per node.
  std::vector<double> clean, frac, fwd;
  std::vector<uint32_t> seen;
  uint32_t seen_epoch = 0;
  // Fused's nodes in visiting order, level after level (level L is
  // order[level_start[L] .. level_start[L - 1])), and each level's bottleneck.
  std::vector<uint32_t> order;
  std::vector<size_t> level_start;
  std::vector<double> level_min;
  // Fused's memo for one destination class (reset by Begin and when the
  // class changes). What Fused computes below a level depends only on that
  // level's nodes, in order, and their (clean, frac, fwd) values; slot L
  // holds the last run's level-L nodes and values with what followed from
  // them: the destination's values and the smallest bottleneck of levels
  // L .. 1. A later run whose level L is bit-for-bit the same takes the
  // result from the slot.
  struct LevelSlot {
    bool valid = false;
    std::vector<uint32_t> nodes;
    std::vector<double> values;  // clean, frac, fwd per node
    double dst_clean = 0, dst_frac = 0, dst_fwd = 0;
    double bottleneck = 0;
  };
  uint32_t memo_dest = RoutingIndex::kNoClass;
  std::vector<LevelSlot> memo;
  // For tests: memo_off runs every pass to the end; memo_hits counts the
  // passes the memo finished (over the workspace's life).
  bool memo_off = false;
  int64_t memo_hits = 0;

  // Starts an assessment on `index`: restores what the previous one changed
  // and advances the epoch (a new index resets every stamp).
  void Begin(const JobSimIndex& index);
  // A tree from the pool, valid until the next Begin.
  PathTree* NewTree();
};

// Checks that every drained id names a switch / link of `topo`.
Status ValidateDrain(const model::Topology& topo, const model::Drain& drain);

// The fabric-level part of an assessment (no routing).
FabricImpact FabricImpactOf(const JobSimIndex& index, const model::Drain& drain, const DrainMask& mask);

}  // namespace drainwise::sim
