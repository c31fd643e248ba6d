// The config's "simulation" block as FlowOptions: the ring phase drift term
// (sim/flow_ring_phase.h) is off unless set, and a bad value names the field.
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

}  // namespace
}  // namespace drainwise
