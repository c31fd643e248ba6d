// The shared routing core on fabrics small enough to route by hand.
#include "sim/routing.h"

#include <doctest/doctest.h>

#include "jobsim/fabric_builder.h"
#include "testing/fabrics.h"

namespace drainwise::sim {
namespace {

using testing::DrainOf;
using testing::FabricBuilder;
using testing::TopologyFromJson;

NodeId Node(const model::Topology& t, const char* name) { return *t.FindNode(name); }

// Share of the route on the (single) link between two named nodes, summed over
// parallel links when `sum_parallel`.
double ShareOn(const model::Topology& t, std::span<const DagLink> links, const char* from, const char* to,
               SprayMode mode) {
  double s = 0;
  for (const DagLink& e : links) {
    if (e.from == Node(t, from).value && e.to == Node(t, to).value) {
      s += mode == SprayMode::kPerHop ? e.hop_share : e.path_share;
    }
  }
  return s;
}

TEST_CASE("two-by-two: hops, paths, shares and throughput") {
  // TwoByTwo(uplink 40G, NIC 100G). h0 -> h2: h0-leaf0-{spine0|spine1}-leaf1-h2,
  // 4 links, 2 paths. Per hop: leaf0 splits 1/2, 1/2 over its uplinks; each
  // uplink carries 1/2 -> 40G / 0.5 = 80G < NIC 100G / 1 -> 80G.
  model::Topology t = TopologyFromJson(testing::TwoByTwo(40, 100));
  RoutingIndex index(t);
  DrainMask none;
  PathTree tree;
  tree.Build(index, none, index.HostAttachment(Node(t, "h2")));
  CHECK(tree.distance(Node(t, "leaf1")) == 1);
  CHECK(tree.distance(Node(t, "spine0")) == 2);
  CHECK(tree.distance(Node(t, "leaf0")) == 3);
  CHECK(tree.path_count(Node(t, "leaf0")) == 2);

  RouteWorkspace ws;
  PairRoute r = ws.Route(index, none, tree, index.HostAttachment(Node(t, "h0")));
  CHECK(r.connected);
  CHECK(r.hops == 4);
  CHECK(r.paths == 2);
  CHECK(ws.links().size() == 6);  // h0-leaf0, 2 up, 2 down, leaf1-h2
  CHECK(ShareOn(t, ws.links(), "leaf0", "spine0", SprayMode::kPerHop) == doctest::Approx(0.5));
  CHECK(ShareOn(t, ws.links(), "spine1", "leaf1", SprayMode::kPerPath) == doctest::Approx(0.5));
  CHECK(ShareOn(t, ws.links(), "leaf1", "h2", SprayMode::kPerHop) == doctest::Approx(1));
  CHECK(SprayThroughputBps(index, ws.links()) == doctest::Approx(80e9));

  // Directed ids: h0-leaf0 is declared {a: h0, b: leaf0} and traversed a -> b.
  const DagLink& first = ws.links().front();
  CHECK(first.from == Node(t, "h0").value);
  CHECK(first.directed == 2 * first.link);

  // Same leaf: h0 -> h1 is h0-leaf0-h1, 2 links, 1 path, 100G.
  tree.Build(index, none, index.HostAttachment(Node(t, "h1")));
  r = ws.Route(index, none, tree, index.HostAttachment(Node(t, "h0")));
  CHECK(r.hops == 2);
  CHECK(r.paths == 1);
  CHECK(SprayThroughputBps(index, ws.links()) == doctest::Approx(100e9));

  // Drain spine0: one path left, all traffic on one 40G uplink -> 40G.
  DrainMask drained(t, DrainOf(t, {{"switches", {"spine0"}}}));
  tree.Build(index, drained, index.HostAttachment(Node(t, "h2")));
  r = ws.Route(index, drained, tree, index.HostAttachment(Node(t, "h0")));
  CHECK(r.paths == 1);
  CHECK(SprayThroughputBps(index, ws.links()) == doctest::Approx(40e9));

  // Drain leaf1: h2 is cut off.
  DrainMask cut(t, DrainOf(t, {{"switches", {"leaf1"}}}));
  tree.Build(index, cut, index.HostAttachment(Node(t, "h2")));
  r = ws.Route(index, cut, tree, index.HostAttachment(Node(t, "h0")));
  CHECK_FALSE(r.connected);
  CHECK(r.paths == 0);
  CHECK(ws.links().empty());
}

TEST_CASE("parallel links: per-hop and per-path spray differ") {
  // leaf0 has one link to each spine; spine0 has two parallel links down to
  // leaf1, spine1 one. Paths h0 -> h1: via spine0 2 (parallel links multiply),
  // via spine1 1 -> 3.
  // Per hop: leaf0 -> spine0 1/2, each spine0 -> leaf1 link 1/4, spine1 -> leaf1 1/2.
  // Per path: leaf0 -> spine0 2/3, each spine0 -> leaf1 link 1/3, spine1 -> leaf1 1/3.
  // Throughput with 100G everywhere: per hop min(100/1 NIC, 100/0.5) = 100G;
  // per path 100/(2/3) = 150G on the uplink, NIC 100G -> 100G.
  FabricBuilder f;
  f.Switch("spine0", "spine").Switch("spine1", "spine").Switch("leaf0", "leaf").Switch("leaf1", "leaf");
  f.Host("h0").Host("h1");
  f.Link("leaf0", "spine0").Link("leaf0", "spine1").Link("spine0", "leaf1", 100, 2).Link("spine1", "leaf1");
  f.Link("h0", "leaf0").Link("h1", "leaf1");
  model::Topology t = TopologyFromJson(f.Json());
  RoutingIndex index(t);
  DrainMask none;
  PathTree tree;
  tree.Build(index, none, index.HostAttachment(Node(t, "h1")));
  RouteWorkspace ws;
  PairRoute r = ws.Route(index, none, tree, index.HostAttachment(Node(t, "h0")));
  CHECK(r.paths == 3);
  CHECK(tree.path_count(Node(t, "leaf0")) == 3);
  CHECK(ShareOn(t, ws.links(), "leaf0", "spine0", SprayMode::kPerHop) == doctest::Approx(0.5));
  CHECK(ShareOn(t, ws.links(), "leaf0", "spine0", SprayMode::kPerPath) == doctest::Approx(2.0 / 3));
  CHECK(ShareOn(t, ws.links(), "spine0", "leaf1", SprayMode::kPerHop) == doctest::Approx(0.5));  // 2 x 1/4
  CHECK(ShareOn(t, ws.links(), "spine1", "leaf1", SprayMode::kPerPath) == doctest::Approx(1.0 / 3));
  for (const DagLink& e : ws.links()) {
    if (e.from == Node(t, "spine0").value) {
      CHECK(e.hop_share == doctest::Approx(0.25));
      CHECK(e.path_share == doctest::Approx(1.0 / 3));
    }
  }
  // Make the uplinks the bottleneck: rebuild with 10G spine links.
  FabricBuilder g;
  g.Switch("spine0", "spine").Switch("spine1", "spine").Switch("leaf0", "leaf").Switch("leaf1", "leaf");
  g.Host("h0").Host("h1");
  g.Link("leaf0", "spine0", 10).Link("leaf0", "spine1", 10).Link("spine0", "leaf1", 10, 2).Link("spine1", "leaf1", 10);
  g.Link("h0", "leaf0").Link("h1", "leaf1");
  model::Topology t2 = TopologyFromJson(g.Json());
  RoutingIndex index2(t2);
  tree.Build(index2, none, index2.HostAttachment(Node(t2, "h1")));
  ws.Route(index2, none, tree, index2.HostAttachment(Node(t2, "h0")));
  // Per hop: 10G / 0.5 = 20G on either uplink and on spine1 -> leaf1.
  CHECK(SprayThroughputBps(index2, ws.links(), SprayMode::kPerHop) == doctest::Approx(20e9));
  // Per path: 10G / (2/3) = 15G on leaf0 -> spine0.
  CHECK(SprayThroughputBps(index2, ws.links(), SprayMode::kPerPath) == doctest::Approx(15e9));
}

TEST_CASE("hosts never transit and NIC attachments route one NIC") {
  // h0 dual-homed to leaf0 and leaf1 (no spine). h1 on leaf0, h2 on leaf1.
  // h1 -> h2 would be 4 links through h0; hosts do not transit -> cut off.
  FabricBuilder f;
  f.Switch("leaf0", "leaf").Switch("leaf1", "leaf").Host("h0").Host("h1").Host("h2");
  f.Link("h0", "leaf0").Link("h0", "leaf1").Link("h1", "leaf0").Link("h2", "leaf1");
  model::Topology t = TopologyFromJson(f.Json());
  RoutingIndex index(t);
  DrainMask none;
  PathTree tree;
  RouteWorkspace ws;
  tree.Build(index, none, index.HostAttachment(Node(t, "h2")));
  CHECK_FALSE(ws.Route(index, none, tree, index.HostAttachment(Node(t, "h1"))).connected);
  // h0 -> h2: only NIC 1 (to leaf1) is on a shortest path: 2 links, 1 path.
  PairRoute r = ws.Route(index, none, tree, index.HostAttachment(Node(t, "h0")));
  CHECK(r.hops == 2);
  CHECK(r.paths == 1);
  // From NIC 0 alone (to leaf0) there is no path without transiting a host.
  CHECK_FALSE(ws.Route(index, none, tree, index.NicAttachment(Node(t, "h0"), 0)).connected);
  CHECK(ws.Route(index, none, tree, index.NicAttachment(Node(t, "h0"), 1)).connected);
}

TEST_CASE("attachment classes group hosts by their leaves") {
  model::Topology t = TopologyFromJson(testing::TwoByTwo());
  RoutingIndex index(t);
  CHECK(index.class_count() == 2);
  CHECK(index.class_of(Node(t, "h0")) == index.class_of(Node(t, "h1")));
  CHECK(index.class_of(Node(t, "h2")) == index.class_of(Node(t, "h3")));
  CHECK(index.class_of(Node(t, "h0")) != index.class_of(Node(t, "h2")));
  CHECK(index.class_representative(index.class_of(Node(t, "h3"))) == Node(t, "h2"));
  CHECK(index.class_of(Node(t, "spine0")) == RoutingIndex::kNoClass);
}

TEST_CASE("a tree stays shortest under a drain unless a node loses every next hop") {
  model::Topology t = TopologyFromJson(testing::TwoByTwo());
  RoutingIndex index(t);
  PathTree tree;
  tree.Build(index, DrainMask(), index.HostAttachment(Node(t, "h2")));
  CHECK(tree.StillShortestUnder(index, DrainMask(t, DrainOf(t, {{"switches", {"spine0"}}}))));
  // Both spines: leaf0 loses both next hops.
  CHECK_FALSE(tree.StillShortestUnder(index, DrainMask(t, DrainOf(t, {{"switches", {"spine0", "spine1"}}}))));
  // leaf1's uplink to spine0: spine0 (distance 2) loses its only next hop.
  CHECK_FALSE(
      tree.StillShortestUnder(index, DrainMask(t, DrainOf(t, {{"links", {{{"a", "leaf1"}, {"b", "spine0"}}}}}))));

  // Routing with the stale-but-valid tree equals routing with a rebuilt one.
  DrainMask drained(t, DrainOf(t, {{"switches", {"spine1"}}}));
  RouteWorkspace ws;
  PairRoute stale = ws.Route(index, drained, tree, index.HostAttachment(Node(t, "h0")));
  PathTree fresh;
  fresh.Build(index, drained, index.HostAttachment(Node(t, "h2")));
  PairRoute rebuilt = ws.Route(index, drained, fresh, index.HostAttachment(Node(t, "h0")));
  CHECK(stale.paths == rebuilt.paths);
  CHECK(stale.hops == rebuilt.hops);
}

TEST_CASE("tracking: share of traffic crossing a tainted element") {
  // h0 -> h2 on the undrained 2x2, tainting spine0: half the traffic crosses it.
  model::Topology t = TopologyFromJson(testing::TwoByTwo());
  RoutingIndex index(t);
  PathTree tree;
  tree.Build(index, DrainMask(), index.HostAttachment(Node(t, "h2")));
  RouteWorkspace ws;
  double clean = -1;
  DrainMask taint(t, DrainOf(t, {{"switches", {"spine0"}}}));
  ws.RouteTracking(index, DrainMask(), tree, index.HostAttachment(Node(t, "h0")), taint, &clean);
  CHECK(clean == doctest::Approx(0.5));
  // Tainting h2's NIC: everything crosses it.
  DrainMask nic(t, DrainOf(t, {{"links", {{{"a", "h2"}, {"b", "leaf1"}}}}}));
  ws.RouteTracking(index, DrainMask(), tree, index.HostAttachment(Node(t, "h0")), nic, &clean);
  CHECK(clean == doctest::Approx(0));
}

}  // namespace
}  // namespace drainwise::sim
