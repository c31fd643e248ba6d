#include "sim/flow_routes.h"

#include <algorithm>

#include "sim/buffers.h"

namespace drainwise::sim {

// NICs an endpoint uses: the named one while it is up, otherwise every other
// NIC of the host that is up (the fallback of docs/model.md).
void UsableNics(const model::Topology& topo, const model::DrainMask& mask, uint32_t host, int16_t nic,
                std::vector<int16_t>& out) {
  out.clear();
  auto nics = topo.neighbors(NodeId(host));
  if (mask.node_down(NodeId(host))) return;
  if (nic >= 0 && static_cast<size_t>(nic) < nics.size() && NicUp(mask, nics[nic])) {
    out.push_back(nic);
    return;
  }
  for (size_t i = 0; i < nics.size(); ++i) {
    if (static_cast<int>(i) != nic && NicUp(mask, nics[i])) out.push_back(static_cast<int16_t>(i));
  }
}

bool EveryNicUp(const model::Topology& topo, const model::DrainMask& mask) {
  for (uint32_t n = 0; n < topo.node_count(); ++n) {
    if (!topo.node(NodeId(n)).is_host()) continue;
    if (mask.node_down(NodeId(n))) return false;
    for (const model::Adjacency& nic : topo.neighbors(NodeId(n))) {
      if (!NicUp(mask, nic)) return false;
    }
  }
  return true;
}

uint32_t WalkIndex::IndexOf(uint32_t node) const {
  auto it = std::lower_bound(nodes.begin(), nodes.end(), node);
  return it == nodes.end() || *it != node ? kNone : static_cast<uint32_t>(it - nodes.begin());
}

std::span<const WalkIndex::Hop> WalkIndex::OutOf(uint32_t node) const {
  const uint32_t k = IndexOf(node);
  return k == kNone ? std::span<const Hop>{} : OutOfIndex(k);
}

namespace {

bool SameHops(std::span<const WalkIndex::Hop> x, std::span<const WalkIndex::Hop> y) {
  return std::equal(x.begin(), x.end(), y.begin(), y.end(), [](const WalkIndex::Hop& a, const WalkIndex::Hop& b) {
    return a.to == b.to && a.directed == b.directed;
  });
}

}  // namespace

uint32_t HopGroups::Intern(std::span<const Hop> out) {
  uint64_t h = out.size();
  for (const Hop& x : out) h = Mix(h ^ (static_cast<uint64_t>(x.to) << 32 | x.directed));
  for (auto [it, end] = by_hash.equal_range(h); it != end; ++it) {
    if (SameHops((*this)[it->second], out)) return it->second;
  }
  const auto g = static_cast<uint32_t>(size());
  hops.insert(hops.end(), out.begin(), out.end());
  begin.push_back(static_cast<uint32_t>(hops.size()));
  by_hash.emplace(h, g);
  return g;
}

uint32_t HashFib::RowOf(uint32_t dest) {
  auto [it, fresh] = row_of_dest.emplace(dest, static_cast<uint32_t>(row_of_dest.size()));
  if (fresh) group.resize(row_of_dest.size() * switches, kNone);
  return it->second;
}

size_t HashFib::bytes() const {
  return BytesOf(switch_of) + BytesOf(group) + BytesOf(groups.begin) + BytesOf(groups.hops) + row_of_dest.size() * 32 +
         row_of_dest.bucket_count() * sizeof(void*);
}

namespace {

uint32_t SourceSwitch(const RouteTable::Class& c) { return static_cast<uint32_t>((c.key >> 31) & 0xFFFFFFFFull); }
uint32_t DestSwitch(const RouteTable::Class& c) { return static_cast<uint32_t>(c.key & 0x7FFFFFFFull); }

// The table's forwarding table, made (no rows) when it has none.
HashFib& FibOf(const RoutingIndex& index, RouteTable& table) {
  if (!table.own_fib) {
    table.own_fib = std::make_unique<HashFib>();
    HashFib& f = *table.own_fib;
    f.switch_of.assign(index.node_count(), HashFib::kNone);
    for (uint32_t n = 0; n < index.node_count(); ++n) {
      if (!index.is_host(NodeId(n))) f.switch_of[n] = f.switches++;
    }
  }
  return *table.own_fib;
}

// Moves the hash modes' switch-pair classes of `todo` that still have a walk
// index (those routed with a tree of their own) to rows of the table's
// forwarding table, where the row agrees with their DAG at every switch (it
// always should: flow_routes.h); a class that would disagree keeps its index.
void MoveWalksToFib(const std::vector<uint32_t>& todo, RouteTable& table) {
  HashFib& f = *table.own_fib;
  for (uint32_t i : todo) {
    RouteTable::Class& c = table.classes[i];
    if ((c.key & kExplicitKey) != 0 || c.walk == nullptr) continue;
    const WalkIndex& w = *c.walk;
    const uint32_t r = f.RowOf(DestSwitch(c));
    uint32_t* row = f.row_data(r);
    bool agrees = true;
    for (uint32_t k = 0; agrees && k < w.nodes.size(); ++k) {
      const uint32_t s = f.switch_of[w.nodes[k]];
      agrees = s != HashFib::kNone && (row[s] == HashFib::kNone || SameHops(f.groups[row[s]], w.OutOfIndex(k)));
    }
    if (!agrees) continue;
    for (uint32_t k = 0; k < w.nodes.size(); ++k) {
      uint32_t& g = row[f.switch_of[w.nodes[k]]];
      if (g == HashFib::kNone) g = f.groups.Intern(w.OutOfIndex(k));
    }
    c.fib = &f;
    c.fib_row = r;
    c.walk = nullptr;
  }
}

}  // namespace

bool ClassTouchesDrain(const model::Topology& topo, const RouteTable::Class& c, const model::DrainMask& mask) {
  if (mask.empty()) return false;
  if (c.fib != nullptr) {
    // The switches a walk from the source can reach, and the links out of them.
    const HashFib& f = *c.fib;
    std::vector<uint8_t> seen(f.switches, 0);
    std::vector<uint32_t> stack{SourceSwitch(c)};
    seen[f.switch_of[stack.back()]] = 1;
    while (!stack.empty()) {
      const uint32_t n = stack.back();
      stack.pop_back();
      auto out = f.Out(c.fib_row, n);
      if (!out.empty() && mask.node_down(NodeId(n))) return true;
      for (const WalkIndex::Hop& h : out) {
        if (mask.link_down(LinkOfDirected(h.directed)) || mask.node_down(NodeId(h.to))) return true;
        const uint32_t s = f.switch_of[h.to];
        if (s != HashFib::kNone && !seen[s]) {
          seen[s] = 1;
          stack.push_back(h.to);
        }
      }
    }
    return false;
  }
  if (c.walk != nullptr) {
    const WalkIndex& w = *c.walk;
    for (size_t k = 0; k < w.nodes.size(); ++k) {
      if (mask.node_down(NodeId(w.nodes[k]))) return true;
      for (uint32_t h = w.begin[k]; h < w.begin[k + 1]; ++h) {
        if (mask.link_down(LinkOfDirected(w.hops[h].directed)) || mask.node_down(NodeId(w.hops[h].to))) return true;
      }
    }
    return false;
  }
  for (const ClassLink& l : c.links) {
    if (mask.link_down(LinkOfDirected(l.directed)) || mask.node_down(NodeId(l.from)) || mask.node_down(NodeId(l.to))) {
      return true;
    }
  }
  if (!c.links.empty()) return false;
  for (const LinkShare& s : c.shares) {  // no links kept: the shares name every link
    const model::Link& link = topo.link(LinkOfDirected(s.link));
    if (mask.link_down(LinkOfDirected(s.link)) || mask.node_down(link.a) || mask.node_down(link.b)) return true;
  }
  return false;
}

void ComputeClasses(const RoutingIndex& index, const model::DrainMask& mask, const RouteTable* baseline, bool same_mask,
                    bool per_path, bool sort_by_from, RouteTable& table, bool keep_links, const TaskRunner* runner) {
  std::vector<uint32_t> todo;
  for (uint32_t i = 0; i < table.classes.size(); ++i) {
    RouteTable::Class& c = table.classes[i];
    if (c.computed) continue;
    if (baseline != nullptr) {
      const RouteTable::Class* b = baseline->Find(c.key);
      // Under the same mask, a connected route avoids every element it
      // takes down (it was routed without them, or borrowed as one that
      // does): no walk over its DAG to check.
      if (b != nullptr && b->computed && b->connected &&
          (same_mask || !ClassTouchesDrain(index.topology(), *b, mask))) {
        c.computed = true;
        c.connected = true;
        c.clean = same_mask ? b->clean : true;
        c.hops = b->hops;
        c.links = b->links;
        c.shares = b->shares;
        c.fib = b->fib;
        c.fib_row = b->fib_row;
        c.walk = b->walk;
        continue;
      }
    }
    todo.push_back(i);
  }
  // Group by destination: the switch for NIC classes, the host for explicit.
  auto dest_of = [&](uint32_t i) -> uint64_t {
    const RouteTable::Class& c = table.classes[i];
    return (c.key & kExplicitKey) | (c.key & 0x7FFFFFFFull);
  };
  std::sort(todo.begin(), todo.end(), [&](uint32_t x, uint32_t y) {
    uint64_t dx = dest_of(x), dy = dest_of(y);
    return dx != dy ? dx < dy : x < y;
  });
  auto dst_attachment = [&](const RouteTable::Class& c) {
    return c.rep_dst_nic == kAllNics ? index.HostAttachment(NodeId(c.rep_dst))
                                     : index.NicAttachment(NodeId(c.rep_dst), static_cast<size_t>(c.rep_dst_nic));
  };
  auto src_attachment = [&](const RouteTable::Class& c) {
    return c.rep_src_nic == kAllNics ? index.HostAttachment(NodeId(c.rep_src))
                                     : index.NicAttachment(NodeId(c.rep_src), static_cast<size_t>(c.rep_src_nic));
  };
  // Classes routed with a tree of their own: the source host is the
  // destination host of the tree of their destination, built from the
  // first class of that destination (a host on both switches).
  std::vector<uint8_t> alone(todo.size(), 0);
  for (size_t k = 0, first = 0; k < todo.size(); ++k) {
    if (dest_of(todo[k]) != dest_of(todo[first])) first = k;
    alone[k] = table.classes[todo[first]].rep_dst == table.classes[todo[k]].rep_src;
  }
  // Each class's lists, made before the routing so that destinations can be
  // routed at once (a deque does not move its elements as it grows). In the
  // hash modes only the classes that need a DAG of their own get a walk
  // index: host pairs, and switch pairs routed with a tree of their own.
  std::vector<std::vector<LinkShare>*> shares_of(todo.size());
  std::vector<std::vector<ClassLink>*> links_of(todo.size());
  std::vector<WalkIndex*> walk_of(todo.size(), nullptr);
  for (size_t k = 0; k < todo.size(); ++k) {
    if (sort_by_from) {
      if ((table.classes[todo[k]].key & kExplicitKey) != 0 || alone[k]) {
        walk_of[k] = &table.own_walks.emplace_back();
      }
      continue;
    }
    shares_of[k] = &table.own_shares.emplace_back();
    if (keep_links) links_of[k] = &table.own_links.emplace_back();
  }
  // Hash modes: the rows of a range's destinations, made from each
  // destination's tree in groups of the range's own, joined into the
  // table's forwarding table once every range is routed (flow_routes.h).
  // A switch-pair class routed with its destination's tree needs no DAG of
  // its own: a row lists, at every switch the tree reaches, the links one
  // hop closer (as RouteWorkspace::Route would take them for any source).
  struct RangeRows {
    std::vector<uint32_t> dests, group;  // per row: its destination, and per switch its group
    HopGroups groups;
    std::vector<std::pair<uint32_t, uint32_t>> class_row;  // (k in todo, row)
  };
  const HashFib* fib = sort_by_from ? &FibOf(index, table) : nullptr;
  // Routes the classes todo[kb, ke) (whole destinations) with one tree.
  auto route_range = [&](size_t kb, size_t ke, RangeRows& rows) {
    PathTree tree, own_tree;
    RouteWorkspace ws;
    std::vector<WalkIndex::Hop> out;
    uint64_t tree_dest = UINT64_MAX;
    uint32_t tree_row = HashFib::kNone;  // the row of `tree`'s destination, once made
    auto make_row = [&]() {
      const auto r = static_cast<uint32_t>(rows.dests.size());
      rows.dests.push_back(static_cast<uint32_t>(tree_dest));  // a switch-pair destination: the switch
      rows.group.resize(rows.dests.size() * fib->switches, HashFib::kNone);
      uint32_t* row = rows.group.data() + static_cast<size_t>(r) * fib->switches;
      for (uint32_t u : tree.order()) {
        const uint16_t du = tree.distance(NodeId(u));
        if (du < 2) continue;  // the destination's switch: the walk ends there
        out.clear();
        for (const Hop& h : index.switch_hops(NodeId(u))) {
          if (tree.distance(NodeId(h.peer)) + 1 == du && !mask.link_down(LinkId(h.link)) &&
              !mask.node_down(NodeId(h.peer))) {
            out.push_back({h.peer, h.directed});
          }
        }
        std::sort(out.begin(), out.end(),
                  [](const WalkIndex::Hop& x, const WalkIndex::Hop& y) { return x.directed < y.directed; });
        row[fib->switch_of[u]] = rows.groups.Intern(out);
      }
      return r;
    };
    std::vector<ClassLink> sorted;  // hash modes: a class's links by (from, directed)
    // The BFS of a destination's tree stops once the switches of all its
    // sources are reached: a same-pod leaf pair costs a pod, not the fabric.
    std::vector<uint32_t> targets;
    auto add_targets = [&](const RouteTable::Class& c) {
      for (const model::Adjacency& nic : src_attachment(c).nics) targets.push_back(nic.peer.value);
    };
    for (size_t k = kb; k < ke; ++k) {
      const uint32_t i = todo[k];
      RouteTable::Class& c = table.classes[i];
      if (dest_of(i) != tree_dest) {
        targets.clear();
        for (size_t m = k; m < ke && dest_of(todo[m]) == dest_of(i); ++m) add_targets(table.classes[todo[m]]);
        tree.BuildUntil(index, mask, dst_attachment(c), targets);
        tree_dest = dest_of(i);
        tree_row = HashFib::kNone;
      }
      const PathTree* t = &tree;
      if (alone[k]) {  // a host on both switches: route to its own rep
        targets.clear();
        add_targets(c);
        own_tree.BuildUntil(index, mask, dst_attachment(c), targets);
        t = &own_tree;
      }
      if (sort_by_from && (c.key & kExplicitKey) == 0 && t == &tree) {
        // Connected when the source's NIC switch is reached (the tree is
        // this mask's: every switch it reaches has a next hop), with one
        // link per hop between the two switches.
        uint16_t best = kUnreachable;
        for (const model::Adjacency& nic : src_attachment(c).nics) {
          if (!mask.link_down(nic.link) && !mask.node_down(nic.peer)) best = std::min(best, tree.distance(nic.peer));
        }
        c.computed = true;
        c.connected = best != kUnreachable && !mask.node_down(tree.destination().host);
        if (!c.connected) continue;
        c.hops = static_cast<uint16_t>(best - 1);
        if (tree_row == HashFib::kNone) tree_row = make_row();
        rows.class_row.push_back({static_cast<uint32_t>(k), tree_row});
        continue;
      }
      PairRoute r = ws.Route(index, mask, *t, src_attachment(c));
      c.computed = true;
      c.connected = r.connected;
      if (!r.connected) continue;
      const bool nic_class = (c.key & kExplicitKey) == 0;
      c.hops = static_cast<uint16_t>(nic_class ? r.hops - 2 : r.hops);
      auto in_fabric = [&](const DagLink& l) {
        return !nic_class || (!index.is_host(NodeId(l.from)) && !index.is_host(NodeId(l.to)));
      };
      if (sort_by_from) {  // hash modes: the walk index only
        sorted.clear();
        for (const DagLink& l : ws.links()) {
          if (in_fabric(l)) sorted.push_back({l.from, l.to, l.directed, 0, 0});
        }
        std::sort(sorted.begin(), sorted.end(), [](const ClassLink& x, const ClassLink& y) {
          return x.from != y.from ? x.from < y.from : x.directed < y.directed;
        });
        WalkIndex& w = *walk_of[k];
        w.hops.reserve(sorted.size());
        for (uint32_t j = 0; j < sorted.size(); ++j) {
          if (j == 0 || sorted[j].from != sorted[j - 1].from) {
            w.nodes.push_back(sorted[j].from);
            w.begin.push_back(j);
          }
          w.hops.push_back({sorted[j].to, sorted[j].directed});
        }
        w.begin.push_back(static_cast<uint32_t>(sorted.size()));
        c.walk = &w;
        continue;
      }
      // Sized once: a cross-pod class has thousands of links, and growing
      // by doubling copied (and page-faulted) a fifth of a 32k-moe run.
      // Spray and spray-path read only the shares; adaptive the links too.
      auto& shares = *shares_of[k];
      shares.reserve(ws.links().size());
      if (keep_links) {
        auto& links = *links_of[k];
        links.reserve(ws.links().size());
        for (const DagLink& l : ws.links()) {
          if (in_fabric(l)) links.push_back({l.from, l.to, l.directed, l.hop_share, l.path_share});
        }
        for (const ClassLink& l : links) {
          const double share = per_path ? l.path_share : l.hop_share;
          if (share > 0) shares.push_back({l.directed, share});
        }
        c.links = links;
      } else {
        for (const DagLink& l : ws.links()) {
          const double share = per_path ? l.path_share : l.hop_share;
          if (in_fabric(l) && share > 0) shares.push_back({l.directed, share});
        }
      }
      c.shares = shares;
    }
  };
  // Through the runner: a few ranges of whole destinations per thread, of
  // about equal class counts (a class's route does not depend on which
  // thread or tree computes it).
  std::vector<size_t> cuts{0};
  const size_t ranges = runner != nullptr && *runner ? 16 : 1;
  for (size_t k = 1; k < todo.size(); ++k) {
    if (dest_of(todo[k]) != dest_of(todo[k - 1]) && k - cuts.back() >= todo.size() / ranges) cuts.push_back(k);
  }
  cuts.push_back(todo.size());
  std::vector<RangeRows> rows(cuts.size() - 1);
  RunTasks(runner != nullptr ? *runner : TaskRunner{}, cuts.size() - 1,
           [&](size_t r) { route_range(cuts[r], cuts[r + 1], rows[r]); });
  if (sort_by_from) {
    // The ranges' rows into the table's, in range order; then the classes
    // routed with a tree of their own.
    HashFib& f = *table.own_fib;
    std::vector<uint32_t> global;
    for (RangeRows& rr : rows) {
      global.resize(rr.groups.size());
      for (uint32_t g = 0; g < rr.groups.size(); ++g) global[g] = f.groups.Intern(rr.groups[g]);
      std::vector<uint32_t> row_of(rr.dests.size());
      for (uint32_t r = 0; r < rr.dests.size(); ++r) {
        row_of[r] = f.RowOf(rr.dests[r]);
        uint32_t* to = f.row_data(row_of[r]);
        const uint32_t* from = rr.group.data() + static_cast<size_t>(r) * f.switches;
        for (uint32_t sw = 0; sw < f.switches; ++sw) {
          if (to[sw] == HashFib::kNone && from[sw] != HashFib::kNone) to[sw] = global[from[sw]];
        }
      }
      for (auto [k, r] : rr.class_row) {
        RouteTable::Class& c = table.classes[todo[k]];
        c.fib = &f;
        c.fib_row = row_of[r];
      }
    }
    MoveWalksToFib(todo, table);
    f.groups.by_hash.clear();  // a later build (a drained table's) makes its own
    // The walk indices moved to the table are not needed any more.
    for (size_t k = 0; k < todo.size(); ++k) {
      if (walk_of[k] != nullptr && table.classes[todo[k]].walk != walk_of[k]) *walk_of[k] = WalkIndex{};
    }
  }
}

}  // namespace drainwise::sim
