// The "packet" mode of the background runs (POST /v1/simulations with
// {"mode":"packet"}, and assessments asking for "modes":["packet"]): the
// packet level of sim/packet/packet_sim.h on the serving view, run on the
// background run's own thread, its result stored as an assessment record of
// kind "packet" (GET /v1/assessments/{id}) when it finishes.
//
// Request: {"mode":"packet", "drain":{"switches":[...], "links":[...]},
//           "routing":"hash"|"spray", "seed", "per_hop_delay_us",
//           "per_message_overhead_us", "max_hosts", "max_flows",
//           "jobs":[job ids], "ticket", "requested_by"}.
// The drain is the one given (active drains are not added).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "engine/view.h"
#include "server/background.h"
#include "store/store.h"

namespace drainwise::server {

struct PacketRunContext {
  const engine::View& view;
  std::shared_ptr<spdlog::logger> log;  // may be null
  store::Store* store = nullptr;        // where the result is recorded; outlives the run
  std::atomic<uint64_t>* sequence = nullptr;
  std::string principal;
};

// Errors: kInvalidArgument (the body, naming the field), kUnavailable when
// this build has no ns-3 (the route answers 501 for it, see
// PacketModeUnavailable).
Result<BackgroundRunFn> PreparePacketRun(const nlohmann::json& body, const PacketRunContext& ctx);

// An assessment body asking for "modes":["packet"]: the body of the packet
// background run that answers it (drain, ticket, requested_by; routing
// hash* -> hash, spray* -> spray). nullopt when it asks for no packet mode
// or is not a JSON object.
std::optional<nlohmann::json> PacketRunBodyOfAssessment(const std::string& body);

// True when the packet mode cannot run in this build (no ns-3).
bool PacketModeUnavailable();

}  // namespace drainwise::server
