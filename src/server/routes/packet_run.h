// The "packet" mode of the background runs (POST /v1/simulations with
// {"mode":"packet"}, and assessments asking for "modes":["packet"]): the
// packet level of sim/packet/packet_sim.h on the serving view, run from the
// background run's own thread (baseline and drained at once in two spawned
// `drainwise packet-worker` processes when ctx.worker_program is set, else
// one after another in this process), its result stored as an assessment
// record of kind "packet" (GET /v1/assessments/{id}) when it finishes.
//
// Request: {"mode":"packet", "drain":{"switches":[...], "links":[...]},
//           "routing":"hash"|"spray", "seed", "per_hop_delay_us",
//           "per_message_overhead_us", "max_hosts", "max_flows",
//           "jobs":[job ids], "ticket", "requested_by"}.
// The drain is the one given (active drains are not added).
//
// The blast radius is settled when the request is prepared, on the request
// path (sim::PlanPackets: the job and flow levels, seconds at most): a
// request above the cap is refused there, with 422 (BlastRadiusProblem),
// never accepted and failed later; the run reuses the plan.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "engine/view.h"
#include "server/api.h"
#include "server/background.h"
#include "sim/packet/packet_sim.h"
#include "store/store.h"

namespace drainwise::server {

struct PacketRunContext {
  const engine::View& view;
  std::shared_ptr<spdlog::logger> log;  // may be null
  store::Store* store = nullptr;        // where the result is recorded; outlives the run
  std::atomic<uint64_t>* sequence = nullptr;
  std::string principal;
  std::stop_token stop = {};   // the request's: stops the planning
  std::string worker_program;  // ApiHooks::packet_worker_program
};

// A run ready to start, or the refusal of a request whose blast radius is
// above the cap (`run` empty, `refused` set).
struct PreparedPacketRun {
  BackgroundRunFn run;
  std::optional<sim::PacketBlastRadiusSize> refused;
};

// Errors: kInvalidArgument (the body, naming the field), kUnavailable when
// this build has no ns-3 (the route answers 501 for it, see
// PacketModeUnavailable), kCancelled (ctx.stop).
Result<PreparedPacketRun> PreparePacketRun(const nlohmann::json& body, const PacketRunContext& ctx);

// 422 Unprocessable Content, problem type ".../blast-radius-too-large":
// the request is well formed but asks for more than the packet level runs.
// (Not 413: the body is small; what is too large is the part of the
// fabric it selects on this snapshot.) Extension members:
// "blast_radius": {"jobs", "hosts", "flows"} asked and "cap": {"max_hosts",
// "max_flows"}; "detail" names both.
ApiResponse BlastRadiusProblem(const sim::PacketBlastRadiusSize& size, std::string_view instance);

// An assessment body asking for "modes":["packet"]: the body of the packet
// background run that answers it (drain, ticket, requested_by; routing
// hash* -> hash, spray* -> spray). nullopt when it asks for no packet mode
// or is not a JSON object.
std::optional<nlohmann::json> PacketRunBodyOfAssessment(const std::string& body);

// True when the packet mode cannot run in this build (no ns-3).
bool PacketModeUnavailable();

}  // namespace drainwise::server
