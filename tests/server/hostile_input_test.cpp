// Inputs found by fuzzing (tests/fuzz) that once took the daemon down or got
// the wrong status: each must get a problem+json answer that is valid JSON.
#include <doctest/doctest.h>

#include "server/api.h"
#include "server/state.h"
#include "store/store.h"

using namespace drainwise;
using nlohmann::json;

namespace {
server::ApiResponse Call(const std::string& method, const std::string& target, const std::string& body = "") {
  auto db = std::move(*store::Store::Open(":memory:"));
  server::State state(db.get());
  server::Api api(&state, nullptr);  // none of these routes reaches the engine
  server::ApiRequest r;
  r.method = method;
  r.target = target;
  r.body = body;
  return api.Handle(r);
}
}  // namespace

TEST_CASE("a path that is not UTF-8 gets a problem, not an exception") {
  // Before: json::dump threw type_error.316 on the I/O thread and the daemon aborted.
  server::ApiResponse r;
  // Escaped, it decodes to bytes that are not UTF-8: no such route.
  CHECK_NOTHROW(r = Call("GET", "/v1/assessmen%D0ts?ticket=x"));
  CHECK(r.status == 404);
  CHECK(r.content_type == "application/problem+json");
  auto j = json::parse(r.body, nullptr, false);
  REQUIRE(!j.is_discarded());
  CHECK(j["instance"].get<std::string>().find("\xef\xbf\xbd") != std::string::npos);  // U+FFFD
  CHECK_NOTHROW(r = Call("GET", "/v1/jobs/%FF%FE"));
  CHECK(r.status == 503);  // no snapshot yet; the id is not echoed into a throwing dump
  // Raw, such bytes break the target's rules: 400 naming the byte.
  CHECK_NOTHROW(r = Call("GET", "/v1/assessmen\xd0ts?ticket=x"));
  CHECK(r.status == 400);
  j = json::parse(r.body, nullptr, false);
  REQUIRE(!j.is_discarded());
  CHECK(j["detail"] == "path: byte 0xd0 at offset 13 must be percent-encoded");
  CHECK_NOTHROW(r = Call("GET", "/v1/jobs/\xff\xfe"));
  CHECK(r.status == 400);
}

TEST_CASE("a number out of range in a body is a 400, not an unexpected 500") {
  auto r = Call("PUT", "/v1/topology", R"({"format":"drainwise.topology/v1","nodes":[],"links":[],"x":1e99999})");
  CHECK(r.status == 400);
  CHECK(r.body.find("number overflow") != std::string::npos);
}
