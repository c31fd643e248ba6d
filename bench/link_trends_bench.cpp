// Trend detection per link end (docs/link-health.md, docs/performance.md
// "Link health"): every signal at max_points (200) points, the size the
// monitor fits after downsampling. Theil–Sen is O(n^2) per series.
#include <benchmark/benchmark.h>

#include <cmath>

#include "advisor/link_trends.h"

using namespace drainwise::advisor;

static void BM_EvaluateLinkEnd(benchmark::State& state) {
  const int points = static_cast<int>(state.range(0));
  std::vector<SignalSeries> series;
  for (int s = 0; s < kHealthSignalCount; ++s) {
    SignalSeries x{static_cast<HealthSignal>(s), {}};
    for (int i = 0; i < points; ++i) {
      double t = i * 3600.0;
      x.points.push_back({t, 100 * std::exp2(t / (3 * 86400.0)) + (i % 7)});
    }
    series.push_back(std::move(x));
  }
  for (auto _ : state) benchmark::DoNotOptimize(EvaluateLinkEnd(series, 400e9, {}));
  state.SetLabel(std::to_string(kHealthSignalCount) + " signals");
}
BENCHMARK(BM_EvaluateLinkEnd)->Arg(50)->Arg(200)->Unit(benchmark::kMicrosecond);

// main(): bench_main.cpp.
