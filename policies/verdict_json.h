// JSON rendering of a Verdict for the REST API, the CLI and stored
// assessments (docs/policies.md, "Verdict JSON"). The policy document itself
// is rendered by PolicyToJson (policy.h).
#pragma once

#include <nlohmann/json.hpp>

#include "policies/evaluate.h"

namespace drainwise::policies {

// {"decision", "policy", "reasons": [...], "unchecked": [...]}. A Value renders
// as a JSON number, boolean, string or null; a non-finite number (an
// unbounded slowdown) as the string "inf".
nlohmann::json VerdictToJson(const Verdict& verdict);
nlohmann::json ReasonToJson(const Reason& reason);
nlohmann::json ValueToJson(const Value& value);

}  // namespace drainwise::policies
