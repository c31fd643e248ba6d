// Internal: one packet-level run (baseline or drained) as plain data, the
// boundary between the pure part (packet_sim.cpp builds it) and the ns-3
// part (packet_ns3.cpp runs it; packet_no_ns3.cpp when the build has no
// ns-3). Indices are local to the run.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <stop_token>
#include <vector>

#include "model/error.h"
#include "sim/packet/packet_sim.h"

namespace drainwise::sim::packet_internal {

struct RunLink {
  uint32_t link = 0;  // model LinkId value
  uint32_t a = 0;     // run node index of the link's `a` end
  uint32_t b = 0;
  double capacity_bps = 0;
};

// A switch's (or a host's) equal-cost next hops towards one destination NIC.
struct RunRoute {
  uint32_t node = 0;
  uint32_t dst_link = 0;             // run link index of the destination NIC
  std::vector<uint32_t> next_links;  // run link indices leaving `node`
};

// `connections` identical TCP connections of `bytes` each from the host at
// src (through NIC link src_link) to dst (NIC link dst_link), released in
// `steps` equal steps. Step k + 1 is released when every flow in `preds`
// has delivered k + 1 steps (a ring's previous edge) and after the
// per-message overhead; without preds every step is released at once.
struct RunFlow {
  uint32_t job_slot = 0;
  uint32_t src = 0, dst = 0;
  uint32_t src_link = 0, dst_link = 0;
  uint32_t connections = 1;
  uint64_t bytes = 0;
  uint32_t steps = 1;
  std::vector<uint32_t> preds;
};

// The options a run reads, copied from PacketOptions (SettingsOf); plain
// and trivially copyable, so that a spawned worker receives them whole and
// a new option the runner reads cannot be left out of the wire format.
struct RunSettings {
  PacketRouting routing = PacketRouting::kHash;
  uint64_t seed = 1;
  double per_hop_delay_s = 0;
  double per_message_overhead_s = 0;
  int mtu_bytes = 0;
  int ecn_threshold_packets = 0;
  int buffer_packets = 0;
  int spray_dupack_threshold = 0;
  double min_rto_s = 0;
  double max_simulated_s = 0;
};
RunSettings SettingsOf(const PacketOptions& options);

struct RunInput {
  RunSettings settings;
  std::vector<uint8_t> is_host;  // per run node
  std::vector<RunLink> links;
  std::vector<RunRoute> routes;
  std::vector<RunFlow> flows;
  // TCP's initial window: about one bandwidth-delay product of the fastest
  // NIC over the longest path, so that a flow starts near line rate as an
  // RDMA NIC does instead of in slow start.
  uint32_t initial_cwnd_segments = 10;
};

struct RunOutput {
  std::vector<double> flow_done_s;  // per flow: last byte of its last connection; < 0 when unfinished
  PacketRunStats stats;             // links carry the run link's directed ids
};

// Runs `in` under the process-wide ns-3 mutex. `progress(f)`: share of
// connections finished. Errors: kCancelled, kUnavailable (no ns-3).
Result<RunOutput> RunScenario(const RunInput& in, std::stop_token stop, const std::function<void(double)>& progress);

// Runs every input and returns their outputs in the same order.
// options.parallel_runs and more than one input: each input in a child
// process of its own, all at once, the results back over a pipe or socket
// (packet_fork.cpp): ns-3's simulator is one per process, so this is how
// baseline and drained use two cores. The children are forked, or spawned
// from options.worker_program when it is set. Otherwise one after another
// through RunScenario. `progress(f)`: mean share done of the runs, from the
// calling thread. `stop` kills the children. Errors: those of RunScenario,
// and kInternal when a child cannot start (the reason is named) or dies
// without an answer (its signal or exit code is named).
Result<std::vector<RunOutput>> RunScenarios(const std::vector<const RunInput*>& ins, const PacketOptions& options,
                                            std::stop_token stop, const std::function<void(double)>& progress);

// ns-3 side only (packet_ns3.cpp): the mutex RunScenario takes, and a run
// for a caller that holds it (the fork runner, which forks under it so no
// child copies a half-built ns-3).
std::mutex& Ns3Mutex();
Result<RunOutput> RunScenarioLocked(const RunInput& in, std::stop_token stop,
                                    const std::function<void(double)>& progress);

}  // namespace drainwise::sim::packet_internal
