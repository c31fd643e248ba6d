// Assessments take the fabric's declared load balancing (the topology's
// `load_balancing`) unless the request names a routing, and report which
// routing they used and where it came from.
#include <doctest/doctest.h>

#include "advisor/advisor.h"
#include "testing/fabrics.h"
#include "testing/flow_assess.h"

namespace drainwise {
namespace {

using nlohmann::json;

// 2 leaves x 2 spines (testing::TwoByTwo), one ring job over h0 and h2.
json Jobs() {
  json iteration = {{"compute_ms", 10}, {"collectives", {{{"kind", "allreduce"}, {"bytes", 1e8}}}}};
  return {{"format", "drainwise.jobs/v1"},
          {"jobs", {{{"id", "j"}, {"hosts", {"h0", "h2"}}, {"iteration", iteration}}}}};
}

sim::FlowModelInfo Assessed(const json& topology, std::optional<sim::FlowRouting> request,
                            const sim::FlowOptions& configured = {}) {
  auto snap = testing::SnapshotFromJson(topology, Jobs());
  advisor::AdvisorOptions opts;
  opts.flow = configured;
  advisor::Advisor adv(opts);
  return testing::AssessSpine1Flow(adv, snap, request).model;
}

TEST_CASE("load balancing: request, then topology, then configuration, then spray-path") {
  json plain = testing::TwoByTwo(100, 100);
  json hashed = plain;
  hashed["load_balancing"] = {{"mode", "hash"}, {"rehash", true}, {"hash_seeds", 3}};

  auto m = Assessed(plain, std::nullopt);
  CHECK(m.routing == sim::FlowRouting::kSprayPath);
  CHECK(m.routing_source == "default");

  sim::FlowOptions configured;
  configured.routing = sim::FlowRouting::kSpray;
  configured.routing_source = "config";
  m = Assessed(plain, std::nullopt, configured);
  CHECK(m.routing == sim::FlowRouting::kSpray);
  CHECK(m.routing_source == "config");

  m = Assessed(hashed, std::nullopt, configured);
  CHECK(m.routing == sim::FlowRouting::kHashRehash);
  CHECK(m.routing_source == "topology");
  CHECK(m.seeds == 3);

  m = Assessed(hashed, sim::FlowRouting::kAdaptive, configured);
  CHECK(m.routing == sim::FlowRouting::kAdaptive);
  CHECK(m.routing_source == "request");
  CHECK(m.seeds == 1);
}

}  // namespace
}  // namespace drainwise
