#include "advisor/link_trends.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>

#include <fmt/format.h>

namespace drainwise::advisor {

namespace {

constexpr double kDay = 86400.0;

struct SignalInfo {
  HealthSignal signal;
  std::string_view name;
  std::string_view label;  // plain language
};

constexpr std::array<SignalInfo, kHealthSignalCount> kSignals = {{
    {HealthSignal::kInErrors, "in_errors", "input error rate"},
    {HealthSignal::kOutErrors, "out_errors", "output error rate"},
    {HealthSignal::kFecCorrected, "fec_corrected", "corrected FEC rate"},
    {HealthSignal::kFecUncorrectable, "fec_uncorrectable", "uncorrectable FEC rate"},
    {HealthSignal::kCarrierTransitions, "carrier_transitions", "carrier transitions"},
    {HealthSignal::kInDiscards, "in_discards", "input discard rate"},
    {HealthSignal::kOutDiscards, "out_discards", "output discard rate"},
    {HealthSignal::kPfcPause, "pfc_pause", "PFC pause frame rate"},
    {HealthSignal::kEcnMarked, "ecn_marked", "ECN mark rate"},
    {HealthSignal::kRxPowerDbm, "rx_power_dbm", "optical receive power"},
    {HealthSignal::kTxPowerDbm, "tx_power_dbm", "optical transmit power"},
    {HealthSignal::kSpeedBps, "speed_bps", "operational speed"},
    {HealthSignal::kRxBps, "rx_bps", "traffic in"},
    {HealthSignal::kTxBps, "tx_bps", "traffic out"},
}};

std::string_view Label(HealthSignal s) { return kSignals[static_cast<size_t>(s)].label; }

double Median(std::vector<double>& v) {
  // REQUIRES: !v.empty()
  size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  double hi = v[mid];
  if (v.size() % 2 == 1) return hi;
  double lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lo + hi) / 2;
}

double BandScore(Severity s) {
  switch (s) {
    case Severity::kCritical:
      return 70;
    case Severity::kWarning:
      return 40;
    case Severity::kInfo:
      return 10;
    case Severity::kNone:
      return 0;
  }
  return 0;
}

// Urgency in [0, 29]: a crossing now scores 29, one a week away 29/e.
double TimeUrgency(std::optional<double> ttl_s) {
  if (!ttl_s) return 0;
  return 29 * std::exp(-*ttl_s / (7 * kDay));
}

Severity FromTimeToThreshold(double ttl_s, const TrendOptions& o) {
  if (ttl_s < o.critical_horizon_s) return Severity::kCritical;
  if (ttl_s < o.warning_horizon_s) return Severity::kWarning;
  return Severity::kInfo;
}

std::string Days(double s) { return fmt::format("{:.1f} days", s / kDay); }

std::vector<TimePoint> Clean(const std::vector<TimePoint>& in) {
  std::vector<TimePoint> out;
  out.reserve(in.size());
  for (const auto& p : in) {
    if (std::isfinite(p.t_s) && std::isfinite(p.value)) out.push_back(p);
  }
  std::sort(out.begin(), out.end(), [](const TimePoint& a, const TimePoint& b) { return a.t_s < b.t_s; });
  // One point per time: the later duplicate wins.
  std::vector<TimePoint> uniq;
  for (const auto& p : out) {
    if (!uniq.empty() && uniq.back().t_s == p.t_s)
      uniq.back() = p;
    else
      uniq.push_back(p);
  }
  return uniq;
}

Evidence Window(const std::vector<TimePoint>& pts) {
  Evidence e;
  e.window_start_s = pts.front().t_s;
  e.window_end_s = pts.back().t_s;
  e.points = static_cast<int>(pts.size());
  return e;
}

// A rate that should stay low (errors, FEC): its level, growth and the time
// until it crosses `threshold`.
std::optional<Finding> RateGrowth(HealthSignal signal, const std::vector<TimePoint>& pts, double threshold,
                                  const TrendOptions& o) {
  if (static_cast<int>(pts.size()) < o.min_points || threshold <= 0) return std::nullopt;
  std::vector<TimePoint> positive;
  for (const auto& p : pts) {
    if (p.value > 0) positive.push_back(p);
  }
  if (static_cast<int>(positive.size()) < o.min_points) return std::nullopt;  // (nearly) clean
  const double t0 = pts.front().t_s, t1 = pts.back().t_s;
  auto linear = TheilSen(pts);
  if (!linear) return std::nullopt;
  Evidence e = Window(pts);
  e.slope_per_day = linear->slope * kDay;
  e.threshold = threshold;
  double level = 0, start_level = 0;
  std::optional<double> ttl;
  // Mostly non-zero: growth is judged on a log scale (errors of a failing
  // optic multiply, they do not add), so the slope is in doublings.
  const bool exponential = positive.size() * 5 >= pts.size() * 4;
  if (exponential) {
    std::vector<TimePoint> logs;
    logs.reserve(positive.size());
    for (const auto& p : positive) logs.push_back({p.t_s, std::log2(p.value)});
    auto line = TheilSen(logs);
    if (!line) return std::nullopt;
    level = std::exp2(line->At(t1));
    start_level = std::exp2(line->At(t0));
    if (line->slope > 0) e.doubling_time_s = 1 / line->slope;
    if (level >= threshold)
      ttl = 0;
    else if (line->slope > 0)
      ttl = (std::log2(threshold) - std::log2(level)) / line->slope;
  } else {
    level = std::max(0.0, linear->At(t1));
    start_level = std::max(0.0, linear->At(t0));
    if (level >= threshold)
      ttl = 0;
    else if (linear->slope > 0)
      ttl = (threshold - level) / linear->slope;
  }
  e.level = level;
  e.time_to_threshold_s = ttl;
  const bool rising = level > start_level * 1.25 && level > 0;
  Finding f;
  f.kind = "error_growth";
  f.signal = signal;
  if (ttl && *ttl == 0) {
    f.severity = Severity::kCritical;
  } else if (rising && ttl) {
    f.severity = FromTimeToThreshold(*ttl, o);
  } else {
    return std::nullopt;  // errors, but not growing: the instant thresholds (GET /v1/links) cover a steady level
  }
  f.score = BandScore(f.severity) + TimeUrgency(ttl);
  f.evidence = e;
  std::string growth = e.doubling_time_s ? fmt::format("doubling every {}", Days(*e.doubling_time_s))
                                         : fmt::format("rising by {:.3g}/s per day", *e.slope_per_day);
  if (*ttl == 0) {
    f.explanation = fmt::format("{} is {:.3g}/s at the end of the {} window, above the {:.3g}/s threshold ({})",
                                Label(signal), level, Days(t1 - t0), threshold, growth);
  } else {
    f.explanation = fmt::format(
        "{} is {:.3g}/s at the end of the {} window and {}; at this pace it crosses {:.3g}/s "
        "in {}",
        Label(signal), level, Days(t1 - t0), growth, threshold, Days(*ttl));
  }
  return f;
}

// Uncorrectable codewords are lost frames: any at all is worth a warning.
std::optional<Finding> Uncorrectable(const std::vector<TimePoint>& pts, const TrendOptions& o) {
  if (auto growth = RateGrowth(HealthSignal::kFecUncorrectable, pts, o.fec_uncorrectable_per_s, o)) {
    growth->kind = "fec_uncorrectable";
    return growth;
  }
  if (pts.empty()) return std::nullopt;
  double peak = 0, sum = 0;
  for (const auto& p : pts) {
    peak = std::max(peak, p.value);
    sum += p.value;
  }
  if (peak <= 0) return std::nullopt;
  Finding f;
  f.kind = "fec_uncorrectable";
  f.signal = HealthSignal::kFecUncorrectable;
  f.severity = Severity::kWarning;
  f.evidence = Window(pts);
  f.evidence.mean_rate = sum / static_cast<double>(pts.size());
  f.evidence.level = peak;
  f.evidence.threshold = o.fec_uncorrectable_per_s;
  f.score = BandScore(f.severity);
  f.explanation = fmt::format(
      "uncorrectable FEC codewords seen (peak {:.3g}/s in the {} window): frames are being lost and retransmitted",
      peak, Days(pts.back().t_s - pts.front().t_s));
  return f;
}

std::optional<Finding> OpticalDrift(const std::vector<TimePoint>& pts, const TrendOptions& o) {
  if (static_cast<int>(pts.size()) < o.min_points) return std::nullopt;
  auto line = TheilSen(pts);
  if (!line) return std::nullopt;
  const double t0 = pts.front().t_s, t1 = pts.back().t_s;
  Evidence e = Window(pts);
  double level = line->At(t1);
  double margin = level - o.rx_power_min_dbm;
  e.level = level;
  e.slope_per_day = line->slope * kDay;
  e.threshold = o.rx_power_min_dbm;
  std::optional<double> ttl;
  if (margin <= 0)
    ttl = 0;
  else if (line->slope < 0)
    ttl = margin / -line->slope;
  e.time_to_threshold_s = ttl;
  Finding f;
  f.kind = "optical_drift";
  f.signal = HealthSignal::kRxPowerDbm;
  if (ttl && *ttl == 0) {
    f.severity = Severity::kCritical;
  } else if (ttl && *ttl < o.critical_horizon_s) {
    f.severity = Severity::kCritical;
  } else if (margin < o.rx_power_margin_db || (ttl && *ttl < o.warning_horizon_s)) {
    f.severity = Severity::kWarning;
  } else if (ttl && *e.slope_per_day <= -0.01) {
    f.severity = Severity::kInfo;
  } else {
    return std::nullopt;
  }
  f.evidence = e;
  f.score = BandScore(f.severity) + TimeUrgency(ttl);
  f.explanation = fmt::format(
      "receive power is {:.2f} dBm at the end of the {} window, {:.2f} dB above the {:.2f} dBm "
      "receiver limit, drifting {:+.3f} dB/day",
      level, Days(t1 - t0), margin, o.rx_power_min_dbm, *e.slope_per_day);
  if (ttl && *ttl > 0) f.explanation += fmt::format("; at this pace it reaches the limit in {}", Days(*ttl));
  return f;
}

std::optional<Finding> Flapping(const std::vector<TimePoint>& pts, const TrendOptions& o) {
  if (pts.size() < 2) return std::nullopt;
  // Rates per second integrated over each step: the transitions counted.
  double transitions = 0;
  for (size_t i = 1; i < pts.size(); ++i) transitions += std::max(0.0, pts[i].value) * (pts[i].t_s - pts[i - 1].t_s);
  double flaps = transitions / 2;
  double window = pts.back().t_s - pts.front().t_s;
  if (flaps < 0.5 || window <= 0) return std::nullopt;
  double per_day = flaps / (window / kDay);
  Finding f;
  f.kind = "flapping";
  f.signal = HealthSignal::kCarrierTransitions;
  f.severity = per_day >= o.flaps_per_day_critical  ? Severity::kCritical
               : per_day >= o.flaps_per_day_warning ? Severity::kWarning
                                                    : Severity::kInfo;
  f.evidence = Window(pts);
  f.evidence.count = flaps;
  f.evidence.per_day = per_day;
  f.evidence.threshold = o.flaps_per_day_warning;
  f.score = BandScore(f.severity) + 29 * std::min(1.0, per_day / std::max(o.flaps_per_day_critical, 1e-9));
  f.explanation = fmt::format(
      "the link went down and up {:.0f} times in {} ({:.2f} per day; {:.3g} per day is the warning level): each flap "
      "stalls every collective crossing it",
      flaps, Days(window), per_day, o.flaps_per_day_warning);
  return f;
}

double Mean(const std::vector<TimePoint>& pts) {
  if (pts.empty()) return 0;
  double s = 0;
  for (const auto& p : pts) s += p.value;
  return s / static_cast<double>(pts.size());
}

std::vector<Finding> Congestion(const std::map<HealthSignal, std::vector<TimePoint>>& by, double capacity_bps,
                                const TrendOptions& o) {
  std::vector<Finding> out;
  if (capacity_bps <= 0) return out;
  auto rx = by.find(HealthSignal::kRxBps), tx = by.find(HealthSignal::kTxBps);
  if (rx == by.end() && tx == by.end()) return out;  // utilisation unknown: no claim
  double util =
      std::max(rx != by.end() ? Mean(rx->second) : 0.0, tx != by.end() ? Mean(tx->second) : 0.0) / capacity_bps;
  if (util >= o.congestion_max_utilisation) return out;
  struct Check {
    std::vector<HealthSignal> signals;
    double threshold;
    std::string_view what;
  };
  const Check checks[] = {
      {{HealthSignal::kInDiscards, HealthSignal::kOutDiscards}, o.discards_per_s, "discards"},
      {{HealthSignal::kPfcPause}, o.pfc_pause_per_s, "PFC pause frames"},
      {{HealthSignal::kEcnMarked}, o.ecn_marked_per_s, "ECN marks"},
  };
  for (const auto& c : checks) {
    double mean = 0;
    const std::vector<TimePoint>* first = nullptr;
    for (auto s : c.signals) {
      if (auto it = by.find(s); it != by.end() && !it->second.empty()) {
        mean += Mean(it->second);
        if (!first) first = &it->second;
      }
    }
    if (!first || mean <= c.threshold) continue;
    Finding f;
    f.kind = "congestion_without_load";
    f.signal = c.signals.front();
    f.severity = Severity::kWarning;
    f.evidence = Window(*first);
    f.evidence.mean_rate = mean;
    f.evidence.threshold = c.threshold;
    f.evidence.mean_utilisation = util;
    f.score = BandScore(f.severity) + 29 * std::min(1.0, mean / (10 * c.threshold));
    f.explanation = fmt::format(
        "{} average {:.3g}/s over {} while the link is on average only {:.0f}% busy: bursts (incast) congest it "
        "that a {}-second average never shows",
        c.what, mean, Days(f.evidence.window_end_s - f.evidence.window_start_s), util * 100, 30);
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace

std::string_view HealthSignalName(HealthSignal signal) { return kSignals[static_cast<size_t>(signal)].name; }

std::optional<HealthSignal> HealthSignalFromName(std::string_view name) {
  for (const auto& s : kSignals) {
    if (s.name == name) return s.signal;
  }
  return std::nullopt;
}

std::string_view SeverityName(Severity severity) {
  switch (severity) {
    case Severity::kNone:
      return "none";
    case Severity::kInfo:
      return "info";
    case Severity::kWarning:
      return "warning";
    case Severity::kCritical:
      return "critical";
  }
  return "none";
}

std::optional<RobustLine> TheilSen(const std::vector<TimePoint>& points) {
  std::vector<double> slopes;
  slopes.reserve(points.size() * (points.size() - (points.empty() ? 0 : 1)) / 2);
  for (size_t i = 0; i < points.size(); ++i) {
    for (size_t j = i + 1; j < points.size(); ++j) {
      double dt = points[j].t_s - points[i].t_s;
      if (dt != 0) slopes.push_back((points[j].value - points[i].value) / dt);
    }
  }
  if (slopes.empty()) return std::nullopt;
  RobustLine line;
  line.slope = Median(slopes);
  std::vector<double> intercepts;
  intercepts.reserve(points.size());
  for (const auto& p : points) intercepts.push_back(p.value - line.slope * p.t_s);
  line.intercept = Median(intercepts);
  return line;
}

LinkEndHealth EvaluateLinkEnd(const std::vector<SignalSeries>& series, double capacity_bps,
                              const TrendOptions& options) {
  std::map<HealthSignal, std::vector<TimePoint>> by;
  for (const auto& s : series) {
    auto& v = by[s.signal];
    v.insert(v.end(), s.points.begin(), s.points.end());
  }
  for (auto& [_, v] : by) v = Clean(v);
  LinkEndHealth h;
  auto add = [&](std::optional<Finding> f) {
    if (f) h.findings.push_back(std::move(*f));
  };
  auto get = [&](HealthSignal s) -> const std::vector<TimePoint>* {
    auto it = by.find(s);
    return it == by.end() || it->second.empty() ? nullptr : &it->second;
  };
  if (auto p = get(HealthSignal::kInErrors))
    add(RateGrowth(HealthSignal::kInErrors, *p, options.in_errors_per_s, options));
  if (auto p = get(HealthSignal::kOutErrors))
    add(RateGrowth(HealthSignal::kOutErrors, *p, options.in_errors_per_s, options));
  if (auto p = get(HealthSignal::kFecCorrected))
    add(RateGrowth(HealthSignal::kFecCorrected, *p, options.fec_corrected_per_s, options));
  if (auto p = get(HealthSignal::kFecUncorrectable)) add(Uncorrectable(*p, options));
  if (auto p = get(HealthSignal::kRxPowerDbm)) add(OpticalDrift(*p, options));
  if (auto p = get(HealthSignal::kCarrierTransitions)) add(Flapping(*p, options));
  for (auto& f : Congestion(by, capacity_bps, options)) h.findings.push_back(std::move(f));
  std::stable_sort(h.findings.begin(), h.findings.end(),
                   [](const Finding& a, const Finding& b) { return a.score > b.score; });
  if (!h.findings.empty()) {
    h.severity = h.findings.front().severity;
    h.score = h.findings.front().score;
  }
  return h;
}

}  // namespace drainwise::advisor
