// Request targets, decoded and normalised once before any route sees them.
// The rules (each refusal is a 400 naming the rule):
//   - origin-form only: the target starts with '/';
//   - raw bytes in the path are RFC 3986 pchars or '/'; anything else must be
//     percent-encoded;
//   - every '%' starts a two-hex-digit escape;
//   - an escape may not decode to '/' (%2F would hide a segment boundary) or
//     to a control character;
//   - after decoding, no empty segment ('//', a trailing '/') and no dot
//     segment ('.', '..'), so no two spellings name one resource except
//     through percent-encoding, which decodes to the one spelling routes see;
//   - the query is split on '&' and '=', '+' is a space, escapes as above
//     (control characters allowed: a value is data, never a path).
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "model/error.h"

namespace drainwise::server::routing {

struct Target {
  std::string path;                          // decoded: "/v1/assessments"
  std::map<std::string, std::string> query;  // decoded; repeated keys joined with commas
};

// Errors: kInvalidArgument whose message names the part and the rule.
Result<Target> NormaliseTarget(std::string_view target);

// Whether the normalised `path` matches `pattern` ("/v1/jobs/{id}"); a {name}
// segment matches one non-empty segment and is stored in `params`.
bool MatchPattern(std::string_view pattern, std::string_view path, std::map<std::string, std::string>* params);

}  // namespace drainwise::server::routing
