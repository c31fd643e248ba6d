// The wire side of campaigns and of an assessment's change window: requests
// parsed into typed values, errors naming the field.
#include <doctest/doctest.h>

#include "engine/campaign.h"
#include "engine/codec.h"
#include "testing/fabrics.h"

using namespace drainwise;
using nlohmann::json;

TEST_CASE("assessment request: window and duration_s") {
  auto topo = testing::TopologyFromJson(testing::TwoByTwo());
  auto a = engine::ParseAssessRequest(json::parse(R"({"drain":{"switches":["spine0"]},
      "window":{"start":"2026-12-01T00:00:00Z","end":"2026-12-01T04:00:00Z"},"duration_s":1800})"),
                                      topo);
  REQUIRE(a.has_value());
  REQUIRE(a->window.has_value());
  CHECK(a->window->start_unix_s == 1796083200);
  CHECK(a->window->end_unix_s == 1796083200 + 4 * 3600);
  CHECK(a->duration_s == 1800);
  auto bad = engine::ParseAssessRequest(json::parse(R"({"drain":{"switches":["spine0"]},
      "window":{"start":"2026-12-01T04:00:00Z","end":"2026-12-01T00:00:00Z"}})"),
                                        topo);
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().message.find("window.end") != std::string::npos);
  CHECK(engine::ParseAssessRequest(json::parse(R"({"drain":{"switches":["spine0"]},"duration_s":0})"), topo)
            .error()
            .message.find("duration_s") != std::string::npos);
}

TEST_CASE("campaign request: items, window default, constraints, objective, modes") {
  auto topo = testing::TopologyFromJson(testing::TwoByTwo());
  const int64_t now = 1796083200;
  auto c = engine::ParseCampaignRequest(json::parse(R"({"items":[
      {"switches":["spine0"],"duration_s":1800,"earliest":"2026-12-01T02:00:00Z","deadline":"2026-12-02T00:00:00Z"},
      {"links":[{"a":"leaf0","b":"spine1"}]}],
      "constraints":{"max_concurrent":2,"blackouts":[{"start":"2026-12-01T09:00:00Z","end":"2026-12-01T17:00:00Z"}]},
      "objective":"finish","modes":["job","flow"],"ticket":"CHG-1"})"),
                                        topo, now);
  REQUIRE(c.has_value());
  REQUIRE(c->items.size() == 2);
  CHECK(c->items[0].duration_s == 1800);
  CHECK(c->items[0].earliest == now + 2 * 3600);
  CHECK(c->items[0].deadline == now + 86400);
  CHECK(c->items[1].duration_s == 3600);  // the default
  CHECK(c->items[1].drain.links.size() == 1);
  CHECK(c->window.start_unix_s == now);  // no window: now .. now + 7 days
  CHECK(c->window.end_unix_s == now + 7 * 86400);
  CHECK(c->max_concurrent == 2);
  REQUIRE(c->blackouts.size() == 1);
  CHECK(c->blackouts[0].start_unix_s == now + 9 * 3600);
  CHECK(c->objective == advisor::CampaignObjective::kFinish);
  CHECK(c->flow);
  struct Bad {
    const char* body;
    const char* names;
  } cases[] = {
      {R"({"items":[]})", "items"},
      {R"({"items":[{}]})", "items[0]"},
      {R"({"items":[{"switches":["spine0"],"deadline":"2026-12-01T00:00:00Z","earliest":"2026-12-02T00:00:00Z"}]})",
       "deadline"},
      {R"({"items":[{"switches":["spine0"]}],"objective":"cheap"})", "objective"},
      {R"({"items":[{"switches":["spine0"]}],"constraints":{"max_concurrent":0}})", "constraints.max_concurrent"},
      {R"({"items":[{"switches":["spine0"]}],"modes":["packet"]})", "modes"},
      {R"({"items":[{"switches":["spine0"]}],"typo":1})", "typo"},
  };
  for (const auto& b : cases) {
    CAPTURE(b.body);
    auto r = engine::ParseCampaignRequest(json::parse(b.body), topo, now);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().message.find(b.names) != std::string::npos);
  }
}
