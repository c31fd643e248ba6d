// The centre a calibration fit is pulled towards is the configuration's
// transport parameters, not the ones in force: server::State records them
// when a fit or an operator's parameters replace the configuration's, and
// a new configuration (SIGHUP) moves them.
#include <doctest/doctest.h>

#include "engine/view.h"
#include "server/state.h"
#include "store/store.h"

using namespace drainwise;

TEST_CASE("a fit in force keeps the configuration's parameters as the fit's centre; a new configuration moves it") {
  auto db = std::move(*store::Store::Open(":memory:"));
  server::State state(db.get());
  engine::Calibration configured;
  configured.options.flow.goodput = 0.9;
  configured.options.flow.per_hop_latency_s = 0.5e-6;
  configured.options.flow.per_message_overhead_s = 4e-6;
  state.SetCalibration(configured);
  auto c0 = engine::ConfiguredParams(*state.view()->calibration);
  CHECK(c0.goodput == 0.9);
  CHECK(c0.per_hop_latency_s == 0.5e-6);

  engine::Calibration fit = *state.view()->calibration;
  fit.source = "fit";
  fit.options.flow.goodput = 0.8;
  fit.options.flow.per_hop_latency_s = 2e-6;
  fit.options.flow.per_message_overhead_s = 12e-6;
  state.SetCalibration(fit);
  const auto& now = *state.view()->calibration;
  CHECK(now.options.flow.goodput == 0.8);  // in force
  auto c1 = engine::ConfiguredParams(now);
  CHECK(c1.goodput == 0.9);  // the centre stays the configuration's
  CHECK(c1.per_hop_latency_s == 0.5e-6);
  CHECK(c1.per_message_overhead_s == 4e-6);

  // A second fit on top of the first: still the configuration's.
  fit.options.flow.goodput = 0.7;
  state.SetCalibration(fit);
  CHECK(engine::ConfiguredParams(*state.view()->calibration).goodput == 0.9);

  // SIGHUP with a new configuration: the fit stays in force, the centre moves.
  advisor::AdvisorOptions base = configured.options;
  base.flow.goodput = 0.93;
  state.SetAdvisorOptions(base);
  CHECK(state.view()->calibration->options.flow.goodput == 0.7);
  CHECK(engine::ConfiguredParams(*state.view()->calibration).goodput == 0.93);
}
