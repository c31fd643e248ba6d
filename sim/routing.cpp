#include "sim/routing.h"

#include <algorithm>
#include <map>
#include <utility>

namespace drainwise::sim {

namespace {

bool Alive(const DrainMask& mask, uint32_t link, uint32_t peer) {
  return !mask.link_down(LinkId(link)) && !mask.node_down(NodeId(peer));
}

}  // namespace

RoutingIndex::RoutingIndex(const model::Topology& topology) : topology_(&topology) {
  const size_t n = topology.node_count();
  is_host_.resize(n);
  for (size_t i = 0; i < n; ++i) is_host_[i] = topology.nodes()[i].is_host() ? 1 : 0;

  capacity_bps_.resize(topology.link_count());
  for (size_t l = 0; l < topology.link_count(); ++l) capacity_bps_[l] = topology.links()[l].capacity_bps;

  offsets_.assign(n + 1, 0);
  for (size_t i = 0; i < n; ++i) {
    uint32_t deg = 0;
    if (!is_host_[i]) {
      for (const model::Adjacency& adj : topology.neighbors(NodeId(i))) deg += is_host_[adj.peer.value] ? 0 : 1;
    }
    offsets_[i + 1] = offsets_[i] + deg;
  }
  hops_.reserve(offsets_.back());
  for (size_t i = 0; i < n; ++i) {
    if (is_host_[i]) continue;
    for (const model::Adjacency& adj : topology.neighbors(NodeId(i))) {
      if (is_host_[adj.peer.value]) continue;
      bool a_to_b = topology.link(adj.link).a == NodeId(i);
      hops_.push_back(Hop{adj.peer.value, adj.link.value, DirectedLinkId(adj.link, a_to_b)});
    }
  }

  // Attachment classes: key = sorted multiset of (switch, capacity). Numbered
  // by first host id so the numbering follows node ids, not link order.
  class_of_.assign(n, kNoClass);
  std::map<std::vector<std::pair<uint32_t, double>>, uint32_t> classes;
  std::vector<uint32_t> sizes;
  std::vector<std::pair<uint32_t, double>> key;
  for (NodeId h : topology.hosts()) {
    key.clear();
    for (const model::Adjacency& adj : topology.neighbors(h)) {
      key.emplace_back(adj.peer.value, capacity_bps_[adj.link.value]);
    }
    std::sort(key.begin(), key.end());
    auto [it, inserted] = classes.emplace(key, static_cast<uint32_t>(sizes.size()));
    if (inserted) sizes.push_back(0);
    class_of_[h.value] = it->second;
    ++sizes[it->second];
  }
  class_offsets_.assign(sizes.size() + 1, 0);
  for (size_t c = 0; c < sizes.size(); ++c) class_offsets_[c + 1] = class_offsets_[c] + sizes[c];
  class_hosts_.resize(class_offsets_.back());
  std::vector<uint32_t> fill(class_offsets_.begin(), class_offsets_.end() - 1);
  for (NodeId h : topology.hosts()) class_hosts_[fill[class_of_[h.value]]++] = h;  // hosts() ascending
}

void PathTree::Build(const RoutingIndex& index, const DrainMask& mask, Attachment destination, bool with_counts) {
  const size_t n = index.node_count();
  destination_ = destination;
  dist_.assign(n, kUnreachable);
  count_.assign(n, 0.0);
  order_.clear();
  has_counts_ = true;  // counts come for free with the BFS below
  (void)with_counts;
  dist_[destination.host.value] = 0;
  for (const model::Adjacency& nic : destination.nics) {
    if (!Alive(mask, nic.link.value, nic.peer.value)) continue;
    if (dist_[nic.peer.value] == kUnreachable) {
      dist_[nic.peer.value] = 1;
      order_.push_back(nic.peer.value);
    }
    count_[nic.peer.value] += 1;  // parallel NIC links are distinct paths
  }
  // BFS over switches. When u is popped every node closer than u is final,
  // so its path count can be summed in the same neighbor scan.
  for (size_t i = 0; i < order_.size(); ++i) {
    const uint32_t u = order_[i];
    const uint16_t du = dist_[u];
    double c = 0;
    for (const Hop& hop : index.switch_hops(NodeId(u))) {
      if (!Alive(mask, hop.link, hop.peer)) continue;
      uint16_t& dp = dist_[hop.peer];
      if (dp == kUnreachable) {
        dp = static_cast<uint16_t>(du + 1);
        order_.push_back(hop.peer);
      } else if (du > 1 && dp + 1 == du) {
        c += count_[hop.peer];
      }
    }
    if (du > 1) count_[u] = c;
  }
}

void PathTree::BuildUntil(const RoutingIndex& index, const DrainMask& mask, Attachment destination,
                          std::span<const uint32_t> targets) {
  const size_t n = index.node_count();
  destination_ = destination;
  dist_.assign(n, kUnreachable);
  count_.assign(n, 0.0);
  order_.clear();
  has_counts_ = false;
  target_.assign(n, 0);
  size_t missing = 0;
  for (uint32_t t : targets) {
    if (!target_[t]) {
      target_[t] = 1;
      ++missing;
    }
  }
  auto reach = [&](uint32_t v, uint16_t d) {
    dist_[v] = d;
    order_.push_back(v);
    if (target_[v]) {
      target_[v] = 0;
      --missing;
    }
  };
  dist_[destination.host.value] = 0;
  for (const model::Adjacency& nic : destination.nics) {
    if (!Alive(mask, nic.link.value, nic.peer.value)) continue;
    if (dist_[nic.peer.value] == kUnreachable) reach(nic.peer.value, 1);
  }
  for (size_t i = 0; i < order_.size() && missing > 0; ++i) {
    const uint32_t u = order_[i];
    const uint16_t du = dist_[u];
    for (const Hop& hop : index.switch_hops(NodeId(u))) {
      if (dist_[hop.peer] == kUnreachable && Alive(mask, hop.link, hop.peer))
        reach(hop.peer, static_cast<uint16_t>(du + 1));
    }
  }
}

bool PathTree::StillShortestUnder(const RoutingIndex& index, const DrainMask& mask) const {
  const model::Topology& topo = index.topology();
  auto has_next_hop = [&](uint32_t u) {
    const uint16_t du = dist_[u];
    if (du == 1) {
      for (const model::Adjacency& nic : destination_.nics) {
        if (nic.peer.value == u && !mask.link_down(nic.link)) return true;
      }
      return false;
    }
    for (const Hop& hop : index.switch_hops(NodeId(u))) {
      if (dist_[hop.peer] + 1 == du && Alive(mask, hop.link, hop.peer)) return true;
    }
    return false;
  };
  if (mask.node_down(destination_.host)) return false;
  for (LinkId l : mask.down_links()) {
    const model::Link& link = topo.link(l);
    for (NodeId x : {link.a, link.b}) {
      if (index.is_host(x) || mask.node_down(x)) continue;
      const uint16_t dx = dist_[x.value];
      if (dx == kUnreachable || dx == 0) continue;
      if (!has_next_hop(x.value)) return false;
    }
  }
  return true;
}

void RouteWorkspace::Reserve(size_t nodes) {
  if (seen_.size() < nodes) {
    frac_.resize(nodes);
    clean_.resize(nodes);
    fwd_.resize(nodes);
    bwd_.resize(nodes);
    seen_.assign(nodes, 0);
    epoch_ = 0;
  }
  if (++epoch_ == 0) {  // wrapped: forget every old visit
    std::fill(seen_.begin(), seen_.end(), 0);
    epoch_ = 1;
  }
}

PairRoute RouteWorkspace::Route(const RoutingIndex& index, const DrainMask& mask, const PathTree& tree,
                                Attachment source) {
  return RouteImpl(index, mask, tree, source, nullptr, nullptr, true);
}

PairRoute RouteWorkspace::RouteTracking(const RoutingIndex& index, const DrainMask& mask, const PathTree& tree,
                                        Attachment source, const DrainMask& taint, double* clean_share) {
  return RouteImpl(index, mask, tree, source, &taint, clean_share, false);
}

PairRoute RouteWorkspace::RouteImpl(const RoutingIndex& index, const DrainMask& mask, const PathTree& tree,
                                    Attachment source, const DrainMask* taint, double* clean_share, bool path_shares) {
  Reserve(index.node_count());
  links_.clear();
  if (clean_share) *clean_share = 0;
  const model::Topology& topo = index.topology();
  const Attachment dst = tree.destination_;
  const uint16_t* dist = tree.dist_.data();

  uint16_t best = kUnreachable;
  for (const model::Adjacency& nic : source.nics) {
    if (!Alive(mask, nic.link.value, nic.peer.value)) continue;
    best = std::min(best, dist[nic.peer.value]);
  }
  if (best == kUnreachable || mask.node_down(dst.host)) return {};

  const uint32_t s = source.host.value;
  const uint32_t d = dst.host.value;
  auto visit = [&](uint32_t v) {
    seen_[v] = epoch_;
    frac_[v] = 0;
    clean_[v] = 0;
    fwd_[v] = 0;
    bwd_[v] = 0;
  };
  visit(s);
  frac_[s] = 1;
  clean_[s] = 1;
  fwd_[s] = 1;
  frontier_.assign(1, s);

  auto push = [&](uint32_t from, uint32_t to, uint32_t link) {
    bool a_to_b = topo.link(LinkId(link)).a.value == from;
    links_.push_back(DagLink{from, to, link, DirectedLinkId(LinkId(link), a_to_b), 0, 0});
  };

  for (uint32_t level = best + 1; level > 0; --level) {
    next_.clear();
    for (uint32_t u : frontier_) {
      const size_t first = links_.size();
      if (u == s) {
        for (const model::Adjacency& nic : source.nics) {
          if (Alive(mask, nic.link.value, nic.peer.value) && dist[nic.peer.value] == best) {
            push(u, nic.peer.value, nic.link.value);
          }
        }
      } else if (level == 1) {
        for (const model::Adjacency& nic : dst.nics) {
          if (nic.peer.value == u && !mask.link_down(nic.link)) push(u, d, nic.link.value);
        }
      } else {
        for (const Hop& hop : index.switch_hops(NodeId(u))) {
          if (dist[hop.peer] + 1u == level && Alive(mask, hop.link, hop.peer)) {
            links_.push_back(DagLink{u, hop.peer, hop.link, hop.directed, 0, 0});
          }
        }
      }
      const size_t count = links_.size() - first;
      if (count == 0) continue;  // only with a stale tree: this share is lost
      const double share = frac_[u] / static_cast<double>(count);
      const double clean = clean_[u] / static_cast<double>(count);
      for (size_t i = first; i < links_.size(); ++i) {
        DagLink& e = links_[i];
        if (seen_[e.to] != epoch_) {
          visit(e.to);
          next_.push_back(e.to);
        }
        e.hop_share = share;
        frac_[e.to] += share;
        fwd_[e.to] += fwd_[u];
        if (taint && !taint->link_down(LinkId(e.link)) && !taint->node_down(NodeId(e.to))) {
          clean_[e.to] += clean;
        }
      }
    }
    frontier_.swap(next_);
  }

  PairRoute out;
  if (seen_[d] != epoch_ || !(frac_[d] > 0)) {
    links_.clear();
    return out;
  }
  out.connected = true;
  out.hops = static_cast<uint16_t>(best + 1);
  out.paths = fwd_[d];
  if (clean_share) *clean_share = clean_[d];
  if (path_shares) {
    // Paths to the destination, summed backwards: links_ is ordered by
    // level (farthest first), so every link out of `to` is already counted.
    bwd_[d] = 1;
    for (size_t i = links_.size(); i-- > 0;) bwd_[links_[i].from] += bwd_[links_[i].to];
    for (DagLink& e : links_) e.path_share = fwd_[e.from] * bwd_[e.to] / out.paths;
  }
  return out;
}

double SprayThroughputBps(const RoutingIndex& index, std::span<const DagLink> links, SprayMode mode) {
  double best = 0;
  bool any = false;
  for (const DagLink& e : links) {
    double share = mode == SprayMode::kPerHop ? e.hop_share : e.path_share;
    if (!(share > 0)) continue;
    double t = index.capacity_bps(LinkId(e.link)) / share;
    if (!any || t < best) best = t;
    any = true;
  }
  return any ? best : 0;
}

}  // namespace drainwise::sim
