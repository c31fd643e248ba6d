#include <doctest/doctest.h>

#include <cmath>

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
  std::vector<model::Drain> drains = {{},
                                      testing::DrainOf(topo, {{"switches", {"p0-spine1"}}}),
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

TEST_CASE("observed iteration times: finite, positive, at most 1e6 s; the error names the field") {
  struct Case {
    double v;
    bool ok;
  } cases[] = {{1.0, true},      {1e-9, true},   {1e6, true},       {0.0, false},       {-1.0, false},
               {1e6 + 1, false}, {1e308, false}, {INFINITY, false}, {-INFINITY, false}, {NAN, false}};
  for (const auto& c : cases) {
    CAPTURE(c.v);
    auto st = advisor::CheckObservedIteration(c.v, "observations[3].iteration_s");
    CHECK(st.has_value() == c.ok);
    if (!c.ok) {
      CHECK(st.error().code == ErrorCode::kInvalidArgument);
      CHECK(st.error().message.rfind("observations[3].iteration_s: must be a finite number of seconds in (0, 1e+06]",
                                     0) == 0);
    }
  }
}

namespace {

// Synthetic terms, no simulator: compute 0.1 s, no overlap, B = 0.01 i s,
// H = 1000 (i mod 3 + 1), S = 500 (i mod 4 + 1), so the three parameters
// are separable. Observed = the model with `truth`.
struct Synthetic {
  std::vector<advisor::ObservationTerms> terms;
  std::vector<double> observed;
};
Synthetic Make(int n, const advisor::CalibrationParams& truth) {
  Synthetic s;
  for (int i = 1; i <= n; ++i) {
    advisor::ObservationTerms t;
    t.compute_s = 0.1;
    t.bandwidth_s = 0.01 * i;
    t.hop_steps = 1000.0 * (i % 3 + 1);
    t.steps = 500.0 * (i % 4 + 1);
    s.terms.push_back(t);
    s.observed.push_back(t.Predict(truth));
  }
  return s;
}

}  // namespace

TEST_CASE("a fit that predicts held-out observations better than the parameters in force is applicable") {
  advisor::CalibrationParams truth{0.8, 3e-6, 20e-6};
  advisor::CalibrationParams in_force;  // defaults: 0.95, 1 us, 5 us
  auto s = Make(12, truth);
  auto fit = advisor::FitCalibration(s.terms, s.observed, in_force);
  REQUIRE(fit.has_value());
  CHECK(fit->folds == 12);  // leave-one-out: one refit per observation
  CHECK(fit->applicable);
  CHECK(fit->not_applicable.empty());
  CHECK(fit->holdout_rmse_s < fit->holdout_rmse_before_s);
  // The parameters in force do not depend on the training folds: their
  // held-out error is their error on all observations.
  CHECK(fit->holdout_rmse_before_s == doctest::Approx(fit->rmse_before_s));
  // Within 1 %: the penalty towards the defaults pulls a little (0.5 % here;
  // docs/calibration.md).
  CHECK(fit->params.goodput == doctest::Approx(0.8).epsilon(1e-2));
}

TEST_CASE("a fit no better than the parameters in force on held-out observations is not applicable") {
  // The observations are exactly what the parameters in force predict: a
  // held-out fit cannot beat an error of zero.
  advisor::CalibrationParams in_force{0.9, 2e-6, 10e-6};
  auto s = Make(12, in_force);
  auto fit = advisor::FitCalibration(s.terms, s.observed, in_force);
  REQUIRE(fit.has_value());
  CHECK_FALSE(fit->applicable);
  CHECK(fit->not_applicable.find("does not predict held-out observations better") != std::string::npos);
  // The parameters in force differ from the defaults the fit is pulled
  // towards, so the held-out fit is strictly worse, not merely equal.
  CHECK(fit->holdout_rel_rms > fit->holdout_rel_rms_before);
}

TEST_CASE("a fit whose error figures are undefined is not applicable") {
  auto s = Make(6, {});
  // One term so large that its squared residual overflows: rmse is inf.
  s.terms[2].compute_s = 1e200;
  auto fit = advisor::FitCalibration(s.terms, s.observed, {});
  REQUIRE(fit.has_value());
  CHECK_FALSE(std::isfinite(fit->rmse_before_s));
  CHECK_FALSE(fit->applicable);
  CHECK(fit->not_applicable == "the fit's error figures are undefined (not finite)");
}

TEST_CASE("three observations are fitted and tested leave-one-out; out-of-range ones are not used") {
  auto s = Make(3, {0.8, 3e-6, 20e-6});
  // Stored before validation existed: 1e308 s and -1 s are not used.
  s.terms.push_back(s.terms[0]);
  s.observed.push_back(1e308);
  s.terms.push_back(s.terms[0]);
  s.observed.push_back(-1);
  auto fit = advisor::FitCalibration(s.terms, s.observed, {});
  REQUIRE(fit.has_value());
  CHECK(fit->observations == 3);
  // Each refit on two observations is well posed: the penalty makes the
  // problem strictly convex whatever the data.
  CHECK(fit->folds == 3);
  CHECK(std::isfinite(fit->holdout_rmse_s));
  CHECK(std::isfinite(fit->holdout_rel_rms));
}
