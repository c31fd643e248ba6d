// GET /v1/topology/drift in-process: the drift published with a connector
// topology, as JSON and as text, for that topology version only; an honest
// empty answer when no connector topology is merged or when a later
// topology (a PUT over the API) has no drift of its own.
#include <doctest/doctest.h>

#include "codec/native.h"
#include "server/api.h"
#include "server/state.h"
#include "store/store.h"
#include "testing/fabrics.h"

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

TEST_CASE("GET /v1/topology/drift: the drift of the served topology version, as JSON and as text") {
  auto db = std::move(*store::Store::Open(":memory:"));
  server::State state{db.get()};
  server::Api api(&state, nullptr, server::ApiHooks{});  // the route never reaches the engine

  auto none = Get(api, "/v1/topology/drift");
  CHECK(none.status == 200);
  auto body = json::parse(none.body);
  CHECK(body["items"].empty());
  CHECK(body["note"] == "no connector topology is merged: nothing to compare");

  auto spec = codec::ParseTopology(testing::TwoByTwo());
  REQUIRE(spec);
  engine::TopologyDrift drift;
  drift.by_device = {{"h1", {"cable h1:eth1 - leaf2:p2 planned, not seen"}}};
  drift.document = {{"items", json::array({{{"kind", "cable_not_seen"}, {"a", "h1"}}})},
                    {"counts", {{"cable_not_seen", 1}}},
                    {"sources", json::object()}};
  drift.text = "1 drift item(s)\ncable_not_seen h1:eth1 - leaf2:p2\n";
  auto put = state.PutSpecs(&*spec, nullptr, "source:test", drift);
  REQUIRE(put);

  auto j = Get(api, "/v1/topology/drift");
  CHECK(j.status == 200);
  CHECK(json::parse(j.body)["counts"]["cable_not_seen"] == 1);
  bool versioned = false;
  for (const auto& [name, value] : j.headers) {
    if (name == "Drainwise-Topology-Version") versioned = value == std::to_string(put->version);
  }
  CHECK(versioned);
  auto t = Get(api, "/v1/topology/drift?format=text");
  CHECK(t.status == 200);
  CHECK(t.content_type.rfind("text/plain", 0) == 0);
  CHECK(t.body.find("cable_not_seen h1:eth1 - leaf2:p2") != std::string::npos);
  CHECK(Get(api, "/v1/topology/%64rift").status == 200);  // decoded once, same route

  // A topology PUT over the API replaces the merged one: its drift is gone.
  json other = testing::TwoByTwo();
  other["name"] = "operator-put";
  REQUIRE(state.PutTopology(other, "api"));
  CHECK(json::parse(Get(api, "/v1/topology/drift").body)["items"].empty());
}
