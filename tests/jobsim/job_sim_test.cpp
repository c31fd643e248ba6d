// Job-level what-if: golden numbers on hand-drawn fabrics and properties on
// generated ones. Every golden number is derived by hand in the comment next
// to it; routing follows docs/model.md (hop-count ECMP, per-hop spray).
#include "sim/job_sim.h"

#include <algorithm>
#include <random>
#include <thread>

#include <doctest/doctest.h>

#include "codec/native.h"
#include "fabric/generator.h"
#include "jobsim/fabric_builder.h"
#include "testing/fabrics.h"

namespace drainwise::sim {
namespace {

using nlohmann::json;
using testing::DrainOf;
using testing::FabricBuilder;
using testing::SnapshotFromJson;

json Jobs(std::initializer_list<std::pair<const char*, std::vector<std::string>>> jobs) {
  json list = json::array();
  for (const auto& [id, hosts] : jobs) list.push_back({{"id", id}, {"hosts", hosts}, {"gpus_per_host", 1}});
  return {{"format", "drainwise.jobs/v1"}, {"jobs", list}};
}

const JobImpact& Job(const JobAssessment& a, const JobSimIndex& index, const char* id) {
  return a.jobs.at(index.jobs().FindJob(id)->value);
}

JobAssessment Assess(const JobSimIndex& index, const json& drain) {
  auto a = AssessJobs(index, DrainOf(index.topology(), drain));
  REQUIRE(a);
  return std::move(*a);
}

NodeId N(const JobSimIndex& index, const char* name) { return *index.topology().FindNode(name); }

// leaf0, leaf1 under spine0, spine1 (100G). d0, d1 dual-homed (NIC0 -> leaf0,
// NIC1 -> leaf1); s0 single-homed on leaf0, s1 on leaf1. NICs 100G.
json DualSingle() {
  FabricBuilder f;
  f.Switch("spine0", "spine").Switch("spine1", "spine").Switch("leaf0", "leaf").Switch("leaf1", "leaf");
  f.Host("d0").Host("d1").Host("s0").Host("s1");
  f.Link("leaf0", "spine0").Link("leaf0", "spine1").Link("leaf1", "spine0").Link("leaf1", "spine1");
  f.Link("d0", "leaf0").Link("d0", "leaf1").Link("d1", "leaf0").Link("d1", "leaf1");
  f.Link("s0", "leaf0").Link("s1", "leaf1");
  return f.Json();
}

TEST_CASE("dual-homed vs single-homed hosts: draining a leaf") {
  auto snap =
      SnapshotFromJson(DualSingle(), Jobs({{"dual", {"d0", "d1"}}, {"single", {"s0", "s1"}}, {"mixed", {"d0", "s1"}}}));
  JobSimIndex index(snap);
  JobAssessment a = Assess(index, {{"switches", {"leaf0"}}});

  // dual: d0 -> d1 is 2 links, via leaf0 or leaf1: 2 paths. d0 sprays 1/2 per
  // NIC, so 100G / (1/2) = 200G. Without leaf0: 1 path, 100G.
  // -> path 1/2, min paths 1, bandwidth 1/2; half of each direction crossed leaf0.
  const JobImpact& dual = Job(a, index, "dual");
  CHECK(dual.affected);
  CHECK(dual.connected);
  CHECK(dual.path_fraction == doctest::Approx(0.5));
  REQUIRE(dual.min_paths_after);
  CHECK(*dual.min_paths_after == 1);
  CHECK(dual.bandwidth_fraction == doctest::Approx(0.5));
  CHECK(dual.crossing_share == doctest::Approx(0.5));
  CHECK(dual.crossed_switches == std::vector<NodeId>{N(index, "leaf0")});
  CHECK(dual.host_pairs == 1);
  CHECK(dual.host_pairs_crossing == 1);

  // single: s0's only NIC goes to leaf0 -> cut off.
  const JobImpact& single = Job(a, index, "single");
  CHECK(single.affected);
  CHECK_FALSE(single.connected);
  CHECK(single.path_fraction == 0);
  REQUIRE(single.min_paths_after);
  CHECK(*single.min_paths_after == 0);
  CHECK(single.bandwidth_fraction == 0);
  CHECK(single.crossing_share == doctest::Approx(1));
  CHECK(single.host_pairs_cut == 1);

  // mixed: d0 -> s1 is d0-leaf1-s1 (2 links); leaf0 is not on it.
  const JobImpact& mixed = Job(a, index, "mixed");
  CHECK_FALSE(mixed.affected);
  CHECK(mixed.path_fraction == 1);
  CHECK(mixed.bandwidth_fraction == 1);
  CHECK_FALSE(mixed.min_paths_after);

  CHECK(a.jobs_affected == 2);
  CHECK(a.jobs_disconnected == 1);
  CHECK(a.gpus_affected == 4);

  // Fabric: leaf0's links are down: 3 NICs (d0, d1, s0) of the 6 x 100G, and
  // 2 of the 4 x 100G uplinks. s0 is cut off, d0 and d1 lose one NIC.
  const FabricImpact& f = a.fabric;
  CHECK(f.switches_drained == 1);
  CHECK(f.links_down == 5);
  REQUIRE(f.capacity.size() == 2);
  CHECK(f.capacity[0].tier == "host-leaf");
  CHECK(f.capacity[0].removed_bps == doctest::Approx(300e9));
  CHECK(f.capacity[0].total_bps == doctest::Approx(600e9));
  CHECK(f.capacity[1].tier == "leaf-spine");
  CHECK(f.capacity[1].removed_bps == doctest::Approx(200e9));
  CHECK(f.hosts_cut_off == std::vector<NodeId>{N(index, "s0")});
  CHECK(f.hosts_degraded == std::vector<NodeId>{N(index, "d0"), N(index, "d1")});
  CHECK(f.single_uplink_leaves.empty());
}

TEST_CASE("dual/single fabric: draining a spine only hits the job that crosses it") {
  auto snap = SnapshotFromJson(DualSingle(), Jobs({{"dual", {"d0", "d1"}}, {"single", {"s0", "s1"}}}));
  JobSimIndex index(snap);
  JobAssessment a = Assess(index, {{"switches", {"spine0"}}});
  // single: s0-leaf0-{spine0|spine1}-leaf1-s1, 2 paths -> 1. Before: NIC
  // 100G / 1 = 100G, uplinks 100G / (1/2) = 200G -> 100G. After: the one
  // uplink carries everything: 100G -> bandwidth 1. Half crossed spine0.
  const JobImpact& single = Job(a, index, "single");
  CHECK(single.affected);
  CHECK(single.path_fraction == doctest::Approx(0.5));
  CHECK(*single.min_paths_after == 1);
  CHECK(single.bandwidth_fraction == doctest::Approx(1));
  CHECK(single.crossing_share == doctest::Approx(0.5));
  // dual: d0 -> d1 stays on the leaves.
  CHECK_FALSE(Job(a, index, "dual").affected);
  // Both leaves keep one uplink of two.
  CHECK(a.fabric.single_uplink_leaves.size() == 2);
  CHECK(a.fabric.single_uplink_leaves[0].uplinks_before == 2);
  CHECK(a.fabric.single_uplink_leaves[0].uplinks_after == 1);
}

TEST_CASE("parallel links: a drained member of a bundle, per direction") {
  // leaf0 = spine0 and leaf1 = spine0 with 2 parallel 10G links each,
  // leaf0 - spine1 and leaf1 - spine1 one 10G link each; NICs 100G.
  // Paths h0 -> h1: via spine0 2 x 2 = 4, via spine1 1 -> 5.
  // Drain one leaf0 = spine0 link: 1 x 2 + 1 = 3 -> path fraction 3/5.
  // Bandwidth h0 -> h1: before leaf0 sprays 1/3 per uplink -> 10G / (1/3) = 30G;
  //   after 1/2 per uplink -> 20G.
  // Bandwidth h1 -> h0: before spine0 gets 2/3 and sends 1/3 on each of its 2
  //   links down to leaf0 -> 30G; after one link carries 2/3 -> 15G.
  // -> bandwidth fraction min(20/30, 15/30) = 1/2. The drained link carried
  // 1/3 of each direction -> crossing share 1/3.
  FabricBuilder f;
  f.Switch("spine0", "spine").Switch("spine1", "spine").Switch("leaf0", "leaf").Switch("leaf1", "leaf");
  f.Host("h0").Host("h1");
  f.Link("leaf0", "spine0", 10, 2)
      .Link("leaf0", "spine1", 10)
      .Link("leaf1", "spine0", 10, 2)
      .Link("leaf1", "spine1", 10);
  f.Link("h0", "leaf0").Link("h1", "leaf1");
  auto snap = SnapshotFromJson(f.Json(), Jobs({{"j", {"h0", "h1"}}}));
  JobSimIndex index(snap);
  // The builder names ports p0, p1 for the two leaf0 = spine0 links.
  JobAssessment a = Assess(index, {{"links", {{{"a", "leaf0"}, {"b", "spine0"}, {"a_port", "p0"}}}}});
  const JobImpact& j = Job(a, index, "j");
  CHECK(j.affected);
  CHECK(j.connected);
  CHECK(j.path_fraction == doctest::Approx(0.6));
  CHECK(*j.min_paths_after == 3);
  CHECK(j.bandwidth_fraction == doctest::Approx(0.5));
  CHECK(j.crossing_share == doctest::Approx(1.0 / 3));
  CHECK(j.crossed_links.size() == 1);
  CHECK(j.crossed_switches.empty());
}

// Two pods. Pod A: leafA, leafA2 under spines A0 (plane 0) and A1 (plane 1);
// pod B: leafB under B0, B1. Plane 0: superspines ss0, ss1 linked to A0 and
// B0; plane 1: ss2 linked to A1 and B1. All 100G, NICs 400G.
json ThreeTier() {
  FabricBuilder f;
  f.Switch("ss0", "superspine", "", "plane-0").Switch("ss1", "superspine", "", "plane-0");
  f.Switch("ss2", "superspine", "", "plane-1");
  f.Switch("A0", "spine", "podA", "plane-0").Switch("A1", "spine", "podA", "plane-1");
  f.Switch("B0", "spine", "podB", "plane-0").Switch("B1", "spine", "podB", "plane-1");
  f.Switch("leafA", "leaf", "podA").Switch("leafA2", "leaf", "podA").Switch("leafB", "leaf", "podB");
  f.Host("hA").Host("hA2").Host("hB");
  f.Link("A0", "ss0").Link("A0", "ss1").Link("B0", "ss0").Link("B0", "ss1").Link("A1", "ss2").Link("B1", "ss2");
  for (const char* leaf : {"leafA", "leafA2"}) f.Link(leaf, "A0").Link(leaf, "A1");
  f.Link("leafB", "B0").Link("leafB", "B1");
  f.Link("hA", "leafA", 400).Link("hA2", "leafA2", 400).Link("hB", "leafB", 400);
  return f.Json();
}

TEST_CASE("3 tiers: draining a superspine") {
  auto snap = SnapshotFromJson(ThreeTier(), Jobs({{"cross", {"hA", "hB"}}, {"local", {"hA", "hA2"}}}));
  JobSimIndex index(snap);
  SUBCASE("ss0: one of two plane-0 superspines") {
    // hA -> hB: leafA-A0-{ss0|ss1}-B0-leafB (2) + leafA-A1-ss2-B1-leafB (1) = 3
    // paths. Spray: leafA 1/2 to A0 and to A1; A0 1/4 to each of ss0, ss1; A1
    // 1/2 to ss2 -> 100G / (1/2) = 200G (NICs 400G / 1). Without ss0: 2 paths;
    // A0 sends its 1/2 to ss1 -> still 200G. ss0 carried 1/4 each way.
    JobAssessment a = Assess(index, {{"switches", {"ss0"}}});
    const JobImpact& j = Job(a, index, "cross");
    CHECK(j.affected);
    CHECK(j.path_fraction == doctest::Approx(2.0 / 3));
    CHECK(*j.min_paths_after == 2);
    CHECK(j.bandwidth_fraction == doctest::Approx(1));
    CHECK(j.crossing_share == doctest::Approx(0.25));
    CHECK_FALSE(Job(a, index, "local").affected);  // hA -> hA2 stays in pod A
    // Capacity: A0-ss0 and B0-ss0 (100G each) of 300G per pod.
    REQUIRE(a.fabric.capacity.size() == 2);
    CHECK(a.fabric.capacity[0].tier == "spine-superspine");
    CHECK(a.fabric.capacity[0].pod == "podA");
    CHECK(a.fabric.capacity[0].removed_bps == doctest::Approx(100e9));
    CHECK(a.fabric.capacity[0].total_bps == doctest::Approx(300e9));
    // Failure domain: its plane.
    REQUIRE(a.fabric.domains.size() == 1);
    CHECK(a.fabric.domains[0].key == "plane");
    CHECK(a.fabric.domains[0].value == "plane-0");
  }
  SUBCASE("ss2: the only plane-1 superspine") {
    // Without ss2, A1 has no shortest path any more (going back down to a
    // leaf is longer): 2 paths, all through A0: leafA sends everything on
    // leafA-A0 -> 100G / 1 = 100G = half of 200G. ss2 carried 1/2.
    JobAssessment a = Assess(index, {{"switches", {"ss2"}}});
    const JobImpact& j = Job(a, index, "cross");
    CHECK(j.path_fraction == doctest::Approx(2.0 / 3));
    CHECK(j.bandwidth_fraction == doctest::Approx(0.5));
    CHECK(j.crossing_share == doctest::Approx(0.5));
  }
  SUBCASE("whole plane 0: paths get longer? no, plane 1 remains") {
    // ss0 + ss1: only leafA-A1-ss2-B1-leafB is left: 1 path of 3, leafA sends
    // all on leafA-A1 -> 100G (bandwidth 1/2). Plane 0 carried 1/2.
    JobAssessment a = Assess(index, {{"switches", {"ss0", "ss1"}}});
    const JobImpact& j = Job(a, index, "cross");
    CHECK(j.path_fraction == doctest::Approx(1.0 / 3));
    CHECK(*j.min_paths_after == 1);
    CHECK(j.bandwidth_fraction == doctest::Approx(0.5));
    CHECK(j.crossing_share == doctest::Approx(0.5));
    CHECK(j.crossed_switches.size() == 2);
  }
}

TEST_CASE("draining a leaf cuts off a job") {
  // TwoByTwo: h0, h1 on leaf0; h2, h3 on leaf1. Job {h0, h2, h3}: without
  // leaf1, h2 and h3 have no NIC left: pairs (h0,h2), (h0,h3), (h2,h3) all cut.
  // Job {h1} alone has no host pair: never affected.
  auto snap = SnapshotFromJson(testing::TwoByTwo(), Jobs({{"j", {"h0", "h2", "h3"}}, {"k", {"h1"}}}));
  JobSimIndex index(snap);
  JobAssessment a = Assess(index, {{"switches", {"leaf1"}}});
  const JobImpact& j = Job(a, index, "j");
  CHECK(j.affected);
  CHECK_FALSE(j.connected);
  CHECK(j.path_fraction == 0);
  CHECK(*j.min_paths_after == 0);
  CHECK(j.bandwidth_fraction == 0);
  CHECK(j.crossing_share == doctest::Approx(1));
  CHECK(j.host_pairs == 3);
  CHECK(j.host_pairs_cut == 3);
  CHECK_FALSE(Job(a, index, "k").affected);
  CHECK(a.fabric.hosts_cut_off == std::vector<NodeId>{N(index, "h2"), N(index, "h3")});
  CHECK(a.jobs_disconnected == 1);
}

TEST_CASE("a drained NIC link singles out its host from its class") {
  // TwoByTwo, h2's NIC drained: h2 is cut off, h3 (same class) is not.
  // Job {h0, h2, h3}: pairs (h0,h2) and (h2,h3) cut, (h0,h3) untouched.
  auto snap = SnapshotFromJson(testing::TwoByTwo(), Jobs({{"j", {"h0", "h2", "h3"}}}));
  JobSimIndex index(snap);
  JobAssessment a = Assess(index, {{"links", {{{"a", "h2"}, {"b", "leaf1"}}}}});
  const JobImpact& j = Job(a, index, "j");
  CHECK(j.affected);
  CHECK_FALSE(j.connected);
  CHECK(j.host_pairs_cut == 2);
  CHECK(j.host_pairs_crossing == 2);
  CHECK(j.crossing_share == doctest::Approx(2.0 / 3));  // 4 of 6 ordered pairs, fully
  CHECK(j.crossed_links.size() == 1);
  // (h0, h3): h3 shares h2's class but its NIC is up: full paths and bandwidth.
  CHECK(j.path_fraction == 0);  // from the cut pairs
  auto only = SnapshotFromJson(testing::TwoByTwo(), Jobs({{"k", {"h0", "h3"}}}));
  JobSimIndex index2(only);
  CHECK_FALSE(Job(Assess(index2, {{"links", {{{"a", "h2"}, {"b", "leaf1"}}}}}), index2, "k").affected);
}

TEST_CASE("a drain that makes paths longer") {
  // a on leaf0, b on leaf1; leaf0 - leaf1 directly, and both under spine0.
  // Before: a-leaf0-leaf1-b, 3 links, 1 path. Drain the leaf0 - leaf1 link:
  // a-leaf0-spine0-leaf1-b, 4 links, still 1 path (count not reduced:
  // fraction 1, min_paths_after null), still 100G; all traffic crossed it.
  FabricBuilder f;
  f.Switch("spine0", "spine").Switch("leaf0", "leaf").Switch("leaf1", "leaf").Host("a").Host("b");
  f.Link("leaf0", "leaf1").Link("leaf0", "spine0").Link("leaf1", "spine0").Link("a", "leaf0").Link("b", "leaf1");
  JobSimIndex index(SnapshotFromJson(f.Json(), Jobs({{"j", {"a", "b"}}})));
  JobAssessment r = Assess(index, {{"links", {{{"a", "leaf0"}, {"b", "leaf1"}}}}});
  const JobImpact& j = Job(r, index, "j");
  CHECK(j.affected);
  CHECK(j.connected);
  CHECK(j.path_fraction == 1);
  CHECK_FALSE(j.min_paths_after);
  CHECK(j.bandwidth_fraction == doctest::Approx(1));
  CHECK(j.crossing_share == doctest::Approx(1));
}

// --- Properties on generated fabrics ----------------------------------------

struct Generated {
  model::TopologySpec topology;
  model::JobsSpec jobs;
};

Generated Generate(const char* preset, int hosts = 0) {
  auto p = fabric::FindPreset(preset);
  REQUIRE(p);
  if (hosts > 0) p->fabric.hosts = hosts;
  Generated g;
  g.topology = fabric::GenerateFabric(p->fabric);
  g.jobs = fabric::GenerateJobs(g.topology, p->fabric, p->jobs);
  return g;
}

model::SnapshotPtr Snapshot(const Generated& g) {
  auto t = model::BuildTopology(g.topology);
  REQUIRE(t);
  auto topo = std::make_shared<const model::Topology>(std::move(*t));
  auto snap = model::MakeSnapshot(topo, 1, g.jobs, 1);
  REQUIRE(snap->dropped_jobs.empty());
  return snap;
}

TEST_CASE("empty drain: every job whole") {
  for (const char* preset : {"small", "demo"}) {
    CAPTURE(preset);
    JobSimIndex index(Snapshot(Generate(preset)));
    auto a = AssessJobs(index, model::Drain{});
    REQUIRE(a);
    REQUIRE(a->jobs.size() == index.jobs().size());
    CHECK(a->jobs_affected == 0);
    for (const JobImpact& j : a->jobs) {
      CHECK_FALSE(j.affected);
      CHECK(j.connected);
      CHECK(j.path_fraction == 1);
      CHECK(j.bandwidth_fraction == 1);
      CHECK(j.crossing_share == 0);
      CHECK_FALSE(j.min_paths_after);
    }
    CHECK(a->fabric.capacity.empty());
    CHECK(a->fabric.hosts_cut_off.empty());
  }
}

// Reference: route every ordered host pair of every job from scratch with the
// routing core (tested on its own in routing_test.cpp), no classes, no caches.
struct Reference {
  bool affected = false, connected = true;
  double path_fraction = 1, bandwidth_fraction = 1, crossing = 0;
  std::optional<double> min_paths_after;
};

Reference ReferenceFor(const JobSimIndex& index, const model::Job& job, const DrainMask& mask) {
  const RoutingIndex& r = index.routing();
  DrainMask none;
  PathTree before, after;
  RouteWorkspace ws;
  Reference ref;
  double total = 0, crossed = 0;
  for (NodeId b : job.hosts) {
    before.Build(r, none, r.HostAttachment(b));
    after.Build(r, mask, r.HostAttachment(b));
    for (NodeId a : job.hosts) {
      if (a == b) continue;
      total += 1;
      double clean = 0;
      PairRoute pb = ws.RouteTracking(r, none, before, r.HostAttachment(a), mask, &clean);
      if (!pb.connected) {
        ref.connected = false;
        continue;
      }
      ws.Route(r, none, before, r.HostAttachment(a));
      double bw_before = SprayThroughputBps(r, ws.links());
      if (clean > 1 - 1e-12) continue;
      ref.affected = true;
      crossed += 1 - clean;
      PairRoute pa = ws.Route(r, mask, after, r.HostAttachment(a));
      if (!pa.connected) {
        ref.connected = false;
        ref.path_fraction = ref.bandwidth_fraction = 0;
        ref.min_paths_after = 0;
        continue;
      }
      ref.path_fraction = std::min(ref.path_fraction, pa.paths / pb.paths);
      if (pa.paths < pb.paths) ref.min_paths_after = std::min(ref.min_paths_after.value_or(pa.paths), pa.paths);
      ref.bandwidth_fraction = std::min(ref.bandwidth_fraction, SprayThroughputBps(r, ws.links()) / bw_before);
    }
  }
  ref.crossing = total > 0 ? crossed / total : 0;
  return ref;
}

// Returns the number of affected jobs, so callers can check the comparison
// was not vacuous.
int CheckAgainstReference(const JobSimIndex& index, const model::Drain& drain) {
  auto a = AssessJobs(index, drain);
  REQUIRE(a);
  DrainMask mask(index.topology(), drain);
  for (const model::Job& job : index.jobs().jobs()) {
    CAPTURE(job.id);
    const JobImpact& got = a->jobs[index.jobs().FindJob(job.id)->value];
    Reference ref = ReferenceFor(index, job, mask);
    CHECK(got.affected == ref.affected);
    CHECK(got.connected == ref.connected);
    CHECK(got.path_fraction == doctest::Approx(ref.path_fraction));
    CHECK(got.bandwidth_fraction == doctest::Approx(ref.bandwidth_fraction));
    CHECK(got.crossing_share == doctest::Approx(ref.crossing));
    CHECK(got.min_paths_after.has_value() == ref.min_paths_after.has_value());
    if (got.min_paths_after && ref.min_paths_after) CHECK(*got.min_paths_after == *ref.min_paths_after);
  }
  return a->jobs_affected;
}

TEST_CASE("class sharing and caches agree with routing every host pair") {
  Generated g = Generate("demo");
  JobSimIndex index(Snapshot(g));
  const model::Topology& t = index.topology();
  std::mt19937 rng(42);
  std::vector<model::Drain> drains;
  for (const char* tier : {"leaf", "spine", "superspine"}) {
    auto sws = SwitchesOfTier(t, tier);
    REQUIRE_FALSE(sws.empty());
    drains.push_back(model::Drain{{sws[rng() % sws.size()]}, {}});
  }
  // Two spines of a pod and a superspine at once; a host NIC; a leaf uplink.
  auto spines = SwitchesOfTier(t, "spine");
  drains.push_back(model::Drain{{spines[0], spines[1], SwitchesOfTier(t, "superspine")[0]}, {}});
  std::sort(drains.back().switches.begin(), drains.back().switches.end());
  // Every spine of pod 0: cross-group traffic of pod 0 is cut off.
  drains.push_back(model::Drain{});
  for (NodeId s : spines) {
    if (t.node(s).pod == "pod0") drains.back().switches.push_back(s);
  }
  drains.push_back(DrainOf(
      t, {{"links", {{{"a", t.node(t.hosts()[5]).name}, {"b", t.node(t.neighbors(t.hosts()[5])[0].peer).name}}}}}));
  const NodeId leaf = SwitchesOfTier(t, "leaf")[0];
  drains.push_back(
      DrainOf(t, {{"links", {{{"a", t.node(leaf).name}, {"b", t.node(t.neighbors(leaf)[0].peer).name}}}}}));
  for (size_t i = 0; i < drains.size(); ++i) {
    CAPTURE(i);
    int affected = CheckAgainstReference(index, drains[i]);
    if (i == 1 || i == 3 || i == 4) CHECK(affected > 0);  // a spine; two spines + a superspine; a pod's spines
  }
}

TEST_CASE("uneven capacities and parallel links agree with routing every host pair") {
  // The fast path keeps per-node minimum capacities and skips bundles; give
  // every link its own capacity and double some links so that shortcut is
  // exercised with drains of switches, of a bundle member and of NICs.
  Generated g = Generate("small");
  std::mt19937 rng(5);
  std::vector<model::LinkSpec> extra;
  for (model::LinkSpec& l : g.topology.links) {
    l.gbps = 100.0 * (1 + rng() % 4);
    if (rng() % 3 == 0 && l.a.rfind("leaf", 0) == 0) {
      model::LinkSpec twin = l;
      twin.a_port += "-twin";
      twin.gbps = 100.0 * (1 + rng() % 4);
      extra.push_back(twin);
    }
  }
  g.topology.links.insert(g.topology.links.end(), extra.begin(), extra.end());
  JobSimIndex index(Snapshot(g));
  const model::Topology& t = index.topology();
  int affected = 0;
  for (NodeId s : t.switches()) affected += CheckAgainstReference(index, model::Drain{{s}, {}});
  CHECK(affected > 0);
  for (size_t l = 0; l < t.link_count(); l += 3) {
    affected += CheckAgainstReference(index, model::Drain{{}, {LinkId(l)}});
  }
  auto spines = SwitchesOfTier(t, "spine");
  CheckAgainstReference(index, model::Drain{{spines[0]}, {LinkId(0), LinkId(7)}});
}

TEST_CASE("draining a switch no job crosses affects no job") {
  // The reference says which switches no job pair routes through (the leaves
  // of free hosts in the demo mix, at least); the what-if must agree.
  JobSimIndex index(Snapshot(Generate("demo")));
  const model::Topology& t = index.topology();
  int checked = 0;
  for (NodeId leaf : SwitchesOfTier(t, "leaf")) {
    model::Drain d{{leaf}, {}};
    DrainMask mask(t, d);
    bool crossed = false;
    for (const model::Job& job : index.jobs().jobs()) crossed = crossed || ReferenceFor(index, job, mask).affected;
    if (crossed) continue;
    ++checked;
    auto a = AssessJobs(index, d);
    REQUIRE(a);
    CHECK(a->jobs_affected == 0);
    for (const JobImpact& j : a->jobs) CHECK_FALSE(j.affected);
  }
  CHECK(checked > 0);
}

TEST_CASE("results do not depend on the order of nodes and links in the input") {
  Generated g = Generate("demo");
  Generated shuffled = g;
  std::mt19937 rng(7);
  std::shuffle(shuffled.topology.nodes.begin(), shuffled.topology.nodes.end(), rng);
  std::shuffle(shuffled.topology.links.begin(), shuffled.topology.links.end(), rng);
  JobSimIndex x(Snapshot(g)), y(Snapshot(shuffled));
  for (json drain : {json{{"switches", {"p0-spine1"}}}, json{{"switches", {"p1-leaf0-r2"}}},
                     json{{"switches", {"ss0-0", "p0-spine2"}}}}) {
    CAPTURE(drain.dump());
    auto a = AssessJobs(x, DrainOf(x.topology(), drain));
    auto b = AssessJobs(y, DrainOf(y.topology(), drain));
    REQUIRE(a);
    REQUIRE(b);
    CHECK(a->jobs_affected == b->jobs_affected);
    CHECK(a->jobs_affected > 0);
    for (const model::Job& job : x.jobs().jobs()) {
      CAPTURE(job.id);
      const JobImpact& ja = a->jobs[x.jobs().FindJob(job.id)->value];
      const JobImpact& jb = b->jobs[y.jobs().FindJob(job.id)->value];
      CHECK(ja.affected == jb.affected);
      CHECK(ja.connected == jb.connected);
      CHECK(ja.path_fraction == doctest::Approx(jb.path_fraction));
      CHECK(ja.bandwidth_fraction == doctest::Approx(jb.bandwidth_fraction));
      CHECK(ja.crossing_share == doctest::Approx(jb.crossing_share));
      CHECK(ja.min_paths_after == jb.min_paths_after);
    }
    CHECK(a->fabric.hosts_cut_off.size() == b->fabric.hosts_cut_off.size());
    CHECK(a->fabric.capacity.size() == b->fabric.capacity.size());
  }
}

TEST_CASE("candidates sweep: ranked safest first, consistent with single assessments") {
  JobSimIndex index(Snapshot(Generate("demo")));
  const model::Topology& t = index.topology();
  auto leaves = SwitchesOfTier(t, "leaf");
  JobSimWorkspace ws;
  auto c = SweepDrainCandidates(index, leaves, ws);
  REQUIRE(c);
  REQUIRE(c->size() == leaves.size());
  for (size_t i = 1; i < c->size(); ++i) {
    CHECK((*c)[i - 1].gpus_disconnected <= (*c)[i].gpus_disconnected);
  }
  // Every candidate agrees with its own assessment.
  for (const DrainCandidate& d : *c) {
    auto a = AssessJobs(index, model::Drain{{d.sw}, {}});
    REQUIRE(a);
    CHECK(d.jobs_affected == a->jobs_affected);
    CHECK(static_cast<int>(d.affected_jobs.size()) == a->jobs_affected);
  }
  // A leaf whose drain cuts off a job ranks after one that does not.
  CHECK(c->front().gpus_disconnected == 0);
  CHECK(c->back().gpus_disconnected > 0);  // the demo has single-homed hosts in jobs

  std::stop_source stop;
  stop.request_stop();
  auto cancelled = SweepDrainCandidates(index, leaves, ws, stop.get_token());
  REQUIRE_FALSE(cancelled);
  CHECK(cancelled.error().code == ErrorCode::kCancelled);
}

TEST_CASE("invalid drain ids are an error, not a crash") {
  JobSimIndex index(SnapshotFromJson(testing::TwoByTwo(), Jobs({{"j", {"h0", "h2"}}})));
  auto a = AssessJobs(index, model::Drain{{NodeId(99)}, {}});
  REQUIRE_FALSE(a);
  CHECK(a.error().code == ErrorCode::kInvalidArgument);
  auto host = AssessJobs(index, model::Drain{{*index.topology().FindNode("h0")}, {}});
  REQUIRE_FALSE(host);
}

}  // namespace
}  // namespace drainwise::sim

namespace drainwise::sim {
namespace {

TEST_CASE("one index, concurrent assessments with a workspace each") {
  // The index is shared read-only; each thread has its own workspace. Every
  // thread's results must equal the sequential ones.
  JobSimIndex index(Snapshot(Generate("demo")));
  const model::Topology& t = index.topology();
  std::vector<model::Drain> drains;
  for (NodeId s : t.switches()) drains.push_back(model::Drain{{s}, {}});
  std::vector<JobAssessment> sequential;
  JobSimWorkspace ws;
  for (const model::Drain& d : drains) sequential.push_back(*AssessJobs(index, d, ws));

  std::vector<std::vector<JobAssessment>> parallel(2);
  std::vector<std::thread> threads;
  for (int k = 0; k < 2; ++k) {
    threads.emplace_back([&, k] {
      JobSimWorkspace own;
      for (size_t i = k; i < drains.size(); i += 2) parallel[k].push_back(*AssessJobs(index, drains[i], own));
    });
  }
  for (auto& th : threads) th.join();
  for (size_t i = 0; i < drains.size(); ++i) {
    const JobAssessment& p = parallel[i % 2][i / 2];
    const JobAssessment& s = sequential[i];
    REQUIRE(p.jobs.size() == s.jobs.size());
    CHECK(p.jobs_affected == s.jobs_affected);
    for (size_t j = 0; j < s.jobs.size(); ++j) {
      CHECK(p.jobs[j].path_fraction == s.jobs[j].path_fraction);
      CHECK(p.jobs[j].bandwidth_fraction == s.jobs[j].bandwidth_fraction);
      CHECK(p.jobs[j].crossing_share == s.jobs[j].crossing_share);
    }
  }
}

}  // namespace
}  // namespace drainwise::sim
