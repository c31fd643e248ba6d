#include "advisor/calibration.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

namespace drainwise::advisor {

Status CheckObservedIteration(double seconds, std::string_view field) {
  if (std::isfinite(seconds) && seconds > 0 && seconds <= kMaxIterationSeconds) return {};
  return InvalidArgument(fmt::format("{}{}must be a finite number of seconds in (0, {:g}], got {}", field,
                                     field.empty() ? "" : ": ", kMaxIterationSeconds, seconds));
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double pos = q * static_cast<double>(v.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}

Result<std::vector<ObservationTerms>> ComputeTerms(const model::SnapshotPtr& snapshot,
                                                   const std::vector<Observation>& observations,
                                                   const sim::FlowOptions& options, std::stop_token stop) {
  const auto& jobs = snapshot->jobs->jobs();
  for (size_t i = 0; i < observations.size(); ++i) {
    if (observations[i].job.value >= jobs.size()) {
      return InvalidArgument(fmt::format("observations[{}]: unknown job id {}", i, observations[i].job.value));
    }
  }
  // Two probes isolate the latency coefficients: latency_s is
  // sum(steps x (hops x h + o)), so h = 1, o = 0 yields H and h = 0, o = 1
  // yields S; both run at goodput 1, which yields B.
  sim::FlowOptions hop = options;
  hop.goodput = 1;
  hop.per_hop_latency_s = 1;
  hop.per_message_overhead_s = 0;
  hop.overload_penalty = 0;
  sim::FlowOptions msg = hop;
  msg.per_hop_latency_s = 0;
  msg.per_message_overhead_s = 1;
  auto hop_sim = sim::FlowSimulator::Create(snapshot, hop, stop);
  if (!hop_sim) return tl::unexpected(hop_sim.error());
  auto msg_sim = sim::FlowSimulator::Create(snapshot, msg, stop);
  if (!msg_sim) return tl::unexpected(msg_sim.error());

  // One simulation per distinct drain.
  std::map<std::pair<std::vector<model::NodeId>, std::vector<model::LinkId>>,
           std::pair<sim::FlowReport, sim::FlowReport>>
      reports;
  std::vector<ObservationTerms> out;
  out.reserve(observations.size());
  for (const auto& o : observations) {
    auto key = std::make_pair(o.drain.switches, o.drain.links);
    auto it = reports.find(key);
    if (it == reports.end()) {
      auto a = (*hop_sim)->Simulate(o.drain, stop);
      if (!a) return tl::unexpected(a.error());
      auto b = (*msg_sim)->Simulate(o.drain, stop);
      if (!b) return tl::unexpected(b.error());
      it = reports.emplace(key, std::make_pair(std::move(*a), std::move(*b))).first;
    }
    const auto& hj = it->second.first.jobs[o.job.value].drained;
    const auto& mj = it->second.second.jobs[o.job.value].drained;
    const auto& job = jobs[o.job.value];
    ObservationTerms t;
    t.compute_s = job.iteration.compute_s;
    t.overlap = job.iteration.overlap;
    t.connected = hj.connected;
    t.bandwidth_s = hj.bandwidth_s;
    t.hop_steps = hj.latency_s;
    t.steps = mj.latency_s;
    out.push_back(t);
  }
  return out;
}

namespace {

struct Fit2 {
  double h = 0, o = 0, sse = 0;
};

// min over h in [0, hmax], o in [0, omax] of sum (y_i - a_i h - b_i o)^2:
// the unconstrained normal equations, else the best of the four edges.
Fit2 BoundedLinear2(const std::vector<double>& y, const std::vector<double>& a, const std::vector<double>& b,
                    double hmax, double omax) {
  auto sse = [&](double h, double o) {
    double s = 0;
    for (size_t i = 0; i < y.size(); ++i) {
      double r = y[i] - a[i] * h - b[i] * o;
      s += r * r;
    }
    return s;
  };
  double aa = 0, bb = 0, ab = 0, ay = 0, by = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    aa += a[i] * a[i];
    bb += b[i] * b[i];
    ab += a[i] * b[i];
    ay += a[i] * y[i];
    by += b[i] * y[i];
  }
  std::vector<std::pair<double, double>> candidates;
  double det = aa * bb - ab * ab;
  if (std::fabs(det) > 1e-30 * std::max(1.0, aa * bb)) {
    candidates.emplace_back((ay * bb - by * ab) / det, (by * aa - ay * ab) / det);
  }
  // Edges: one variable at a bound, the other at its 1-D optimum, clamped.
  auto clamp = [](double v, double hi) { return std::clamp(v, 0.0, hi); };
  for (double h : {0.0, hmax}) candidates.emplace_back(h, bb > 0 ? clamp((by - ab * h) / bb, omax) : 0.0);
  for (double o : {0.0, omax}) candidates.emplace_back(aa > 0 ? clamp((ay - ab * o) / aa, hmax) : 0.0, o);
  Fit2 best;
  best.sse = INFINITY;
  for (auto [h, o] : candidates) {
    if (h < 0 || h > hmax || o < 0 || o > omax) continue;
    double s = sse(h, o);
    if (s < best.sse) best = {h, o, s};
  }
  return best;
}

}  // namespace

namespace {

// The fit proper on the observations `use` (>= 1; callers ensure 3).
CalibrationParams FitOn(const std::vector<ObservationTerms>& terms, const std::vector<double>& observed,
                        const std::vector<size_t>& use, const CalibrationBounds& bounds) {
  // For goodput g, the residual in iteration seconds
  //   obs_i - compute_i - w_i (B_i / g + H_i h + S_i o),  w_i = 1 - overlap_i
  // is y_i - a_i h - b_i o with y_i = obs_i - compute_i - w_i B_i / g,
  // a_i = w_i H_i, b_i = w_i S_i: linear in (h, o).
  auto solve = [&](double g) {
    std::vector<double> y, a, b;
    for (size_t i : use) {
      const auto& t = terms[i];
      double w = 1 - t.overlap;
      y.push_back((observed[i] - t.compute_s) - w * t.bandwidth_s / g);
      a.push_back(w * t.hop_steps);
      b.push_back(w * t.steps);
    }
    return BoundedLinear2(y, a, b, bounds.per_hop_latency_max_s, bounds.per_message_overhead_max_s);
  };
  // Golden-section search on goodput (the SSE is smooth and, in practice,
  // unimodal in 1/g); a coarse scan first guards against a poor bracket.
  double lo = bounds.goodput_min, hi = bounds.goodput_max;
  double best_g = lo, best_sse = INFINITY;
  for (int k = 0; k <= 20; ++k) {
    double g = lo + (hi - lo) * k / 20.0;
    double s = solve(g).sse;
    if (s < best_sse) {
      best_sse = s;
      best_g = g;
    }
  }
  double step = (hi - lo) / 20.0;
  double a = std::max(lo, best_g - step), b = std::min(hi, best_g + step);
  const double phi = (std::sqrt(5.0) - 1) / 2;
  double c = b - phi * (b - a), d = a + phi * (b - a);
  double fc = solve(c).sse, fd = solve(d).sse;
  for (int it = 0; it < 80 && b - a > 1e-9; ++it) {
    if (fc < fd) {
      b = d;
      d = c;
      fd = fc;
      c = b - phi * (b - a);
      fc = solve(c).sse;
    } else {
      a = c;
      c = d;
      fc = fd;
      d = a + phi * (b - a);
      fd = solve(d).sse;
    }
  }
  double g = (a + b) / 2;
  if (solve(best_g).sse < solve(g).sse) g = best_g;
  auto f = solve(g);
  return CalibrationParams{g, f.h, f.o};
}

double Rmse(double sse, size_t n) { return n ? std::sqrt(sse / static_cast<double>(n)) : NAN; }

}  // namespace

Result<FitResult> FitCalibration(const std::vector<ObservationTerms>& terms, const std::vector<double>& observed,
                                 const CalibrationParams& start, const CalibrationBounds& bounds) {
  if (terms.size() != observed.size()) return InvalidArgument("terms and observations differ in length");
  std::vector<size_t> use;
  for (size_t i = 0; i < terms.size(); ++i) {
    if (terms[i].connected && CheckObservedIteration(observed[i], "") && terms[i].overlap < 1) use.push_back(i);
  }
  if (use.size() < 3) {
    return InvalidArgument(fmt::format("calibration needs at least 3 usable observations, got {}", use.size()));
  }
  FitResult r;
  r.params = FitOn(terms, observed, use, bounds);
  r.observations = static_cast<int>(use.size());
  double sse_before = 0, sse_after = 0;
  std::vector<double> rel;
  for (size_t i : use) {
    double pb = terms[i].Predict(start), pa = terms[i].Predict(r.params);
    sse_before += (pb - observed[i]) * (pb - observed[i]);
    sse_after += (pa - observed[i]) * (pa - observed[i]);
    rel.push_back(std::fabs(pa - observed[i]) / observed[i]);
  }
  r.rmse_before_s = Rmse(sse_before, use.size());
  r.rmse_s = Rmse(sse_after, use.size());
  r.median_rel_error = Quantile(rel, 0.5);
  r.p90_rel_error = Quantile(rel, 0.9);

  // Held out: the fit on every fold but one predicts that one. Each
  // training set keeps at least 3 observations: with 4 or more used, k =
  // min(5, n) folds of at most ceil(n / k) leave n - ceil(n / k) >= 3.
  r.holdout_rmse_s = NAN;
  r.holdout_rmse_before_s = NAN;
  if (use.size() >= 4) {
    const size_t k = std::min<size_t>(5, use.size());
    r.folds = static_cast<int>(k);
    double sse_fit = 0, sse_start = 0;
    for (size_t fold = 0; fold < k; ++fold) {
      std::vector<size_t> train, test;
      for (size_t j = 0; j < use.size(); ++j) (j % k == fold ? test : train).push_back(use[j]);
      auto p = FitOn(terms, observed, train, bounds);
      for (size_t i : test) {
        double pf = terms[i].Predict(p), ps = terms[i].Predict(start);
        sse_fit += (pf - observed[i]) * (pf - observed[i]);
        sse_start += (ps - observed[i]) * (ps - observed[i]);
      }
    }
    r.holdout_rmse_s = Rmse(sse_fit, use.size());
    r.holdout_rmse_before_s = Rmse(sse_start, use.size());
  }
  const double figures[] = {r.rmse_s,
                            r.rmse_before_s,
                            r.median_rel_error,
                            r.p90_rel_error,
                            r.holdout_rmse_s,
                            r.holdout_rmse_before_s,
                            r.params.goodput,
                            r.params.per_hop_latency_s,
                            r.params.per_message_overhead_s};
  if (use.size() < 4) {
    r.not_applicable =
        fmt::format("{} usable observations: at least 4 are needed to test the fit on held-out ones", use.size());
  } else if (!std::all_of(std::begin(figures), std::end(figures), [](double v) { return std::isfinite(v); })) {
    r.not_applicable = "the fit's error figures are undefined (not finite)";
  } else if (!(r.holdout_rmse_s < r.holdout_rmse_before_s)) {
    r.not_applicable = fmt::format(
        "the fit does not predict held-out observations better than the parameters in force "
        "(held-out rmse {:.6g} s vs {:.6g} s)",
        r.holdout_rmse_s, r.holdout_rmse_before_s);
  } else {
    r.applicable = true;
  }
  return r;
}

SlowdownError SlowdownErrors(const std::vector<double>& predicted, const std::vector<double>& observed) {
  SlowdownError e;
  std::vector<double> abs;
  for (size_t i = 0; i < predicted.size() && i < observed.size(); ++i)
    abs.push_back(std::fabs(predicted[i] - observed[i]));
  e.pairs = static_cast<int>(abs.size());
  e.median_abs_pct = Quantile(abs, 0.5);
  e.p90_abs_pct = Quantile(abs, 0.9);
  return e;
}

}  // namespace drainwise::advisor
