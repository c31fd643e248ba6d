// Partial drained runs (sim/flow_partial.cpp): in hash modes every seed
// routes and solves only the baseline components a drain touches.
// On random multipath fabrics with several jobs (some oversubscribed, so
// that hashed collisions couple jobs through fabric links and the run must
// fall back to routing everything), drains of a switch, a fabric link or a
// NIC link: the report with partial runs against the one with every demand
// routed (FlowOptions::partial_drained_runs = false):
//   - every job's times, hops, connectivity and slowdowns equal to the bit
//     (the solved components are the same problems, the untouched ones the
//     baseline's solutions, as the full run copies them);
//   - every link's load and the hot links' utilisation within 1e-9 (the
//     untouched loads are added in another order);
//   - what the report takes from the first seed's run (partial too, the
//     rest from the first baseline): every job's bottleneck links, the
//     jobs on each described link, the counts of aggregates, route classes,
//     tight and redundant links;
//   - the same components solved and reused, the same completion batches;
//   - fewer aggregates routed wherever a drain leaves a job alone, and
//     never more.
#include <algorithm>
#include <random>

#include <doctest/doctest.h>

#include "fabric/generator.h"
#include "flowsim/flow_testing.h"
#include "model/drain.h"
#include "model/snapshot.h"
#include "sim/flow_sim.h"

namespace drainwise {
namespace {

struct PartialCase {
  model::SnapshotPtr snapshot;
  model::Drain drain;
};

PartialCase RandomPartialCase(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  fabric::FabricOptions f;
  f.tiers = pick(2, 3);
  f.pods = f.tiers == 3 ? 2 : 1;
  f.rails = pick(1, 2);
  f.gpus_per_host = f.rails * pick(1, 2);
  f.hosts_per_leaf = pick(2, 3);
  f.hosts = pick(10, 16);
  f.spines_per_pod = pick(2, 4);
  f.leaf_spine_links = pick(1, 2);
  f.superspines_per_plane = pick(1, 3);
  f.host_gbps = 100;
  // Half the fabrics faster than the NICs (jobs stay independent), half
  // with fabric links of 50 to 200G: a link there may fill only when the
  // NICs of several jobs feed it, so whether the routed part's links are
  // tight depends on the untouched jobs' NICs too.
  const bool oversubscribed = pick(0, 1) == 1;
  f.leaf_spine_gbps = oversubscribed ? 50 * pick(1, 4) : 400;
  f.spine_super_gbps = oversubscribed ? 50 * pick(1, 4) : 400;
  auto spec = fabric::GenerateFabric(f);
  auto t = std::make_shared<const model::Topology>(*model::BuildTopology(spec));
  // Jobs on consecutive hosts (a leaf's hosts mostly in one job) or on
  // shuffled ones (several jobs behind each leaf, sharing its uplinks).
  std::vector<model::NodeId> hosts = t->hosts();
  if (pick(0, 1) == 1) std::shuffle(hosts.begin(), hosts.end(), rng);
  model::JobsSpec jobs = flowtest::RandomCollectiveJobs(*t, hosts, rng, 5, 4);
  PartialCase out;
  out.snapshot = model::MakeSnapshot(t, 1, jobs, 1);
  const auto& sw = t->switches();
  switch (pick(0, 2)) {
    case 0:  // a switch
      out.drain.switches.push_back(sw[static_cast<size_t>(pick(0, static_cast<int>(sw.size()) - 1))]);
      break;
    case 1:  // any link: a fabric link or a NIC link (the host falls back to its other NICs)
      out.drain.links.push_back(model::LinkId(static_cast<uint32_t>(pick(0, static_cast<int>(t->link_count()) - 1))));
      break;
    default:  // a switch and a link
      out.drain.switches.push_back(sw[static_cast<size_t>(pick(0, static_cast<int>(sw.size()) - 1))]);
      out.drain.links.push_back(model::LinkId(static_cast<uint32_t>(pick(0, static_cast<int>(t->link_count()) - 1))));
      break;
  }
  return out;
}

// A described link of the two reports: the same link, the same jobs
// crossing it, its load within 1e-9 (loads of untouched components are
// added in another order).
void CheckLinkUseEqual(const sim::FlowLinkUse& x, const sim::FlowLinkUse& y) {
  CHECK(x.directed_link == y.directed_link);
  CHECK(x.load_bps == doctest::Approx(y.load_bps).epsilon(1e-9).scale(1e3));
  CHECK(x.job_count == y.job_count);
  CHECK(x.jobs == y.jobs);
}

// What the report takes from the first seed's drained run, which is
// partial too when the drain leaves a component alone (its bottlenecks,
// the jobs on each described link, the model's counts).
void CheckFirstSeedEqual(const sim::FlowReport& part, const sim::FlowReport& full) {
  for (size_t j = 0; j < part.jobs.size(); ++j) {
    CAPTURE(j);
    const auto& x = part.jobs[j].bottlenecks;
    const auto& y = full.jobs[j].bottlenecks;
    REQUIRE(x.size() == y.size());
    for (size_t b = 0; b < x.size(); ++b) CheckLinkUseEqual(x[b], y[b]);
  }
  // Hot links: the same set up to ties broken by loads' last bits.
  size_t matched = 0;
  for (const auto& x : part.hot_links) {
    for (const auto& y : full.hot_links) {
      if (x.directed_link != y.directed_link) continue;
      CheckLinkUseEqual(x, y);
      ++matched;
    }
  }
  CHECK(matched + 1 >= full.hot_links.size());
  CHECK(part.model.aggregates == full.model.aggregates);
  CHECK(part.model.route_classes == full.model.route_classes);
  CHECK(part.model.tight_links == full.model.tight_links);
  CHECK(part.model.redundant_links == full.model.redundant_links);
}

void CheckSideEqual(const sim::FlowJobSide& x, const sim::FlowJobSide& y) {
  CHECK(x.connected == y.connected);
  CHECK(x.comm_s == y.comm_s);
  CHECK(x.comm_s_worst == y.comm_s_worst);
  CHECK(x.iteration_s == y.iteration_s);
  CHECK(x.bandwidth_s == y.bandwidth_s);
  CHECK(x.latency_s == y.latency_s);
  CHECK(x.max_hops == y.max_hops);
}

TEST_CASE("hash: drained seeds route only what the drain touches, with the full run's answers") {
  int compared = 0, fewer = 0, coupled_or_whole = 0, slowed = 0;
  for (uint64_t seed = 7301; seed < 7341; ++seed) {
    CAPTURE(seed);
    PartialCase c = RandomPartialCase(seed);
    if (c.snapshot->jobs->size() == 0) continue;
    for (auto routing : {sim::FlowRouting::kHashResilient, sim::FlowRouting::kHashRehash}) {
      CAPTURE(sim::FlowRoutingName(routing));
      auto o = sim::FlowOptions::Exact();
      o.routing = routing;
      o.hash_seeds = 4;
      o.per_hop_latency_s = 1e-6;  // the untouched demands' hops count too
      auto part = sim::SimulateFlows(*c.snapshot, c.drain, o);
      o.partial_drained_runs = false;
      auto full = sim::SimulateFlows(*c.snapshot, c.drain, o);
      REQUIRE(part.has_value());
      REQUIRE(full.has_value());
      REQUIRE(part->jobs.size() == full->jobs.size());
      for (size_t j = 0; j < part->jobs.size(); ++j) {
        CAPTURE(j);
        const auto& x = part->jobs[j];
        const auto& y = full->jobs[j];
        CheckSideEqual(x.baseline, y.baseline);
        CheckSideEqual(x.drained, y.drained);
        CHECK(x.slowdown_pct == y.slowdown_pct);
        CHECK(x.slowdown_pct_worst == y.slowdown_pct_worst);
        slowed += x.slowdown_pct.value_or(0) > 1e-6;
        ++compared;
      }
      REQUIRE(part->drained_load_bps.size() == full->drained_load_bps.size());
      for (size_t l = 0; l < part->drained_load_bps.size(); ++l) {
        CAPTURE(l);
        CHECK(part->drained_load_bps[l] == doctest::Approx(full->drained_load_bps[l]).epsilon(1e-9).scale(1e3));
      }
      REQUIRE(part->hot_links.size() == full->hot_links.size());
      for (size_t h = 0; h < part->hot_links.size(); ++h) {
        CHECK(part->hot_links[h].utilisation == doctest::Approx(full->hot_links[h].utilisation).epsilon(1e-9));
      }
      CheckFirstSeedEqual(*part, *full);
      CHECK(part->model.components_solved == full->model.components_solved);
      CHECK(part->model.components_reused == full->model.components_reused);
      CHECK(part->model.events == full->model.events);
      CHECK(part->model.aggregates_routed <= full->model.aggregates_routed);
      fewer += part->model.aggregates_routed < full->model.aggregates_routed;
      coupled_or_whole += part->model.aggregates_routed == full->model.aggregates_routed;
    }
  }
  MESSAGE(compared << " jobs compared; partial runs in " << fewer << " reports, everything routed in "
                   << coupled_or_whole);
  CHECK(compared > 200);
  CHECK(slowed > 20);           // the drains matter
  CHECK(fewer > 10);            // most drains leave some job alone
  CHECK(coupled_or_whole > 5);  // and some touch everything, or couple the jobs
}

// A leaf/spine fabric: `hosts` single-NIC 100G hosts, two per leaf, one
// uplink of `uplink_gbps` from every leaf to each of `spines` spines.
std::shared_ptr<const model::Topology> LeafSpine(int hosts, int spines, double uplink_gbps) {
  fabric::FabricOptions f;
  f.tiers = 2;
  f.pods = 1;
  f.rails = 1;
  f.gpus_per_host = 1;
  f.hosts_per_leaf = 2;
  f.hosts = hosts;
  f.spines_per_pod = spines;
  f.leaf_spine_links = 1;
  f.host_gbps = 100;
  f.leaf_spine_gbps = uplink_gbps;
  return std::make_shared<const model::Topology>(*model::BuildTopology(fabric::GenerateFabric(f)));
}

// Hand-checkable: two jobs on disjoint leaves of a non-blocking leaf/spine
// fabric (every fabric link 400G, NICs 100G: the NICs are the only tight
// links, so each job is its own component and the fabric never fills).
// Draining the link from job 0's first leaf to a spine changes job 0's
// routes only: a seed after the first routes job 0's aggregates and takes
// job 1's from its baseline. A spine drain changes both jobs' routes.
TEST_CASE("hash: a drain of one job's uplink routes that job only in the later seeds") {
  auto t = LeafSpine(8, 4, 400);  // leaves 0..3, two hosts each
  const auto& hosts = t->hosts();
  model::JobsSpec jobs;
  for (int j = 0; j < 2; ++j) {  // job 0 on leaves 0 and 1, job 1 on leaves 2 and 3
    model::JobSpec job;
    job.id = "j" + std::to_string(j);
    for (size_t k = 0; k < 4; ++k) job.hosts.push_back(t->node(hosts[4 * static_cast<size_t>(j) + k]).name);
    model::CollectiveSpec c;
    c.kind = model::CollectiveKind::kAllToAll;
    c.bytes = 64e6;
    job.iteration.collectives.push_back(c);
    jobs.jobs.push_back(job);
  }
  auto snap = model::MakeSnapshot(t, 1, jobs, 1);
  model::DrainSpec spine_spec, link_spec;
  spine_spec.switches = {"spine0"};
  link_spec.links = {model::LinkSelector{"leaf0", "spine0", ""}};
  auto spine_drain = model::ResolveDrain(spine_spec, *t);
  auto link_drain = model::ResolveDrain(link_spec, *t);
  REQUIRE(spine_drain.has_value());
  REQUIRE(link_drain.has_value());
  auto o = sim::FlowOptions::Exact();
  o.routing = sim::FlowRouting::kHashResilient;
  o.hash_seeds = 3;
  auto sim = sim::FlowSimulator::Create(snap, o);
  REQUIRE(sim.has_value());
  auto whole = o;
  whole.partial_drained_runs = false;
  auto whole_sim = sim::FlowSimulator::Create(snap, whole);
  REQUIRE(whole_sim.has_value());
  for (const model::Drain* d : {&*spine_drain, &*link_drain}) {
    auto part = (*sim)->Simulate(*d);
    auto full = (*whole_sim)->Simulate(*d);
    REQUIRE(part.has_value());
    REQUIRE(full.has_value());
    // Three seeds, each routing both jobs in a full run.
    const size_t per_seed = full->model.aggregates_routed / 3;
    CHECK(full->model.aggregates_routed == 3 * per_seed);
    if (d == &*spine_drain) {
      CHECK(part->model.aggregates_routed == full->model.aggregates_routed);
    } else {
      // Every seed routes job 0 only, the first too (the report takes job
      // 1's part from the first baseline), and job 0 has about half the
      // aggregates of both jobs.
      CHECK(part->model.aggregates_routed < 2 * per_seed);
      CHECK(part->model.aggregates_routed > 0);
      CHECK(full->jobs[1].slowdown_pct.value_or(-1) == 0.0);  // job 1 untouched
    }
    CheckFirstSeedEqual(*part, *full);
    for (size_t j = 0; j < 2; ++j) {
      CHECK(part->jobs[j].drained.comm_s == full->jobs[j].drained.comm_s);
      CHECK(part->jobs[j].drained.comm_s_worst == full->jobs[j].drained.comm_s_worst);
    }
  }
}

// Hand-checkable coupling: jobs A (h0 on leaf0, h4 on leaf2) and B (h1 on
// leaf0, h2 on leaf1) share leaf0's two 100G uplinks (to spine0, spine1)
// and its two downlinks; NICs are 100G, so a link fills only when both
// jobs hash onto it. Draining leaf2-spine1 changes A's routes only (A must
// cross spine0). Alone, A's NIC (100G) cannot fill leaf0's link to spine0;
// with B's NIC it can, so in a seed where B hashes onto spine0 the two jobs
// are one component of the drained problem, and the run routes everything
// (a run that ignored B's NIC would keep B's baseline rate, 100G, and give A
// 100G too, over a 100G link). In a seed where A and B were apart and now
// share the link, B's flow gets 50G instead of 100G: its comm time doubles
// (+100 %), which the worst seed shows.
TEST_CASE("hash: a drain that makes two jobs share a link routes both (outside NICs count)") {
  auto t = LeafSpine(6, 2, 100);  // leaf0: h0 h1, leaf1: h2 h3, leaf2: h4 h5
  const auto& hosts = t->hosts();
  auto name = [&](size_t i) { return t->node(hosts[i]).name; };
  model::JobsSpec jobs;
  for (auto [id, x, y] : {std::tuple{"a", 0, 4}, std::tuple{"b", 1, 2}}) {
    model::JobSpec job;
    job.id = id;
    job.hosts = {name(static_cast<size_t>(x)), name(static_cast<size_t>(y))};
    model::CollectiveSpec c;
    c.kind = model::CollectiveKind::kAllToAll;
    c.bytes = 100e6;
    job.iteration.collectives.push_back(c);
    jobs.jobs.push_back(job);
  }
  auto snap = model::MakeSnapshot(t, 1, jobs, 1);
  model::DrainSpec spec_a;
  spec_a.links = {model::LinkSelector{"leaf2", "spine1", ""}};
  auto drain = model::ResolveDrain(spec_a, *t);
  REQUIRE(drain.has_value());
  auto o = sim::FlowOptions::Exact();
  o.routing = sim::FlowRouting::kHashResilient;
  o.hash_seeds = 8;
  auto part = sim::SimulateFlows(*snap, *drain, o);
  o.partial_drained_runs = false;
  auto full = sim::SimulateFlows(*snap, *drain, o);
  REQUIRE(part.has_value());
  REQUIRE(full.has_value());
  for (size_t j = 0; j < 2; ++j) {
    CAPTURE(j);
    CheckSideEqual(part->jobs[j].baseline, full->jobs[j].baseline);
    CheckSideEqual(part->jobs[j].drained, full->jobs[j].drained);
  }
  CHECK(full->jobs[1].slowdown_pct_worst.value_or(0) == doctest::Approx(100.0));
  // Some seeds left B alone (B on spine1: A and B apart), so not every
  // seed's run routed both jobs.
  CHECK(part->model.aggregates_routed < full->model.aggregates_routed);
}

}  // namespace
}  // namespace drainwise
