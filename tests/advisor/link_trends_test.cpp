// Trend detection on hand-made series: every expected number is derived in
// the comment next to it.
#include <doctest/doctest.h>

#include <cmath>

#include "advisor/link_trends.h"

using namespace drainwise::advisor;

namespace {

constexpr double kDay = 86400;
constexpr double kHourS = 3600;

// Hourly points over `days` days from t = 0, value f(t).
template <class F>
SignalSeries Hourly(HealthSignal s, double days, F f) {
  SignalSeries out{s, {}};
  for (int h = 0; h <= static_cast<int>(days * 24); ++h) out.points.push_back({h * kHourS, f(h * kHourS)});
  return out;
}

}  // namespace

TEST_CASE("Theil-Sen ignores one outlier") {
  // (0,0) (1,1) (2,2) (3,3) (4,100): of the 10 pairwise slopes six are 1
  // (among the first four points), the others 25, 33, 49, 97: the median of
  // ten sorted values is the mean of the 5th and 6th, both 1. Intercepts
  // v - t: 0, 0, 0, 0, 96 -> median 0.
  auto line = TheilSen({{0, 0}, {1, 1}, {2, 2}, {3, 3}, {4, 100}});
  REQUIRE(line);
  CHECK(line->slope == doctest::Approx(1));
  CHECK(line->intercept == doctest::Approx(0));
  CHECK_FALSE(TheilSen({{5, 1}, {5, 2}}));  // no two distinct times
}

TEST_CASE("a corrected-FEC rate doubling every 3 days: its doubling time and time to threshold") {
  // v(t) = 100 * 2^(t / 3 d) over 14 days. log2 v is a straight line of
  // slope 1/3 per day, so the doubling time is exactly 3 days; at t = 14 d
  // the level is 100 * 2^(14/3) = 2539.8/s. Threshold 1e4: time to it =
  // 3 d * log2(1e4 / 2539.8) = 3 d * 1.977 = 5.93 d -> warning (2 d < 5.93 d
  // < 14 d); score = 40 + 29 * exp(-5.93 / 7) = 40 + 12.4 = 52.4.
  TrendOptions o;
  o.fec_corrected_per_s = 1e4;
  auto s = Hourly(HealthSignal::kFecCorrected, 14, [](double t) { return 100 * std::exp2(t / (3 * kDay)); });
  auto h = EvaluateLinkEnd({s}, 400e9, o);
  REQUIRE(h.findings.size() == 1);
  const auto& f = h.findings[0];
  CHECK(f.kind == "error_growth");
  CHECK(f.signal == HealthSignal::kFecCorrected);
  CHECK(f.severity == Severity::kWarning);
  CHECK(*f.evidence.doubling_time_s == doctest::Approx(3 * kDay).epsilon(1e-6));
  CHECK(*f.evidence.level == doctest::Approx(2539.8).epsilon(1e-4));
  CHECK(*f.evidence.time_to_threshold_s / kDay == doctest::Approx(5.931).epsilon(1e-3));
  CHECK(f.score == doctest::Approx(40 + 29 * std::exp(-5.931 / 7)).epsilon(1e-3));
  CHECK(f.evidence.points == 14 * 24 + 1);
  CHECK(f.explanation.find("doubling every 3.0 days") != std::string::npos);
  CHECK(h.severity == Severity::kWarning);

  SUBCASE("already past the threshold: critical, time to threshold 0") {
    o.fec_corrected_per_s = 1000;  // 2539.8 > 1000
    auto past = EvaluateLinkEnd({s}, 400e9, o);
    REQUIRE(past.findings.size() == 1);
    CHECK(past.findings[0].severity == Severity::kCritical);
    CHECK(*past.findings[0].evidence.time_to_threshold_s == 0);
    CHECK(past.score == doctest::Approx(70 + 29));
  }
  SUBCASE("a steady rate is no trend") {
    auto flat = Hourly(HealthSignal::kFecCorrected, 14, [](double) { return 500.0; });
    CHECK(EvaluateLinkEnd({flat}, 400e9, o).findings.empty());
  }
}

TEST_CASE("flapping: transitions integrated over the window") {
  // Every 4th hour (after the first) the carrier-transition rate is
  // 2 / 3600 per s for one hour: 2 transitions = 1 flap each. 14 days =
  // 336 hours -> 84 flaps -> 6 per day: warning (1 <= 6 < 10);
  // score = 40 + 29 * 6 / 10 = 57.4.
  auto s = Hourly(HealthSignal::kCarrierTransitions, 14, [](double t) {
    int h = static_cast<int>(t / kHourS);
    return h > 0 && h % 4 == 0 ? 2 / kHourS : 0.0;
  });
  auto h = EvaluateLinkEnd({s}, 400e9, {});
  REQUIRE(h.findings.size() == 1);
  CHECK(h.findings[0].kind == "flapping");
  CHECK(*h.findings[0].evidence.count == doctest::Approx(84));
  CHECK(*h.findings[0].evidence.per_day == doctest::Approx(6));
  CHECK(h.findings[0].severity == Severity::kWarning);
  CHECK(h.score == doctest::Approx(57.4));
}

TEST_CASE("a clean link raises nothing") {
  std::vector<SignalSeries> all;
  for (auto sig : {HealthSignal::kInErrors, HealthSignal::kFecCorrected, HealthSignal::kFecUncorrectable,
                   HealthSignal::kCarrierTransitions, HealthSignal::kInDiscards, HealthSignal::kPfcPause}) {
    all.push_back(Hourly(sig, 14, [](double) { return 0.0; }));
  }
  all.push_back(Hourly(HealthSignal::kRxPowerDbm, 14, [](double) { return -2.0; }));
  all.push_back(Hourly(HealthSignal::kRxBps, 14, [](double) { return 100e9; }));
  auto h = EvaluateLinkEnd(all, 400e9, {});
  CHECK(h.findings.empty());
  CHECK(h.severity == Severity::kNone);
  CHECK(h.score == 0);
}

TEST_CASE("optical receive power drifting towards the receiver limit") {
  // -3 dBm falling 0.5 dB/day for 10 days: -8 dBm at the end, 2 dB above
  // the -10 dBm limit (inside the 3 dB margin) -> warning; at 0.5 dB/day
  // the limit is 4 days away.
  auto s = Hourly(HealthSignal::kRxPowerDbm, 10, [](double t) { return -3 - 0.5 * t / kDay; });
  auto h = EvaluateLinkEnd({s}, 400e9, {});
  REQUIRE(h.findings.size() == 1);
  const auto& f = h.findings[0];
  CHECK(f.kind == "optical_drift");
  CHECK(f.severity == Severity::kWarning);
  CHECK(*f.evidence.level == doctest::Approx(-8));
  CHECK(*f.evidence.slope_per_day == doctest::Approx(-0.5));
  CHECK(*f.evidence.time_to_threshold_s / kDay == doctest::Approx(4));
}

TEST_CASE("discards without load are congestion; with load they are not flagged here") {
  // 5 discards/s on average (> 1/s) while 10 Gb/s of 400 Gb/s (2.5%) is used.
  auto discards = Hourly(HealthSignal::kOutDiscards, 7, [](double) { return 5.0; });
  auto quiet = Hourly(HealthSignal::kTxBps, 7, [](double) { return 10e9; });
  auto h = EvaluateLinkEnd({discards, quiet}, 400e9, {});
  REQUIRE(h.findings.size() == 1);
  CHECK(h.findings[0].kind == "congestion_without_load");
  CHECK(*h.findings[0].evidence.mean_utilisation == doctest::Approx(0.025));
  CHECK(*h.findings[0].evidence.mean_rate == doctest::Approx(5));
  // 40 + 29 * 5 / 10 = 54.5
  CHECK(h.score == doctest::Approx(54.5));
  auto busy = Hourly(HealthSignal::kTxBps, 7, [](double) { return 300e9; });  // 75% > 50%
  CHECK(EvaluateLinkEnd({discards, busy}, 400e9, {}).findings.empty());
}

TEST_CASE("names round-trip") {
  for (int i = 0; i < kHealthSignalCount; ++i) {
    auto s = static_cast<HealthSignal>(i);
    CHECK(HealthSignalFromName(HealthSignalName(s)) == s);
  }
  CHECK_FALSE(HealthSignalFromName("crc"));
}
