// A drain: switches and links taken out of service. It is an edit applied on
// top of an immutable Topology (a mask), never a copy of the graph.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/error.h"
#include "model/ids.h"
#include "model/topology.h"

namespace drainwise::model {

struct LinkSelector {
  std::string a;
  std::string b;
  std::string a_port;  // optional: one of several parallel links
};

struct DrainSpec {
  std::vector<std::string> switches;
  std::vector<LinkSelector> links;

  bool empty() const { return switches.empty() && links.empty(); }
};

struct Drain {
  std::vector<NodeId> switches;  // sorted, unique
  std::vector<LinkId> links;     // sorted, unique: the links named, not those of drained switches

  bool empty() const { return switches.empty() && links.empty(); }
  // Union of two drains (active drains + a proposed one).
  [[nodiscard]] Drain Merge(const Drain& other) const;
};

// Resolves names against `topology`. Errors name the selector: unknown
// switch, a host named as a switch, no link between a and b, no such port.
Result<Drain> ResolveDrain(const DrainSpec& spec, const Topology& topology);

// Names of a drain's elements, the inverse of ResolveDrain.
DrainSpec DescribeDrain(const Drain& drain, const Topology& topology);

// Dense per-node / per-link "out of service" flags for the simulators: a link
// is down when it is drained or either end is a drained switch.
class DrainMask {
 public:
  DrainMask() = default;
  DrainMask(const Topology& topology, const Drain& drain);

  bool node_down(NodeId n) const { return !node_down_.empty() && node_down_[n.value]; }
  bool link_down(LinkId l) const { return !link_down_.empty() && link_down_[l.value]; }
  // Links that are down (named or via a drained switch), sorted.
  const std::vector<LinkId>& down_links() const { return down_links_; }
  // Nothing is down (a baseline's mask).
  bool empty() const { return down_links_.empty() && nodes_down_ == 0; }

 private:
  size_t nodes_down_ = 0;
  std::vector<bool> node_down_;
  std::vector<bool> link_down_;
  std::vector<LinkId> down_links_;
};

}  // namespace drainwise::model
