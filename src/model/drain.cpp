#include "model/drain.h"

#include <algorithm>

#include <fmt/format.h>

namespace drainwise::model {

namespace {
template <class T>
void SortUnique(std::vector<T>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}
}  // namespace

Drain Drain::Merge(const Drain& other) const {
  Drain d = *this;
  d.switches.insert(d.switches.end(), other.switches.begin(), other.switches.end());
  d.links.insert(d.links.end(), other.links.begin(), other.links.end());
  SortUnique(d.switches);
  SortUnique(d.links);
  return d;
}

Result<Drain> ResolveDrain(const DrainSpec& spec, const Topology& topology) {
  Drain d;
  for (size_t i = 0; i < spec.switches.size(); ++i) {
    auto n = topology.FindNode(spec.switches[i]);
    if (!n) return InvalidArgument(fmt::format("switches[{}]: unknown switch '{}'", i, spec.switches[i]));
    if (!topology.node(*n).is_switch()) {
      return InvalidArgument(fmt::format("switches[{}]: '{}' is a host; drain its links instead", i, spec.switches[i]));
    }
    d.switches.push_back(*n);
  }
  for (size_t i = 0; i < spec.links.size(); ++i) {
    const LinkSelector& s = spec.links[i];
    auto a = topology.FindNode(s.a);
    if (!a) return InvalidArgument(fmt::format("links[{}].a: unknown node '{}'", i, s.a));
    auto b = topology.FindNode(s.b);
    if (!b) return InvalidArgument(fmt::format("links[{}].b: unknown node '{}'", i, s.b));
    size_t found = 0;
    for (const Adjacency& adj : topology.neighbors(*a)) {
      if (adj.peer != *b) continue;
      const Link& l = topology.link(adj.link);
      const std::string& port = l.a == *a ? l.a_port : l.b_port;
      if (!s.a_port.empty() && port != s.a_port) continue;
      d.links.push_back(adj.link);
      ++found;
    }
    if (found == 0) {
      if (!s.a_port.empty()) {
        return InvalidArgument(fmt::format("links[{}]: no link {}:{} -> {}", i, s.a, s.a_port, s.b));
      }
      return InvalidArgument(fmt::format("links[{}]: no link between '{}' and '{}'", i, s.a, s.b));
    }
  }
  SortUnique(d.switches);
  SortUnique(d.links);
  return d;
}

DrainSpec DescribeDrain(const Drain& drain, const Topology& topology) {
  DrainSpec s;
  for (NodeId n : drain.switches) s.switches.push_back(topology.node(n).name);
  for (LinkId l : drain.links) {
    const Link& link = topology.link(l);
    s.links.push_back(LinkSelector{topology.node(link.a).name, topology.node(link.b).name, link.a_port});
  }
  return s;
}

DrainMask::DrainMask(const Topology& topology, const Drain& drain)
    : node_down_(topology.node_count(), false), link_down_(topology.link_count(), false) {
  for (NodeId n : drain.switches) {
    node_down_[n.value] = true;
    ++nodes_down_;
    for (const Adjacency& adj : topology.neighbors(n)) link_down_[adj.link.value] = true;
  }
  for (LinkId l : drain.links) link_down_[l.value] = true;
  for (size_t l = 0; l < link_down_.size(); ++l) {
    if (link_down_[l]) down_links_.push_back(LinkId(l));
  }
}

}  // namespace drainwise::model
