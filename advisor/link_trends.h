// Early degradation of one link end: trends in its health signals over a
// window (docs/link-health.md). Pure: no I/O, no clock, no logging; every
// time is a unix second passed in, so the same series give the same
// findings.
//
// Units: rates in events per second (errors, FEC codewords/blocks/bits as
// the exporter counts them, discards, pause frames, ECN marks), carrier
// transitions as a rate too (transitions per second, integrated over the
// window), optical power in dBm, speed and traffic in bits per second,
// times and windows in seconds.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace drainwise::advisor {

enum class HealthSignal {
  kInErrors,            // CRC/FCS and other input errors, per s
  kOutErrors,           // per s
  kFecCorrected,        // corrected FEC codewords (or blocks, symbols, bits), per s
  kFecUncorrectable,    // uncorrectable FEC codewords (blocks), per s: data lost
  kCarrierTransitions,  // link up/down transitions, per s
  kInDiscards,          // per s
  kOutDiscards,         // per s
  kPfcPause,            // PFC pause frames received or sent, per s
  kEcnMarked,           // ECN-marked packets, per s
  kRxPowerDbm,          // optical receive power
  kTxPowerDbm,          // optical transmit power
  kSpeedBps,            // operational speed
  kRxBps,               // traffic in
  kTxBps,               // traffic out
};
inline constexpr int kHealthSignalCount = 14;

// "in_errors", "fec_corrected", ... (the names of the API and the configuration).
std::string_view HealthSignalName(HealthSignal signal);
std::optional<HealthSignal> HealthSignalFromName(std::string_view name);

struct TimePoint {
  double t_s = 0;  // unix seconds
  double value = 0;
};

// One signal of one link end over the window, sorted by time (the caller
// sorts; duplicates and NaN are dropped by EvaluateLinkEnd).
struct SignalSeries {
  HealthSignal signal = HealthSignal::kInErrors;
  std::vector<TimePoint> points;
};

struct TrendOptions {
  // Rates whose crossing is predicted (time to threshold), per s.
  double in_errors_per_s = 1;
  double fec_corrected_per_s = 1e5;
  double fec_uncorrectable_per_s = 0.01;
  // Optical: the receiver's sensitivity limit and the margin that warns.
  double rx_power_min_dbm = -10;
  double rx_power_margin_db = 3;
  // Flaps (one flap = 2 carrier transitions, down and up) per day.
  double flaps_per_day_warning = 1;
  double flaps_per_day_critical = 10;
  // Congestion signs while the average utilisation stays below
  // `congestion_max_utilisation`: discards, pause frames or ECN marks above
  // these mean rates (per s).
  double congestion_max_utilisation = 0.5;
  double discards_per_s = 1;
  double pfc_pause_per_s = 100;
  double ecn_marked_per_s = 100;
  // Predicted crossings sooner than these are critical / warnings; later
  // ones (or a rising trend still far away) are info.
  double critical_horizon_s = 2 * 86400.0;
  double warning_horizon_s = 14 * 86400.0;
  // Fewer points than this say nothing about a trend.
  int min_points = 4;
};

enum class Severity { kNone = 0, kInfo = 1, kWarning = 2, kCritical = 3 };
std::string_view SeverityName(Severity severity);  // "none" | "info" | "warning" | "critical"

// The numbers a finding rests on. Fields that do not apply stay empty.
struct Evidence {
  double window_start_s = 0, window_end_s = 0;
  int points = 0;
  std::optional<double> level;                // robust current level at the window's end (signal's unit)
  std::optional<double> slope_per_day;        // Theil–Sen slope of the values, unit per day
  std::optional<double> doubling_time_s;      // rates growing exponentially: time to double
  std::optional<double> threshold;            // the configured threshold or limit
  std::optional<double> time_to_threshold_s;  // at the slope; 0 = already past it
  std::optional<double> count;                // flaps in the window
  std::optional<double> per_day;              // flaps per day
  std::optional<double> mean_utilisation;     // congestion: busier direction / capacity
  std::optional<double> mean_rate;            // congestion: mean of the signal over the window
};

struct Finding {
  // error_growth | fec_uncorrectable | optical_drift | flapping | congestion_without_load
  std::string kind;
  HealthSignal signal = HealthSignal::kInErrors;
  Severity severity = Severity::kNone;
  double score = 0;  // 0..100: severity band + urgency (docs/link-health.md)
  Evidence evidence;
  std::string explanation;  // plain language, with the numbers
};

struct LinkEndHealth {
  std::vector<Finding> findings;  // worst first
  Severity severity = Severity::kNone;
  double score = 0;  // the worst finding's; 0 = nothing found
};

// Theil–Sen estimator: the median of the pairwise slopes (dv/dt per second)
// and the median intercept at t = 0 of the points given that slope. Needs 2
// points with distinct times; nullopt otherwise. O(n^2): callers keep n
// bounded (the monitor downsamples to at most a few hundred points).
struct RobustLine {
  double slope = 0;  // per second
  double intercept = 0;
  double At(double t_s) const { return intercept + slope * t_s; }
};
std::optional<RobustLine> TheilSen(const std::vector<TimePoint>& points);

// Every finding for one link end from its series. `capacity_bps` (> 0) lets
// the congestion check compute utilisation from kRxBps / kTxBps.
LinkEndHealth EvaluateLinkEnd(const std::vector<SignalSeries>& series, double capacity_bps,
                              const TrendOptions& options);

}  // namespace drainwise::advisor
