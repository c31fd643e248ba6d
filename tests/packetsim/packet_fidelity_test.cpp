// The fidelity suite (issue 18): drained cases run at the flow level and at
// the packet level; the flow level's per-job slowdown error against the
// packet level is printed (docs/validation.md, "Packet level against the
// flow level") and bounded.
//
// Both levels use per-packet spraying / per-hop even split (the one routing
// both model exactly alike) and their defaults otherwise (flow: goodput 0.95,
// 1 us per hop, 5 us per step; packet: DCTCP, 4 KiB MTU, 1 us per hop, 5 us
// per step). Every run is under ~2 ms of simulated time.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>

#include <doctest/doctest.h>

#include "packetsim/packet_testing.h"

namespace drainwise {
namespace {

// FlowOptions::ring_phase_overlap for the second flow-level column: the
// value docs/model.md ("Ring phase drift") fits to this suite.
constexpr double kRingPhaseOverlap = 0.5;

using model::CollectiveKind;
using packettest::CollectiveJob;
using packettest::DrainSwitches;
using packettest::Fabric;
using packettest::HostNames;
using packettest::PermutationJob;
using packettest::Snapshot;

fabric::FabricOptions TwoTier(int hosts) {
  fabric::FabricOptions o;
  o.tiers = 2;
  o.hosts = hosts;
  o.hosts_per_leaf = 8;
  o.spines_per_pod = 2;
  o.gpus_per_host = 1;
  o.host_gbps = 100;
  o.leaf_spine_gbps = 400;  // 8 x 100G down, 2 x 400G up: non-blocking
  return o;
}

// Two pods of `hosts / 2`; leaves of 8 hosts with 2 x 400G up; each spine
// with 2 x 800G to the superspines of its plane: non-blocking.
fabric::FabricOptions ThreeTier(int hosts) {
  fabric::FabricOptions o;
  o.tiers = 3;
  o.pods = 2;
  o.hosts = hosts;
  o.hosts_per_leaf = 8;
  o.spines_per_pod = 2;
  o.superspines_per_plane = 2;
  o.gpus_per_host = 1;
  o.host_gbps = 100;
  o.leaf_spine_gbps = 400;
  o.spine_super_gbps = static_cast<double>(hosts) / 2 / 8 * 400 / 2;  // a spine's downlinks, split over 2 up
  return o;
}

// Hosts taken alternately from the two halves of `hosts` (a ring or a
// permutation whose every edge crosses the middle).
std::vector<std::string> Interleave(const std::vector<std::string>& hosts) {
  std::vector<std::string> out;
  const size_t h = hosts.size() / 2;
  for (size_t i = 0; i < h; ++i) {
    out.push_back(hosts[i]);
    out.push_back(hosts[h + i]);
  }
  return out;
}

struct Case {
  const char* name;
  fabric::FabricOptions fabric;
  std::function<std::vector<model::JobSpec>(const std::vector<std::string>& hosts)> jobs;
  std::vector<std::string> drain;
};

std::vector<Case> Cases() {
  return {
      {"2-tier 16 hosts, permutation across leaves, spine drained",
       TwoTier(16),
       [](const auto& h) { return std::vector{PermutationJob("perm", h, 8, 2e6)}; },
       {"spine1"}},
      {"2-tier 16 hosts, ring all-reduce across leaves, spine drained",
       TwoTier(16),
       [](const auto& h) { return std::vector{CollectiveJob("ring", Interleave(h), CollectiveKind::kAllReduce, 2e6)}; },
       {"spine1"}},
      {"2-tier 32 hosts, all-to-all, spine drained",
       TwoTier(32),
       [](const auto& h) { return std::vector{CollectiveJob("a2a", h, CollectiveKind::kAllToAll, 4e6)}; },
       {"spine1"}},
      {"3-tier 64 hosts, permutation across pods, core drained",
       ThreeTier(64),
       [](const auto& h) { return std::vector{PermutationJob("perm", h, 32, 2e6)}; },
       {"ss0-0"}},
      {"3-tier 64 hosts, permutation across pods + bystander ring, agg drained",
       ThreeTier(64),
       [](const auto& h) {
         std::vector<std::string> a(h.begin(), h.begin() + 16), b(h.begin() + 16, h.end());
         std::vector<std::string> pa, pb;
         for (size_t i = 0; i < 8; ++i) pa.push_back(h[i]), pa.push_back(h[32 + i]);
         std::vector<std::string> rest;
         for (size_t i = 8; i < 32; ++i) rest.push_back(h[i]);
         return std::vector{PermutationJob("perm", pa, 1, 2e6),
                            CollectiveJob("ring", rest, CollectiveKind::kAllReduce, 2e6)};
       },
       {"p0-spine0"}},
      {"3-tier 128 hosts, ring all-reduce across pods, agg drained",
       ThreeTier(128),
       [](const auto& h) { return std::vector{CollectiveJob("ring", Interleave(h), CollectiveKind::kAllReduce, 2e6)}; },
       {"p0-spine0"}},
  };
}

TEST_CASE("fidelity: the flow level's slowdowns against the packet level's") {
  if (!sim::PacketLevelAvailable()) return;
  std::printf(
      "| case | job | flows | packet slowdown | flow slowdown | flow - packet (points) | flow slowdown, ring phase "
      "%.2f | its flow - packet (points) | packet comm before / after (us) | flow comm before / after (us) | wall (s) "
      "|\n",
      kRingPhaseOverlap);
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  double worst = 0, worst_phase = 0;
  for (const Case& c : Cases()) {
    CAPTURE(c.name);
    auto topo = Fabric(c.fabric);
    auto snap = Snapshot(topo, c.jobs(HostNames(*topo)));
    sim::PacketOptions o;
    o.routing = sim::PacketRouting::kSpray;
    o.flow.routing = sim::FlowRouting::kSpray;
    auto r = sim::SimulatePackets(*snap, DrainSwitches(*topo, c.drain), o);
    REQUIRE_MESSAGE(r.has_value(), r.error().message);
    REQUIRE_FALSE(r->jobs.empty());
    // The flow level again with the ring phase drift term (sim/flow_ring_phase.h).
    sim::FlowOptions phased = o.flow;
    phased.ring_phase_overlap = kRingPhaseOverlap;
    auto fp = sim::SimulateFlows(*snap, DrainSwitches(*topo, c.drain), phased);
    REQUIRE_MESSAGE(fp.has_value(), fp.error().message);
    for (const auto& j : r->jobs) {
      const auto& job = snap->jobs->job(j.job);
      CAPTURE(job.id);
      REQUIRE(j.baseline.completed);
      REQUIRE(j.drained.completed);
      REQUIRE(j.slowdown_pct.has_value());
      REQUIRE(j.flow_slowdown_pct.has_value());
      const double err = *j.flow_slowdown_pct - *j.slowdown_pct;
      worst = std::max(worst, std::abs(err));
      const std::optional<double>& phase_pct = fp->jobs[j.job.value].slowdown_pct;
      REQUIRE(phase_pct.has_value());
      const double phase_err = *phase_pct - *j.slowdown_pct;
      worst_phase = std::max(worst_phase, std::abs(phase_err));
      std::printf(
          "| %s | %s | %llu | %+.1f%% | %+.1f%% | %+.1f | %+.1f%% | %+.1f | %.0f / %.0f | %.0f / %.0f | %.1f |\n",
          c.name, job.id.c_str(), static_cast<unsigned long long>(j.flows), *j.slowdown_pct, *j.flow_slowdown_pct, err,
          *phase_pct, phase_err, j.baseline.comm_s * 1e6, j.drained.comm_s * 1e6, j.flow_baseline_comm_s * 1e6,
          j.flow_drained_comm_s * 1e6, r->baseline.wall_s + r->drained.wall_s);
      // The term only ever lowers a drained ring's time, never below its
      // baseline's bandwidth time: never above the plain flow level.
      CHECK(*phase_pct <= *j.flow_slowdown_pct + 1e-9);
      // Bounds with the term, from the table this suite printed: on the
      // all-ring jobs it applies to, +27.9 -> +0.2 points (the 16-host ring,
      // which theta = 0.5 was fitted to: B0 = 316 us, B = 632 us, L = 30
      // steps x 13 us = 390 us, credit min(316, 195) = 195 us, drained comm
      // 1022 - 195 = 827 us, +17.1 % against the packet level's +16.9 %)
      // and +7.0 -> -0.2 (the 128-host ring, not fitted: its 254 x 17 us of
      // latency hide all of the drain's 334 us, 0 % against +0.2 %). 5
      // points either way on those; elsewhere the plain flow level's error
      // stands (worst +25.3, the 3-tier permutation's baseline): 30.
      const bool all_ring = std::all_of(
          job.iteration.collectives.begin(), job.iteration.collectives.end(), [](const model::Collective& k) {
            return k.kind == CollectiveKind::kAllReduce || k.kind == CollectiveKind::kAllGather ||
                   k.kind == CollectiveKind::kReduceScatter;
          });
      if (all_ring) CHECK(std::abs(phase_err) <= 5);
      CHECK(std::abs(phase_err) <= 30);
      CHECK(phase_err >= -5);
      // Bounds, from the table this suite printed (docs/validation.md):
      // |flow - packet| was at most 27.9 points (the 16-host ring: its steps
      // are latency-bound and ring edges drift out of phase at the packet
      // level, so fewer of them share the drained uplink at once than the
      // fluid model's all-in-phase bandwidth term assumes), and the flow
      // level never under-predicted (minimum -0.0). Runs are deterministic
      // (fixed seeds), so the margin is for model changes, not noise:
      // 35 points, and at most 5 points of under-prediction.
      CHECK(std::abs(err) <= 35);
      CHECK(err >= -5);
    }
  }
  std::printf("worst |flow - packet| = %.1f points; with the ring phase term %.1f\n", worst, worst_phase);
  CHECK(worst > 0);  // the levels are different models: identical numbers would mean one did not run
}

}  // namespace
}  // namespace drainwise
