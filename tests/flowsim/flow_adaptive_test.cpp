// `adaptive` routing (sim/flow_route_adaptive.cpp, docs/model.md): hand-derived
// cases, and its two bounds on random fabrics: it carries at least what
// `spray-path` carries, and no flow beats its multipath max-flow.
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include <doctest/doctest.h>

#include "fabric/generator.h"
#include "flowsim/flow_testing.h"
#include "model/drain.h"
#include "model/snapshot.h"

namespace drainwise {
namespace {

using flowtest::FlowsJob;
using flowtest::Jobs;
using flowtest::NoDrain;
using flowtest::TopoBuilder;
using nlohmann::json;

sim::FlowOptions Exact(sim::FlowRouting routing) {
  auto o = sim::FlowOptions::Exact();
  o.routing = routing;
  return o;
}

// Three leaves, two spines, 100G everywhere. a on leaf0, b on leaf2, d1 and
// d2 on leaf1.
json ThreeLeaves() {
  TopoBuilder b;
  b.Switch("spine0", "spine").Switch("spine1", "spine");
  for (int l = 0; l < 3; ++l) {
    std::string leaf = "leaf" + std::to_string(l);
    b.Switch(leaf, "leaf").Link(leaf, "spine0", 100).Link(leaf, "spine1", 100);
  }
  b.Host("a").Host("b").Host("d1").Host("d2");
  b.Link("a", "leaf0", 100).Link("b", "leaf2", 100).Link("d1", "leaf1", 100).Link("d2", "leaf1", 100);
  return b.Build();
}

TEST_CASE("adaptive: a route moves off the link another route cannot leave") {
  // j1: a -> d1 (leaf0 -> leaf1), j2: b -> d2 (leaf2 -> leaf1), 1 GB = 8e9
  // bits each; leaf2-spine1 drained, so j2 has one path left, via spine0.
  // Baseline: both split over both spines, spine0>leaf1 carries r1/2 + r2/2
  // <= 100G: the NICs cap them at 100G: 0.08 s each, in every mode.
  // Drained, spray-path: j1 still puts 1/2 on spine0, so spine0>leaf1 carries
  // r1/2 + r2 <= 100G: both freeze at 66.7G: 8e9 / 66.7e9 = 0.12 s.
  // Drained, adaptive: spine0>leaf1 is full at t = 0 (33.3 + 66.7); j1's path
  // via spine1 has a bottleneck of 33.3% + 33.3% moved = 66.7%, the same as
  // what spine0>leaf1 keeps (66.7G of j2): j1 moves all of its traffic to
  // spine1. Then r1 = r2 = 100G (their NICs): 0.08 s, no slowdown.
  json jobs = Jobs({FlowsJob("j1", {{"a", "d1", 1e9}}), FlowsJob("j2", {{"b", "d2", 1e9}})});
  json drain = {{"links", {{{"a", "leaf2"}, {"b", "spine1"}}}}};
  auto path = flowtest::Simulate(ThreeLeaves(), jobs, drain, Exact(sim::FlowRouting::kSprayPath));
  auto adaptive = flowtest::Simulate(ThreeLeaves(), jobs, drain, Exact(sim::FlowRouting::kAdaptive));
  for (const char* id : {"j1", "j2"}) {
    CAPTURE(id);
    CHECK(path.Job(id).baseline.comm_s == doctest::Approx(0.08));
    CHECK(path.Job(id).drained.comm_s == doctest::Approx(0.12));
    CHECK(adaptive.Job(id).baseline.comm_s == doctest::Approx(0.08));
    CHECK(adaptive.Job(id).drained.comm_s == doctest::Approx(0.08));
  }
  CHECK(adaptive.report.model.routing == sim::FlowRouting::kAdaptive);
  CHECK(adaptive.report.model.classes_adapted == 1);  // j1's leaf0 -> leaf1; j2 has no choice
  // All of j1 on spine1: leaf0>spine0 carries nothing, leaf0>spine1 100G.
  for (size_t l = 0; l < adaptive.report.drained_load_bps.size(); ++l) {
    const std::string name = adaptive.LinkName(static_cast<uint32_t>(l));
    if (name == "leaf0>spine0") CHECK(adaptive.report.drained_load_bps[l] == doctest::Approx(0.0));
    if (name == "leaf0>spine1") CHECK(adaptive.report.drained_load_bps[l] == doctest::Approx(100e9));
  }
}

TEST_CASE("adaptive: unequal paths end at equal utilisation, the max-flow") {
  // leaf0 -> leaf1 over spine0 (100G links) and spine1 (50G links); 200G
  // NICs; one 1 GB flow a -> d.
  // spray-path: 1/2 per path, the 50G links limit it to 100G: 0.08 s; they
  // are full at t = 0. adaptive: offered 100G, move a share s from spine1 to
  // spine0 until the bottlenecks meet: (50 + 100 s) / 100 = (50 - 100 s) / 50
  // -> s = 1/6: 2/3 over spine0, 1/3 over spine1. Then r <= 100 / (2/3) =
  // 150G and r <= 50 / (1/3) = 150G: 150G, the max-flow (100 + 50), and
  // 8e9 / 150e9 = 0.0533 s.
  json topo = TopoBuilder()
                  .Switch("spine0", "spine")
                  .Switch("spine1", "spine")
                  .Switch("leaf0", "leaf")
                  .Switch("leaf1", "leaf")
                  .Host("a")
                  .Host("d")
                  .Link("leaf0", "spine0", 100)
                  .Link("leaf1", "spine0", 100)
                  .Link("leaf0", "spine1", 50)
                  .Link("leaf1", "spine1", 50)
                  .Link("a", "leaf0", 200)
                  .Link("d", "leaf1", 200)
                  .Build();
  json jobs = Jobs({FlowsJob("j1", {{"a", "d", 1e9}})});
  auto path = flowtest::Simulate(topo, jobs, NoDrain(), Exact(sim::FlowRouting::kSprayPath));
  auto adaptive = flowtest::Simulate(topo, jobs, NoDrain(), Exact(sim::FlowRouting::kAdaptive));
  CHECK(path.Job("j1").baseline.comm_s == doctest::Approx(0.08));
  CHECK(adaptive.Job("j1").baseline.comm_s == doctest::Approx(8.0 / 150).epsilon(1e-6));
  CHECK(adaptive.Job("j1").drained.comm_s == doctest::Approx(8.0 / 150).epsilon(1e-6));
  for (size_t l = 0; l < adaptive.report.baseline_load_bps.size(); ++l) {
    const std::string name = adaptive.LinkName(static_cast<uint32_t>(l));
    if (name == "leaf0>spine0") CHECK(adaptive.report.baseline_load_bps[l] == doctest::Approx(100e9).epsilon(1e-6));
    if (name == "leaf0>spine1") CHECK(adaptive.report.baseline_load_bps[l] == doctest::Approx(50e9).epsilon(1e-6));
  }
}

TEST_CASE("adaptive: no better split exists, spray-path's result stands") {
  // The 3-tier slice of flow_golden_test.cpp with core c00 drained: the
  // max-flow p0-h -> p1-h is 150G (50G via s0-c01, 100G via s1), which
  // spray-path already reaches (1/3 per path): every path crosses a full
  // link, nothing moves, 8e9 / 150e9 = 0.0533 s as spray-path.
  TopoBuilder b;
  for (int j = 0; j < 2; ++j) {
    for (int m = 0; m < 2; ++m) b.Switch("c" + std::to_string(j) + std::to_string(m), "superspine");
  }
  for (int p = 0; p < 2; ++p) {
    std::string pod = "p" + std::to_string(p);
    b.Switch(pod + "-leaf", "leaf");
    for (int j = 0; j < 2; ++j) {
      std::string spine = pod + "-s" + std::to_string(j);
      b.Switch(spine, "spine");
      b.Link(pod + "-leaf", spine, 100);
      for (int m = 0; m < 2; ++m) b.Link(spine, "c" + std::to_string(j) + std::to_string(m), 50);
    }
    b.Host(pod + "-h");
    b.Link(pod + "-h", pod + "-leaf", 400);
  }
  json jobs = Jobs({FlowsJob("j1", {{"p0-h", "p1-h", 1e9}})});
  json drain = {{"switches", {"c00"}}};
  auto adaptive = flowtest::Simulate(b.Build(), jobs, drain, Exact(sim::FlowRouting::kAdaptive));
  CHECK(adaptive.Job("j1").baseline.comm_s == doctest::Approx(0.04));
  CHECK(adaptive.Job("j1").drained.comm_s == doctest::Approx(8.0 / 150));
  CHECK(adaptive.report.model.classes_adapted == 0);
}

TEST_CASE("adaptive: nothing full in the fabric, the same as spray-path") {
  // 2x2 with 400G uplinks and 100G NICs: the NICs are the only full links,
  // no route moves, and every number is spray-path's.
  json jobs = Jobs({FlowsJob("j1", {{"h0", "h2", 1e9}, {"h1", "h3", 0.5e9}}), FlowsJob("j2", {{"h0", "h3", 2e9}})});
  json drain = {{"switches", {"spine1"}}};
  auto path = flowtest::Simulate(flowtest::TwoByTwo(400, 100), jobs, drain, Exact(sim::FlowRouting::kSprayPath));
  auto adaptive = flowtest::Simulate(flowtest::TwoByTwo(400, 100), jobs, drain, Exact(sim::FlowRouting::kAdaptive));
  for (const char* id : {"j1", "j2"}) {
    CAPTURE(id);
    CHECK(adaptive.Job(id).baseline.comm_s == path.Job(id).baseline.comm_s);
    CHECK(adaptive.Job(id).drained.comm_s == path.Job(id).drained.comm_s);
  }
  CHECK(adaptive.report.model.classes_adapted == 0);
}

// ---- bounds on random fabrics ----

uint32_t Directed(const model::Topology& t, model::NodeId from, model::LinkId l) {
  return 2 * l.value + (t.link(l).a == from ? 0 : 1);
}

// Traffic leaving the hosts at t = 0: every flow's rate once.
double Carried(const model::Topology& t, const std::vector<double>& load) {
  double sum = 0;
  for (model::NodeId h : t.hosts()) {
    for (const auto& adj : t.neighbors(h)) sum += load[Directed(t, h, adj.link)];
  }
  return sum;
}

// Max-flow src -> dst over the shortest paths that avoid `mask` (hosts do
// not transit): Edmonds-Karp on the shortest-path DAG.
double ShortestPathMaxFlow(const model::Topology& t, const model::DrainMask& mask, model::NodeId src,
                           model::NodeId dst) {
  const size_t n = t.node_count();
  const int kFar = 1 << 30;
  auto alive = [&](const model::Adjacency& adj) { return !mask.link_down(adj.link) && !mask.node_down(adj.peer); };
  std::vector<int> dist(n, kFar);
  dist[dst.value] = 0;
  std::vector<model::NodeId> queue{dst};
  for (size_t i = 0; i < queue.size(); ++i) {
    for (const auto& adj : t.neighbors(queue[i])) {
      if (!alive(adj) || dist[adj.peer.value] != kFar) continue;
      if (t.node(adj.peer).is_host() && adj.peer != src) continue;
      dist[adj.peer.value] = dist[queue[i].value] + 1;
      if (adj.peer != src) queue.push_back(adj.peer);
    }
  }
  if (dist[src.value] == kFar) return 0;
  // Residual capacities on DAG arcs (u -> v with dist[v] = dist[u] - 1) and their reverses.
  struct Arc {
    uint32_t to;
    double cap;
    size_t rev;
  };
  std::vector<std::vector<Arc>> g(n);
  for (size_t u = 0; u < n; ++u) {
    if (dist[u] == kFar || (t.node(model::NodeId(u)).is_host() && u != src.value)) continue;
    for (const auto& adj : t.neighbors(model::NodeId(u))) {
      if (!alive(adj) || dist[adj.peer.value] != dist[u] - 1) continue;
      const double c = t.link(adj.link).capacity_bps;
      g[u].push_back({adj.peer.value, c, g[adj.peer.value].size()});
      g[adj.peer.value].push_back({static_cast<uint32_t>(u), 0, g[u].size() - 1});
    }
  }
  double flow = 0;
  for (int iter = 0; iter < 10000; ++iter) {
    std::vector<std::pair<uint32_t, size_t>> parent(n, {UINT32_MAX, 0});
    std::vector<uint32_t> q{src.value};
    parent[src.value] = {src.value, 0};
    for (size_t i = 0; i < q.size() && parent[dst.value].first == UINT32_MAX; ++i) {
      for (size_t k = 0; k < g[q[i]].size(); ++k) {
        const Arc& a = g[q[i]][k];
        if (a.cap > 1e-3 && parent[a.to].first == UINT32_MAX) {
          parent[a.to] = {q[i], k};
          q.push_back(a.to);
        }
      }
    }
    if (parent[dst.value].first == UINT32_MAX) break;
    double aug = std::numeric_limits<double>::infinity();
    for (uint32_t v = dst.value; v != src.value; v = parent[v].first) {
      aug = std::min(aug, g[parent[v].first][parent[v].second].cap);
    }
    for (uint32_t v = dst.value; v != src.value; v = parent[v].first) {
      Arc& a = g[parent[v].first][parent[v].second];
      a.cap -= aug;
      g[v][a.rev].cap += aug;
    }
    flow += aug;
  }
  return flow;
}

model::SnapshotPtr RandomFabric(std::mt19937_64& rng, int njobs, int flows_per_job) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  fabric::FabricOptions f;
  f.tiers = pick(2, 3);
  f.pods = f.tiers == 3 ? pick(1, 2) : 1;
  f.rails = pick(1, 2);
  f.hosts_per_leaf = pick(2, 3);
  f.hosts = pick(4, 10);
  f.spines_per_pod = pick(1, 3);
  f.leaf_spine_links = pick(1, 2);
  f.superspines_per_plane = pick(1, 2);
  f.spine_super_links = pick(1, 2);
  f.host_gbps = 100 * pick(1, 4);
  f.leaf_spine_gbps = 25 * pick(1, 8);
  f.spine_super_gbps = 25 * pick(1, 8);
  auto topo = model::BuildTopology(fabric::GenerateFabric(f));
  REQUIRE(topo.has_value());
  auto t = std::make_shared<const model::Topology>(std::move(*topo));
  const auto& hosts = t->hosts();
  model::JobsSpec jobs;
  for (int j = 0; j < njobs; ++j) {
    model::JobSpec job;
    job.id = "j" + std::to_string(j);
    job.gpus_per_host = 1;
    model::CollectiveSpec c;
    c.kind = model::CollectiveKind::kFlows;
    for (int k = 0; k < flows_per_job; ++k) {
      const auto s = hosts[static_cast<size_t>(pick(0, static_cast<int>(hosts.size()) - 1))];
      auto d = hosts[static_cast<size_t>(pick(0, static_cast<int>(hosts.size()) - 1))];
      if (d == s) d = hosts[(s.value == hosts.front().value) ? 1 : 0];
      c.flows.push_back({t->node(s).name, t->node(d).name, 1e6 * pick(1, 100)});
      for (const auto& h : {t->node(s).name, t->node(d).name}) {
        if (std::find(job.hosts.begin(), job.hosts.end(), h) == job.hosts.end()) job.hosts.push_back(h);
      }
    }
    job.iteration.collectives.push_back(c);
    jobs.jobs.push_back(job);
  }
  return model::MakeSnapshot(t, 1, jobs, 1);
}

model::Drain RandomDrain(std::mt19937_64& rng, const model::Topology& t) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  model::Drain d;
  const auto& sw = t.switches();
  d.switches.push_back(sw[static_cast<size_t>(pick(0, static_cast<int>(sw.size()) - 1))]);
  for (int k = pick(0, 3); k > 0; --k) d.links.push_back(model::LinkId(pick(0, static_cast<int>(t.link_count()) - 1)));
  std::sort(d.links.begin(), d.links.end());
  d.links.erase(std::unique(d.links.begin(), d.links.end()), d.links.end());
  return d;
}

TEST_CASE("adaptive bounds: at least spray-path's traffic, random fabrics and drains") {
  std::mt19937_64 rng(4242);
  int cases = 0, better = 0;
  for (int i = 0; i < 60; ++i) {
    CAPTURE(i);
    auto snap = RandomFabric(rng, 1 + static_cast<int>(rng() % 4), 1 + static_cast<int>(rng() % 6));
    if (snap->jobs->size() == 0) continue;
    model::Drain drain = RandomDrain(rng, *snap->topology);
    auto path = sim::SimulateFlows(*snap, drain, Exact(sim::FlowRouting::kSprayPath));
    auto adaptive = sim::SimulateFlows(*snap, drain, Exact(sim::FlowRouting::kAdaptive));
    REQUIRE(path.has_value());
    REQUIRE(adaptive.has_value());
    const auto& t = *snap->topology;
    for (int side = 0; side < 2; ++side) {
      const double p = Carried(t, side == 0 ? path->baseline_load_bps : path->drained_load_bps);
      const double a = Carried(t, side == 0 ? adaptive->baseline_load_bps : adaptive->drained_load_bps);
      CHECK(a >= p * (1 - 1e-9));
      if (a > p * (1 + 1e-6)) ++better;
    }
    // Same jobs cut off, no link above its capacity.
    for (size_t j = 0; j < path->jobs.size(); ++j) {
      CHECK(path->jobs[j].drained.connected == adaptive->jobs[j].drained.connected);
    }
    for (size_t l = 0; l < adaptive->drained_load_bps.size(); ++l) {
      CHECK(adaptive->drained_load_bps[l] <= adaptive->capacity_bps[l] * (1 + 1e-9));
    }
    ++cases;
  }
  CHECK(cases > 40);
  CHECK(better > 3);  // the balancing does something on these fabrics
}

TEST_CASE("adaptive bounds: one flow alone never beats its multipath max-flow") {
  std::mt19937_64 rng(777);
  int cases = 0, better = 0, at_bound = 0;
  for (int i = 0; i < 80; ++i) {
    CAPTURE(i);
    auto snap = RandomFabric(rng, 1, 1);
    if (snap->jobs->size() == 0) continue;
    const auto& t = *snap->topology;
    model::Drain drain = RandomDrain(rng, t);
    auto path = sim::SimulateFlows(*snap, drain, Exact(sim::FlowRouting::kSprayPath));
    auto adaptive = sim::SimulateFlows(*snap, drain, Exact(sim::FlowRouting::kAdaptive));
    REQUIRE(path.has_value());
    REQUIRE(adaptive.has_value());
    const model::Job& job = snap->jobs->job(model::JobId(0));
    const auto& flow = job.iteration.collectives.at(0).flows.at(0);
    const double bits = 8 * flow.bytes;
    for (int side = 0; side < 2; ++side) {
      const model::DrainMask mask = side == 0 ? model::DrainMask() : model::DrainMask(t, drain);
      const auto& ps = side == 0 ? path->jobs[0].baseline : path->jobs[0].drained;
      const auto& as = side == 0 ? adaptive->jobs[0].baseline : adaptive->jobs[0].drained;
      REQUIRE(ps.connected == as.connected);
      if (!as.connected) continue;
      const double bound = ShortestPathMaxFlow(t, mask, flow.src, flow.dst);
      const double rate_a = bits / as.bandwidth_s, rate_p = bits / ps.bandwidth_s;
      CHECK(rate_a <= bound * (1 + 1e-9));
      CHECK(rate_a >= rate_p * (1 - 1e-9));
      if (rate_a > rate_p * (1 + 1e-6)) ++better;
      if (rate_a >= bound * (1 - 1e-6)) ++at_bound;
      ++cases;
    }
  }
  CHECK(cases > 100);
  CHECK(better > 0);                  // the balancing does something here too
  CHECK(at_bound * 10 >= cases * 9);  // measured: 136 of 136 at the bound on these seeds
  MESSAGE("one flow alone: adaptive above spray-path in ", better, " of ", cases, ", at the max-flow in ", at_bound);
}

}  // namespace
}  // namespace drainwise
