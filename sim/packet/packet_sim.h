// Packet level (issue 18, docs/packet-level.md): the drain's blast radius
// replayed packet by packet on ns-3, baseline and drained, next to the flow
// level's answer for the same jobs.
//
// Model in one paragraph. The blast radius (blast_radius.h) is the jobs whose
// traffic the drain changes and the switches and links on their shortest
// paths, before and after the drain. It is built in ns-3 as point-to-point
// links at the topology's capacities with `per_hop_delay_s` of propagation
// each, a RED queue with ECN marking on every egress port, IPv4 with a
// routing piece of our own (packet_routing.h: per-flow ECMP hashing or
// per-packet spraying over the equal-cost next hops, the fabric's load
// balancing), and DCTCP in the hosts. Every job's collectives are the flows
// of the flow level (sim/flow_workload.h), one TCP connection per rank-level
// flow; a ring collective is cut into steps, and a ring edge's next step is
// released when the edge before it has delivered the previous one (plus
// `per_message_overhead_s`). All jobs start at t = 0, as in the flow level.
// A job's comm time is when its last byte arrives.
//
// Optional at build time. Without ns-3 (CMake found no libns3-dev), the
// blast radius still works and SimulatePackets answers kUnavailable naming
// how to enable it (install libns3-dev, rebuild); the REST API answers 501
// Not Implemented with that message.
//
// Threads and processes. ns-3 keeps one global simulator per process. With
// `parallel_runs` (the default) baseline and drained run at once in two
// child processes (packet_fork.cpp: forked, or spawned from
// `worker_program`), results back over a pipe or socket; otherwise in this
// process one after another. Either way runs in this
// process are serialised by a process-wide mutex (a second caller waits;
// `stop` is honoured while waiting only between runs). Do not use ns-3
// elsewhere in the process.
//
// Units: seconds, bits per second, bytes.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "model/drain.h"
#include "model/error.h"
#include "model/ids.h"
#include "model/snapshot.h"
#include "sim/flow_sim.h"

namespace drainwise::sim {

enum class PacketRouting : uint8_t {
  kHash,   // per-flow ECMP: a hash of the 5-tuple and the switch picks one next hop
  kSpray,  // per-packet: each switch deals a flow's packets round-robin over its next hops
};
std::string_view PacketRoutingName(PacketRouting routing);  // "hash", "spray"
std::optional<PacketRouting> ParsePacketRouting(std::string_view name);

struct PacketOptions {
  PacketRouting routing = PacketRouting::kHash;
  uint64_t seed = 1;  // ns-3 RNG run and the ECMP hash salt

  double per_hop_delay_s = 1e-6;         // propagation per link (serialisation is simulated)
  double per_message_overhead_s = 5e-6;  // before every step of a collective (NIC + NCCL), as the flow level
  int mtu_bytes = 4096;                  // IP MTU of every link (RoCE's 4 KiB MTU)
  // Switch egress port: RED with ECN, marking (DCTCP's K) from
  // `ecn_threshold_packets` and every packet above 3 K; tail drop at
  // `buffer_packets` per port. The deep default (32 MiB at 4 KiB) stands in
  // for PFC: a RoCE fabric does not drop, it pauses, so an incast queues
  // instead of losing packets to a 1 ms retransmission timeout.
  int ecn_threshold_packets = 32;
  int buffer_packets = 8192;
  // Spraying reorders packets: the duplicate-ACK threshold is raised so that
  // reordering is not taken for loss (64; hash mode keeps TCP's 3).
  int spray_dupack_threshold = 64;
  double min_rto_s = 1e-3;

  // Ring collectives are released in at most this many steps (merging
  // consecutive NCCL steps when a ring has more), to bound events; the
  // default covers a 256-rank all-reduce (2 x 255 steps) step for step.
  int max_ring_steps = 512;
  // A run stops at this simulated time; unfinished jobs are reported so.
  double max_simulated_s = 1.0;
  // Baseline and drained in two child processes at once (half the wall
  // time on 2 cores, the same numbers): forked, or spawned when
  // `worker_program` is set (a multi-threaded caller must set it: a forked
  // child would inherit its other threads' locks); false: one after another
  // in this process (debuggers, platforms without either).
  bool parallel_runs = true;
  // With parallel_runs, when set: each run is a new process of this program
  // (posix_spawn of its `packet-worker` command, the run sent over a
  // socket) instead of a fork of this one. A spawned child copies nothing
  // of this process, no other thread's held lock in particular, so this is
  // how a multi-threaded caller (the daemon: /proc/self/exe) runs baseline
  // and drained at once. The program must be this build of drainwise.
  std::string worker_program;

  // Blast radius (blast_radius.h).
  size_t max_hosts = 128;   // hosts in the blast radius
  size_t max_flows = 4096;  // TCP connections (rank-level flows) of its jobs
  // A job is in the blast radius when the drain touches its paths (job
  // level) or its flow-level slowdown reaches this (bystanders).
  double bystander_slowdown_pct = 0.5;
  std::vector<model::JobId> jobs;  // non-empty: exactly these jobs, not the blast radius

  // The flow level run for the blast radius and the side-by-side table.
  FlowOptions flow;

  // Called with the share done, 0..1, never decreasing, from the calling
  // thread: every 50 ms of wall time while the forked runs go (when a child
  // reports), or every 50 us of simulated time in the single-process path.
  std::function<void(double)> progress;
};

// Checks ranges and names the field: delays >= 0, 576 <= mtu <= 65000,
// 1 <= ecn threshold < buffer, caps >= 1, max_simulated_s in (0, 60].
Status ValidatePacketOptions(const PacketOptions& options);

// True when this build has ns-3 (the packet mode works).
bool PacketLevelAvailable();
// The message of kUnavailable when it does not.
std::string_view PacketLevelUnavailableMessage();

// The body of `drainwise packet-worker --fd FD --parent PID`, the process
// PacketOptions::worker_program starts for one run: reads the run from the
// socket `fd` until its end, runs it, writes progress and the result (or
// the error) back on `fd` (packet_fork.cpp has the wire format). Killed
// when the thread that spawned it ends; gives up at once when its parent is
// no longer `parent_pid`. Returns the process's exit code.
int ServePacketWorker(int fd, int parent_pid);

// One side (baseline or drained) of a job's packet-level result.
struct PacketJobSide {
  bool connected = true;   // every flow has a path
  bool completed = false;  // every byte arrived before max_simulated_s
  double comm_s = 0;       // last byte of the job's last flow (completed only)
  double iteration_s = 0;  // compute_s + (1 - overlap) * comm_s
};

struct PacketJobResult {
  model::JobId job;
  uint64_t flows = 0;      // TCP connections
  bool bystander = false;  // in the blast radius only through its flow-level slowdown
  PacketJobSide baseline;
  PacketJobSide drained;
  std::optional<double> slowdown_pct;  // drained / baseline iteration - 1, when both completed
  // The flow level for the same job (whole snapshot, `options.flow`).
  double flow_baseline_comm_s = 0;
  double flow_drained_comm_s = 0;
  std::optional<double> flow_slowdown_pct;
};

// One direction of a link in a run.
struct PacketLinkStats {
  uint32_t directed_link = 0;  // sim/routing.h DirectedLinkId
  double utilisation = 0;      // bytes sent (with headers) x 8 / (capacity x simulated_s)
  double bytes_sent = 0;
  uint32_t max_queue_packets = 0;
  uint64_t ecn_marks = 0;
  uint64_t drops = 0;
};

struct PacketRunStats {
  double simulated_s = 0;  // from the collectives' start (connections set up) to the last flow's end
  double wall_s = 0;
  uint64_t packets_sent = 0;  // by all egress queues
  uint64_t ecn_marks = 0;
  uint64_t drops = 0;
  std::vector<PacketLinkStats> links;  // switch-to-switch and host links of the scenario, by directed id
};

struct PacketReport {
  std::vector<PacketJobResult> jobs;  // blast radius jobs, in JobId order
  size_t hosts = 0;                   // of the blast radius
  size_t switches = 0;
  size_t links = 0;
  uint64_t flows = 0;  // TCP connections
  PacketRunStats baseline;
  PacketRunStats drained;
  PacketOptions options;  // as run (progress cleared)
};

// Errors: kInvalidArgument (options, drain ids), kTooLarge (blast radius
// above a cap: the message names the cap and the size asked), kUnavailable
// (no ns-3 in this build), kCancelled (`stop`).
// = PlanPackets, then SimulatePlannedPackets.
Result<PacketReport> SimulatePackets(const model::Snapshot& snapshot, const model::Drain& drain,
                                     const PacketOptions& options, std::stop_token stop = {});

// The blast radius's size next to its cap.
struct PacketBlastRadiusSize {
  size_t jobs = 0;
  size_t hosts = 0;
  uint64_t flows = 0;  // rank-level flows (TCP connections)
  size_t max_hosts = 0;
  size_t max_flows = 0;
  bool within_cap() const { return hosts <= max_hosts && flows <= max_flows; }
};
// kTooLarge, its message naming the size asked and the cap.
Error BlastRadiusTooLarge(const PacketBlastRadiusSize& size);

// What a packet-level request settles before its first packet: the job
// level, the flow level (whole snapshot, options.flow) and the blast radius
// they select (blast_radius.h). Seconds at most, so a server can make it on
// the request path and refuse a request above the cap before starting a
// background run. Succeeds above the cap (Size says so). Keeps a copy of
// `drain`. Errors: kInvalidArgument, kUnavailable (no ns-3), kCancelled.
struct PacketPlan;
Result<std::shared_ptr<const PacketPlan>> PlanPackets(const model::Snapshot& snapshot, const model::Drain& drain,
                                                      const PacketOptions& options, std::stop_token stop = {});
PacketBlastRadiusSize Size(const PacketPlan& plan);
// Runs a plan. REQUIRES: `plan` was made by PlanPackets from `snapshot`
// and options with the same fields (progress aside). Errors: kTooLarge
// (above the cap), kUnavailable, kCancelled.
Result<PacketReport> SimulatePlannedPackets(const model::Snapshot& snapshot, const PacketPlan& plan,
                                            const PacketOptions& options, std::stop_token stop = {});

}  // namespace drainwise::sim
