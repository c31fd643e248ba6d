#include "sim/flow_sim.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <span>
#include <unordered_map>

#include <fmt/format.h>

#include "model/units.h"
#include "sim/flow_solver.h"
#include "sim/flow_workload.h"
#include "sim/routing.h"

namespace drainwise::sim {

std::string_view FlowRoutingName(FlowRouting routing) {
  switch (routing) {
    case FlowRouting::kSpray: return "spray";
    case FlowRouting::kSprayPath: return "spray-path";
    case FlowRouting::kHashResilient: return "hash-resilient";
    case FlowRouting::kHashRehash: return "hash-rehash";
  }
  return "spray";
}

std::optional<FlowRouting> ParseFlowRouting(std::string_view name) {
  if (name == "spray") return FlowRouting::kSpray;
  if (name == "spray-path") return FlowRouting::kSprayPath;
  if (name == "hash" || name == "hash-resilient") return FlowRouting::kHashResilient;
  if (name == "hash-rehash") return FlowRouting::kHashRehash;
  return std::nullopt;
}

Status ValidateFlowOptions(const FlowOptions& o, const model::Topology& topology) {
  if (!(o.goodput > 0 && o.goodput <= 1)) return InvalidArgument(fmt::format("goodput {} is not in (0, 1]", o.goodput));
  if (!(o.per_hop_latency_s >= 0) || !std::isfinite(o.per_hop_latency_s)) {
    return InvalidArgument(fmt::format("per_hop_latency_s {} is not >= 0", o.per_hop_latency_s));
  }
  if (!(o.per_message_overhead_s >= 0) || !std::isfinite(o.per_message_overhead_s)) {
    return InvalidArgument(fmt::format("per_message_overhead_s {} is not >= 0", o.per_message_overhead_s));
  }
  if (!(o.overload_penalty >= 0 && o.overload_penalty < 1)) {
    return InvalidArgument(fmt::format("overload_penalty {} is not in [0, 1)", o.overload_penalty));
  }
  if (!(o.overload_threshold > 0)) {
    return InvalidArgument(fmt::format("overload_threshold {} is not > 0", o.overload_threshold));
  }
  if (o.hash_seeds < 1 || o.hash_seeds > 1024) {
    return InvalidArgument(fmt::format("hash_seeds {} is not in [1, 1024]", o.hash_seeds));
  }
  if (!o.background_bps.empty() && o.background_bps.size() != 2 * topology.link_count()) {
    return InvalidArgument(fmt::format("background_bps has {} entries, expected one per directed link ({})",
                                       o.background_bps.size(), 2 * topology.link_count()));
  }
  for (size_t i = 0; i < o.background_bps.size(); ++i) {
    if (!(o.background_bps[i] >= 0) || !std::isfinite(o.background_bps[i])) {
      return InvalidArgument(fmt::format("background_bps[{}] ({}) is not a finite rate >= 0", i,
                                         topology.LinkName(LinkId(static_cast<uint32_t>(i / 2)))));
    }
  }
  return {};
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr uint64_t kExplicitKey = 1ull << 63;

uint64_t Mix(uint64_t x) {  // splitmix64 finaliser: same on every platform
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
uint64_t Hash(uint64_t seed, uint64_t a, uint64_t b, uint64_t c) {
  return Mix(Mix(Mix(seed ^ 0x5DEECE66Dull) ^ a) ^ (b * 0x100000001B3ull)) ^ Mix(c);
}

bool NicUp(const model::DrainMask& mask, const model::Adjacency& nic) {
  return !mask.link_down(nic.link) && !mask.node_down(nic.peer);
}

// NICs an endpoint uses: the named one while it is up, otherwise every other
// NIC of the host that is up (the fallback of docs/model.md).
void UsableNics(const model::Topology& topo, const model::DrainMask& mask, uint32_t host, int16_t nic,
                std::vector<int16_t>& out) {
  out.clear();
  auto nics = topo.neighbors(NodeId(host));
  if (mask.node_down(NodeId(host))) return;
  if (nic >= 0 && static_cast<size_t>(nic) < nics.size() && NicUp(mask, nics[nic])) {
    out.push_back(nic);
    return;
  }
  for (size_t i = 0; i < nics.size(); ++i) {
    if (static_cast<int>(i) != nic && NicUp(mask, nics[i])) out.push_back(static_cast<int16_t>(i));
  }
}

uint32_t NicLinkUp(const model::Topology& topo, uint32_t host, int16_t nic) {  // host -> switch
  const model::Adjacency& adj = topo.neighbors(NodeId(host))[nic];
  return DirectedLinkId(adj.link, topo.link(adj.link).a.value == host);
}
uint32_t NicLinkDown(const model::Topology& topo, uint32_t host, int16_t nic) {  // switch -> host
  return NicLinkUp(topo, host, nic) ^ 1u;
}
uint32_t NicSwitch(const model::Topology& topo, uint32_t host, int16_t nic) {
  return topo.neighbors(NodeId(host))[nic].peer.value;
}

struct ClassLink {
  uint32_t from;
  uint32_t to;
  uint32_t directed;
  double hop_share;
  double path_share;
};

// Routes between switch pairs (NIC-to-NIC flows: the fabric between the two
// NICs' switches, shared by every host behind them) and between host pairs
// (explicit flows, NIC links included), under one mask. A drained table
// borrows the routes the drain leaves unchanged from the baseline table
// (which outlives it) instead of copying them.
struct RouteTable {
  struct Class {
    uint64_t key = 0;
    uint32_t rep_src = 0, rep_dst = 0;  // representative hosts
    int16_t rep_src_nic = kAllNics, rep_dst_nic = kAllNics;
    bool computed = false;
    bool connected = false;
    bool clean = false;  // the baseline's route, unchanged by the drain
    uint16_t hops = 0;   // switch pair: links between the two switches; host pair: whole path
    std::span<const ClassLink> links;  // hash modes: sorted by (from, directed)
    std::span<const LinkShare> shares; // the routing mode's share of each link (> 0 only)
  };
  std::vector<Class> classes;
  std::deque<std::vector<ClassLink>> own_links;
  std::deque<std::vector<LinkShare>> own_shares;
  std::unordered_map<uint64_t, uint32_t> by_key;

  static uint64_t SwitchKey(uint32_t a, uint32_t b) { return (static_cast<uint64_t>(a) << 31) | b; }
  static uint64_t HostKey(uint32_t a, uint32_t b) { return kExplicitKey | (static_cast<uint64_t>(a) << 31) | b; }

  uint32_t Register(uint64_t key, uint32_t src, int16_t src_nic, uint32_t dst, int16_t dst_nic) {
    auto [it, inserted] = by_key.emplace(key, static_cast<uint32_t>(classes.size()));
    if (inserted) {
      Class c;
      c.key = key;
      c.rep_src = src;
      c.rep_dst = dst;
      c.rep_src_nic = src_nic;
      c.rep_dst_nic = dst_nic;
      classes.push_back(c);
    }
    return it->second;
  }
  const Class* Find(uint64_t key) const {
    auto it = by_key.find(key);
    return it == by_key.end() ? nullptr : &classes[it->second];
  }
  std::span<const ClassLink> LinksOf(const Class& c) const { return c.links; }
};

bool ClassTouchesDrain(const RouteTable::Class& c, const model::DrainMask& mask) {
  for (const ClassLink& l : c.links) {
    if (mask.link_down(LinkOfDirected(l.directed)) || mask.node_down(NodeId(l.from)) || mask.node_down(NodeId(l.to))) {
      return true;
    }
  }
  return false;
}

// Computes every registered class not yet computed: clean ones are borrowed
// from `baseline` (same route when no element of it is down), the rest
// routed under `mask`, one PathTree per destination.
void ComputeClasses(const RoutingIndex& index, const model::DrainMask& mask, const RouteTable* baseline,
                    bool per_path, bool sort_by_from, RouteTable& table) {
  std::vector<uint32_t> todo;
  for (uint32_t i = 0; i < table.classes.size(); ++i) {
    RouteTable::Class& c = table.classes[i];
    if (c.computed) continue;
    if (baseline != nullptr) {
      const RouteTable::Class* b = baseline->Find(c.key);
      if (b != nullptr && b->computed && b->connected && !ClassTouchesDrain(*b, mask)) {
        c.computed = true;
        c.connected = true;
        c.clean = true;
        c.hops = b->hops;
        c.links = b->links;
        c.shares = b->shares;
        continue;
      }
    }
    todo.push_back(i);
  }
  // Group by destination: the switch for NIC classes, the host for explicit.
  auto dest_of = [&](uint32_t i) -> uint64_t {
    const RouteTable::Class& c = table.classes[i];
    return (c.key & kExplicitKey) | (c.key & 0x7FFFFFFFull);
  };
  std::sort(todo.begin(), todo.end(), [&](uint32_t x, uint32_t y) {
    uint64_t dx = dest_of(x), dy = dest_of(y);
    return dx != dy ? dx < dy : x < y;
  });
  PathTree tree, own_tree;
  RouteWorkspace ws;
  auto dst_attachment = [&](const RouteTable::Class& c) {
    return c.rep_dst_nic == kAllNics ? index.HostAttachment(NodeId(c.rep_dst))
                                     : index.NicAttachment(NodeId(c.rep_dst), static_cast<size_t>(c.rep_dst_nic));
  };
  auto src_attachment = [&](const RouteTable::Class& c) {
    return c.rep_src_nic == kAllNics ? index.HostAttachment(NodeId(c.rep_src))
                                     : index.NicAttachment(NodeId(c.rep_src), static_cast<size_t>(c.rep_src_nic));
  };
  // The BFS of a destination's tree stops once the switches of all its
  // sources are reached: a same-pod leaf pair costs a pod, not the fabric.
  std::vector<uint32_t> targets;
  auto add_targets = [&](const RouteTable::Class& c) {
    for (const model::Adjacency& nic : src_attachment(c).nics) targets.push_back(nic.peer.value);
  };
  uint64_t tree_dest = UINT64_MAX;
  for (size_t k = 0; k < todo.size(); ++k) {
    const uint32_t i = todo[k];
    RouteTable::Class& c = table.classes[i];
    if (dest_of(i) != tree_dest) {
      targets.clear();
      for (size_t m = k; m < todo.size() && dest_of(todo[m]) == dest_of(i); ++m) add_targets(table.classes[todo[m]]);
      tree.BuildUntil(index, mask, dst_attachment(c), targets);
      tree_dest = dest_of(i);
    }
    const PathTree* t = &tree;
    if (tree.destination().host.value == c.rep_src) {  // a host on both switches: route to its own rep
      targets.clear();
      add_targets(c);
      own_tree.BuildUntil(index, mask, dst_attachment(c), targets);
      t = &own_tree;
    }
    PairRoute r = ws.Route(index, mask, *t, src_attachment(c));
    c.computed = true;
    c.connected = r.connected;
    if (r.connected) {
      const bool nic_class = (c.key & kExplicitKey) == 0;
      c.hops = static_cast<uint16_t>(nic_class ? r.hops - 2 : r.hops);
      auto& links = table.own_links.emplace_back();
      auto& shares = table.own_shares.emplace_back();
      for (const DagLink& l : ws.links()) {
        if (nic_class && (index.is_host(NodeId(l.from)) || index.is_host(NodeId(l.to)))) continue;
        links.push_back({l.from, l.to, l.directed, l.hop_share, l.path_share});
      }
      if (sort_by_from) {
        std::sort(links.begin(), links.end(), [](const ClassLink& x, const ClassLink& y) {
          return x.from != y.from ? x.from < y.from : x.directed < y.directed;
        });
      }
      for (const ClassLink& l : links) {
        const double share = per_path ? l.path_share : l.hop_share;
        if (share > 0) shares.push_back({l.directed, share});
      }
      c.links = links;
      c.shares = shares;
    }
  }
}

// One routed and solved scenario (a mask, a seed).
struct Scenario {
  RouteTable table;
  FluidProblem problem;
  FluidSolution solution;
  std::vector<uint32_t> agg_demand;     // aggregate -> demand
  std::vector<uint16_t> demand_hops;    // per demand: longest path (links); 0 when cut off
  std::vector<uint8_t> demand_changed;  // spray: differs from the baseline scenario
  std::vector<uint8_t> job_connected;
  std::vector<double> capacity_bps;     // usable, after penalties
  size_t links_penalised = 0;
};

}  // namespace

struct FlowSimulator::State {
  model::SnapshotPtr snapshot;
  FlowOptions options;
  std::unique_ptr<RoutingIndex> index;
  Workload workload;
  std::vector<double> capacity_bps;  // usable: raw x goodput - background
  std::vector<Scenario> baseline;    // one per seed (spray modes: one)

  const model::Topology& topo() const { return *snapshot->topology; }
  bool hash() const {
    return options.routing == FlowRouting::kHashResilient || options.routing == FlowRouting::kHashRehash;
  }

  // Registers the routes (switch pairs, or the host pair of an explicit
  // flow) demand `d` can use under `mask`.
  void RegisterDemand(const FlowDemand& d, const model::DrainMask& mask, RouteTable& table,
                      std::vector<int16_t>& src_nics, std::vector<int16_t>& dst_nics) const {
    if (d.src_nic == kAllNics) {
      table.Register(RouteTable::HostKey(d.src, d.dst), d.src, kAllNics, d.dst, kAllNics);
      return;
    }
    UsableNics(topo(), mask, d.src, d.src_nic, src_nics);
    UsableNics(topo(), mask, d.dst, d.dst_nic, dst_nics);
    for (int16_t s : src_nics) {
      for (int16_t t : dst_nics) {
        uint32_t a = NicSwitch(topo(), d.src, s), b = NicSwitch(topo(), d.dst, t);
        if (a != b) table.Register(RouteTable::SwitchKey(a, b), d.src, s, d.dst, t);
      }
    }
  }

  // What a run may start from: `reuse` is a scenario whose unchanged routes
  // and solved components are taken over (the baseline of the same seed,
  // or another seed's run under the same mask); `routes`, a table computed
  // under the same mask to borrow routes from instead; `previous_paths`, the
  // baseline whose hashed paths resilient hashing keeps.
  struct RunFrom {
    const Scenario* reuse = nullptr;
    const RouteTable* routes = nullptr;
    const Scenario* previous_paths = nullptr;
  };
  void RouteSpray(const model::DrainMask& mask, const RunFrom& from, Scenario& sc) const;
  void RouteHash(const model::DrainMask& mask, const RunFrom& from, uint64_t seed, Scenario& sc) const;
  Result<Scenario> Run(const model::DrainMask& mask, const RunFrom& from, uint64_t seed, std::stop_token stop) const;
  std::vector<uint32_t> ReuseMap(const Scenario& base, const Scenario& sc) const;
};

namespace {

struct JobTimes {
  bool connected = true;
  double bandwidth_s = 0;
  double latency_s = 0;
  int max_hops = 0;
};

std::vector<JobTimes> TimesOf(const Workload& w, const Scenario& sc, const FlowOptions& o, size_t jobs) {
  std::vector<JobTimes> out(jobs);
  for (size_t j = 0; j < jobs; ++j) out[j].connected = sc.job_connected[j] != 0;
  for (size_t a = 0; a < sc.agg_demand.size(); ++a) {
    const FlowDemand& d = w.demands[sc.agg_demand[a]];
    if (!out[d.job].connected) continue;
    out[d.job].bandwidth_s = std::max(out[d.job].bandwidth_s, sc.solution.finish_s[a]);
  }
  for (const CollectiveSteps& c : w.collectives) {
    if (!out[c.job].connected) continue;
    int hops = 0;
    for (uint32_t d = c.first_demand; d < c.end_demand; ++d) hops = std::max<int>(hops, sc.demand_hops[d]);
    out[c.job].max_hops = std::max(out[c.job].max_hops, hops);
    out[c.job].latency_s += c.steps * (hops * o.per_hop_latency_s + o.per_message_overhead_s);
  }
  return out;
}

}  // namespace


void FlowSimulator::State::RouteSpray(const model::DrainMask& mask, const RunFrom& from, Scenario& sc) const {
  const bool per_path = options.routing == FlowRouting::kSprayPath;
  const auto& demands = workload.demands;
  std::vector<int16_t> src_nics, dst_nics;
  for (const FlowDemand& d : demands) RegisterDemand(d, mask, sc.table, src_nics, dst_nics);
  ComputeClasses(*index, mask, from.routes ? from.routes : from.reuse ? &from.reuse->table : nullptr, per_path, false,
                 sc.table);

  const size_t nd = demands.size();
  std::vector<uint8_t> demand_ok(nd, 0);
  sc.demand_hops.assign(nd, 0);
  sc.demand_changed.assign(nd, 0);
  sc.job_connected.assign(snapshot->jobs->size(), 1);
  std::vector<uint32_t> priv_off(nd + 1, 0), term_off(nd + 1, 0);
  std::vector<LinkShare> priv, srcs, dsts;
  std::vector<ClassTerm> terms;
  auto add_share = [](std::vector<LinkShare>& v, uint32_t link, double share) {
    for (LinkShare& ls : v) {
      if (ls.link == link) {
        ls.share += share;
        return;
      }
    }
    v.push_back({link, share});
  };
  auto class_index = [&](const RouteTable::Class* c) { return static_cast<uint32_t>(c - sc.table.classes.data()); };
  for (size_t i = 0; i < nd; ++i) {
    const FlowDemand& d = demands[i];
    bool changed = false;
    int hops = 0;
    if (d.src_nic == kAllNics) {
      // Explicit flows: the host-to-host route, NIC links included.
      const RouteTable::Class* c = sc.table.Find(RouteTable::HostKey(d.src, d.dst));
      if (c != nullptr && c->connected) {
        demand_ok[i] = 1;
        hops = c->hops;
        terms.push_back({class_index(c), 1.0});
        changed = !c->clean;
      }
    } else {
      // Even over the reachable (source NIC, destination NIC) pairs; one
      // pair unless a NIC is down.
      UsableNics(topo(), mask, d.src, d.src_nic, src_nics);
      UsableNics(topo(), mask, d.dst, d.dst_nic, dst_nics);
      changed = src_nics.size() != 1 || src_nics[0] != d.src_nic || dst_nics.size() != 1 || dst_nics[0] != d.dst_nic;
      srcs.clear();
      dsts.clear();
      size_t t0 = terms.size();
      int npairs = 0;
      for (int pass = 0; pass < 2; ++pass) {  // pass 0 counts, pass 1 emits
        for (int16_t s : src_nics) {
          for (int16_t t : dst_nics) {
            uint32_t a = NicSwitch(topo(), d.src, s), b = NicSwitch(topo(), d.dst, t);
            const RouteTable::Class* c = a == b ? nullptr : sc.table.Find(RouteTable::SwitchKey(a, b));
            if (a != b && (c == nullptr || !c->connected)) continue;
            if (pass == 0) {
              ++npairs;
              if (c != nullptr) changed = changed || !c->clean;
              continue;
            }
            const double share = 1.0 / npairs;
            add_share(srcs, NicLinkUp(topo(), d.src, s), share);
            add_share(dsts, NicLinkDown(topo(), d.dst, t), share);
            if (c != nullptr) {
              uint32_t ci = class_index(c);
              auto it = std::find_if(terms.begin() + static_cast<std::ptrdiff_t>(t0), terms.end(),
                                     [&](const ClassTerm& x) { return x.cls == ci; });
              if (it != terms.end()) {
                it->scale += share;
              } else {
                terms.push_back({ci, share});
              }
              hops = std::max<int>(hops, 2 + c->hops);
            } else {
              hops = std::max(hops, 2);
            }
          }
        }
        if (npairs == 0) break;
      }
      if (npairs > 0) {
        demand_ok[i] = 1;
        // Sources first, destinations last: the solver's cover links.
        priv.insert(priv.end(), srcs.begin(), srcs.end());
        priv.insert(priv.end(), dsts.begin(), dsts.end());
      }
    }
    if (!demand_ok[i]) sc.job_connected[d.job] = 0;
    sc.demand_hops[i] = static_cast<uint16_t>(hops);
    sc.demand_changed[i] = changed ? 1 : 0;
    priv_off[i + 1] = static_cast<uint32_t>(priv.size());
    term_off[i + 1] = static_cast<uint32_t>(terms.size());
  }

  FluidProblem& p = sc.problem;
  p.capacity_bps = sc.capacity_bps;
  p.classes.reserve(sc.table.classes.size());
  for (const RouteTable::Class& c : sc.table.classes) p.classes.push_back(c.shares);
  // Aggregate i = demand i; a cut-off job's demands carry nothing.
  p.weight.reserve(nd);
  p.bits.reserve(nd);
  sc.agg_demand.resize(nd);
  for (size_t i = 0; i < nd; ++i) {
    const FlowDemand& d = demands[i];
    const bool live = sc.job_connected[d.job] != 0;
    sc.agg_demand[i] = static_cast<uint32_t>(i);
    p.weight.push_back(d.multiplicity);
    p.bits.push_back(live ? units::BitsFromBytes(d.bytes) : 0.0);
    if (live) {
      p.private_links.insert(p.private_links.end(), priv.begin() + priv_off[i], priv.begin() + priv_off[i + 1]);
      p.terms.insert(p.terms.end(), terms.begin() + term_off[i], terms.begin() + term_off[i + 1]);
    } else {
      sc.demand_hops[i] = 0;
    }
    p.private_offsets.push_back(static_cast<uint32_t>(p.private_links.size()));
    p.term_offsets.push_back(static_cast<uint32_t>(p.terms.size()));
  }
}

void FlowSimulator::State::RouteHash(const model::DrainMask& mask, const RunFrom& from, uint64_t seed,
                                     Scenario& sc) const {
  const Scenario* base = from.previous_paths;
  const bool resilient = options.routing == FlowRouting::kHashResilient && base != nullptr;
  const auto& demands = workload.demands;
  std::vector<int16_t> src_nics, dst_nics;
  for (const FlowDemand& d : demands) RegisterDemand(d, mask, sc.table, src_nics, dst_nics);
  ComputeClasses(*index, mask, from.routes ? from.routes : from.reuse ? &from.reuse->table : nullptr, false, true,
                 sc.table);

  const size_t nd = demands.size();
  sc.demand_hops.assign(nd, 0);
  sc.demand_changed.assign(nd, 1);
  sc.job_connected.assign(snapshot->jobs->size(), 1);

  // Candidate next hops of `node` in a class's DAG (links sorted by from).
  auto out_links = [](const RouteTable& table, const RouteTable::Class& c, uint32_t node) {
    auto all = table.LinksOf(c);
    auto lo = std::lower_bound(all.begin(), all.end(), node, [](const ClassLink& l, uint32_t n) { return l.from < n; });
    auto hi = std::upper_bound(lo, all.end(), node, [](uint32_t n, const ClassLink& l) { return n < l.from; });
    return std::span<const ClassLink>(&*lo, static_cast<size_t>(hi - lo));
  };
  // Per-hop hashing along a class DAG from `from` to `to`. Resilient: keep
  // the baseline choice at a hop while it is still a next hop.
  auto walk = [&](const RouteTable::Class& c, const RouteTable::Class* bc, uint32_t from, uint32_t to,
                  uint64_t flow_hash, std::vector<uint32_t>& path) {
    uint32_t node = from;
    for (int guard = 0; node != to && guard < 64; ++guard) {
      auto cand = out_links(sc.table, c, node);
      if (cand.empty()) break;
      const uint64_t h = Mix(flow_hash ^ (static_cast<uint64_t>(node) * 0x9E3779B97F4A7C15ull));
      const ClassLink* pick = &cand[h % cand.size()];
      if (resilient && bc != nullptr) {
        auto bcand = out_links(base->table, *bc, node);
        if (!bcand.empty()) {
          const ClassLink& was = bcand[h % bcand.size()];
          auto it = std::find_if(cand.begin(), cand.end(), [&](const ClassLink& l) { return l.directed == was.directed; });
          pick = it != cand.end() ? &*it : &cand[Mix(h) % cand.size()];
        }
      }
      path.push_back(pick->directed);
      node = pick->to;
    }
  };

  FluidProblem& p = sc.problem;
  p.capacity_bps = sc.capacity_bps;
  // Most demands keep one aggregate (flows inside a leaf): size for that.
  p.weight.reserve(nd);
  p.bits.reserve(nd);
  p.private_offsets.reserve(nd + 1);
  p.term_offsets.reserve(nd + 1);
  p.private_links.reserve(2 * nd);
  sc.agg_demand.reserve(nd);
  std::vector<uint32_t> flat, off, order;
  struct PairChoice {
    int16_t s, t;
    const RouteTable::Class* c;
  };
  std::vector<PairChoice> pairs;
  std::vector<LinkShare> links;
  std::vector<ClassTerm> path_terms;
  std::unordered_map<uint64_t, std::vector<uint32_t>> path_classes;  // path hash -> classes
  std::vector<LinkShare> class_links;
  auto PathClass = [&](std::span<const uint32_t> path) -> uint32_t {
    uint64_t h = 0x243F6A8885A308D3ull;
    for (uint32_t l : path) h = Mix(h ^ l);
    auto& candidates = path_classes[h];
    for (uint32_t c : candidates) {
      const auto& cl = p.classes[c];
      if (cl.size() == path.size() &&
          std::equal(path.begin(), path.end(), cl.begin(), [](uint32_t l, const LinkShare& x) { return l == x.link; })) {
        return c;
      }
    }
    class_links.clear();
    for (uint32_t l : path) class_links.push_back({l, 1.0});
    uint32_t c = p.AddClass(class_links);
    candidates.push_back(c);
    return c;
  };
  for (size_t i = 0; i < nd; ++i) {
    const FlowDemand& d = demands[i];
    flat.clear();
    off.assign(1, 0);
    bool ok = true;
    if (d.src_nic == kAllNics) {
      const uint64_t key = RouteTable::HostKey(d.src, d.dst);
      const RouteTable::Class* c = sc.table.Find(key);
      ok = c != nullptr && c->connected;
      const RouteTable::Class* bc = resilient ? base->table.Find(key) : nullptr;
      for (uint32_t k = 0; ok && k < d.multiplicity; ++k) {
        walk(*c, bc, d.src, d.dst, Hash(seed, i, k, 0), flat);
        off.push_back(static_cast<uint32_t>(flat.size()));
      }
    } else {
      UsableNics(topo(), mask, d.src, d.src_nic, src_nics);
      UsableNics(topo(), mask, d.dst, d.dst_nic, dst_nics);
      pairs.clear();
      for (int16_t s : src_nics) {
        for (int16_t t : dst_nics) {
          uint32_t a = NicSwitch(topo(), d.src, s), b = NicSwitch(topo(), d.dst, t);
          const RouteTable::Class* c = a == b ? nullptr : sc.table.Find(RouteTable::SwitchKey(a, b));
          if (a != b && (c == nullptr || !c->connected)) continue;
          pairs.push_back({s, t, c});
        }
      }
      ok = !pairs.empty();
      if (ok && pairs.size() == 1 && pairs[0].c == nullptr) {
        // Both NICs on one switch: a single path, nothing to hash.
        links.clear();
        links.push_back({NicLinkUp(topo(), d.src, pairs[0].s), 1.0});
        links.push_back({NicLinkDown(topo(), d.dst, pairs[0].t), 1.0});
        p.AddAggregate(d.multiplicity, units::BitsFromBytes(d.bytes), links, {});
        sc.agg_demand.push_back(static_cast<uint32_t>(i));
        sc.demand_hops[i] = 2;
        continue;
      }
      for (uint32_t k = 0; ok && k < d.multiplicity; ++k) {
        const uint64_t fh = Hash(seed, i, k, 0);
        const PairChoice& pc = pairs.size() == 1 ? pairs[0] : pairs[Mix(fh ^ 0xA5A5A5A5ull) % pairs.size()];
        flat.push_back(NicLinkUp(topo(), d.src, pc.s));
        if (pc.c != nullptr) {
          const RouteTable::Class* bc = resilient ? base->table.Find(pc.c->key) : nullptr;
          walk(*pc.c, bc, NicSwitch(topo(), d.src, pc.s), NicSwitch(topo(), d.dst, pc.t), fh, flat);
        }
        flat.push_back(NicLinkDown(topo(), d.dst, pc.t));
        off.push_back(static_cast<uint32_t>(flat.size()));
      }
    }
    if (!ok) {
      sc.job_connected[d.job] = 0;
      continue;
    }
    // Flows of the demand on the same path are one aggregate.
    const size_t nflows = off.size() - 1;
    order.resize(nflows);
    for (uint32_t k = 0; k < nflows; ++k) order[k] = k;
    auto path_of = [&](uint32_t k) {
      return std::span<const uint32_t>(flat.data() + off[k], flat.data() + off[k + 1]);
    };
    std::sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
      auto px = path_of(x), py = path_of(y);
      return std::lexicographical_compare(px.begin(), px.end(), py.begin(), py.end());
    });
    for (size_t k = 0; k < nflows;) {
      size_t e = k + 1;
      auto pk = path_of(order[k]);
      while (e < nflows && std::ranges::equal(path_of(order[e]), pk)) ++e;
      // NIC links private; the fabric part is a class shared by every flow
      // hashed onto the same path, so the solver can tell links that can
      // never saturate (and split the fabric into independent components).
      links.clear();
      links.push_back({pk.front(), 1.0});
      links.push_back({pk.back(), 1.0});
      path_terms.clear();
      if (pk.size() > 2) path_terms.push_back({PathClass(pk.subspan(1, pk.size() - 2)), 1.0});
      p.AddAggregate(static_cast<double>(e - k), units::BitsFromBytes(d.bytes), links, path_terms);
      sc.agg_demand.push_back(static_cast<uint32_t>(i));
      sc.demand_hops[i] = std::max<uint16_t>(sc.demand_hops[i], static_cast<uint16_t>(pk.size()));
      k = e;
    }
  }
  // A cut-off job takes no capacity.
  for (size_t a = 0; a < p.aggregate_count(); ++a) {
    if (!sc.job_connected[demands[sc.agg_demand[a]].job]) {
      p.bits[a] = 0;
      sc.demand_hops[sc.agg_demand[a]] = 0;
    }
  }
}

// Per aggregate of `sc`: its index in `base` when it is identical there
// (same demand, weight, size and route), else kNoLink.
std::vector<uint32_t> FlowSimulator::State::ReuseMap(const Scenario& base, const Scenario& sc) const {
  const size_t nd = workload.demands.size();
  std::vector<uint32_t> out(sc.agg_demand.size(), kNoLink);
  auto same_job_state = [&](size_t i) {
    uint32_t j = workload.demands[i].job;
    return sc.job_connected[j] == base.job_connected[j];
  };
  if (!hash()) {  // aggregate i = demand i in both
    for (size_t i = 0; i < nd; ++i) {
      if (!sc.demand_changed[i] && same_job_state(i)) out[i] = static_cast<uint32_t>(i);
    }
    return out;
  }
  const FluidProblem& p = sc.problem;
  const FluidProblem& q = base.problem;
  auto same_agg = [&](size_t a, size_t b) {
    if (p.weight[a] != q.weight[b] || p.bits[a] != q.bits[b]) return false;
    if (!std::equal(p.private_links.begin() + p.private_offsets[a], p.private_links.begin() + p.private_offsets[a + 1],
                    q.private_links.begin() + q.private_offsets[b], q.private_links.begin() + q.private_offsets[b + 1],
                    [](const LinkShare& x, const LinkShare& y) { return x.link == y.link && x.share == y.share; })) {
      return false;
    }
    const uint32_t ta = p.term_offsets[a + 1] - p.term_offsets[a], tb = q.term_offsets[b + 1] - q.term_offsets[b];
    if (ta != tb) return false;
    for (uint32_t k = 0; k < ta; ++k) {
      const ClassTerm& x = p.terms[p.term_offsets[a] + k];
      const ClassTerm& y = q.terms[q.term_offsets[b] + k];
      if (x.scale != y.scale) return false;
      auto cx = p.classes[x.cls], cy = q.classes[y.cls];
      if (!std::equal(cx.begin(), cx.end(), cy.begin(), cy.end(),
                      [](const LinkShare& u, const LinkShare& v) { return u.link == v.link && u.share == v.share; })) {
        return false;
      }
    }
    return true;
  };
  // Aggregates are emitted in demand order in both scenarios.
  size_t a = 0, b = 0;
  for (size_t i = 0; i < nd; ++i) {
    size_t a1 = a, b1 = b;
    while (a1 < sc.agg_demand.size() && sc.agg_demand[a1] == i) ++a1;
    while (b1 < base.agg_demand.size() && base.agg_demand[b1] == i) ++b1;
    if (a1 - a == b1 - b && same_job_state(i)) {
      bool same = true;
      for (size_t k = 0; same && k < a1 - a; ++k) same = same_agg(a + k, b + k);
      if (same) {
        for (size_t k = 0; k < a1 - a; ++k) out[a + k] = static_cast<uint32_t>(b + k);
      }
    }
    a = a1;
    b = b1;
  }
  return out;
}

Result<Scenario> FlowSimulator::State::Run(const model::DrainMask& mask, const RunFrom& from, uint64_t seed,
                                           std::stop_token stop) const {
  Scenario sc;
  sc.capacity_bps = capacity_bps;
  if (hash()) {
    RouteHash(mask, from, seed, sc);
  } else {
    RouteSpray(mask, from, sc);
  }
  if (stop.stop_requested()) return MakeError(ErrorCode::kCancelled, "flow simulation cancelled");
  ReuseHint hint;
  std::vector<uint32_t> previous;
  if (from.reuse != nullptr && options.overload_penalty == 0) {
    previous = ReuseMap(*from.reuse, sc);
    hint = {&from.reuse->solution, &previous};
  }
  auto sol = SolveFluid(sc.problem, stop, hint);
  if (!sol) return tl::unexpected(sol.error());
  sc.solution = std::move(*sol);
  if (options.overload_penalty > 0) {
    // Links at or past the threshold at t = 0 lose a further share of their
    // capacity; the fluid model runs again on the penalised capacities.
    for (size_t l = 0; l < sc.capacity_bps.size(); ++l) {
      const double line = index->capacity_bps_directed(static_cast<uint32_t>(l)) * options.goodput;
      const double bg = options.background_bps.empty() ? 0.0 : options.background_bps[l];
      if (line > 0 && sc.solution.load0_bps[l] + bg >= options.overload_threshold * line * (1 - 1e-9)) {
        sc.problem.capacity_bps[l] *= 1 - options.overload_penalty;
        ++sc.links_penalised;
      }
    }
    if (sc.links_penalised > 0) {
      sc.capacity_bps = sc.problem.capacity_bps;
      auto again = SolveFluid(sc.problem, stop);
      if (!again) return tl::unexpected(again.error());
      sc.solution = std::move(*again);
    }
  }
  return sc;
}

FlowSimulator::FlowSimulator(std::unique_ptr<State> state) : state_(std::move(state)) {}
FlowSimulator::~FlowSimulator() = default;
const FlowOptions& FlowSimulator::options() const { return state_->options; }
const model::Snapshot& FlowSimulator::snapshot() const { return *state_->snapshot; }

Result<std::shared_ptr<const FlowSimulator>> FlowSimulator::Create(model::SnapshotPtr snapshot, FlowOptions options,
                                                                   std::stop_token stop) {
  if (!snapshot || !snapshot->topology || !snapshot->jobs) return InvalidArgument("flow simulation: empty snapshot");
  const model::Topology& topo = *snapshot->topology;
  if (auto ok = ValidateFlowOptions(options, topo); !ok) return tl::unexpected(ok.error().Wrap("flow options"));
  auto st = std::make_unique<State>();
  st->snapshot = std::move(snapshot);
  st->options = std::move(options);
  st->index = std::make_unique<RoutingIndex>(topo);
  st->workload = BuildWorkload(topo, *st->snapshot->jobs);
  const size_t ndl = 2 * topo.link_count();
  st->capacity_bps.resize(ndl);
  for (size_t l = 0; l < ndl; ++l) {
    const double line = st->index->capacity_bps_directed(static_cast<uint32_t>(l)) * st->options.goodput;
    const double bg = st->options.background_bps.empty() ? 0.0 : st->options.background_bps[l];
    st->capacity_bps[l] = std::max(line - bg, 0.01 * line);
  }
  const int seeds = st->hash() ? st->options.hash_seeds : 1;
  const model::DrainMask none;
  for (int k = 0; k < seeds; ++k) {
    // Seeds after the first take the first's routes and, where their flows
    // hash identically (every flow inside a leaf), its solved components.
    State::RunFrom from;
    if (k > 0) from.reuse = &st->baseline[0];
    auto sc = st->Run(none, from, st->options.seed + static_cast<uint64_t>(k), stop);
    if (!sc) return tl::unexpected(sc.error());
    st->baseline.push_back(std::move(*sc));
  }
  return std::shared_ptr<const FlowSimulator>(new FlowSimulator(std::move(st)));
}

namespace {

double Iteration(const model::Job& job, double comm_s) {
  return job.iteration.compute_s + (1.0 - job.iteration.overlap) * comm_s;
}

}  // namespace

Result<FlowReport> FlowSimulator::Simulate(const model::Drain& drain, std::stop_token stop) const {
  const State& st = *state_;
  const model::Topology& topo = st.topo();
  const model::JobSet& jobs = *st.snapshot->jobs;
  const FlowOptions& o = st.options;
  const model::DrainMask mask(topo, drain);
  const size_t nseeds = st.baseline.size();
  const size_t nj = jobs.size();
  const size_t ndl = 2 * topo.link_count();

  std::vector<Scenario> drained;
  drained.reserve(nseeds);
  for (size_t k = 0; k < nseeds; ++k) {
    State::RunFrom from;
    from.reuse = &st.baseline[k];
    if (k > 0) from.routes = &drained[0].table;  // same mask: the drained routes once
    if (o.routing == FlowRouting::kHashResilient) from.previous_paths = &st.baseline[k];
    auto sc = st.Run(mask, from, o.seed + k, stop);
    if (!sc) return tl::unexpected(sc.error());
    drained.push_back(std::move(*sc));
  }

  FlowReport rep;
  rep.capacity_bps.resize(ndl);
  for (size_t l = 0; l < ndl; ++l) rep.capacity_bps[l] = st.index->capacity_bps_directed(static_cast<uint32_t>(l)) * o.goodput;
  rep.background_bps = o.background_bps;
  rep.baseline_load_bps.assign(ndl, 0.0);
  rep.drained_load_bps.assign(ndl, 0.0);
  rep.link_down.assign(ndl, 0);
  for (LinkId l : mask.down_links()) rep.link_down[2 * l.value] = rep.link_down[2 * l.value + 1] = 1;

  // Per job, per seed.
  rep.jobs.resize(nj);
  std::vector<double> base_sum(nj, 0.0), drain_sum(nj, 0.0), slow_sum(nj, 0.0);
  for (size_t k = 0; k < nseeds; ++k) {
    auto bt = TimesOf(st.workload, st.baseline[k], o, nj);
    auto dt = TimesOf(st.workload, drained[k], o, nj);
    for (size_t l = 0; l < ndl; ++l) {
      rep.baseline_load_bps[l] += st.baseline[k].solution.load0_bps[l] / static_cast<double>(nseeds);
      rep.drained_load_bps[l] += drained[k].solution.load0_bps[l] / static_cast<double>(nseeds);
    }
    for (size_t j = 0; j < nj; ++j) {
      const model::Job& job = jobs.job(model::JobId(j));
      FlowJobResult& r = rep.jobs[j];
      auto side = [&](FlowJobSide& s, const JobTimes& t, double& sum) {
        s.connected = t.connected;
        if (!t.connected) return;
        const double comm = t.bandwidth_s + t.latency_s;
        sum += comm;
        s.max_hops = std::max(s.max_hops, t.max_hops);
        if (k == 0 || comm > s.comm_s_worst) {
          s.comm_s_worst = comm;
          s.iteration_s_worst = Iteration(job, comm);
        }
        s.bandwidth_s += t.bandwidth_s / static_cast<double>(nseeds);
        s.latency_s += t.latency_s / static_cast<double>(nseeds);
      };
      side(r.baseline, bt[j], base_sum[j]);
      side(r.drained, dt[j], drain_sum[j]);
      if (bt[j].connected && dt[j].connected) {
        const double bi = Iteration(job, bt[j].bandwidth_s + bt[j].latency_s);
        const double di = Iteration(job, dt[j].bandwidth_s + dt[j].latency_s);
        const double pct = bi > 0 ? (di / bi - 1) * 100 : 0.0;
        slow_sum[j] += pct;
        if (k == 0 || pct > r.slowdown_pct_worst.value_or(-kInf)) r.slowdown_pct_worst = pct;
      }
    }
  }
  for (size_t j = 0; j < nj; ++j) {
    const model::Job& job = jobs.job(model::JobId(j));
    FlowJobResult& r = rep.jobs[j];
    r.job = model::JobId(j);
    r.flows = st.workload.job_flows[j];
    for (auto [s, sum] : {std::pair{&r.baseline, base_sum[j]}, std::pair{&r.drained, drain_sum[j]}}) {
      if (!s->connected) {
        *s = FlowJobSide{};
        s->connected = false;
        continue;
      }
      s->comm_s = sum / static_cast<double>(nseeds);
      s->iteration_s = Iteration(job, s->comm_s);
    }
    if (r.baseline.connected && r.drained.connected) {
      r.slowdown_pct = slow_sum[j] / static_cast<double>(nseeds);
    } else {
      r.slowdown_pct_worst.reset();
    }
  }

  // Links to describe: hot links and every job's bottlenecks (first seed).
  const Scenario& d0 = drained[0];
  auto utilisation = [&](uint32_t l, double load) {
    const double bg = rep.background_bps.empty() ? 0.0 : rep.background_bps[l];
    return rep.capacity_bps[l] > 0 ? (load + bg) / rep.capacity_bps[l] : 0.0;
  };
  {
    std::vector<uint32_t> cand;
    for (uint32_t l = 0; l < ndl; ++l) {
      if (rep.link_down[l] || !(rep.drained_load_bps[l] > 0)) continue;
      if (o.hot_links_fabric_only) {
        const model::Link& link = topo.link(LinkOfDirected(l));
        if (topo.node(link.a).is_host() || topo.node(link.b).is_host()) continue;
      }
      cand.push_back(l);
    }
    // Fullest first; among equally full links, those the drain loaded most.
    auto hotter = [&](uint32_t x, uint32_t y) {
      double ux = utilisation(x, rep.drained_load_bps[x]), uy = utilisation(y, rep.drained_load_bps[y]);
      if (std::abs(ux - uy) > 1e-9) return ux > uy;
      double gx = rep.drained_load_bps[x] - rep.baseline_load_bps[x], gy = rep.drained_load_bps[y] - rep.baseline_load_bps[y];
      if (std::abs(gx - gy) > 1e-3) return gx > gy;
      if (rep.drained_load_bps[x] != rep.drained_load_bps[y]) return rep.drained_load_bps[x] > rep.drained_load_bps[y];
      return x < y;
    };
    size_t n = std::min<size_t>(cand.size(), static_cast<size_t>(std::max(0, o.hot_links)));
    std::partial_sort(cand.begin(), cand.begin() + static_cast<std::ptrdiff_t>(n), cand.end(), hotter);
    for (size_t i = 0; i < n; ++i) {
      FlowLinkUse u;
      u.directed_link = cand[i];
      u.load_bps = rep.drained_load_bps[cand[i]];
      u.utilisation = utilisation(cand[i], u.load_bps);
      rep.hot_links.push_back(std::move(u));
    }
  }
  {
    const FluidSolution& sol = d0.solution;
    std::vector<std::vector<std::pair<uint32_t, double>>> per_job(nj);  // (link, bits fixed there)
    std::vector<uint32_t> critical(nj, kNoLink);
    std::vector<double> critical_finish(nj, -1);
    for (size_t a = 0; a < d0.agg_demand.size(); ++a) {
      const FlowDemand& d = st.workload.demands[d0.agg_demand[a]];
      uint32_t l = sol.bottleneck0[a];
      if (l == kNoLink || !(d0.problem.bits[a] > 0)) continue;
      per_job[d.job].push_back({l, d0.problem.bits[a] * d0.problem.weight[a]});
      if (sol.finish_s[a] > critical_finish[d.job]) {
        critical_finish[d.job] = sol.finish_s[a];
        critical[d.job] = l;
      }
    }
    for (size_t j = 0; j < nj; ++j) {
      auto& v = per_job[j];
      if (v.empty() || !rep.jobs[j].drained.connected) continue;
      std::sort(v.begin(), v.end());
      size_t w = 0;
      for (size_t i = 0; i < v.size(); ++i) {
        if (w > 0 && v[w - 1].first == v[i].first) {
          v[w - 1].second += v[i].second;
        } else {
          v[w++] = v[i];
        }
      }
      v.resize(w);
      std::sort(v.begin(), v.end(), [&](const auto& x, const auto& y) {
        bool cx = x.first == critical[j], cy = y.first == critical[j];
        if (cx != cy) return cx;
        return x.second != y.second ? x.second > y.second : x.first < y.first;
      });
      for (size_t i = 0; i < v.size() && i < static_cast<size_t>(std::max(0, o.bottlenecks_per_job)); ++i) {
        FlowLinkUse u;
        u.directed_link = v[i].first;
        u.load_bps = rep.drained_load_bps[v[i].first];
        u.utilisation = utilisation(v[i].first, u.load_bps);
        rep.jobs[j].bottlenecks.push_back(std::move(u));
      }
    }
  }
  // Jobs crossing each described link, in one pass over the routes.
  {
    std::vector<uint32_t> slot(ndl, UINT32_MAX);
    size_t nslots = 0;
    std::vector<FlowLinkUse*> uses;
    auto note = [&](FlowLinkUse& u) {
      if (slot[u.directed_link] == UINT32_MAX) slot[u.directed_link] = static_cast<uint32_t>(nslots++);
      uses.push_back(&u);
    };
    for (auto& u : rep.hot_links) note(u);
    for (auto& r : rep.jobs) {
      for (auto& u : r.bottlenecks) note(u);
    }
    const FluidProblem& p = d0.problem;
    std::vector<std::vector<uint32_t>> class_slots(p.class_count());
    for (size_t c = 0; c < p.class_count(); ++c) {
      for (const LinkShare& ls : p.classes[c]) {
        if (slot[ls.link] != UINT32_MAX) class_slots[c].push_back(slot[ls.link]);
      }
    }
    std::vector<std::pair<uint32_t, uint32_t>> crossing;  // (slot, job)
    for (size_t a = 0; a < p.aggregate_count(); ++a) {
      if (!(p.bits[a] > 0)) continue;
      uint32_t job = st.workload.demands[d0.agg_demand[a]].job;
      for (uint32_t k = p.private_offsets[a]; k < p.private_offsets[a + 1]; ++k) {
        if (slot[p.private_links[k].link] != UINT32_MAX) crossing.push_back({slot[p.private_links[k].link], job});
      }
      for (uint32_t k = p.term_offsets[a]; k < p.term_offsets[a + 1]; ++k) {
        for (uint32_t s : class_slots[p.terms[k].cls]) crossing.push_back({s, job});
      }
    }
    std::sort(crossing.begin(), crossing.end());
    crossing.erase(std::unique(crossing.begin(), crossing.end()), crossing.end());
    std::vector<std::vector<model::JobId>> by_slot(nslots);
    for (auto [s, j] : crossing) by_slot[s].push_back(model::JobId(j));
    for (FlowLinkUse* u : uses) {
      const auto& v = by_slot[slot[u->directed_link]];
      u->job_count = v.size();
      u->jobs.assign(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(std::min<size_t>(v.size(), std::max(0, o.jobs_per_link))));
    }
  }

  FlowModelInfo& m = rep.model;
  m.routing = o.routing;
  m.seeds = static_cast<int>(nseeds);
  m.goodput = o.goodput;
  m.per_hop_latency_s = o.per_hop_latency_s;
  m.per_message_overhead_s = o.per_message_overhead_s;
  m.overload_threshold = o.overload_threshold;
  m.overload_penalty = o.overload_penalty;
  m.background = !o.background_bps.empty();
  m.links_penalised = d0.links_penalised;
  m.flows = st.workload.rank_flows;
  m.demands = st.workload.demands.size();
  m.aggregates = d0.problem.aggregate_count();
  m.route_classes = d0.table.classes.size();
  m.tight_links = d0.solution.tight_links;
  m.redundant_links = d0.solution.redundant_links;
  for (const Scenario& sc : drained) {
    m.components_solved += sc.solution.components_solved;
    m.components_reused += sc.solution.components_reused;
    m.events += sc.solution.events;
    m.simulated_s = std::max(m.simulated_s, sc.solution.makespan_s);
  }
  return rep;
}

Result<FlowReport> SimulateFlows(const model::Snapshot& snapshot, const model::Drain& drain,
                                 const FlowOptions& options, std::stop_token stop) {
  // Non-owning: the caller keeps `snapshot` alive for the call.
  model::SnapshotPtr view(model::SnapshotPtr{}, &snapshot);
  auto sim = FlowSimulator::Create(view, options, stop);
  if (!sim) return tl::unexpected(sim.error());
  return (*sim)->Simulate(drain, stop);
}

}  // namespace drainwise::sim
