// The one place that maps drainwise errors to HTTP: status codes and RFC 9457
// application/problem+json bodies whose `detail` names the offending item.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "model/error.h"

namespace drainwise::server {

int HttpStatusFor(ErrorCode code);

// {"type":"https://drainwise.dev/problems/<code>","title":…,"status":…,"detail":…}
nlohmann::json ProblemJson(const Error& error, std::string_view instance = {});

// A problem for an HTTP status that no ErrorCode maps to (405, 422): `slug`
// completes the type URI ("method-not-allowed"). The body's `status` is `status`.
nlohmann::json ProblemJson(int status, std::string_view slug, std::string_view title, std::string_view detail,
                           std::string_view instance = {});

inline constexpr std::string_view kProblemContentType = "application/problem+json";

}  // namespace drainwise::server
