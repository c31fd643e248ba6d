// The calibration fit (advisor::FitCalibration) on n synthetic observations:
// one fit, the identifiability report and n exact leave-one-out refits
// (docs/calibration.md; figures in docs/performance.md, "Calibration").
// The observations' terms are given, so this measures the fit alone, not
// the probe simulations that compute the terms.
#include <benchmark/benchmark.h>

#include "advisor/calibration.h"

namespace {

void BM_FitCalibration(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const drainwise::advisor::CalibrationParams truth{0.85, 2e-6, 12e-6};
  std::vector<drainwise::advisor::ObservationTerms> terms;
  std::vector<double> observed;
  for (int i = 0; i < n; ++i) {
    drainwise::advisor::ObservationTerms t;
    t.compute_s = 0.1;
    t.bandwidth_s = 0.01 * (i % 7 + 1);
    t.hop_steps = 1000.0 * (i % 3 + 1);
    t.steps = 500.0 * (i % 4 + 1);
    terms.push_back(t);
    observed.push_back(t.Predict(truth) * (1 + 0.001 * (i % 5 - 2)));  // +-0.2 %, deterministic
  }
  for (auto _ : state) {
    auto fit = drainwise::advisor::FitCalibration(terms, observed, {});
    benchmark::DoNotOptimize(fit);
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_FitCalibration)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMillisecond);

}  // namespace

// main(): bench_main.cpp.
