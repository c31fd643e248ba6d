// Helpers the route handlers share (internal to drainwise_server).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "model/error.h"
#include "server/api.h"

namespace drainwise::server::routing {

int64_t NowSeconds();

// A sortable, unique id: time, then a counter and a random suffix ("a-20261130T131500-00013f9c").
std::string NewId(std::string_view prefix, std::atomic<uint64_t>& seq);

// The request body as JSON. Errors: kInvalidArgument ("request body: …").
Result<nlohmann::json> ParseBody(const ApiRequest& req);

// A problem+json answer for a status without an ErrorCode (405, 409, 422).
ApiResponse ProblemResponse(int status, std::string_view slug, std::string_view title, std::string detail,
                            std::string_view instance);

// `text` with control characters escaped (\n, \r, \t, \\, \xNN; C1 controls as \u00NN), so a
// value cannot start a row of its own in a text listing.
std::string EscapeControl(std::string_view text);
// EscapeControl, and "-" for an empty value: one cell of a text table.
std::string Cell(std::string_view text);

// "api" plus the peer: the `source` of a document written through the API.
std::string ApiSource(const ApiRequest& req);

}  // namespace drainwise::server::routing
