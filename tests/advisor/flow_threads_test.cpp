// The advisor runs flow simulations' independent parts (hash seeds, flow
// components) through its runner (advisor.flow_threads, or one the caller
// gives), and the reports do not depend on how many threads ran them
// (the config field: tests/engine/flow_options_test.cpp).
#include <doctest/doctest.h>

#include <atomic>

#include "advisor/advisor.h"
#include "testing/fabrics.h"
#include "testing/flow_assess.h"

namespace drainwise {
namespace {

using nlohmann::json;

// testing::TwoByTwo with an all-to-all job on h0, h2 and a ring on h1, h3:
// every flow crosses a spine, so hashing decides which.
model::SnapshotPtr ThreadsFabric() {
  json a2a = {{"compute_ms", 10}, {"collectives", {{{"kind", "alltoall"}, {"bytes", 4e8}}}}};
  json ring = {{"compute_ms", 10}, {"collectives", {{{"kind", "allreduce"}, {"bytes", 2e8}}}}};
  json jobs = {{"format", "drainwise.jobs/v1"},
               {"jobs",
                {{{"id", "moe"}, {"hosts", {"h0", "h2"}}, {"iteration", a2a}},
                 {{"id", "ring"}, {"hosts", {"h1", "h3"}}, {"iteration", ring}}}}};
  return testing::SnapshotFromJson(testing::TwoByTwo(100, 100), jobs);
}

advisor::AdvisorOptions HashOptions(int threads) {
  advisor::AdvisorOptions o;
  o.flow.routing = sim::FlowRouting::kHashResilient;
  o.flow.hash_seeds = 6;
  o.flow_threads = threads;
  return o;
}

TEST_CASE("advisor: flow simulations hand their seeds to the advisor's runner") {
  auto snap = ThreadsFabric();
  std::atomic<int> calls{0};
  std::atomic<size_t> tasks{0};
  sim::TaskRunner counting = [&](size_t n, const std::function<void(size_t)>& task) {
    ++calls;
    tasks += n;
    for (size_t i = 0; i < n; ++i) task(i);
  };
  advisor::Advisor adv(HashOptions(1), counting);
  auto rep = testing::AssessSpine1Flow(adv, snap);
  CHECK(rep.model.seeds == 6);
  // Create: the 5 seeds after the first; Simulate: all 6 drained seeds.
  CHECK(calls.load() >= 2);
  CHECK(tasks.load() >= 11);
}

TEST_CASE("advisor: the flow report is the same on 1 and 3 threads") {
  auto snap = ThreadsFabric();
  advisor::Advisor one(HashOptions(1)), three(HashOptions(3));
  auto a = testing::AssessSpine1Flow(one, snap), b = testing::AssessSpine1Flow(three, snap);
  REQUIRE(a.jobs.size() == b.jobs.size());
  for (size_t j = 0; j < a.jobs.size(); ++j) {
    CHECK(a.jobs[j].baseline.iteration_s == b.jobs[j].baseline.iteration_s);
    CHECK(a.jobs[j].drained.iteration_s == b.jobs[j].drained.iteration_s);
    CHECK(a.jobs[j].drained.iteration_s_worst == b.jobs[j].drained.iteration_s_worst);
  }
  CHECK(a.drained_load_bps == b.drained_load_bps);
  // The drain moves every flow onto spine0: the jobs do slow down.
  CHECK(a.jobs[0].drained.iteration_s > a.jobs[0].baseline.iteration_s);
}

}  // namespace
}  // namespace drainwise
