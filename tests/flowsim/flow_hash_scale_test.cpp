// The hash modes as they scale (sim/flow_route_hash.cpp, sim/flow_solver.cpp):
// each hashed path is an aggregate's two NIC links plus one class term per
// directed fabric link (a class per link, shared by every seed), classes
// with one tight link are solved as private links, the t = 0 finish
// predictions are sorted once, and drained seeds borrow one drained route
// table, the first seed running last. Checked on random multipath fabrics,
// oversubscribed so that hashed collisions fill fabric links, with several
// seeds and both hash modes:
//   - every aggregate is a path: NIC up, fabric links head to tail, NIC
//     down, and a demand's aggregates carry all of its flows;
//   - per seed, baseline and drained, the incremental solver agrees with the
//     full re-fill (the previous solver) on the same problem and with
//     textbook progressive filling over individual flows written here;
//   - the whole simulator, incremental against full re-fill, seed by seed
//     (the report's worst seed and mean).
// Tolerance: 0.1 % against the naive reference (the exactness contract),
// 1e-9 between the two solvers.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <span>

#include <doctest/doctest.h>

#include "fabric/generator.h"
#include "flowsim/flow_testing.h"
#include "model/drain.h"
#include "model/snapshot.h"
#include "sim/flow_sim.h"
#include "sim/flow_sim_state.h"
#include "sim/flow_solver.h"

namespace drainwise {
namespace {

using sim::FluidProblem;

// Progressive filling over individual flows, from the definition: raise
// every unfrozen flow until a link is full, freeze the flows crossing it,
// repeat; advance to the next completion and start again.
std::vector<double> NaiveFinish(const FluidProblem& p) {
  struct Flow {
    size_t agg;
    double left;
    std::map<uint32_t, double> on;  // link -> share
  };
  std::vector<Flow> flows;
  for (size_t a = 0; a < p.aggregate_count(); ++a) {
    Flow f{a, p.bits[a], {}};
    for (uint32_t k = p.private_offsets[a]; k < p.private_offsets[a + 1]; ++k)
      f.on[p.private_links[k]] += p.private_share(k);
    for (uint32_t k = p.term_offsets[a]; k < p.term_offsets[a + 1]; ++k) {
      for (const sim::LinkShare& ls : p.classes[p.terms[k]]) f.on[ls.link] += p.term_scale(k) * ls.share;
    }
    for (int w = 0; w < static_cast<int>(p.weight[a]); ++w) flows.push_back(f);
  }
  std::vector<double> finish(p.aggregate_count(), 0.0);
  std::vector<bool> live(flows.size());
  size_t left = 0;
  for (size_t i = 0; i < flows.size(); ++i) left += (live[i] = flows[i].left > 0);
  double now = 0;
  for (int round = 0; left > 0 && round < 100000; ++round) {
    std::vector<double> rate(flows.size(), 0.0), room = p.capacity_bps;
    std::vector<bool> frozen(flows.size());
    for (size_t i = 0; i < flows.size(); ++i) frozen[i] = !live[i];
    for (int step = 0; step < 100000; ++step) {
      std::map<uint32_t, double> slope;
      for (size_t i = 0; i < flows.size(); ++i) {
        if (!frozen[i]) {
          for (auto [l, s] : flows[i].on) slope[l] += s;
        }
      }
      if (slope.empty()) break;
      double inc = std::numeric_limits<double>::infinity();
      for (auto [l, s] : slope) inc = std::min(inc, room[l] / s);
      for (size_t i = 0; i < flows.size(); ++i) rate[i] += frozen[i] ? 0 : inc;
      for (auto [l, s] : slope) room[l] -= inc * s;
      for (size_t i = 0; i < flows.size(); ++i) {
        for (auto [l, s] : flows[i].on) frozen[i] = frozen[i] || room[l] <= 1e-9 * p.capacity_bps[l];
      }
    }
    double dt = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < flows.size(); ++i) {
      if (live[i]) dt = std::min(dt, flows[i].left / rate[i]);
    }
    now += dt;
    for (size_t i = 0; i < flows.size(); ++i) {
      if (!live[i]) continue;
      flows[i].left -= rate[i] * dt;
      if (flows[i].left <= 1e-9 * p.bits[flows[i].agg]) {
        live[i] = false;
        finish[flows[i].agg] = now;
        --left;
      }
    }
  }
  return finish;
}

struct HashCase {
  model::SnapshotPtr snapshot;
  model::Drain drain;
};

// Leaf/spine(/superspine) with several spines (many hashed paths), fabric
// links slower than the NICs, all-to-all and ring jobs across leaves.
// `fat_core`: fabric links far above what the NICs can feed them, so that
// none is tight and jobs that share one stay apart as components.
HashCase RandomHashCase(uint64_t seed, bool fat_core = false) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  fabric::FabricOptions f;
  f.tiers = pick(2, 3);
  f.pods = f.tiers == 3 ? 2 : 1;
  f.rails = pick(1, 2);
  f.gpus_per_host = f.rails * pick(1, 2);
  f.hosts_per_leaf = pick(2, 3);
  f.hosts = pick(6, 12);
  f.spines_per_pod = pick(2, 4);
  f.leaf_spine_links = pick(1, 2);
  f.superspines_per_plane = pick(1, 3);
  f.host_gbps = 100 * pick(1, 4);
  f.leaf_spine_gbps = 25 * pick(1, 4);
  f.spine_super_gbps = 25 * pick(1, 4);
  if (fat_core) f.leaf_spine_gbps = f.spine_super_gbps = 100000;
  auto spec = fabric::GenerateFabric(f);
  auto t = std::make_shared<const model::Topology>(*model::BuildTopology(spec));
  model::JobsSpec jobs = flowtest::RandomCollectiveJobs(*t, t->hosts(), rng, 3, 5);
  HashCase out;
  out.snapshot = model::MakeSnapshot(t, 1, jobs, 1);
  const auto& sw = t->switches();
  out.drain.switches.push_back(sw[static_cast<size_t>(pick(0, static_cast<int>(sw.size()) - 1))]);
  return out;
}

// The simulator's state as FlowSimulator::Create builds it (no baseline).
std::unique_ptr<sim::FlowSimulator::State> StateOf(const HashCase& c, const sim::FlowOptions& o) {
  auto st = std::make_unique<sim::FlowSimulator::State>();
  st->snapshot = c.snapshot;
  st->options = o;
  st->index = std::make_unique<sim::RoutingIndex>(*c.snapshot->topology);
  st->workload = sim::BuildWorkload(*c.snapshot->topology, *c.snapshot->jobs);
  const size_t ndl = 2 * c.snapshot->topology->link_count();
  st->capacity_bps.resize(ndl);
  for (size_t l = 0; l < ndl; ++l) st->capacity_bps[l] = st->index->capacity_bps_directed(static_cast<uint32_t>(l));
  return st;
}

// Every aggregate is one path from its demand's source NIC to its
// destination NIC; a connected demand's aggregates carry all its flows.
void CheckPaths(const sim::FlowSimulator::State& st, const sim::Scenario& sc) {
  const model::Topology& t = st.topo();
  const FluidProblem& p = sc.problem;
  std::vector<double> flows(st.workload.demands.size(), 0.0);
  auto tail = [&](uint32_t directed) {  // node a directed link leaves
    const model::Link& l = t.link(model::LinkId(directed / 2));
    return (directed % 2 == 0 ? l.a : l.b).value;
  };
  auto head = [&](uint32_t directed) { return tail(directed ^ 1u); };
  for (size_t a = 0; a < p.aggregate_count(); ++a) {
    const sim::FlowDemand& d = st.workload.demands[sc.agg_demand[a]];
    flows[sc.agg_demand[a]] += p.weight[a];
    REQUIRE(p.private_offsets[a + 1] - p.private_offsets[a] == 2);
    std::vector<uint32_t> path{p.private_links[p.private_offsets[a]]};
    for (uint32_t k = p.term_offsets[a]; k < p.term_offsets[a + 1]; ++k) {
      REQUIRE(p.classes[p.terms[k]].size() == 1);  // one fabric link per class
      path.push_back(p.classes[p.terms[k]][0].link);
    }
    path.push_back(p.private_links[p.private_offsets[a] + 1]);
    CHECK(tail(path.front()) == d.src);
    CHECK(head(path.back()) == d.dst);
    for (size_t h = 0; h + 1 < path.size(); ++h) CHECK(head(path[h]) == tail(path[h + 1]));
    // (A cut-off job's flows keep their paths but take no capacity: 0 hops.)
    if (sc.job_connected[d.job]) CHECK(sc.demand_hops[sc.agg_demand[a]] >= path.size());
  }
  for (size_t i = 0; i < flows.size(); ++i) {
    if (sc.job_connected[st.workload.demands[i].job]) CHECK(flows[i] == st.workload.demands[i].multiplicity);
  }
}

void CheckSolution(const FluidProblem& p, const sim::FluidSolution& inc, int& compared) {
  auto full = sim::SolveFluid(p, {}, {}, sim::FluidOptions{false});
  REQUIRE(full.has_value());
  const auto naive = NaiveFinish(p);
  for (size_t a = 0; a < p.aggregate_count(); ++a) {
    CAPTURE(a);
    CHECK(inc.finish_s[a] == doctest::Approx(full->finish_s[a]).epsilon(1e-9));
    CHECK(inc.rate0_bps[a] == doctest::Approx(full->rate0_bps[a]).epsilon(1e-9));
    CHECK(inc.finish_s[a] == doctest::Approx(naive[a]).epsilon(1e-3));
    ++compared;
  }
}

TEST_CASE("hash modes at scale: per-link paths, several seeds, against the full re-fill and the naive reference") {
  int compared = 0, fabric_tight = 0, drained_differs = 0;
  for (uint64_t seed = 9001; seed < 9031; ++seed) {
    CAPTURE(seed);
    HashCase c = RandomHashCase(seed);
    if (c.snapshot->jobs->size() == 0) continue;
    for (auto routing : {sim::FlowRouting::kHashResilient, sim::FlowRouting::kHashRehash}) {
      CAPTURE(sim::FlowRoutingName(routing));
      auto o = sim::FlowOptions::Exact();
      o.routing = routing;
      auto st = StateOf(c, o);
      const model::DrainMask none, mask(*c.snapshot->topology, c.drain);
      for (uint64_t hs = 1; hs <= 3; ++hs) {
        CAPTURE(hs);
        auto base = st->Run(none, {}, hs, {});
        REQUIRE(base.has_value());
        CheckPaths(*st, *base);
        CheckSolution(base->problem, base->solution, compared);
        const model::Topology& t = *c.snapshot->topology;
        bool fabric_bottleneck = false;
        for (uint32_t l : base->solution.bottleneck0) {
          if (l == sim::kNoLink) continue;
          const model::Link& link = t.link(model::LinkId(l / 2));
          fabric_bottleneck = fabric_bottleneck || (t.node(link.a).is_switch() && t.node(link.b).is_switch());
        }
        fabric_tight += fabric_bottleneck;
        sim::FlowSimulator::State::RunFrom from;
        from.reuse = &*base;
        if (routing == sim::FlowRouting::kHashResilient) from.previous_paths = &*base;
        auto drained = st->Run(mask, from, hs, {});
        REQUIRE(drained.has_value());
        CheckPaths(*st, *drained);
        CheckSolution(drained->problem, drained->solution, compared);
        drained_differs += drained->solution.makespan_s != base->solution.makespan_s;
      }
    }
  }
  CHECK(compared > 2000);
  CHECK(fabric_tight > 10);     // runs where hashed collisions make a fabric link a bottleneck
  CHECK(drained_differs > 10);  // the drains matter
}

TEST_CASE("hash modes at scale: the simulator with several seeds, incremental against the full re-fill") {
  int compared = 0, seeds_differ = 0;
  for (uint64_t seed = 9101; seed < 9121; ++seed) {
    CAPTURE(seed);
    HashCase c = RandomHashCase(seed);
    if (c.snapshot->jobs->size() == 0) continue;
    for (auto routing : {sim::FlowRouting::kHashResilient, sim::FlowRouting::kHashRehash}) {
      auto o = sim::FlowOptions::Exact();
      o.routing = routing;
      o.hash_seeds = 4;
      auto inc = sim::SimulateFlows(*c.snapshot, c.drain, o);
      o.incremental_solver = false;
      auto full = sim::SimulateFlows(*c.snapshot, c.drain, o);
      REQUIRE(inc.has_value());
      REQUIRE(full.has_value());
      REQUIRE(inc->jobs.size() == full->jobs.size());
      for (size_t j = 0; j < inc->jobs.size(); ++j) {
        const auto& x = inc->jobs[j];
        const auto& y = full->jobs[j];
        REQUIRE(x.drained.connected == y.drained.connected);
        CHECK(x.baseline.comm_s == doctest::Approx(y.baseline.comm_s).epsilon(1e-9));
        CHECK(x.baseline.comm_s_worst == doctest::Approx(y.baseline.comm_s_worst).epsilon(1e-9));
        CHECK(x.drained.comm_s == doctest::Approx(y.drained.comm_s).epsilon(1e-9));
        CHECK(x.drained.comm_s_worst == doctest::Approx(y.drained.comm_s_worst).epsilon(1e-9));
        seeds_differ += x.drained.comm_s_worst > x.drained.comm_s * (1 + 1e-9);
        ++compared;
      }
      for (size_t l = 0; l < inc->drained_load_bps.size(); ++l) {
        CHECK(inc->drained_load_bps[l] == doctest::Approx(full->drained_load_bps[l]).epsilon(1e-9));
      }
    }
  }
  CHECK(compared > 40);
  CHECK(seeds_differ > 5);  // seeds hash differently
}

// Two footprints with the same components, links and sums, to the bit.
void CheckSameFootprint(const sim::ComponentFootprint& x, const sim::ComponentFootprint& y) {
  CHECK(x.offsets == y.offsets);
  REQUIRE(x.entries.size() == y.entries.size());
  for (size_t i = 0; i < x.entries.size(); ++i) {
    const auto& a = x.entries[i];
    const auto& b = y.entries[i];
    CAPTURE(i);
    CHECK(a.link == b.link);
    CHECK(std::bit_cast<uint64_t>(a.side0) == std::bit_cast<uint64_t>(b.side0));
    CHECK(std::bit_cast<uint64_t>(a.side1) == std::bit_cast<uint64_t>(b.side1));
    CHECK(std::bit_cast<uint64_t>(a.load) == std::bit_cast<uint64_t>(b.load));
  }
}

// A class's bound, on each side, sums the capacity of every distinct NIC
// link feeding it in ascending order of link (sim/flow_solver.h). The
// unit-share path finds those links 64 at a time (CoverSums), so this
// problem has hundreds of NIC links per side, in no order among the
// aggregates, with capacities whose sums round differently in another
// order; the general path (shares written out as 1.0) and a sum written
// here must agree to the bit.
TEST_CASE("class rate bounds: distinct NIC links in ascending order, across blocks of them, to the bit") {
  std::mt19937_64 rng(9301);
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  auto pick = [&](size_t n) { return static_cast<uint32_t>(std::uniform_int_distribution<size_t>(0, n - 1)(rng)); };
  constexpr uint32_t kNics = 300, kFabric = 120;  // links [0, 300) source NICs, [300, 600) destination
  FluidProblem p;
  p.capacity_bps.resize(2 * kNics + kFabric);
  for (double& c : p.capacity_bps) c = std::exp(uniform(std::log(1e6), std::log(1e13)));
  for (uint32_t l = 0; l < kFabric; ++l) {
    const sim::LinkShare ls{2 * kNics + l, 1.0};
    p.AddClass(std::span<const sim::LinkShare>(&ls, 1));
  }
  p.AddClass({});  // a class no aggregate reaches: bound 0
  std::vector<std::set<uint32_t>> feeds[2];
  feeds[0].resize(p.class_count());
  feeds[1].resize(p.class_count());
  std::set<uint32_t> unbounded;
  for (int a = 0; a < 6000; ++a) {
    const uint32_t src = pick(kNics), dst = kNics + pick(kNics);
    std::vector<sim::ClassTerm> terms;
    for (uint32_t k = pick(4); k < 4; ++k) terms.push_back({pick(kFabric), 1.0});
    // A few aggregates with no private link leave their classes unbounded.
    const bool none = pick(500) == 0;
    std::vector<sim::LinkShare> priv;
    if (!none) priv = {{src, 1.0}, {dst, 1.0}};
    p.AddAggregate(1, 1e9, priv, terms);
    for (const sim::ClassTerm& t : terms) {
      if (none) {
        unbounded.insert(t.cls);
        continue;
      }
      feeds[0][t.cls].insert(src);
      feeds[1][t.cls].insert(dst);
    }
  }
  REQUIRE(p.private_shares.empty());
  REQUIRE(p.term_scales.empty());
  const sim::TaskRunner two = sim::ThreadsRunner(2);
  const std::vector<double> fast = sim::ClassRateBounds(p), fast2 = sim::ClassRateBounds(p, two);
  p.private_shares.assign(p.private_links.size(), 1.0);  // the general path
  const std::vector<double> general = sim::ClassRateBounds(p);
  REQUIRE(fast.size() == p.class_count());
  size_t order_matters = 0;
  for (uint32_t c = 0; c < p.class_count(); ++c) {
    CAPTURE(c);
    double want = std::numeric_limits<double>::infinity();
    if (!unbounded.count(c)) {
      double side[2] = {0, 0}, reversed[2] = {0, 0};
      for (int s = 0; s < 2; ++s) {
        for (uint32_t m : feeds[s][c]) side[s] += p.capacity_bps[m];
        for (auto it = feeds[s][c].rbegin(); it != feeds[s][c].rend(); ++it) reversed[s] += p.capacity_bps[*it];
        order_matters += side[s] != reversed[s];
      }
      want = std::min(side[0], side[1]);
    }
    CHECK(std::bit_cast<uint64_t>(fast[c]) == std::bit_cast<uint64_t>(want));
    CHECK(std::bit_cast<uint64_t>(fast2[c]) == std::bit_cast<uint64_t>(want));
    CHECK(std::bit_cast<uint64_t>(general[c]) == std::bit_cast<uint64_t>(want));
  }
  CHECK(fast.back() == 0);
  CHECK(!unbounded.empty());
  CHECK(order_matters > 100);  // the order of the sums shows in their bits
}

// TightLinks decides most class links from a few of the NIC links feeding
// each class (a lower bound of its bound, sim/flow_solver.cpp FewCovers)
// and falls back to the exact bounds when one is not enough. Classes fed
// by many NIC links on both sides; by one fast NIC on one side and many
// slower ones on the other (the exact side is then not the minimum); by
// one or two aggregates; and by six aggregates at the end of the list
// (all in the second of the two halves the NICs are found in). Link
// capacities are set around each class's exact bound (below it: tight;
// at or above it: not, and redundant), or far below it (decided from the
// few), one kind of class at a time and all at once. Against the
// definition, and the general path, whichever path decides.
TEST_CASE("tight links: decided from a few NIC links per class where that suffices, as from all of them") {
  std::mt19937_64 rng(9302);
  auto pick = [&](size_t n) { return static_cast<uint32_t>(std::uniform_int_distribution<size_t>(0, n - 1)(rng)); };
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  constexpr uint32_t kNics = 200, kFast = 10, kBusy = 40, kOneSided = 40, kSparse = 40, kLate = 40;
  const uint32_t classes = kBusy + kOneSided + kSparse + kLate, fabric0 = 2 * kNics;
  std::vector<double> nic_cap(2 * kNics);
  for (double& c : nic_cap) c = uniform(1e10, 4e11);
  for (uint32_t m = kNics - kFast; m < kNics; ++m) nic_cap[m] = 5e12;  // fast source NICs
  struct Agg {
    uint32_t src, dst;
    std::vector<sim::ClassTerm> terms;
  };
  std::vector<Agg> aggs;
  for (int i = 0; i < 3000; ++i) {  // busy: any NIC pair, several busy classes
    Agg a{pick(kNics), kNics + pick(kNics), {}};
    for (uint32_t k = pick(3); k < 3; ++k) a.terms.push_back({pick(kBusy), 1.0});
    aggs.push_back(a);
  }
  for (uint32_t c = kBusy; c < kBusy + kOneSided; ++c) {  // one fast source NIC, many destinations
    const uint32_t src = kNics - kFast + pick(kFast);
    for (int i = 0; i < 12; ++i) aggs.push_back({src, kNics + pick(kNics), {{c, 1.0}}});
  }
  for (uint32_t c = kBusy + kOneSided; c < kBusy + kOneSided + kSparse; ++c) {  // one or two aggregates
    for (uint32_t i = 0; i <= pick(2); ++i) aggs.push_back({pick(kNics), kNics + pick(kNics), {{c, 1.0}}});
  }
  std::shuffle(aggs.begin(), aggs.end(), rng);
  for (uint32_t c = kBusy + kOneSided + kSparse; c < classes; ++c) {  // six destinations, at the end
    for (uint32_t i = 0; i < 6; ++i) aggs.push_back({pick(kNics), kNics + (c * 7 + i * 31) % kNics, {{c, 1.0}}});
  }
  // The exact bounds, from the definition.
  std::vector<std::set<uint32_t>> feeds[2];
  feeds[0].resize(classes);
  feeds[1].resize(classes);
  for (const Agg& a : aggs) {
    for (const sim::ClassTerm& t : a.terms) {
      feeds[0][t.cls].insert(a.src);
      feeds[1][t.cls].insert(a.dst);
    }
  }
  std::vector<double> want_bound(classes);
  for (uint32_t c = 0; c < classes; ++c) {
    double side[2] = {0, 0};
    for (int s = 0; s < 2; ++s) {
      for (uint32_t m : feeds[s][c]) side[s] += nic_cap[m];
    }
    want_bound[c] = std::min(side[0], side[1]);
  }
  // Per round, which kinds of class have capacities around their bounds
  // (bit 0 busy, 1 one-sided, 2 sparse, 3 late); the others far below.
  auto kind = [&](uint32_t c) {
    return c < kBusy ? 0 : c < kBusy + kOneSided ? 1 : c < kBusy + kOneSided + kSparse ? 2 : 3;
  };
  for (const unsigned around : {0u, 2u, 4u, 8u, 15u}) {
    CAPTURE(around);
    FluidProblem p;
    p.capacity_bps = nic_cap;
    p.capacity_bps.resize(fabric0 + classes);
    std::vector<uint8_t> want_tight(p.capacity_bps.size(), 0);
    size_t want_redundant = 0;
    for (uint32_t c = 0; c < classes; ++c) {
      const bool far = ((around >> kind(c)) & 1) == 0;
      const double f = far ? 1e-3 : std::array{0.5, 0.7, 0.9, 1.0, 2.0}[pick(5)];
      p.capacity_bps[fabric0 + c] = want_bound[c] * f;
      const sim::LinkShare ls{fabric0 + c, 1.0};
      p.AddClass(std::span<const sim::LinkShare>(&ls, 1));
      want_tight[fabric0 + c] = want_bound[c] > p.capacity_bps[fabric0 + c] * (1 + 1e-9);
      want_redundant += !want_tight[fabric0 + c] && want_bound[c] > 0;
    }
    for (const Agg& a : aggs) {
      p.AddAggregate(1, 1e9, {{a.src, 1.0}, {a.dst, 1.0}}, a.terms);
      want_tight[a.src] = want_tight[a.dst] = 1;
    }
    REQUIRE(p.private_shares.empty());
    size_t redundant = 0, redundant_general = 0;
    const std::vector<uint8_t> tight = sim::TightLinks(p, &redundant, sim::ThreadsRunner(2));
    CHECK(tight == want_tight);
    CHECK(redundant == want_redundant);
    p.private_shares.assign(p.private_links.size(), 1.0);  // the general path: every bound exact
    CHECK(sim::TightLinks(p, &redundant_general) == want_tight);
    CHECK(redundant_general == want_redundant);
  }
}

// The hash modes' problems have every share and scale 1, and TightLinks
// and FootprintOf then set one bit per (NIC link, class) instead of
// grouping the aggregates by NIC link (sim/flow_solver.cpp, CoverSums).
// The same problem with its shares written out as 1.0 takes the general
// path: both must give the same tight links and the same footprint, to the
// bit. The components are checked against a grouping written here: two
// aggregates are in one component when a chain of shared tight links (or
// classes with a tight link) joins them; ids dense in order of first
// aggregate.
TEST_CASE("hash modes: the unit-share bounds and the components match the general path, to the bit") {
  int problems = 0, redundant_seen = 0, multi_component = 0, shared_class_links = 0;
  for (uint64_t seed = 9201; seed < 9231; ++seed) {
    CAPTURE(seed);
    HashCase c = RandomHashCase(seed, seed >= 9221);
    if (c.snapshot->jobs->size() == 0) continue;
    auto o = sim::FlowOptions::Exact();
    o.routing = sim::FlowRouting::kHashResilient;
    auto st = StateOf(c, o);
    const model::DrainMask none, mask(*c.snapshot->topology, c.drain);
    for (const model::DrainMask* m : {&none, &mask}) {
      auto sc = st->Run(*m, {}, 1, {});
      REQUIRE(sc.has_value());
      FluidProblem& p = sc->problem;
      REQUIRE(p.private_shares.empty());
      REQUIRE(p.term_scales.empty());
      size_t redundant_fast = 0, redundant_general = 0;
      const auto tight_fast = sim::TightLinks(p, &redundant_fast);
      const auto foot_fast = sim::FootprintOf(p, sc->solution, SIZE_MAX);

      // Components from the definition, over the tight links.
      const size_t na = p.aggregate_count();
      std::vector<uint32_t> group(na);
      for (size_t a = 0; a < na; ++a) group[a] = static_cast<uint32_t>(a);
      std::function<uint32_t(uint32_t)> find = [&](uint32_t a) {
        return group[a] == a ? a : group[a] = find(group[a]);
      };
      std::map<uint32_t, uint32_t> first_on;  // tight link -> an aggregate on it
      for (size_t a = 0; a < na; ++a) {
        std::vector<uint32_t> links(p.private_links.begin() + p.private_offsets[a],
                                    p.private_links.begin() + p.private_offsets[a + 1]);
        for (uint32_t k = p.term_offsets[a]; k < p.term_offsets[a + 1]; ++k) {
          for (const sim::LinkShare& ls : p.classes[p.terms[k]]) {
            if (tight_fast[ls.link]) links.push_back(ls.link);
          }
        }
        for (uint32_t l : links) {
          auto [it, fresh] = first_on.emplace(l, static_cast<uint32_t>(a));
          if (!fresh) group[find(static_cast<uint32_t>(a))] = find(it->second);
        }
      }
      std::map<uint32_t, uint32_t> dense;
      for (size_t a = 0; a < na; ++a) {
        auto [it, fresh] = dense.emplace(find(static_cast<uint32_t>(a)), static_cast<uint32_t>(dense.size()));
        CAPTURE(a);
        CHECK(sc->solution.component_of(a) == it->second);
      }
      multi_component += dense.size() > 1;
      // The footprint's links per component, from the definition: every
      // directed link an aggregate of the component uses, ascending.
      std::vector<std::set<uint32_t>> used(dense.size());
      for (size_t a = 0; a < na; ++a) {
        auto& u = used[sc->solution.component_of(a)];
        for (uint32_t k = p.private_offsets[a]; k < p.private_offsets[a + 1]; ++k) u.insert(p.private_links[k]);
        for (uint32_t k = p.term_offsets[a]; k < p.term_offsets[a + 1]; ++k) {
          for (const sim::LinkShare& ls : p.classes[p.terms[k]]) u.insert(ls.link);
        }
      }
      REQUIRE(foot_fast.component_count() == used.size());
      for (size_t comp = 0; comp < used.size(); ++comp) {
        std::vector<uint32_t> links;
        for (const auto& e : foot_fast.of(comp)) links.push_back(e.link);
        CAPTURE(comp);
        CHECK(links == std::vector<uint32_t>(used[comp].begin(), used[comp].end()));
      }
      // Its sides, from the definition: on a class's link, the capacity of
      // each distinct NIC link (source side, destination side) whose
      // aggregates in the component cross the class, summed in ascending
      // link order (every share is 1); 0 on a private link.
      std::vector<std::map<uint32_t, std::set<uint32_t>>> covers[2];
      for (auto& side : covers) side.resize(used.size());
      for (size_t a = 0; a < na; ++a) {
        const uint32_t comp = sc->solution.component_of(a);
        const uint32_t up = p.private_links[p.private_offsets[a]];
        const uint32_t down = p.private_links[p.private_offsets[a + 1] - 1];
        for (uint32_t k = p.term_offsets[a]; k < p.term_offsets[a + 1]; ++k) {
          const uint32_t l = p.classes[p.terms[k]][0].link;
          covers[0][comp][l].insert(up);
          covers[1][comp][l].insert(down);
        }
      }
      std::map<uint32_t, int> components_on;  // class link -> components crossing it
      for (size_t comp = 0; comp < used.size(); ++comp) {
        for (const auto& e : foot_fast.of(comp)) {
          CAPTURE(comp);
          CAPTURE(e.link);
          if (covers[0][comp].count(e.link) && ++components_on[e.link] == 2) ++shared_class_links;
          double want[2] = {0, 0};
          for (int s = 0; s < 2; ++s) {
            auto it = covers[s][comp].find(e.link);
            if (it == covers[s][comp].end()) continue;
            for (uint32_t m : it->second) want[s] += p.capacity_bps[m];
          }
          CHECK(std::bit_cast<uint64_t>(e.side0) == std::bit_cast<uint64_t>(want[0]));
          CHECK(std::bit_cast<uint64_t>(e.side1) == std::bit_cast<uint64_t>(want[1]));
        }
      }

      p.private_shares.assign(p.private_links.size(), 1.0);  // the general path
      const auto tight_general = sim::TightLinks(p, &redundant_general);
      const auto foot_general = sim::FootprintOf(p, sc->solution, SIZE_MAX);
      CHECK(tight_fast == tight_general);
      CHECK(redundant_fast == redundant_general);
      redundant_seen += redundant_fast > 0;
      REQUIRE(!foot_fast.empty());
      CheckSameFootprint(foot_fast, foot_general);

      // Through two threads (the union find's two halves, the footprint's
      // two sides and two runs of components): the same components and
      // the same footprint, to the bit; and no footprint one entry short.
      const sim::TaskRunner runner = sim::ThreadsRunner(2);
      sim::FlowSimulator::State::RunFrom from;
      from.runner = &runner;
      auto sc2 = st->Run(*m, from, 1, {});
      REQUIRE(sc2.has_value());
      REQUIRE(sc2->solution.aggregate_count() == na);
      for (size_t a = 0; a < na; ++a) {
        CAPTURE(a);
        CHECK(sc2->solution.component_of(a) == sc->solution.component_of(a));
      }
      for (const bool unit_shares : {true, false}) {
        CAPTURE(unit_shares);
        if (unit_shares) {
          p.private_shares.clear();
        } else {
          p.private_shares.assign(p.private_links.size(), 1.0);
        }
        const auto threaded = sim::FootprintOf(p, sc->solution, SIZE_MAX, runner);
        CheckSameFootprint(threaded, foot_fast);
        CHECK(sim::FootprintOf(p, sc->solution, threaded.entries.size() - 1, runner).empty());
        CHECK(!sim::FootprintOf(p, sc->solution, threaded.entries.size(), runner).empty());
        // The solve's own footprint (FluidOptions::footprint), on one
        // thread and on two: FootprintOf's, to the bit, and none one entry
        // short. (Several components solved at once make the two-thread
        // solve hand footprints to a thread left without a component.)
        for (const sim::TaskRunner* r : {static_cast<const sim::TaskRunner*>(nullptr), &runner}) {
          CAPTURE(r != nullptr);
          sim::ComponentFootprint solved, short_one;
          auto again = sim::SolveFluid(p, {}, {}, sim::FluidOptions{true, nullptr, r, &solved, SIZE_MAX});
          REQUIRE(again.has_value());
          CheckSameFootprint(solved, foot_fast);
          // Loads taken from the footprint (when no link is in two
          // components) are those of the passes over the problem.
          auto plain = sim::SolveFluid(p, {}, {}, sim::FluidOptions{true, nullptr, r});
          REQUIRE(plain.has_value());
          REQUIRE(plain->load0_bps.size() == again->load0_bps.size());
          for (size_t l = 0; l < plain->load0_bps.size(); ++l) {
            CAPTURE(l);
            CHECK(std::bit_cast<uint64_t>(plain->load0_bps[l]) == std::bit_cast<uint64_t>(again->load0_bps[l]));
          }
          short_one.offsets = {0};  // overwritten: empty
          REQUIRE(
              sim::SolveFluid(p, {}, {}, sim::FluidOptions{true, nullptr, r, &short_one, threaded.entries.size() - 1})
                  .has_value());
          CHECK(short_one.empty());
        }
        // Every component copied from a previous solution, none solved:
        // the footprint is made after the solve's tasks.
        std::vector<uint32_t> same(na);
        std::iota(same.begin(), same.end(), 0u);
        sim::ComponentFootprint copied;
        auto reused = sim::SolveFluid(p, {}, sim::ReuseHint{&sc->solution, &same},
                                      sim::FluidOptions{true, nullptr, &runner, &copied, SIZE_MAX});
        REQUIRE(reused.has_value());
        CHECK(reused->components_solved == 0);
        CheckSameFootprint(copied, foot_fast);
      }
      ++problems;
    }
  }
  CHECK(problems > 20);
  CHECK(redundant_seen > 0);   // some fabric links bounded below capacity
  CHECK(multi_component > 0);  // problems with several components
  // Class links crossed by two components or more, where a component's
  // sides are its part of the bound, not all of it.
  CHECK(shared_class_links > 0);
}

}  // namespace
}  // namespace drainwise
