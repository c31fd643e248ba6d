// Route classes of the flow-level simulator (internal to sim/): the routes
// between switch pairs (NIC-to-NIC flows: the fabric between the two NICs'
// switches, shared by every host behind them) and between host pairs
// (explicit flows), computed once per mask and shared by every demand, every
// seed and, where a drain leaves them unchanged, every drained run.
//
// Also the NIC helpers and the platform-independent hash of the hash modes.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "model/drain.h"
#include "model/topology.h"
#include "sim/flow_solver.h"
#include "sim/flow_workload.h"
#include "sim/routing.h"
#include "sim/task_runner.h"

namespace drainwise::sim {

inline constexpr uint64_t kExplicitKey = 1ull << 63;

inline uint64_t Mix(uint64_t x) {  // splitmix64 finaliser: same on every platform
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
// h % n (n > 0), without a division when n is a power of two (a Clos
// fabric's ECMP groups, as a rule): the walks of the hash modes take one
// per hop, millions per seed.
inline uint64_t ModOf(uint64_t h, uint64_t n) { return (n & (n - 1)) == 0 ? h & (n - 1) : h % n; }
inline uint64_t Hash(uint64_t seed, uint64_t a, uint64_t b, uint64_t c) {
  return Mix(Mix(Mix(seed ^ 0x5DEECE66Dull) ^ a) ^ (b * 0x100000001B3ull)) ^ Mix(c);
}
// Hash(seed, a, b, c) for many b: the parts of (seed, a) and c mixed once.
class HashOf {
 public:
  HashOf(uint64_t seed, uint64_t a, uint64_t c) : head_(Mix(Mix(seed ^ 0x5DEECE66Dull) ^ a)), tail_(Mix(c)) {}
  uint64_t operator()(uint64_t b) const { return Mix(head_ ^ (b * 0x100000001B3ull)) ^ tail_; }

 private:
  uint64_t head_, tail_;
};

inline bool NicUp(const model::DrainMask& mask, const model::Adjacency& nic) {
  return !mask.link_down(nic.link) && !mask.node_down(nic.peer);
}

// NICs an endpoint uses: the named one while it is up, otherwise every other
// NIC of the host that is up (the fallback of docs/model.md).
void UsableNics(const model::Topology& topo, const model::DrainMask& mask, uint32_t host, int16_t nic,
                std::vector<int16_t>& out);
// Whether `mask` leaves every host and every NIC (its link and its switch)
// up: then UsableNics answers as with nothing drained.
bool EveryNicUp(const model::Topology& topo, const model::DrainMask& mask);

inline uint32_t NicLinkUp(const model::Topology& topo, uint32_t host, int16_t nic) {  // host -> switch
  const model::Adjacency& adj = topo.neighbors(NodeId(host))[nic];
  return DirectedLinkId(adj.link, topo.link(adj.link).a.value == host);
}
inline uint32_t NicLinkDown(const model::Topology& topo, uint32_t host, int16_t nic) {  // switch -> host
  return NicLinkUp(topo, host, nic) ^ 1u;
}
inline uint32_t NicSwitch(const model::Topology& topo, uint32_t host, int16_t nic) {
  return topo.neighbors(NodeId(host))[nic].peer.value;
}

// A link of a class's shortest-path DAG with both routing modes' shares.
struct ClassLink {
  uint32_t from;
  uint32_t to;
  uint32_t directed;
  double hop_share;
  double path_share;
};

// A class's DAG as the hash modes walk it: its distinct `from` nodes,
// ascending, where each one's links start, and of each link only the node
// it leads to and its directed id, in (from, directed) order. 8 B per link
// instead of a ClassLink's 32, made once per table and read by every seed's
// walks. Only host pairs (explicit flows) keep one: a switch pair's routes
// are a row of the table's HashFib below, made from its destination's tree
// (a pair routed with a tree of its own, when its source host is that
// tree's destination, gets an index that then moves into the row).
struct WalkIndex {
  struct Hop {
    uint32_t to, directed;
  };
  static constexpr uint32_t kNone = UINT32_MAX;
  std::vector<uint32_t> nodes, begin;  // begin: one more than nodes
  std::vector<Hop> hops;
  // The index of `node` in `nodes`; kNone when it is not in the DAG.
  uint32_t IndexOf(uint32_t node) const;
  // The links out of nodes[k].
  std::span<const Hop> OutOfIndex(uint32_t k) const {
    return std::span<const Hop>(hops.data() + begin[k], begin[k + 1] - begin[k]);
  }
  // The links out of `node`; empty when it is not in the DAG.
  std::span<const Hop> OutOf(uint32_t node) const;
};

// Groups of hops, each distinct one stored once.
struct HopGroups {
  using Hop = WalkIndex::Hop;
  std::vector<uint32_t> begin{0};
  std::vector<Hop> hops;
  std::unordered_multimap<uint64_t, uint32_t> by_hash;  // while building: content hash -> group

  size_t size() const { return begin.size() - 1; }
  std::span<const Hop> operator[](uint32_t g) const {
    return std::span<const Hop>(hops.data() + begin[g], begin[g + 1] - begin[g]);
  }
  // The id of a group with these hops, stored if new.
  uint32_t Intern(std::span<const Hop> out);
};

// The hash modes' switch-pair routes as a forwarding table: per destination
// switch (a row) and per switch, the group of links out of it on shortest
// paths to the destination, in directed-id order, as a class's WalkIndex
// lists them. A link out of switch n is on a shortest path from a source to
// the destination exactly when it leads one hop closer to the destination,
// whatever the source (for n on such a path), so every class of one
// destination shares the row, and groups are stored once however many
// (destination, switch) entries name them: on a Clos fabric a spine's
// uplinks are one group for every destination in another pod. On 32k-moe
// the baseline's walks read 4.3 M DAG links over ~55 MB as one WalkIndex
// per class (a cache miss at most hops); its table is 2.7 MB: 256 rows of
// 1,536 switches and 11,520 groups of 73,728 links. A row is made from the
// destination's shortest-path tree, every switch the tree reaches at once
// (a few more than the walks visit), so route classes compute no DAG per
// switch pair in the hash modes.
struct HashFib {
  static constexpr uint32_t kNone = UINT32_MAX;
  using Hop = WalkIndex::Hop;
  std::vector<uint32_t> switch_of;  // node id -> switch index, kNone for hosts
  uint32_t switches = 0;
  std::vector<uint32_t> group;  // per row, per switch index: its group, kNone off every walk of the row
  HopGroups groups;
  std::unordered_map<uint32_t, uint32_t> row_of_dest;  // destination switch -> row

  // The group of `node` in `row`; empty when none.
  std::span<const Hop> Out(uint32_t row, uint32_t node) const {
    const uint32_t s = switch_of[node];
    const uint32_t g = s == kNone ? kNone : group[static_cast<size_t>(row) * switches + s];
    return g == kNone ? std::span<const Hop>{} : groups[g];
  }
  // The row of destination switch `dest`, made (every entry kNone) when new.
  uint32_t RowOf(uint32_t dest);
  uint32_t* row_data(uint32_t row) { return group.data() + static_cast<size_t>(row) * switches; }
  size_t bytes() const;
};

// Routes between switch pairs (NIC-to-NIC flows: the fabric between the two
// NICs' switches, shared by every host behind them) and between host pairs
// (explicit flows, NIC links included), under one mask. A drained table
// borrows the routes the drain leaves unchanged from the baseline table
// (which outlives it) instead of copying them.
struct RouteTable {
  struct Class {
    uint64_t key = 0;
    uint32_t rep_src = 0, rep_dst = 0;  // representative hosts
    int16_t rep_src_nic = kAllNics, rep_dst_nic = kAllNics;
    bool computed = false;
    bool connected = false;
    bool clean = false;  // the baseline's route, unchanged by the drain
    uint16_t hops = 0;   // switch pair: links between the two switches; host pair: whole path
    // The DAG's links: kept for adaptive; empty in spray and spray-path,
    // whose shares list every link of the DAG (each is on a shortest path,
    // so its share is > 0), and in the hash modes, which walk `fib` or `walk`.
    std::span<const ClassLink> links;
    // Hash modes: a switch-pair class's row of a forwarding table, else (a
    // host pair) its walk index; owned by this table or the one borrowed from.
    const HashFib* fib = nullptr;
    uint32_t fib_row = 0;
    const WalkIndex* walk = nullptr;
    bool hashed() const { return fib != nullptr || walk != nullptr; }
    // The links out of `node` a walk may take (hash modes).
    std::span<const WalkIndex::Hop> Out(uint32_t node) const {
      return fib != nullptr    ? fib->Out(fib_row, node)
             : walk != nullptr ? walk->OutOf(node)
                               : std::span<const WalkIndex::Hop>{};
    }
    // Both walk the same routes (the same row or index).
    bool SameWalk(const Class& o) const {
      return fib == o.fib && walk == o.walk && (fib == nullptr || fib_row == o.fib_row);
    }
    std::span<const LinkShare> shares;  // the routing mode's share of each link (> 0 only); empty in hash modes
  };
  std::vector<Class> classes;
  std::deque<std::vector<ClassLink>> own_links;
  std::deque<std::vector<LinkShare>> own_shares;
  std::deque<WalkIndex> own_walks;
  std::unique_ptr<HashFib> own_fib;  // hash modes (a pointer: classes point into it and the table moves)
  std::unordered_map<uint64_t, uint32_t> by_key;

  static uint64_t SwitchKey(uint32_t a, uint32_t b) { return (static_cast<uint64_t>(a) << 31) | b; }
  static uint64_t HostKey(uint32_t a, uint32_t b) { return kExplicitKey | (static_cast<uint64_t>(a) << 31) | b; }

  uint32_t Register(uint64_t key, uint32_t src, int16_t src_nic, uint32_t dst, int16_t dst_nic) {
    auto [it, inserted] = by_key.emplace(key, static_cast<uint32_t>(classes.size()));
    if (inserted) {
      Class c;
      c.key = key;
      c.rep_src = src;
      c.rep_dst = dst;
      c.rep_src_nic = src_nic;
      c.rep_dst_nic = dst_nic;
      classes.push_back(c);
    }
    return it->second;
  }
  const Class* Find(uint64_t key) const {
    auto it = by_key.find(key);
    return it == by_key.end() ? nullptr : &classes[it->second];
  }
  // Registers the classes of `other`, in its order, not computed: what
  // registering again the demands `other` was registered from, under the
  // same mask, does (each demand's usable NICs and a lookup per NIC pair:
  // 524 k demands and ~8 ms per seed on 32k-moe, for 1,792 classes).
  void RegisterAll(const RouteTable& other) {
    classes.reserve(classes.size() + other.classes.size());
    for (const Class& c : other.classes) Register(c.key, c.rep_src, c.rep_src_nic, c.rep_dst, c.rep_dst_nic);
  }
};

// True when a route of `c` crosses an element `mask` takes down.
bool ClassTouchesDrain(const model::Topology& topo, const RouteTable::Class& c, const model::DrainMask& mask);

// Computes every registered class not yet computed: those of `baseline`
// that no element of `mask` touches are borrowed (same route; clean), the
// rest routed under `mask`, one PathTree per destination. With `same_mask`,
// `baseline` is a table computed under `mask` itself (another seed's): its
// routes are borrowed as they are, clean or not. Without `keep_links` only
// the shares are stored (spray, spray-path: 4.3 M class links on 32k-moe,
// 138 MB that nothing but the drain check reads). With `sort_by_from` (hash
// modes) only the walk index is stored (no links, no shares).
// With a `runner`, destinations are routed at once.
void ComputeClasses(const RoutingIndex& index, const model::DrainMask& mask, const RouteTable* baseline, bool same_mask,
                    bool per_path, bool sort_by_from, RouteTable& table, bool keep_links = true,
                    const TaskRunner* runner = nullptr);

}  // namespace drainwise::sim
