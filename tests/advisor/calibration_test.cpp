#include <doctest/doctest.h>

#include "advisor/calibration.h"
#include "fabric/generator.h"
#include "testing/fabrics.h"

using namespace drainwise;

namespace {

model::SnapshotPtr Demo() {
  auto preset = *fabric::FindPreset("demo");
  auto spec = fabric::GenerateFabric(preset.fabric);
  auto jobs = fabric::GenerateJobs(spec, preset.fabric, preset.jobs);
  auto topo = std::make_shared<const model::Topology>(*model::BuildTopology(spec));
  return model::MakeSnapshot(topo, 1, jobs, 1);
}

}  // namespace

TEST_CASE("quantiles interpolate") {
  CHECK(advisor::Quantile({}, 0.5) == 0);
  CHECK(advisor::Quantile({3, 1, 2}, 0.5) == doctest::Approx(2));
  // p90 of 1..11: position 0.9 x 10 = 9 -> the 10th value, 10.
  CHECK(advisor::Quantile({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 0.9) == doctest::Approx(10));
  auto e = advisor::SlowdownErrors({10, 20, 30}, {12, 20, 25});
  CHECK(e.pairs == 3);
  CHECK(e.median_abs_pct == doctest::Approx(2));
}

TEST_CASE("the model terms reproduce the simulator's iteration times") {
  auto snap = Demo();
  sim::FlowOptions o;  // defaults: goodput 0.95, 1 us/hop, 5 us/message
  std::vector<advisor::Observation> obs;
  for (uint32_t j = 0; j < snap->jobs->size(); ++j) obs.push_back({model::JobId(j), {}, 0});
  auto terms = advisor::ComputeTerms(snap, obs, o);
  REQUIRE(terms.has_value());
  auto direct = sim::SimulateFlows(*snap, {}, o);
  REQUIRE(direct.has_value());
  advisor::CalibrationParams p{o.goodput, o.per_hop_latency_s, o.per_message_overhead_s};
  for (size_t j = 0; j < obs.size(); ++j) {
    CAPTURE(j);
    CHECK((*terms)[j].Predict(p) == doctest::Approx(direct->jobs[j].baseline.iteration_s).epsilon(1e-6));
  }
}

TEST_CASE("calibration round trip: observations made with known parameters are fitted back within 5%") {
  auto snap = Demo();
  const auto& topo = *snap->topology;
  // The truth: a slower transport than the defaults.
  sim::FlowOptions truth;
  truth.goodput = 0.88;
  truth.per_hop_latency_s = 2.5e-6;
  truth.per_message_overhead_s = 12e-6;
  std::vector<model::Drain> drains = {{}, testing::DrainOf(topo, {{"switches", {"p0-spine1"}}}),
                                      testing::DrainOf(topo, {{"switches", {"p0-leaf0-r1"}}}),
                                      testing::DrainOf(topo, {{"switches", {"ss0-0", "ss1-1"}}})};
  std::vector<advisor::Observation> obs;
  std::vector<double> observed;
  for (const auto& d : drains) {
    auto rep = sim::SimulateFlows(*snap, d, truth);
    REQUIRE(rep.has_value());
    for (uint32_t j = 0; j < snap->jobs->size(); ++j) {
      const auto& side = rep->jobs[j].drained;
      if (!side.connected || side.comm_s <= 0) continue;
      obs.push_back({model::JobId(j), d, side.iteration_s});
      observed.push_back(side.iteration_s);
    }
  }
  REQUIRE(obs.size() >= 20);
  sim::FlowOptions defaults;
  auto terms = advisor::ComputeTerms(snap, obs, defaults);
  REQUIRE(terms.has_value());
  advisor::CalibrationParams start{defaults.goodput, defaults.per_hop_latency_s, defaults.per_message_overhead_s};
  auto fit = advisor::FitCalibration(*terms, observed, start);
  REQUIRE(fit.has_value());
  CHECK(fit->params.goodput == doctest::Approx(truth.goodput).epsilon(0.05));
  CHECK(fit->params.per_hop_latency_s == doctest::Approx(truth.per_hop_latency_s).epsilon(0.05));
  CHECK(fit->params.per_message_overhead_s == doctest::Approx(truth.per_message_overhead_s).epsilon(0.05));
  CHECK(fit->rmse_s < fit->rmse_before_s);
  CHECK(fit->p90_rel_error < 0.01);
}

TEST_CASE("too few observations is an error, not a guess") {
  std::vector<advisor::ObservationTerms> t(2);
  auto r = advisor::FitCalibration(t, {1.0, 1.0}, {});
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().message == "calibration needs at least 3 usable observations, got 2");
}
