// The config's "simulation" block as FlowOptions: the ring phase drift term
// (sim/flow_ring_phase.h) is off unless set, and a bad value names the field;
// the "advisor" block's flow_threads likewise.
#include <doctest/doctest.h>

#include "engine/options.h"

namespace drainwise {
namespace {

using nlohmann::json;

TEST_CASE("config: simulation.ring_phase_overlap, off by default, in [0, 1]") {
  auto none = engine::ParseFlowOptions(json::object());
  REQUIRE(none.has_value());
  CHECK(none->ring_phase_overlap == 0);
  auto on = engine::ParseFlowOptions({{"ring_phase_overlap", 0.5}});
  REQUIRE(on.has_value());
  CHECK(on->ring_phase_overlap == 0.5);
  for (double bad : {-0.1, 1.5}) {
    auto r = engine::ParseFlowOptions({{"ring_phase_overlap", bad}});
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().message.find("ring_phase_overlap") != std::string::npos);
  }
}

TEST_CASE("config: advisor.flow_threads is 1 unless set, and 1..64") {
  auto none = engine::ParseAdvisorOptions(json::object(), json::object());
  REQUIRE(none.has_value());
  CHECK(none->flow_threads == 1);
  auto four = engine::ParseAdvisorOptions({{"flow_threads", 4}}, json::object());
  REQUIRE(four.has_value());
  CHECK(four->flow_threads == 4);
  for (int64_t bad : {int64_t{0}, int64_t{-1}, int64_t{65}, (int64_t{1} << 32) + 2}) {
    auto r = engine::ParseAdvisorOptions({{"flow_threads", bad}}, json::object());
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().message.find("advisor.flow_threads") != std::string::npos);
  }
}

}  // namespace
}  // namespace drainwise
