// GET /v1/topology/drift in-process: the hook's document as JSON or text,
// and an honest empty answer when no connector topology is merged.
#include <doctest/doctest.h>

#include "server/api.h"
#include "server/state.h"
#include "store/store.h"

using namespace drainwise;
using nlohmann::json;

namespace {

server::ApiResponse Get(server::Api& api, std::string target) {
  server::ApiRequest r;
  r.method = "GET";
  r.target = std::move(target);
  return api.Handle(r);
}

}  // namespace

TEST_CASE("GET /v1/topology/drift: the merged sources' drift, as JSON and as text") {
  auto db = std::move(*store::Store::Open(":memory:"));
  server::State state{db.get()};
  server::ApiHooks hooks;
  bool merged = false;
  hooks.drift = [&]() -> std::optional<std::pair<json, std::string>> {
    if (!merged) return std::nullopt;
    return std::pair{json{{"items", json::array({{{"kind", "cable_not_seen"}, {"a", "h1"}}})},
                          {"counts", {{"cable_not_seen", 1}}},
                          {"sources", json::object()}},
                     std::string("1 drift item(s)\ncable_not_seen h1:eth1 - leaf2:p2\n")};
  };
  server::Api api(&state, nullptr, hooks);  // the route never reaches the engine

  auto none = Get(api, "/v1/topology/drift");
  CHECK(none.status == 200);
  auto body = json::parse(none.body);
  CHECK(body["items"].empty());
  CHECK(body["note"] == "no connector topology is merged: nothing to compare");

  merged = true;
  auto j = Get(api, "/v1/topology/drift");
  CHECK(j.status == 200);
  CHECK(json::parse(j.body)["counts"]["cable_not_seen"] == 1);
  auto t = Get(api, "/v1/topology/drift?format=text");
  CHECK(t.status == 200);
  CHECK(t.content_type.rfind("text/plain", 0) == 0);
  CHECK(t.body.find("cable_not_seen h1:eth1 - leaf2:p2") != std::string::npos);
  CHECK(Get(api, "/v1/topology/%64rift").status == 200);  // decoded once, same route
}
