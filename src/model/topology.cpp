#include "model/topology.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "model/units.h"

namespace drainwise::model {

int LevelForTier(std::string_view tier) {
  if (tier == "leaf" || tier == "tor") return kLeafLevel;
  if (tier == "spine") return kSpineLevel;
  if (tier == "superspine") return kSuperspineLevel;
  return 0;
}

std::optional<NodeId> Topology::FindNode(std::string_view name) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

std::string Topology::LinkName(LinkId id) const {
  const Link& l = link(id);
  std::string a = node(l.a).name;
  std::string b = node(l.b).name;
  if (!l.a_port.empty()) a += ":" + l.a_port;
  if (!l.b_port.empty()) b += ":" + l.b_port;
  return a + " -> " + b;
}

Result<Topology> BuildTopology(const TopologySpec& spec) {
  Topology t;
  t.name_ = spec.name;
  t.load_balancing_ = spec.load_balancing;
  t.nodes_.reserve(spec.nodes.size());
  t.by_name_.reserve(spec.nodes.size());

  for (size_t i = 0; i < spec.nodes.size(); ++i) {
    const NodeSpec& ns = spec.nodes[i];
    auto where = [&] { return fmt::format("node {} ('{}')", i, ns.id); };
    if (ns.id.empty()) return InvalidArgument(fmt::format("node {}: empty id", i));
    if (!t.by_name_.emplace(ns.id, NodeId(t.nodes_.size())).second) {
      return InvalidArgument(fmt::format("{}: duplicate node id", where()));
    }
    Node n;
    n.name = ns.id;
    n.kind = ns.kind;
    n.pod = ns.pod;
    n.plane = ns.plane;
    n.domains = ns.domains;
    if (ns.kind == NodeKind::kHost) {
      if (ns.gpus < 0) return InvalidArgument(fmt::format("{}: gpus must be >= 0", where()));
      n.gpus = ns.gpus;
      n.level = 0;
    } else {
      if (ns.tier.empty()) return InvalidArgument(fmt::format("{}: switch without a tier", where()));
      n.tier = ns.tier;
      n.level = ns.level > 0 ? ns.level : LevelForTier(ns.tier);
      if (n.level <= 0) {
        return InvalidArgument(
            fmt::format("{}: tier '{}' is not leaf, spine or superspine: give its numeric level", where(), ns.tier));
      }
      auto [it, inserted] = t.tiers_.emplace(n.level, n.tier);
      if (!inserted && it->second != n.tier) {
        return InvalidArgument(fmt::format("{}: tier '{}' has level {} which tier '{}' already has", where(), n.tier,
                                           n.level, it->second));
      }
      t.max_level_ = std::max(t.max_level_, n.level);
    }
    t.total_gpus_ += n.gpus;
    t.nodes_.push_back(std::move(n));
  }

  t.links_.reserve(spec.links.size());
  std::vector<uint32_t> degree(t.nodes_.size() + 1, 0);
  for (size_t i = 0; i < spec.links.size(); ++i) {
    const LinkSpec& ls = spec.links[i];
    auto where = [&] { return fmt::format("link {} ({} -> {})", i, ls.a, ls.b); };
    auto a = t.FindNode(ls.a);
    if (!a) return InvalidArgument(fmt::format("{}: unknown node '{}'", where(), ls.a));
    auto b = t.FindNode(ls.b);
    if (!b) return InvalidArgument(fmt::format("{}: unknown node '{}'", where(), ls.b));
    if (*a == *b) return InvalidArgument(fmt::format("{}: link from a node to itself", where()));
    if (!(ls.gbps > 0) || !std::isfinite(ls.gbps)) {
      return InvalidArgument(fmt::format("{}: gbps must be a positive number", where()));
    }
    if (t.node(*a).is_host() && t.node(*b).is_host()) {
      return InvalidArgument(fmt::format("{}: links between two hosts are not supported", where()));
    }
    t.links_.push_back(Link{*a, *b, units::BpsFromGbps(ls.gbps), ls.a_port, ls.b_port});
    ++degree[a->value];
    ++degree[b->value];
  }

  // CSR adjacency, links in declaration order per node.
  t.offsets_.assign(t.nodes_.size() + 1, 0);
  for (size_t n = 0; n < t.nodes_.size(); ++n) t.offsets_[n + 1] = t.offsets_[n] + degree[n];
  t.adjacency_.resize(t.offsets_.back());
  std::vector<uint32_t> fill(t.offsets_.begin(), t.offsets_.end() - 1);
  for (size_t i = 0; i < t.links_.size(); ++i) {
    const Link& l = t.links_[i];
    t.adjacency_[fill[l.a.value]++] = Adjacency{LinkId(i), l.b};
    t.adjacency_[fill[l.b.value]++] = Adjacency{LinkId(i), l.a};
  }

  for (size_t n = 0; n < t.nodes_.size(); ++n) {
    (t.nodes_[n].is_host() ? t.hosts_ : t.switches_).push_back(NodeId(n));
  }
  return t;
}

}  // namespace drainwise::model
