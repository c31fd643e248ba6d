// The exactness contract, checked against a deliberately naive reference
// written here from the model's definition (not from the simulator's code):
// for explicit `flows` jobs, spray routing and no background traffic, a
// job's comm_s is the time its last flow finishes when all flows start at
// t = 0 and rates are max-min fair with the fixed split fractions,
// recomputed at every completion. Tolerance: 0.1% (the contract).
//
// The reference routes each flow on its own (BFS from the destination,
// hosts never transit, per-hop even split over next-hop links or even
// over shortest paths), then runs textbook progressive filling over
// individual flows: raise every unfrozen flow by the same increment until a
// link is full, freeze the flows on it, repeat; advance to the next
// completion; start again.
#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include <doctest/doctest.h>

#include "fabric/generator.h"
#include "model/drain.h"
#include "model/snapshot.h"
#include "sim/flow_sim.h"
#include "sim/flow_workload.h"

namespace drainwise {
namespace {

struct RefFlow {
  size_t job;
  double bits;
  std::map<uint32_t, double> share;  // directed link -> fraction
};

// Split fractions of one flow src -> dst under `mask`; empty when unreachable.
std::map<uint32_t, double> RefRoute(const model::Topology& t, const model::DrainMask& mask, model::NodeId src,
                                    model::NodeId dst, bool per_path) {
  const size_t n = t.node_count();
  const int kInf = 1 << 30;
  auto alive = [&](const model::Adjacency& adj) { return !mask.link_down(adj.link) && !mask.node_down(adj.peer); };
  // Distances to dst; hosts other than dst and src are never entered.
  std::vector<int> dist(n, kInf);
  dist[dst.value] = 0;
  std::vector<model::NodeId> queue{dst};
  for (size_t i = 0; i < queue.size(); ++i) {
    model::NodeId u = queue[i];
    for (const auto& adj : t.neighbors(u)) {
      if (!alive(adj) || dist[adj.peer.value] != kInf) continue;
      if (t.node(adj.peer).is_host()) continue;
      dist[adj.peer.value] = dist[u.value] + 1;
      queue.push_back(adj.peer);
    }
  }
  int ds = kInf;
  for (const auto& adj : t.neighbors(src)) {
    if (alive(adj) && t.node(adj.peer).is_switch() && dist[adj.peer.value] != kInf)
      ds = std::min(ds, dist[adj.peer.value] + 1);
  }
  if (ds == kInf) return {};
  dist[src.value] = ds;
  auto next_hops = [&](model::NodeId u) {
    std::vector<model::Adjacency> out;
    for (const auto& adj : t.neighbors(u)) {
      if (!alive(adj) || dist[adj.peer.value] != dist[u.value] - 1) continue;
      if (t.node(adj.peer).is_host() && adj.peer != dst) continue;
      out.push_back(adj);
    }
    return out;
  };
  auto directed = [&](model::NodeId from, model::LinkId l) { return 2 * l.value + (t.link(l).a == from ? 0 : 1); };
  // Nodes by decreasing distance from the source's level down.
  std::vector<model::NodeId> order;
  for (size_t v = 0; v < n; ++v) {
    if (dist[v] != kInf && dist[v] <= ds && (t.node(model::NodeId(v)).is_switch() || v == src.value))
      order.push_back(model::NodeId(v));
  }
  std::sort(order.begin(), order.end(), [&](auto a, auto b) { return dist[a.value] > dist[b.value]; });
  std::map<uint32_t, double> share;
  if (!per_path) {
    std::vector<double> frac(n, 0.0);
    frac[src.value] = 1;
    for (model::NodeId u : order) {
      if (frac[u.value] == 0) continue;
      auto nh = next_hops(u);
      for (const auto& adj : nh) {
        double f = frac[u.value] / static_cast<double>(nh.size());
        share[directed(u, adj.link)] += f;
        if (adj.peer != dst) frac[adj.peer.value] += f;
      }
    }
  } else {
    // Paths from src to each node (fwd) and from each node to dst (bwd).
    std::vector<double> fwd(n, 0.0), bwd(n, 0.0);
    fwd[src.value] = 1;
    for (model::NodeId u : order) {
      for (const auto& adj : next_hops(u)) {
        if (adj.peer != dst) fwd[adj.peer.value] += fwd[u.value];
      }
    }
    bwd[dst.value] = 1;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      for (const auto& adj : next_hops(*it)) bwd[it->value] += bwd[adj.peer.value];
    }
    const double total = bwd[src.value];
    for (model::NodeId u : order) {
      if (fwd[u.value] == 0) continue;
      for (const auto& adj : next_hops(u)) share[directed(u, adj.link)] += fwd[u.value] * bwd[adj.peer.value] / total;
    }
  }
  return share;
}

// Finish time of every flow under progressive filling.
std::vector<double> RefFinish(const std::vector<RefFlow>& flows, const std::vector<double>& capacity) {
  const size_t nf = flows.size();
  std::vector<double> remaining(nf), finish(nf, 0.0);
  std::vector<bool> active(nf, false);
  size_t live = 0;
  for (size_t f = 0; f < nf; ++f) {
    remaining[f] = flows[f].bits;
    active[f] = flows[f].bits > 0;
    live += active[f];
  }
  double now = 0;
  while (live > 0) {
    std::vector<double> rate(nf, 0.0), residual = capacity;
    std::vector<bool> frozen(nf, false);
    for (size_t f = 0; f < nf; ++f) frozen[f] = !active[f];
    while (true) {
      std::map<uint32_t, double> demand;  // unfrozen share per link
      for (size_t f = 0; f < nf; ++f) {
        if (frozen[f]) continue;
        for (auto [l, s] : flows[f].share) demand[l] += s;
      }
      if (demand.empty()) break;
      double inc = std::numeric_limits<double>::infinity();
      for (auto [l, s] : demand) inc = std::min(inc, residual[l] / s);
      for (size_t f = 0; f < nf; ++f) {
        if (!frozen[f]) rate[f] += inc;
      }
      for (auto [l, s] : demand) residual[l] -= inc * s;
      for (size_t f = 0; f < nf; ++f) {
        if (frozen[f]) continue;
        for (auto [l, s] : flows[f].share) {
          if (residual[l] <= 1e-9 * capacity[l]) frozen[f] = true;
        }
      }
    }
    double dt = std::numeric_limits<double>::infinity();
    for (size_t f = 0; f < nf; ++f) {
      if (active[f]) dt = std::min(dt, remaining[f] / rate[f]);
    }
    now += dt;
    for (size_t f = 0; f < nf; ++f) {
      if (!active[f]) continue;
      remaining[f] -= rate[f] * dt;
      if (remaining[f] <= 1e-9 * flows[f].bits) {
        active[f] = false;
        finish[f] = now;
        --live;
      }
    }
  }
  return finish;
}

struct Case {
  model::SnapshotPtr snapshot;
  model::Drain drain;
};

// single_path: one spine per pod, one superspine per plane, single links and
// one NIC per host, so every pair has exactly one shortest path (and every
// routing mode routes alike).
Case RandomCase(uint64_t seed, bool single_path = false) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto real = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  fabric::FabricOptions f;
  f.tiers = pick(2, 3);
  f.pods = f.tiers == 3 ? pick(1, 2) : 1;
  f.rails = pick(1, 2);
  f.hosts_per_leaf = pick(2, 3);
  f.hosts = pick(3, 10);
  f.gpus_per_host = 8;
  f.spines_per_pod = pick(1, 3);
  f.leaf_spine_links = pick(1, 2);
  f.superspines_per_plane = pick(1, 2);
  f.spine_super_links = pick(1, 2);
  f.host_gbps = 100 * pick(1, 4);
  f.leaf_spine_gbps = 25 * pick(1, 8);
  f.spine_super_gbps = 25 * pick(1, 8);
  f.single_homed_hosts = f.rails > 1 ? pick(0, 1) : 0;
  if (single_path) {
    f.rails = 1;
    f.single_homed_hosts = 0;
    f.spines_per_pod = f.leaf_spine_links = f.superspines_per_plane = f.spine_super_links = 1;
  }
  auto spec = fabric::GenerateFabric(f);
  auto topo = model::BuildTopology(spec);
  REQUIRE(topo.has_value());
  auto t = std::make_shared<const model::Topology>(std::move(*topo));
  const auto& hosts = t->hosts();

  model::JobsSpec jobs;
  int njobs = pick(1, 5);
  for (int j = 0; j < njobs; ++j) {
    model::JobSpec job;
    job.id = "j" + std::to_string(j);
    job.gpus_per_host = 1;
    job.iteration.compute_s = real(0, 0.1);
    job.iteration.overlap = real(0, 1);
    model::CollectiveSpec c;
    c.kind = model::CollectiveKind::kFlows;
    int nflows = pick(1, 6);
    std::vector<std::string> used;
    for (int k = 0; k < nflows; ++k) {
      size_t a = static_cast<size_t>(pick(0, static_cast<int>(hosts.size()) - 1));
      size_t b = static_cast<size_t>(pick(0, static_cast<int>(hosts.size()) - 2));
      if (b >= a) ++b;
      // Sizes from a small set so that equal finish times (batched
      // completions) are common too.
      double bytes = pick(0, 3) == 0 ? 1e8 : real(1e7, 1e9);
      std::string sa = t->node(hosts[a]).name, sb = t->node(hosts[b]).name;
      c.flows.push_back({sa, sb, bytes});
      for (const auto& h : {sa, sb}) {
        if (std::find(used.begin(), used.end(), h) == used.end()) used.push_back(h);
      }
    }
    job.hosts = used;
    job.iteration.collectives.push_back(c);
    jobs.jobs.push_back(job);
  }
  Case out;
  out.snapshot = model::MakeSnapshot(t, 1, jobs, 1);
  REQUIRE(out.snapshot->dropped_jobs.empty());
  // 0-2 switches and 0-2 links.
  const auto& sw = t->switches();
  for (int k = pick(0, 2); k > 0; --k)
    out.drain.switches.push_back(sw[static_cast<size_t>(pick(0, static_cast<int>(sw.size()) - 1))]);
  for (int k = pick(0, 2); k > 0; --k)
    out.drain.links.push_back(model::LinkId(pick(0, static_cast<int>(t->link_count()) - 1)));
  std::sort(out.drain.switches.begin(), out.drain.switches.end());
  out.drain.switches.erase(std::unique(out.drain.switches.begin(), out.drain.switches.end()), out.drain.switches.end());
  std::sort(out.drain.links.begin(), out.drain.links.end());
  out.drain.links.erase(std::unique(out.drain.links.begin(), out.drain.links.end()), out.drain.links.end());
  return out;
}

// Reference comm_s per job (nullopt: cut off) under `mask`.
std::vector<std::optional<double>> RefComm(const model::Snapshot& s, const model::DrainMask& mask, bool per_path) {
  const auto& t = *s.topology;
  const auto& jobs = *s.jobs;
  std::vector<RefFlow> flows;
  std::vector<bool> cut(jobs.size(), false);
  for (size_t j = 0; j < jobs.size(); ++j) {
    for (const auto& c : jobs.job(model::JobId(j)).iteration.collectives) {
      for (const auto& f : c.flows) {
        RefFlow rf{j, f.bytes * 8 * c.count, RefRoute(t, mask, f.src, f.dst, per_path)};
        if (rf.share.empty()) cut[j] = true;
        flows.push_back(std::move(rf));
      }
    }
  }
  std::vector<RefFlow> live;
  for (auto& f : flows) {
    if (!cut[f.job]) live.push_back(f);
  }
  std::vector<double> capacity(2 * t.link_count());
  for (size_t l = 0; l < capacity.size(); ++l) capacity[l] = t.link(model::LinkId(l / 2)).capacity_bps;
  auto finish = RefFinish(live, capacity);
  std::vector<std::optional<double>> out(jobs.size());
  for (size_t j = 0; j < jobs.size(); ++j) {
    if (!cut[j]) out[j] = 0.0;
  }
  for (size_t i = 0; i < live.size(); ++i) out[live[i].job] = std::max(*out[live[i].job], finish[i]);
  return out;
}

void CheckAgainstReference(sim::FlowRouting routing, uint64_t first_seed, int cases, bool single_path = false) {
  int compared = 0, drained_differs = 0, cut_off = 0;
  for (uint64_t seed = first_seed; seed < first_seed + static_cast<uint64_t>(cases); ++seed) {
    CAPTURE(seed);
    Case c = RandomCase(seed, single_path);
    auto o = sim::FlowOptions::Exact();
    o.routing = routing;
    o.hash_seeds = 3;
    auto rep = sim::SimulateFlows(*c.snapshot, c.drain, o);
    REQUIRE(rep.has_value());
    const bool per_path = routing == sim::FlowRouting::kSprayPath;
    auto base = RefComm(*c.snapshot, model::DrainMask(), per_path);
    auto drained = RefComm(*c.snapshot, model::DrainMask(*c.snapshot->topology, c.drain), per_path);
    for (size_t j = 0; j < base.size(); ++j) {
      CAPTURE(j);
      const auto& r = rep->jobs[j];
      REQUIRE(r.baseline.connected == base[j].has_value());
      REQUIRE(r.drained.connected == drained[j].has_value());
      if (base[j]) CHECK(r.baseline.comm_s == doctest::Approx(*base[j]).epsilon(1e-3));
      if (drained[j]) {
        CHECK(r.drained.comm_s == doctest::Approx(*drained[j]).epsilon(1e-3));
        if (base[j] && std::abs(*drained[j] - *base[j]) > 1e-6 * *base[j]) ++drained_differs;
      } else {
        ++cut_off;
      }
      ++compared;
    }
  }
  // The generator must exercise what it claims to: drains that change
  // times and drains that cut jobs off.
  CHECK(compared > cases);
  CHECK(drained_differs > cases / 10);
  CHECK(cut_off > 0);
}

// Fractions of a NIC-to-NIC flow: host `src` may leave only through NIC
// `sn`, and reach `dst` only through NIC `dn` (docs/model.md, Flow-level).
std::map<uint32_t, double> RefNicRoute(const model::Topology& t, const model::DrainMask& mask, model::NodeId src,
                                       int sn, model::NodeId dst, int dn, bool per_path) {
  // Reuse RefRoute on a view where the hosts have only those NICs: emulate
  // by draining every other NIC link of the two hosts.
  model::Drain extra;
  for (int k = 0; k < static_cast<int>(t.neighbors(src).size()); ++k) {
    if (k != sn) extra.links.push_back(t.neighbors(src)[k].link);
  }
  for (int k = 0; k < static_cast<int>(t.neighbors(dst).size()); ++k) {
    if (k != dn) extra.links.push_back(t.neighbors(dst)[k].link);
  }
  for (model::LinkId l : mask.down_links()) extra.links.push_back(l);
  std::sort(extra.links.begin(), extra.links.end());
  extra.links.erase(std::unique(extra.links.begin(), extra.links.end()), extra.links.end());
  model::DrainMask m(t, extra);
  return RefRoute(t, m, src, dst, per_path);
}

// The usable NICs of an endpoint: the named one while up, else every other
// live NIC (docs/model.md).
std::vector<int> RefNics(const model::Topology& t, const model::DrainMask& mask, model::NodeId host, int nic) {
  auto nics = t.neighbors(host);
  auto up = [&](int k) { return !mask.link_down(nics[k].link) && !mask.node_down(nics[k].peer); };
  if (nic < static_cast<int>(nics.size()) && up(nic)) return {nic};
  std::vector<int> out;
  for (int k = 0; k < static_cast<int>(nics.size()); ++k) {
    if (k != nic && up(k)) out.push_back(k);
  }
  return out;
}

// Reference comm_s (bandwidth part) per job for collective workloads: the
// flows of sim::BuildWorkload (their derivation is covered by the golden
// tests), each rank-level flow on its own, routed NIC to NIC here.
std::vector<std::optional<double>> RefCollectiveComm(const model::Snapshot& s, const model::DrainMask& mask,
                                                     bool per_path) {
  const auto& t = *s.topology;
  auto w = sim::BuildWorkload(t, *s.jobs);
  std::vector<RefFlow> flows;
  std::vector<bool> cut(s.jobs->size(), false);
  for (const auto& d : w.demands) {
    RefFlow rf{d.job, d.bytes * 8, {}};
    if (d.src_nic == sim::kAllNics) {
      rf.share = RefRoute(t, mask, model::NodeId(d.src), model::NodeId(d.dst), per_path);
    } else {
      auto sn = RefNics(t, mask, model::NodeId(d.src), d.src_nic);
      auto dn = RefNics(t, mask, model::NodeId(d.dst), d.dst_nic);
      std::vector<std::map<uint32_t, double>> pairs;
      for (int a : sn) {
        for (int b : dn) {
          auto r = RefNicRoute(t, mask, model::NodeId(d.src), a, model::NodeId(d.dst), b, per_path);
          if (!r.empty()) pairs.push_back(std::move(r));
        }
      }
      for (const auto& r : pairs) {
        for (auto [l, f] : r) rf.share[l] += f / static_cast<double>(pairs.size());
      }
    }
    if (rf.share.empty()) cut[d.job] = true;
    for (uint32_t k = 0; k < d.multiplicity; ++k) flows.push_back(rf);
  }
  std::vector<RefFlow> live;
  for (auto& f : flows) {
    if (!cut[f.job]) live.push_back(f);
  }
  std::vector<double> capacity(2 * t.link_count());
  for (size_t l = 0; l < capacity.size(); ++l) capacity[l] = t.link(model::LinkId(l / 2)).capacity_bps;
  auto finish = RefFinish(live, capacity);
  std::vector<std::optional<double>> out(s.jobs->size());
  for (size_t j = 0; j < out.size(); ++j) {
    if (!cut[j]) out[j] = 0.0;
  }
  for (size_t i = 0; i < live.size(); ++i) out[live[i].job] = std::max(*out[live[i].job], finish[i]);
  return out;
}

TEST_CASE("exactness: collective jobs (NIC-to-NIC routes, NIC fallback, route classes, dropped links)") {
  // Random fabrics as above with multi-GPU hosts; each job a ring
  // all-reduce, an all-to-all or a pipeline on a few consecutive hosts.
  // This exercises what explicit flows do not: NIC-specific routes through
  // shared switch-pair classes, the NIC fallback, and the solver dropping
  // class links that cannot saturate (their covers are the NIC links).
  int compared = 0, differs = 0, cut_off = 0;
  size_t dropped_links = 0;
  for (uint64_t seed = 5001; seed < 5061; ++seed) {
    CAPTURE(seed);
    std::mt19937_64 rng(seed);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    fabric::FabricOptions f;
    f.tiers = pick(2, 3);
    f.pods = f.tiers == 3 ? pick(1, 2) : 1;
    f.rails = pick(1, 2);
    f.gpus_per_host = f.rails * pick(1, 2);
    f.hosts_per_leaf = pick(2, 4);
    f.hosts = pick(4, 12);
    f.spines_per_pod = pick(1, 3);
    f.leaf_spine_links = pick(1, 2);
    f.superspines_per_plane = pick(1, 2);
    f.spine_super_links = pick(1, 2);
    f.host_gbps = 100 * pick(1, 4);
    f.leaf_spine_gbps = 50 * pick(1, 8);
    f.spine_super_gbps = 50 * pick(1, 8);
    auto spec = fabric::GenerateFabric(f);
    auto t = std::make_shared<const model::Topology>(*model::BuildTopology(spec));
    const auto& hosts = t->hosts();
    model::JobsSpec jobs;
    size_t cursor = 0;
    for (int j = 0; j < 4 && cursor + 2 <= hosts.size(); ++j) {
      model::JobSpec job;
      job.id = "j" + std::to_string(j);
      size_t n = std::min<size_t>(hosts.size() - cursor, static_cast<size_t>(pick(2, 4)));
      for (size_t k = 0; k < n; ++k) job.hosts.push_back(t->node(hosts[cursor + k]).name);
      cursor += n;  // jobs take whole hosts, disjoint
      model::CollectiveSpec c;
      int kind = pick(0, 2);
      c.kind = kind == 0   ? model::CollectiveKind::kAllReduce
               : kind == 1 ? model::CollectiveKind::kAllToAll
                           : model::CollectiveKind::kSendRecv;
      c.bytes = 1e6 * pick(10, 500);
      c.count = pick(1, 3);
      if (kind == 2) c.stages = static_cast<int>(n);
      job.iteration.collectives.push_back(c);
      jobs.jobs.push_back(job);
    }
    auto snap = model::MakeSnapshot(t, 1, jobs, 1);
    if (snap->jobs->size() == 0) continue;
    model::Drain drain;
    const auto& sw = t->switches();
    drain.switches.push_back(sw[static_cast<size_t>(pick(0, static_cast<int>(sw.size()) - 1))]);
    for (int k = pick(0, 2); k > 0; --k)
      drain.links.push_back(model::LinkId(pick(0, static_cast<int>(t->link_count()) - 1)));
    std::sort(drain.links.begin(), drain.links.end());
    drain.links.erase(std::unique(drain.links.begin(), drain.links.end()), drain.links.end());

    for (auto routing : {sim::FlowRouting::kSpray, sim::FlowRouting::kSprayPath}) {
      auto o = sim::FlowOptions::Exact();
      o.routing = routing;
      auto rep = sim::SimulateFlows(*snap, drain, o);
      REQUIRE(rep.has_value());
      const bool per_path = routing == sim::FlowRouting::kSprayPath;
      auto base = RefCollectiveComm(*snap, model::DrainMask(), per_path);
      auto drained = RefCollectiveComm(*snap, model::DrainMask(*t, drain), per_path);
      dropped_links += rep->model.redundant_links;
      for (size_t j = 0; j < base.size(); ++j) {
        CAPTURE(j);
        const auto& r = rep->jobs[j];
        REQUIRE(r.baseline.connected == base[j].has_value());
        REQUIRE(r.drained.connected == drained[j].has_value());
        if (base[j]) CHECK(r.baseline.comm_s == doctest::Approx(*base[j]).epsilon(1e-3));
        if (drained[j]) {
          CHECK(r.drained.comm_s == doctest::Approx(*drained[j]).epsilon(1e-3));
          if (base[j] && std::abs(*drained[j] - *base[j]) > 1e-6 * *base[j]) ++differs;
        } else {
          ++cut_off;
        }
        ++compared;
      }
    }
  }
  CHECK(compared > 100);
  CHECK(differs > 10);
  CHECK(cut_off > 0);
  CHECK(dropped_links > 0);
}

TEST_CASE("exactness: spray matches the naive reference on random fabrics and drains") {
  CheckAgainstReference(sim::FlowRouting::kSpray, 1, 60);
}

TEST_CASE("exactness: spray-path matches the naive reference on random fabrics and drains") {
  CheckAgainstReference(sim::FlowRouting::kSprayPath, 1001, 60);
}

// The hash modes' solver (hashed paths grouped into aggregates, incremental
// max-min, per-seed runs and reuse) against the naive reference, where the
// path of every flow is known without the hash: fabrics with one shortest
// path per pair. Where pairs have several paths, tests/flowsim/
// flow_solver_test.cpp checks the hash modes against the previous solver.
TEST_CASE("exactness: hash modes match the naive reference on single-path fabrics and drains") {
  CheckAgainstReference(sim::FlowRouting::kHashResilient, 2001, 40, true);
  CheckAgainstReference(sim::FlowRouting::kHashRehash, 3001, 40, true);
  CheckAgainstReference(sim::FlowRouting::kAdaptive, 4001, 40, true);
}

}  // namespace
}  // namespace drainwise
