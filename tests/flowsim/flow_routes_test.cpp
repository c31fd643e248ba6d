// Route classes stored without their DAG links (spray, spray-path) must
// answer like those that keep them: the same shares, and the same verdict on
// which classes a drain touches (the check a drained run uses to borrow the
// baseline's routes).
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "fabric/generator.h"
#include "model/drain.h"
#include "model/snapshot.h"
#include "sim/flow_routes.h"
#include "sim/routing.h"
#include "sim/task_runner.h"

namespace drainwise::sim {
namespace {

// Every leaf pair of the demo fabric reachable from NIC 0 of its hosts,
// routed under `mask` (borrowing from `baseline` when given).
// With `self_pairs`, first a class from each multi-NIC host's NIC 1 to its
// own NIC 0 (on another switch): the first class of its destination, whose
// tree then has that host as its destination, so the class is routed with a
// tree of its own (ComputeClasses).
RouteTable LeafPairs(const RoutingIndex& index, bool per_path, bool keep_links, const model::DrainMask& mask = {},
                     const RouteTable* baseline = nullptr, bool sort_by_from = false,
                     const TaskRunner* runner = nullptr, bool self_pairs = false) {
  const model::Topology& topo = index.topology();
  std::vector<uint32_t> hosts;
  for (uint32_t n = 0; n < topo.node_count(); ++n) {
    if (index.is_host(NodeId(n)) && !topo.neighbors(NodeId(n)).empty()) hosts.push_back(n);
  }
  RouteTable t;
  for (uint32_t h : self_pairs ? hosts : std::vector<uint32_t>{}) {
    if (topo.neighbors(NodeId(h)).size() < 2) continue;
    const uint32_t a = NicSwitch(topo, h, 1), b = NicSwitch(topo, h, 0);
    if (a != b) t.Register(RouteTable::SwitchKey(a, b), h, 1, h, 0);
  }
  for (uint32_t s : hosts) {
    for (uint32_t d : hosts) {
      const uint32_t a = NicSwitch(topo, s, 0), b = NicSwitch(topo, d, 0);
      if (a != b) t.Register(RouteTable::SwitchKey(a, b), s, 0, d, 0);
    }
  }
  ComputeClasses(index, mask, baseline, false, per_path, sort_by_from, t, keep_links, runner);
  return t;
}

TEST_CASE("hash walks: the per-demand hash and the power-of-two reduction give the plain formulas' numbers") {
  // HashOf hoists the mixing of (seed, demand) out of the per-flow loop and
  // ModOf skips the division for ECMP groups of 2^k links; both must leave
  // every pick, and so every report, as it was.
  std::mt19937_64 rng(2026);
  for (int round = 0; round < 2000; ++round) {
    const uint64_t seed = rng(), a = rng() % 1000000, c = rng() % 4;
    const HashOf h(seed, a, c);
    for (uint64_t b = 0; b < 20; ++b) CHECK(h(b) == Hash(seed, a, b, c));
    const uint64_t x = rng();
    for (uint64_t n = 1; n <= 130; ++n) CHECK(ModOf(x, n) == x % n);
  }
}

TEST_CASE("route classes: every NIC up under a spine drain, not under a leaf's or a NIC link's") {
  // A drained call registers the first baseline's keys again when every
  // NIC is up (EveryNicUp): the answer must follow what UsableNics sees.
  auto preset = *fabric::FindPreset("demo");
  auto spec = fabric::GenerateFabric(preset.fabric);
  auto topo = std::make_shared<const model::Topology>(*model::BuildTopology(spec));
  auto node = [&](const char* name) { return *topo->FindNode(name); };
  CHECK(EveryNicUp(*topo, model::DrainMask{}));
  model::Drain spine;
  spine.switches = {node("p0-spine0")};
  CHECK(EveryNicUp(*topo, model::DrainMask(*topo, spine)));
  // A leaf carries hosts' NICs; so does a NIC link drained alone.
  uint32_t host = 0;
  while (!topo->node(NodeId(host)).is_host()) ++host;
  const model::Adjacency nic = topo->neighbors(NodeId(host))[0];
  model::Drain leaf;
  leaf.switches = {nic.peer};
  CHECK_FALSE(EveryNicUp(*topo, model::DrainMask(*topo, leaf)));
  model::Drain link;
  link.links = {nic.link};
  CHECK_FALSE(EveryNicUp(*topo, model::DrainMask(*topo, link)));
}

TEST_CASE("route classes: shares-only classes list every DAG link and see the same drains") {
  auto preset = *fabric::FindPreset("demo");
  auto spec = fabric::GenerateFabric(preset.fabric);
  auto topo = std::make_shared<const model::Topology>(*model::BuildTopology(spec));
  const RoutingIndex index(*topo);
  for (bool per_path : {false, true}) {
    CAPTURE(per_path);
    const RouteTable with = LeafPairs(index, per_path, true);
    const RouteTable without = LeafPairs(index, per_path, false);
    REQUIRE(with.classes.size() == without.classes.size());
    REQUIRE(with.classes.size() > 10);
    size_t cross_pod = 0;
    for (size_t i = 0; i < with.classes.size(); ++i) {
      const RouteTable::Class& c = with.classes[i];
      const RouteTable::Class& o = without.classes[i];
      REQUIRE(c.connected);
      CHECK(o.links.empty());
      // Every link of the DAG carries a positive share: the shares alone
      // name the whole route.
      REQUIRE(c.shares.size() == c.links.size());
      REQUIRE(o.shares.size() == c.shares.size());
      for (size_t k = 0; k < c.shares.size(); ++k) {
        CHECK(o.shares[k].link == c.shares[k].link);
        CHECK(o.shares[k].share == c.shares[k].share);
      }
      if (c.hops >= 4) ++cross_pod;
    }
    CHECK(cross_pod > 0);  // the fabric has superspine routes, not only a pod's
    // Every switch alone, and every fourth link alone, as a drain.
    std::vector<model::Drain> drains;
    for (uint32_t n = 0; n < topo->node_count(); ++n) {
      if (index.is_host(NodeId(n))) continue;
      model::Drain d;
      d.switches = {NodeId(n)};
      drains.push_back(d);
    }
    for (uint32_t l = 0; l < topo->link_count(); l += 4) {
      model::Drain d;
      d.links = {LinkId(l)};
      drains.push_back(d);
    }
    size_t touched = 0, checks = 0;
    for (const model::Drain& d : drains) {
      const model::DrainMask mask(*topo, d);
      for (size_t i = 0; i < with.classes.size(); ++i) {
        const bool a = ClassTouchesDrain(*topo, with.classes[i], mask);
        const bool b = ClassTouchesDrain(*topo, without.classes[i], mask);
        CHECK(a == b);
        touched += a ? 1 : 0;
        ++checks;
      }
    }
    CHECK(touched > 0);
    CHECK(touched < checks);
  }
}

// Destinations routed at once through a runner give the tables routed one
// after another: every class, link and share in the same place, with and
// without a baseline to borrow from, in every mode's layout.
TEST_CASE("route classes: routing through a runner changes nothing") {
  auto preset = *fabric::FindPreset("demo");
  auto spec = fabric::GenerateFabric(preset.fabric);
  auto topo = std::make_shared<const model::Topology>(*model::BuildTopology(spec));
  const RoutingIndex index(*topo);
  const TaskRunner runner = ThreadsRunner(2);
  model::Drain spine;
  for (uint32_t n = 0; n < topo->node_count() && spine.switches.empty(); ++n) {
    if (topo->node(NodeId(n)).tier == "spine") spine.switches = {NodeId(n)};
  }
  REQUIRE(!spine.switches.empty());
  const model::DrainMask drained(*topo, spine);
  auto same = [&](const RouteTable& a, const RouteTable& b) {
    REQUIRE(a.classes.size() == b.classes.size());
    size_t links = 0;
    for (size_t i = 0; i < a.classes.size(); ++i) {
      const RouteTable::Class& x = a.classes[i];
      const RouteTable::Class& y = b.classes[i];
      CHECK(x.key == y.key);
      CHECK(x.computed == y.computed);
      CHECK(x.connected == y.connected);
      CHECK(x.clean == y.clean);
      CHECK(x.hops == y.hops);
      REQUIRE(x.shares.size() == y.shares.size());
      for (size_t k = 0; k < x.shares.size(); ++k) {
        CHECK(x.shares[k].link == y.shares[k].link);
        CHECK(x.shares[k].share == y.shares[k].share);
      }
      REQUIRE(x.links.size() == y.links.size());
      for (size_t k = 0; k < x.links.size(); ++k) {
        CHECK(x.links[k].directed == y.links[k].directed);
        CHECK(x.links[k].from == y.links[k].from);
        CHECK(x.links[k].hop_share == y.links[k].hop_share);
        CHECK(x.links[k].path_share == y.links[k].path_share);
      }
      // Hash modes: the same links out of every node, in the same order.
      REQUIRE(x.hashed() == y.hashed());
      CHECK((x.fib == nullptr) == (y.fib == nullptr));
      if (x.hashed()) {
        for (uint32_t n = 0; n < topo->node_count(); ++n) {
          auto ox = x.Out(n), oy = y.Out(n);
          REQUIRE(ox.size() == oy.size());
          for (size_t k = 0; k < ox.size(); ++k) {
            CHECK(ox[k].to == oy[k].to);
            CHECK(ox[k].directed == oy[k].directed);
          }
          links += ox.size();
        }
      }
      links += x.links.size() + x.shares.size();
    }
    CHECK(links > 0);
  };
  for (int layout = 0; layout < 3; ++layout) {  // spray (shares), adaptive (links and shares), hash (walk index)
    CAPTURE(layout);
    const bool keep = layout > 0, sorted = layout == 2;
    const RouteTable one = LeafPairs(index, false, keep, {}, nullptr, sorted);
    const RouteTable many = LeafPairs(index, false, keep, {}, nullptr, sorted, &runner);
    same(one, many);
    // Drained, borrowing the untouched routes from the baseline: only the
    // classes through the spine are routed again.
    const RouteTable d_one = LeafPairs(index, false, keep, drained, &one, sorted);
    const RouteTable d_many = LeafPairs(index, false, keep, drained, &one, sorted, &runner);
    same(d_one, d_many);
    size_t rerouted = 0;
    for (const RouteTable::Class& c : d_one.classes) rerouted += c.clean ? 0 : 1;
    CHECK(rerouted > 0);
    CHECK(rerouted < d_one.classes.size());
    // Registered from another table's classes (RouteTable::RegisterAll: the
    // seeds after the first) rather than from the demands, a table computes
    // the same: borrowing from a table of the same mask (the drained seeds,
    // every route as it is, clean or not) or from the baseline (the baseline
    // seeds: every route clean).
    RouteTable d_keys;
    d_keys.RegisterAll(d_one);
    ComputeClasses(index, drained, &d_one, true, false, sorted, d_keys, keep);
    same(d_one, d_keys);
    RouteTable b_keys;
    b_keys.RegisterAll(one);
    ComputeClasses(index, {}, &one, false, false, sorted, b_keys, keep);
    same(LeafPairs(index, false, keep, {}, &one, sorted), b_keys);
  }
}

// The hash modes keep a switch pair's routes as a row of the table's
// forwarding table, shared by every class of one destination switch
// (flow_routes.h, HashFib). Each class must still see exactly its own DAG:
// at every node of it, the links out of the node (in directed-id order) of
// the DAG the adaptive layout keeps as links; drained, the classes the
// drain leaves alone keep the baseline's row and the others get a row of
// the drained table.
TEST_CASE("route classes: hash modes' forwarding-table rows are each class's own DAG") {
  auto preset = *fabric::FindPreset("demo");
  auto spec = fabric::GenerateFabric(preset.fabric);
  auto topo = std::make_shared<const model::Topology>(*model::BuildTopology(spec));
  const RoutingIndex index(*topo);
  model::Drain spine;
  for (uint32_t n = 0; n < topo->node_count() && spine.switches.empty(); ++n) {
    if (topo->node(NodeId(n)).tier == "spine") spine.switches = {NodeId(n)};
  }
  const model::DrainMask none, drained(*topo, spine);
  // Self pairs first: classes routed with a tree of their own, whose walk
  // index moves into the row (the others' rows come from their
  // destination's tree).
  const RouteTable hash = LeafPairs(index, false, true, none, nullptr, true, nullptr, true);
  const RouteTable dag = LeafPairs(index, false, true, none, nullptr, false, nullptr, true);
  const RouteTable d_hash = LeafPairs(index, false, true, drained, &hash, true, nullptr, true);
  const RouteTable d_dag = LeafPairs(index, false, true, drained, &dag, false, nullptr, true);
  size_t self = 0;
  for (const RouteTable::Class& c : hash.classes) self += c.rep_src == c.rep_dst;
  REQUIRE(self > 0);
  size_t nodes = 0, rows_shared = 0, rerouted = 0;
  for (const auto& [h, d] : {std::pair{&hash, &dag}, std::pair{&d_hash, &d_dag}}) {
    REQUIRE(h->classes.size() == d->classes.size());
    for (size_t i = 0; i < h->classes.size(); ++i) {
      const RouteTable::Class& x = h->classes[i];
      const RouteTable::Class& y = d->classes[i];
      CAPTURE(i);
      REQUIRE(x.connected == y.connected);
      if (!x.connected) continue;
      REQUIRE(x.fib != nullptr);
      CHECK(x.walk == nullptr);
      std::map<uint32_t, std::vector<std::pair<uint32_t, uint32_t>>> out;  // from -> (directed, to)
      for (const ClassLink& l : y.links) out[l.from].push_back({l.directed, l.to});
      for (auto& [from, links] : out) {
        std::sort(links.begin(), links.end());
        auto got = x.Out(from);
        REQUIRE(got.size() == links.size());
        for (size_t k = 0; k < links.size(); ++k) {
          CHECK(got[k].directed == links[k].first);
          CHECK(got[k].to == links[k].second);
        }
        ++nodes;
      }
      if (h == &d_hash) {
        const RouteTable::Class* b = hash.Find(x.key);
        REQUIRE(b != nullptr);
        CHECK(x.SameWalk(*b) == x.clean);
        rerouted += !x.clean;
      } else {
        for (size_t j = 0; j < i; ++j) rows_shared += h->classes[j].SameWalk(x);
      }
    }
  }
  CHECK(nodes > 0);
  CHECK(rows_shared > 0);  // classes of one destination share a row
  CHECK(rerouted > 0);
  REQUIRE(hash.own_fib != nullptr);
  REQUIRE(d_hash.own_fib != nullptr);
  // Groups stored once: fewer than the (row, switch) entries naming them.
  size_t named = 0;
  for (uint32_t g : hash.own_fib->group) named += g != HashFib::kNone;
  CHECK(hash.own_fib->groups.size() < named);
}

}  // namespace
}  // namespace drainwise::sim
