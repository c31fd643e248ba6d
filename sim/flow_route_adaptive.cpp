// Adaptive routing (`adaptive`, docs/model.md "Fluid model"): a fabric that
// moves traffic off congested links (adaptive routing, spraying with
// congestion feedback) ends up splitting each route over its shortest paths
// so that no path it uses is fuller than one it could use instead.
//
// Model. Start from spray-path (even over all shortest paths) and its
// max-min rates at t = 0. The links full at t = 0 are where a
// congestion-aware fabric would shift traffic; the route classes crossing
// one are re-split. Each such class offers R (the sum of its flows'
// spray-path rates at t = 0) and its split is a unit flow on its
// shortest-path DAG. Class by class, traffic moves from the path through the
// fullest link the class uses to the path whose fullest link is least full
// (a minimax path on the DAG), as much as makes the two bottlenecks equal or
// empties the first path; until every path the class uses has the lowest
// bottleneck it can get (within a relative 1e-6), at most kSteps moves per
// class and kSweeps passes over the classes (an equilibrium in which each
// route only uses least-congested paths). Loads are those of t = 0. Then
// the rates are max-min fair on the new splits, as in every mode, and the
// splits stay fixed while flows finish. If that carries less traffic in
// total at t = 0 than spray-path (possible: the offered loads are
// spray-path's), the spray-path result stands, so `adaptive` never carries
// less than `spray-path`; with fixed splits no flow can exceed its multipath
// max-flow (a split is a flow of that value).
#include <algorithm>
#include <cmath>
#include <limits>

#include "sim/flow_sim_state.h"

namespace drainwise::sim {

namespace {

constexpr int kSweeps = 8;  // passes over the classes
constexpr int kSteps = 32;  // moves per class and pass
// Relative difference of utilisations below which two paths count as balanced.
constexpr double kGap = 1e-6;
// Utilisation of a link full at t = 0 (within rounding).
constexpr double kFull = 1 - 1e-9;

// One class's shortest-path DAG with local node ids, links in topological
// order of their tails, and its split.
struct ClassDag {
  uint32_t cls = 0;
  double offered_bps = 0;
  std::vector<uint32_t> directed;  // per local link
  std::vector<uint32_t> tail, head;
  std::vector<double> flow;                        // unit flow per local link
  std::vector<uint32_t> in_off, in, out_off, out;  // per node: its incoming / outgoing local links
  uint32_t nodes = 0, src = 0, dst = 0;
  bool valid = false;
};

ClassDag BuildDag(uint32_t cls, std::span<const ClassLink> links, double offered) {
  ClassDag g;
  g.cls = cls;
  g.offered_bps = offered;
  std::vector<uint32_t> ids;
  for (const ClassLink& l : links) {
    if (l.path_share <= 0) continue;
    ids.push_back(l.from);
    ids.push_back(l.to);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  g.nodes = static_cast<uint32_t>(ids.size());
  auto local = [&](uint32_t n) {
    return static_cast<uint32_t>(std::lower_bound(ids.begin(), ids.end(), n) - ids.begin());
  };
  std::vector<uint32_t> tail, head, dir;
  std::vector<double> flow;
  std::vector<uint32_t> indeg(g.nodes, 0), outdeg(g.nodes, 0);
  for (const ClassLink& l : links) {
    if (l.path_share <= 0) continue;
    tail.push_back(local(l.from));
    head.push_back(local(l.to));
    dir.push_back(l.directed);
    flow.push_back(l.path_share);
    ++outdeg[tail.back()];
    ++indeg[head.back()];
  }
  int srcs = 0, dsts = 0;
  for (uint32_t n = 0; n < g.nodes; ++n) {
    if (indeg[n] == 0) g.src = n, ++srcs;
    if (outdeg[n] == 0) g.dst = n, ++dsts;
  }
  if (srcs != 1 || dsts != 1) return g;  // not a single-source DAG: left as it is
  // Kahn's order of nodes; links sorted by their tail's rank.
  std::vector<uint32_t> off(g.nodes + 1, 0), out_links(tail.size());
  for (uint32_t t : tail) ++off[t + 1];
  for (uint32_t n = 0; n < g.nodes; ++n) off[n + 1] += off[n];
  {
    std::vector<uint32_t> fill(off.begin(), off.end() - 1);
    for (uint32_t k = 0; k < tail.size(); ++k) out_links[fill[tail[k]]++] = k;
  }
  std::vector<uint32_t> rank(g.nodes, 0), queue{g.src};
  queue.reserve(g.nodes);
  for (size_t q = 0; q < queue.size(); ++q) {
    const uint32_t n = queue[q];
    rank[n] = static_cast<uint32_t>(q);
    for (uint32_t k = off[n]; k < off[n + 1]; ++k) {
      if (--indeg[head[out_links[k]]] == 0) queue.push_back(head[out_links[k]]);
    }
  }
  if (queue.size() != g.nodes) return g;
  std::vector<uint32_t> order(tail.size());
  for (uint32_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) { return rank[tail[x]] < rank[tail[y]]; });
  for (uint32_t k : order) {
    g.tail.push_back(tail[k]);
    g.head.push_back(head[k]);
    g.directed.push_back(dir[k]);
    g.flow.push_back(flow[k]);
  }
  g.in_off.assign(g.nodes + 1, 0);
  g.out_off.assign(g.nodes + 1, 0);
  for (size_t k = 0; k < g.tail.size(); ++k) {
    ++g.out_off[g.tail[k] + 1];
    ++g.in_off[g.head[k] + 1];
  }
  for (uint32_t n = 0; n < g.nodes; ++n) {
    g.out_off[n + 1] += g.out_off[n];
    g.in_off[n + 1] += g.in_off[n];
  }
  g.in.resize(g.tail.size());
  g.out.resize(g.tail.size());
  {
    std::vector<uint32_t> fi(g.in_off.begin(), g.in_off.end() - 1), fo(g.out_off.begin(), g.out_off.end() - 1);
    for (uint32_t k = 0; k < g.tail.size(); ++k) {
      g.out[fo[g.tail[k]]++] = k;
      g.in[fi[g.head[k]]++] = k;
    }
  }
  g.valid = true;
  return g;
}

// Moves one class's traffic from its most loaded used path to its least
// loaded path, as far as equalises their bottlenecks, until no path of the
// class has a lower bottleneck than the fullest link it uses (at most
// kSteps moves per call); returns whether it moved. `x` holds every link's
// load, the class's own included.
struct Balancer {
  const std::vector<double>& cap;
  std::vector<double>& x;
  std::vector<double> util, bott;
  std::vector<uint32_t> next, worst, best;

  double U(uint32_t l, double extra = 0) const { return (x[l] + extra) / cap[l]; }

  bool Step(ClassDag& g) {
    const size_t nk = g.flow.size();
    const double r = g.offered_bps;
    bool moved = false;
    for (int step = 0; step < kSteps; ++step) {
      util.resize(nk);
      uint32_t top = UINT32_MAX;
      for (size_t k = 0; k < nk; ++k) {
        util[k] = U(g.directed[k]);
        if (g.flow[k] > 0 && (top == UINT32_MAX || util[k] > util[top])) top = static_cast<uint32_t>(k);
      }
      if (top == UINT32_MAX) return moved;
      // Least loaded path: minimise the largest utilisation on the way.
      constexpr double kInf = std::numeric_limits<double>::infinity();
      bott.assign(g.nodes, kInf);
      next.assign(g.nodes, UINT32_MAX);
      bott[g.dst] = 0;
      for (size_t k = nk; k-- > 0;) {
        const double b = std::max(util[k], bott[g.head[k]]);
        if (b < bott[g.tail[k]]) {
          bott[g.tail[k]] = b;
          next[g.tail[k]] = static_cast<uint32_t>(k);
        }
      }
      if (!(bott[g.src] < util[top] * (1 - kGap))) return moved;
      best.clear();
      for (uint32_t n = g.src; n != g.dst && next[n] != UINT32_MAX; n = g.head[next[n]]) best.push_back(next[n]);
      // The most loaded used path: through `top`, along used links, the
      // fullest at each node (conservation keeps a used one at every node).
      worst.assign(1, top);
      for (uint32_t n = g.tail[top]; n != g.src;) {
        uint32_t pick = UINT32_MAX;
        for (uint32_t k : in_links(g, n)) {
          if (g.flow[k] > 0 && (pick == UINT32_MAX || util[k] > util[pick])) pick = k;
        }
        if (pick == UINT32_MAX) return moved;
        worst.push_back(pick);
        n = g.tail[pick];
      }
      for (uint32_t n = g.head[top]; n != g.dst;) {
        uint32_t pick = UINT32_MAX;
        for (uint32_t k : out_links(g, n)) {
          if (g.flow[k] > 0 && (pick == UINT32_MAX || util[k] > util[pick])) pick = k;
        }
        if (pick == UINT32_MAX) return moved;
        worst.push_back(pick);
        n = g.head[pick];
      }
      double room = kInf;
      for (uint32_t k : worst) room = std::min(room, g.flow[k]);
      auto on = [](const std::vector<uint32_t>& path, uint32_t k) {
        return std::find(path.begin(), path.end(), k) != path.end();
      };
      // Moving d of the class's unit flow: the best path's bottleneck
      // rises, the worst's falls (links on both do not change).
      auto gap = [&](double d) {
        double up = 0, down = 0;
        for (uint32_t k : best) {
          if (!on(worst, k)) up = std::max(up, U(g.directed[k], d * r));
        }
        for (uint32_t k : worst) {
          if (!on(best, k)) down = std::max(down, U(g.directed[k], -d * r));
        }
        return up - down;
      };
      double d = room;
      if (gap(room) > 0) {
        double lo = 0, hi = room;
        for (int i = 0; i < 60; ++i) {
          const double mid = 0.5 * (lo + hi);
          (gap(mid) > 0 ? hi : lo) = mid;
        }
        d = lo;
      }
      if (!(d > 0)) return moved;
      for (uint32_t k : worst) {
        if (on(best, k)) continue;
        const double f = g.flow[k] - d < 1e-12 ? 0.0 : g.flow[k] - d;
        x[g.directed[k]] -= (g.flow[k] - f) * r;
        g.flow[k] = f;
      }
      for (uint32_t k : best) {
        if (on(worst, k)) continue;
        g.flow[k] += d;
        x[g.directed[k]] += d * r;
      }
      moved = true;
    }
    return moved;
  }

  static std::span<const uint32_t> in_links(const ClassDag& g, uint32_t n) {
    return {g.in.data() + g.in_off[n], g.in.data() + g.in_off[n + 1]};
  }
  static std::span<const uint32_t> out_links(const ClassDag& g, uint32_t n) {
    return {g.out.data() + g.out_off[n], g.out.data() + g.out_off[n + 1]};
  }
};

double Carried0(const FluidProblem& p, const FluidSolution& s) {
  double sum = 0;
  for (size_t a = 0; a < p.aggregate_count(); ++a) {
    if (p.bits[a] > 0 && std::isfinite(s.rate0_bps[a])) sum += p.weight[a] * s.rate0_bps[a];
  }
  return sum;
}

bool SameShares(std::span<const LinkShare> a, std::span<const LinkShare> b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].link != b[i].link || a[i].share != b[i].share) return false;
  }
  return true;
}

}  // namespace

Status FlowSimulator::State::Adapt(const Scenario* base, Scenario& sc, const TaskRunner* runner,
                                   std::stop_token stop) const {
  FluidProblem& p = sc.problem;
  const size_t nc = p.class_count(), na = p.aggregate_count(), nl = p.capacity_bps.size();
  sc.adapted.assign(nc, {});
  sc.any_adapted = false;
  const FluidSolution& spray = sc.solution;

  // Offered rate of each class at t = 0 under spray-path.
  std::vector<double> offered(nc, 0.0);
  for (size_t a = 0; a < na; ++a) {
    if (!(p.bits[a] > 0) || !std::isfinite(spray.rate0_bps[a])) continue;
    for (uint32_t k = p.term_offsets[a]; k < p.term_offsets[a + 1]; ++k) {
      offered[p.terms[k]] += p.weight[a] * p.term_scale(k) * spray.rate0_bps[a];
    }
  }
  std::vector<uint8_t> full(nl, 0);
  for (size_t l = 0; l < nl; ++l) {
    full[l] = p.capacity_bps[l] > 0 && spray.load0_bps[l] >= kFull * p.capacity_bps[l] ? 1 : 0;
  }
  std::vector<ClassDag> dags;
  for (uint32_t c = 0; c < nc; ++c) {
    if (!(offered[c] > 0)) continue;
    bool crosses = false;
    for (const LinkShare& ls : p.classes[c]) crosses = crosses || full[ls.link];
    if (!crosses) continue;
    ClassDag g = BuildDag(c, sc.table.classes[c].links, offered[c]);
    if (g.valid) dags.push_back(std::move(g));
  }
  if (dags.empty()) return {};
  if (stop.stop_requested()) return MakeError(ErrorCode::kCancelled, "flow simulation cancelled");

  std::vector<double> load = spray.load0_bps;
  Balancer bal{p.capacity_bps, load, {}, {}, {}, {}, {}};
  std::vector<uint8_t> moved(dags.size(), 0);
  for (int sweep = 0; sweep < kSweeps; ++sweep) {
    bool any = false;
    for (size_t i = 0; i < dags.size(); ++i) {
      if (bal.Step(dags[i])) {
        moved[i] = 1;
        any = true;
      }
    }
    if (!any || stop.stop_requested()) break;
  }
  if (stop.stop_requested()) return MakeError(ErrorCode::kCancelled, "flow simulation cancelled");

  // The moved classes' splits, links in the order of their spray-path shares.
  size_t count = 0;
  for (size_t i = 0; i < dags.size(); ++i) {
    if (!moved[i]) continue;
    const ClassDag& g = dags[i];
    auto& shares = sc.adapted_shares.emplace_back();
    std::vector<std::pair<uint32_t, double>> by_link;
    for (size_t k = 0; k < g.flow.size(); ++k) {
      if (g.flow[k] > 0) by_link.push_back({g.directed[k], g.flow[k]});
    }
    std::sort(by_link.begin(), by_link.end());
    for (const auto& [l, f] : by_link) shares.push_back({l, f});
    sc.adapted[g.cls] = shares;
    p.classes[g.cls] = shares;
    ++count;
  }
  if (count == 0) return {};

  // Reuse `base`'s adapted solution for the demands whose routes and
  // splits are the same there (aggregate i = demand i).
  ReuseHint hint;
  std::vector<uint32_t> previous;
  if (base != nullptr && options.overload_penalty == 0) {
    std::vector<uint8_t> class_same(nc, 0);
    for (uint32_t c = 0; c < nc; ++c) {
      const RouteTable::Class& cl = sc.table.classes[c];
      const RouteTable::Class* b = base->table.Find(cl.key);
      if (b == nullptr || !cl.clean) continue;
      const size_t bi = static_cast<size_t>(b - base->table.classes.data());
      std::span<const LinkShare> mine = sc.adapted[c];
      std::span<const LinkShare> theirs = bi < base->adapted.size() ? base->adapted[bi] : std::span<const LinkShare>{};
      class_same[c] = (mine.empty() && theirs.empty()) || SameShares(mine, theirs) ? 1 : 0;
    }
    previous.assign(na, kNoLink);
    for (size_t a = 0; a < na; ++a) {
      const uint32_t j = workload.demands[a].job;
      if (sc.demand_changed[a] || sc.job_connected[j] != base->job_connected[j]) continue;
      bool same = true;
      for (uint32_t k = p.term_offsets[a]; k < p.term_offsets[a + 1] && same; ++k) same = class_same[p.terms[k]];
      if (same) previous[a] = static_cast<uint32_t>(a);
    }
    hint = {&base->solution, &previous};
  }
  auto sol = SolveFluid(p, stop, hint, FluidOptions{options.incremental_solver, nullptr, runner});
  if (!sol) return tl::unexpected(sol.error());
  if (Carried0(p, *sol) < Carried0(p, spray) * (1 - 1e-12)) {
    // Balancing the offered loads carried less in all: spray-path stands.
    for (uint32_t c = 0; c < nc; ++c) {
      if (!sc.adapted[c].empty()) p.classes[c] = sc.table.classes[c].shares;
    }
    sc.adapted.assign(nc, {});
    sc.adapted_shares.clear();
    return {};
  }
  sc.spray_solution = std::move(sc.solution);
  sc.solution = std::move(*sol);
  sc.any_adapted = true;
  return {};
}

}  // namespace drainwise::sim
