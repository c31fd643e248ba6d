// The packet level on hand-checkable cases: a permutation through a halved
// uplink, an empty drain, determinism, the cap and the build without ns-3.
// Runs are small (under 2 ms simulated each) to keep CI time low.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <stop_token>
#include <vector>

#include <doctest/doctest.h>

#include "packetsim/packet_testing.h"

namespace drainwise {
namespace {

using packettest::CollectiveJob;
using packettest::DrainSwitches;
using packettest::Fabric;
using packettest::HostNames;
using packettest::Job;
using packettest::PermutationJob;
using packettest::Snapshot;

// 16 hosts with 100G NICs, 8 per leaf; 2 spines; each leaf has one 400G
// link to each spine, so a leaf's 800G of uplinks match its 8 x 100G hosts.
fabric::FabricOptions SixteenHosts() {
  fabric::FabricOptions o;
  o.tiers = 2;
  o.hosts = 16;
  o.hosts_per_leaf = 8;
  o.spines_per_pod = 2;
  o.gpus_per_host = 1;
  o.host_gbps = 100;
  o.leaf_spine_gbps = 400;
  return o;
}

constexpr double kBytes = 4e6;  // per flow

TEST_CASE("packet level: a permutation through a halved uplink takes about twice the time") {
  if (!sim::PacketLevelAvailable()) return;  // covered by the next test case
  // Permutation: host i sends 4 MB to host i + 8 (the other leaf), 16 flows.
  // Baseline: every flow is limited by its 100G NIC; the leaf's 8 flows fill
  // its 2 x 400G uplinks exactly. 4e6 x 8 / 100e9 = 320 us of payload, plus
  // TCP/IP headers (52 of every 4096 bytes: +1.3 %), the 5 us step overhead
  // and the last packet's ~5 us of latency: ~335 us.
  // spine1 drained: the 8 flows of a leaf share its one 400G uplink, 50G
  // each: 640 us (+1.3 %, + 10 us): ~660 us. Slowdown ~ 660 / 335 - 1 = 97 %.
  // Measured (spray): 366 us and 725 us, +98 % (the same fabric written by
  // hand, other link order: 369 and 752 us, +104 %). The packet level is slower
  // than the fluid ideal by 9-10 % on both sides: at a link loaded to
  // exactly 100 % DCTCP's marks keep the queue short and cost a few % of
  // rate, and flows do not finish together (TCP is not exactly fair), so
  // the last ones finish alone at their NIC's rate while the uplink idles.
  // Bounds: each side within [ideal, ideal + 20 %] and the slowdown in
  // 85..110 %: this rejects a model that does not halve (0 %), that
  // double-counts (> 150 %), or that loses the rate (> +20 %).
  auto topo = Fabric(SixteenHosts());
  auto snap = Snapshot(topo, {PermutationJob("perm", HostNames(*topo), 8, kBytes)});
  const model::Drain drain = DrainSwitches(*topo, {"spine1"});
  for (sim::PacketRouting routing : {sim::PacketRouting::kSpray, sim::PacketRouting::kHash}) {
    CAPTURE(sim::PacketRoutingName(routing));
    sim::PacketOptions o;
    o.routing = routing;
    auto r = sim::SimulatePackets(*snap, drain, o);
    REQUIRE_MESSAGE(r.has_value(), r.error().message);
    CHECK(r->hosts == 16);
    CHECK(r->switches == 4);  // two leaves, two spines
    CHECK(r->flows == 16);
    const auto& j = Job(*r, *snap, "perm");
    REQUIRE(j.baseline.completed);
    REQUIRE(j.drained.completed);
    MESSAGE("baseline ", j.baseline.comm_s * 1e6, " us, drained ", j.drained.comm_s * 1e6, " us");
    CHECK(j.drained.comm_s >= 650e-6);
    CHECK(j.drained.comm_s <= 660e-6 * 1.2);
    if (routing == sim::PacketRouting::kSpray) {
      // Hashing may put 5 of a leaf's 8 flows on one spine before the drain;
      // spraying cannot: the baseline is the NICs' 100G.
      CHECK(j.baseline.comm_s >= 325e-6);
      CHECK(j.baseline.comm_s <= 335e-6 * 1.2);
      REQUIRE(j.slowdown_pct.has_value());
      CHECK(*j.slowdown_pct > 85);
      CHECK(*j.slowdown_pct < 110);
    } else {
      CHECK(j.baseline.comm_s >= 320e-6);
    }
    // The flow level for the same job: 4e6 x 8 / (100e9 x 0.95) = 337 us
    // and 674 us, plus latency (one step: 2 x 3 links x 1 us + 5 us).
    CHECK(j.flow_baseline_comm_s == doctest::Approx(337e-6 + 11e-6).epsilon(0.01));
    CHECK(j.flow_drained_comm_s == doctest::Approx(674e-6 + 11e-6).epsilon(0.01));
    // The remaining uplink is the hot link of the drained run: busy for
    // 4e6 x 16 x 8 x 1.013 / 400e9 / 2 = 648 us of the 725 (0.89; the tail above).
    double best = 0;
    for (const auto& l : r->drained.links) best = std::max(best, l.utilisation);
    CHECK(best > 0.8);
    CHECK(best <= 1.0001);
  }
}

TEST_CASE("packet level: an empty drain changes nothing, and the same seed gives the same numbers") {
  if (!sim::PacketLevelAvailable()) return;
  auto topo = Fabric(SixteenHosts());
  auto snap = Snapshot(topo, {PermutationJob("perm", HostNames(*topo), 8, 1e6)});
  sim::PacketOptions o;
  o.jobs = {model::JobId(0)};  // an empty drain has no blast radius: name the job
  auto a = sim::SimulatePackets(*snap, model::Drain{}, o);
  REQUIRE_MESSAGE(a.has_value(), a.error().message);
  auto b = sim::SimulatePackets(*snap, model::Drain{}, o);
  REQUIRE(b.has_value());
  const auto& ja = a->jobs.at(0);
  REQUIRE(ja.slowdown_pct.has_value());
  CHECK(*ja.slowdown_pct == doctest::Approx(0.0));
  CHECK(ja.baseline.comm_s == b->jobs.at(0).baseline.comm_s);
  CHECK(a->baseline.packets_sent == b->baseline.packets_sent);
}

TEST_CASE("packet level: a blast radius above the cap is refused, naming the cap and the size") {
  auto topo = Fabric(SixteenHosts());
  auto snap = Snapshot(topo, {PermutationJob("perm", HostNames(*topo), 8, 1e6)});
  sim::PacketOptions o;
  o.max_hosts = 8;
  auto r = sim::SimulatePackets(*snap, DrainSwitches(*topo, {"spine1"}), o);
  REQUIRE_FALSE(r.has_value());
  if (!sim::PacketLevelAvailable()) {
    CHECK(r.error().code == ErrorCode::kUnavailable);
    CHECK(r.error().message.find("libns3-dev") != std::string::npos);
    return;
  }
  CHECK(r.error().code == ErrorCode::kTooLarge);
  CHECK(r.error().message.find("16 hosts") != std::string::npos);
  CHECK(r.error().message.find("cap is 8 hosts") != std::string::npos);
}

TEST_CASE("packet level: a job the drain does not touch is left out of the blast radius") {
  if (!sim::PacketLevelAvailable()) return;
  // Two jobs inside one leaf each never reach a spine: draining spine1
  // changes nothing, so the blast radius is empty and nothing runs.
  auto topo = Fabric(SixteenHosts());
  auto hosts = HostNames(*topo);
  auto snap = Snapshot(topo, {PermutationJob("left", {hosts[0], hosts[1]}, 1, 1e6),
                              PermutationJob("right", {hosts[8], hosts[9]}, 1, 1e6)});
  auto r = sim::SimulatePackets(*snap, DrainSwitches(*topo, {"spine1"}), sim::PacketOptions{});
  REQUIRE(r.has_value());
  CHECK(r->jobs.empty());
  CHECK(r->hosts == 0);
}

}  // namespace
}  // namespace drainwise

namespace drainwise {
namespace {

// What two runs of the same scenarios on the same seeds share: every
// number, to the last bit.
void CheckSameNumbers(const sim::PacketReport& a, const sim::PacketReport& b) {
  REQUIRE(a.jobs.size() == b.jobs.size());
  for (size_t j = 0; j < a.jobs.size(); ++j) {
    CHECK(a.jobs[j].job == b.jobs[j].job);
    CHECK(a.jobs[j].baseline.comm_s == b.jobs[j].baseline.comm_s);
    CHECK(a.jobs[j].drained.comm_s == b.jobs[j].drained.comm_s);
  }
  for (auto side : {&sim::PacketReport::baseline, &sim::PacketReport::drained}) {
    const sim::PacketRunStats& x = a.*side;
    const sim::PacketRunStats& y = b.*side;
    CHECK(x.simulated_s == y.simulated_s);
    CHECK(x.packets_sent == y.packets_sent);
    CHECK(x.ecn_marks == y.ecn_marks);
    CHECK(x.drops == y.drops);
    REQUIRE(x.links.size() == y.links.size());
    for (size_t l = 0; l < x.links.size(); ++l) {
      CHECK(x.links[l].directed_link == y.links[l].directed_link);
      CHECK(x.links[l].bytes_sent == y.links[l].bytes_sent);
      CHECK(x.links[l].max_queue_packets == y.links[l].max_queue_packets);
    }
  }
}

// Runs `o` as given (baseline and drained in two child processes) and
// again one after another in this process: the same numbers to the last
// bit, `jobs` jobs, and progress that never goes back and ends at 1.
// Returns the one-process report.
sim::PacketReport CheckChildrenMatchOneProcess(const model::Snapshot& snap, const model::Drain& drain,
                                               sim::PacketOptions o, size_t jobs) {
  std::vector<double> progress;
  o.progress = [&](double f) { progress.push_back(f); };
  auto children = sim::SimulatePackets(snap, drain, o);
  REQUIRE_MESSAGE(children.has_value(), children.error().message);
  o.parallel_runs = false;
  o.progress = nullptr;
  auto here = sim::SimulatePackets(snap, drain, o);
  REQUIRE_MESSAGE(here.has_value(), here.error().message);
  REQUIRE(here->jobs.size() == jobs);
  CheckSameNumbers(*children, *here);
  REQUIRE_FALSE(progress.empty());
  CHECK(std::is_sorted(progress.begin(), progress.end()));  // never backwards, not even by a rounding
  CHECK(progress.back() == 1.0);
  return std::move(*here);
}

TEST_CASE("packet level: the forked runs give the numbers of the single-process runs, and progress to the end") {
  if (!sim::PacketLevelAvailable()) return;
  // Baseline and drained in two child processes (parallel_runs, the
  // default) or one after another here: the same scenarios on the same
  // seeds, so the same numbers to the last bit.
  auto topo = Fabric(SixteenHosts());
  auto snap = Snapshot(topo, {PermutationJob("perm", HostNames(*topo), 8, 1e6)});
  CheckChildrenMatchOneProcess(*snap, DrainSwitches(*topo, {"spine1"}), sim::PacketOptions{}, 1);
}

TEST_CASE("packet level: runs spawned as drainwise packet-worker give the numbers of the single-process runs") {
  if (!sim::PacketLevelAvailable()) return;
  // The daemon's way (worker_program): each run sent over a socket to a new
  // process of the drainwise binary. A permutation and a ring all-reduce,
  // so that every part of the run's wire format counts: settings, links,
  // routes, flows with steps and predecessors. Non-default settings
  // (spray, a seed, delays, a smaller MTU and ECN threshold) must arrive too.
  REQUIRE_MESSAGE(std::filesystem::exists(DRAINWISE_BINARY), "build the drainwise target first: " DRAINWISE_BINARY);
  // Even hosts to the permutation, odd ones to the ring: both cross the
  // spines (hosts 0-7 are one leaf, 8-15 the other).
  auto topo = Fabric(SixteenHosts());
  std::vector<std::string> even, odd;
  for (const std::string& h : HostNames(*topo)) ((even.size() + odd.size()) % 2 == 0 ? even : odd).push_back(h);
  auto snap = Snapshot(
      topo, {PermutationJob("perm", even, 4, 1e6), CollectiveJob("ring", odd, model::CollectiveKind::kAllReduce, 1e6)});
  const model::Drain drain = DrainSwitches(*topo, {"spine1"});
  sim::PacketOptions o;
  o.routing = sim::PacketRouting::kSpray;
  o.flow.routing = sim::FlowRouting::kSpray;
  o.seed = 7;
  o.per_hop_delay_s = 2e-6;
  o.per_message_overhead_s = 3e-6;
  o.mtu_bytes = 2048;
  o.ecn_threshold_packets = 20;
  o.worker_program = DRAINWISE_BINARY;
  const sim::PacketReport here = CheckChildrenMatchOneProcess(*snap, drain, o, 2);

  // The settings did reach the workers: the default options give other numbers.
  sim::PacketOptions defaults;
  defaults.routing = sim::PacketRouting::kSpray;
  defaults.flow.routing = sim::FlowRouting::kSpray;
  defaults.parallel_runs = false;
  auto other = sim::SimulatePackets(*snap, drain, defaults);
  REQUIRE(other.has_value());
  CHECK(other->drained.packets_sent != here.drained.packets_sent);  // 4 KiB MTU: about half the packets
}

TEST_CASE("packet level: a worker that cannot start, or ends without an answer, is an error that says so") {
  if (!sim::PacketLevelAvailable()) return;
  auto topo = Fabric(SixteenHosts());
  auto snap = Snapshot(topo, {PermutationJob("perm", HostNames(*topo), 8, 1e6)});
  const model::Drain drain = DrainSwitches(*topo, {"spine1"});
  sim::PacketOptions o;
  o.worker_program = "/nonexistent/drainwise";
  auto missing = sim::SimulatePackets(*snap, drain, o);
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().code == ErrorCode::kInternal);
  CHECK(missing.error().message.find("posix_spawn for /nonexistent/drainwise") != std::string::npos);
  CHECK(missing.error().message.find("No such file") != std::string::npos);
  // /bin/false starts, reads nothing and exits 1.
  o.worker_program = "/bin/false";
  auto silent = sim::SimulatePackets(*snap, drain, o);
  REQUIRE_FALSE(silent.has_value());
  CHECK(silent.error().message == "packet run child process exited with 1 and no result");
}

TEST_CASE("packet level: a stop fired while spawned workers run kills them and answers cancelled") {
  if (!sim::PacketLevelAvailable()) return;
  REQUIRE(std::filesystem::exists(DRAINWISE_BINARY));
  // 40 MB per flow: about 3.2 ms simulated, 15 s of wall time (18 s of CPU)
  // to the end when not stopped (measured at load 3). The stop comes with
  // the first progress the waiting loop reports, 50 ms or less after the
  // workers start; the answer must come back long before the run could end,
  // so the workers were killed, not waited for.
  auto topo = Fabric(SixteenHosts());
  auto snap = Snapshot(topo, {PermutationJob("perm", HostNames(*topo), 8, 4e7)});
  sim::PacketOptions o;
  o.worker_program = DRAINWISE_BINARY;
  std::stop_source stop;
  int calls = 0;  // the first is SimulatePlannedPackets' own 5 %, before any run starts
  o.progress = [&](double) {
    if (++calls == 2) stop.request_stop();
  };
  const auto start = std::chrono::steady_clock::now();
  auto r = sim::SimulatePackets(*snap, DrainSwitches(*topo, {"spine1"}), o, stop.get_token());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(calls >= 2);
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().code == ErrorCode::kCancelled);
  CHECK(seconds < 3.0);
}

TEST_CASE("packet level: a stop fired before the forked runs answers cancelled") {
  if (!sim::PacketLevelAvailable()) return;
  auto topo = Fabric(SixteenHosts());
  auto snap = Snapshot(topo, {PermutationJob("perm", HostNames(*topo), 8, 1e6)});
  std::stop_source stop;
  stop.request_stop();
  auto r = sim::SimulatePackets(*snap, DrainSwitches(*topo, {"spine1"}), sim::PacketOptions{}, stop.get_token());
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().code == ErrorCode::kCancelled);
}

}  // namespace
}  // namespace drainwise
