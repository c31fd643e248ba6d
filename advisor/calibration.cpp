#include "advisor/calibration.h"

#include <algorithm>
#include <array>
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

// The fit in prior units. With x = (u, h, o), u = 1 / goodput, the model is
//   pred_i(x) = compute_i + w_i (B_i u + H_i h + S_i o),  w_i = 1 - overlap_i,
// linear in x. Writing x = d + T z, d the defaults and T = diag(tau) the
// prior widths (tau_u = tau_goodput / goodput_d^2, the width of 1/g by the
// delta method), the relative residual of observation i is
//   r_i(z) = (pred_i(x) - obs_i) / obs_i = e_i + g_i . z,
//   e_i = (pred_i(d) - obs_i) / obs_i,   g_i = w_i (B_i tau_u, H_i tau_h, S_i tau_o) / obs_i.
// The fit minimises the negative log posterior (Gaussian noise of relative
// size sigma, Gaussian prior N(0, I) on z), times sigma^2:
//   Phi(z) = sum_i r_i(z)^2 + sigma^2 |z|^2 = c + 2 q.z + z'Qz,
//   Q = sum_i g_i g_i' + sigma^2 I,   q = sum_i e_i g_i,
// over the box l <= z <= h (the bounds). Q is positive definite (sigma > 0),
// so Phi is strictly convex and its minimum over the box is unique. At that
// minimum each coordinate is free or at one of its bounds; for the right
// assignment, the free coordinates solve Q_FF z_F = -(q_F + Q_FX z_X). So
// trying all 3^3 assignments, keeping the feasible ones and taking the one of
// least Phi finds it exactly (no iteration, no tolerance on convergence).
constexpr int kP = 3;
using Vec = std::array<double, kP>;
using Mat = std::array<Vec, kP>;

// Solves A y = b for the first m unknowns (A symmetric positive definite, m
// <= 3) by Gaussian elimination with partial pivoting.
bool Solve(Mat a, Vec b, int m, Vec& y) {
  for (int c = 0; c < m; ++c) {
    int piv = c;
    for (int r = c + 1; r < m; ++r) {
      if (std::fabs(a[r][c]) > std::fabs(a[piv][c])) piv = r;
    }
    if (!(std::fabs(a[piv][c]) > 0)) return false;
    std::swap(a[c], a[piv]);
    std::swap(b[c], b[piv]);
    for (int r = c + 1; r < m; ++r) {
      double f = a[r][c] / a[c][c];
      for (int k = c; k < m; ++k) a[r][k] -= f * a[c][k];
      b[r] -= f * b[c];
    }
  }
  for (int c = m - 1; c >= 0; --c) {
    double v = b[c];
    for (int k = c + 1; k < m; ++k) v -= a[c][k] * y[k];
    y[c] = v / a[c][c];
  }
  return true;
}

// argmin over lo <= z <= hi of 2 q.z + z'Qz (see above).
Vec BoxQp(const Mat& Q, const Vec& q, const Vec& lo, const Vec& hi) {
  Vec best{};
  double best_phi = INFINITY;
  for (int pattern = 0; pattern < 27; ++pattern) {
    int state[kP];
    for (int k = 0, p = pattern; k < kP; ++k, p /= 3) state[k] = p % 3;  // 0 free, 1 at lo, 2 at hi
    Vec z{};
    int free[kP], m = 0;
    for (int k = 0; k < kP; ++k) {
      if (state[k] == 0) free[m++] = k;
      if (state[k] == 1) z[k] = lo[k];
      if (state[k] == 2) z[k] = hi[k];
    }
    if (m > 0) {
      Mat a{};
      Vec b{}, y{};
      for (int i = 0; i < m; ++i) {
        b[i] = -q[free[i]];
        for (int k = 0; k < kP; ++k) {
          if (state[k] != 0) b[i] -= Q[free[i]][k] * z[k];
        }
        for (int j = 0; j < m; ++j) a[i][j] = Q[free[i]][free[j]];
      }
      if (!Solve(a, b, m, y)) continue;
      bool feasible = true;
      for (int i = 0; i < m; ++i) {
        const int k = free[i];
        // A free coordinate a hair outside its bound (rounding) is the
        // bound's pattern's point; the bound patterns cover it.
        if (!(y[i] >= lo[k] && y[i] <= hi[k])) feasible = false;
        z[k] = y[i];
      }
      if (!feasible) continue;
    }
    double phi = 0;
    for (int i = 0; i < kP; ++i) {
      phi += 2 * q[i] * z[i];
      for (int j = 0; j < kP; ++j) phi += z[i] * Q[i][j] * z[j];
    }
    if (phi < best_phi) {
      best_phi = phi;
      best = z;
    }
  }
  return best;
}

// Inverse of a symmetric positive definite 3x3 matrix (cofactors).
Mat Inverse3(const Mat& m) {
  Mat c{};
  c[0][0] = m[1][1] * m[2][2] - m[1][2] * m[2][1];
  c[0][1] = m[0][2] * m[2][1] - m[0][1] * m[2][2];
  c[0][2] = m[0][1] * m[1][2] - m[0][2] * m[1][1];
  c[1][0] = m[1][2] * m[2][0] - m[1][0] * m[2][2];
  c[1][1] = m[0][0] * m[2][2] - m[0][2] * m[2][0];
  c[1][2] = m[0][2] * m[1][0] - m[0][0] * m[1][2];
  c[2][0] = m[1][0] * m[2][1] - m[1][1] * m[2][0];
  c[2][1] = m[0][1] * m[2][0] - m[0][0] * m[2][1];
  c[2][2] = m[0][0] * m[1][1] - m[0][1] * m[1][0];
  double det = m[0][0] * c[0][0] + m[0][1] * c[1][0] + m[0][2] * c[2][0];
  for (auto& row : c) {
    for (double& v : row) v /= det;
  }
  return c;
}

double Rmse(double sse, size_t n) { return n ? std::sqrt(sse / static_cast<double>(n)) : NAN; }

// The problem in prior units (see above).
struct Scaled {
  Vec d{}, tau{}, lo{}, hi{};  // x = d + tau z; bounds of z
  std::vector<double> e;       // per used observation
  std::vector<Vec> g;
  Mat Q{};  // sum g g' + sigma^2 I
  Vec q{};  // sum e g

  CalibrationParams ToParams(const Vec& z) const {
    Vec x;
    for (int k = 0; k < kP; ++k) x[k] = std::clamp(d[k] + tau[k] * z[k], d[k] + tau[k] * lo[k], d[k] + tau[k] * hi[k]);
    return CalibrationParams{1 / x[0], x[1], x[2]};
  }
};

Scaled Scale(const std::vector<ObservationTerms>& terms, const std::vector<double>& observed,
             const std::vector<size_t>& use, const FitSettings& s) {
  const auto& b = s.bounds;
  Scaled p;
  const Vec xlo{1 / b.goodput_max, 0, 0};
  const Vec xhi{1 / b.goodput_min, b.per_hop_latency_max_s, b.per_message_overhead_max_s};
  Vec d{1 / s.defaults.goodput, s.defaults.per_hop_latency_s, s.defaults.per_message_overhead_s};
  for (int k = 0; k < kP; ++k) p.d[k] = std::clamp(d[k], xlo[k], xhi[k]);  // a default outside the bounds: its nearest
  p.tau = {s.prior.goodput * p.d[0] * p.d[0], s.prior.per_hop_latency_s, s.prior.per_message_overhead_s};
  for (int k = 0; k < kP; ++k) {
    p.lo[k] = (xlo[k] - p.d[k]) / p.tau[k];
    p.hi[k] = (xhi[k] - p.d[k]) / p.tau[k];
  }
  const CalibrationParams at_d{1 / p.d[0], p.d[1], p.d[2]};
  const double sigma2 = s.prior.noise * s.prior.noise;
  for (int k = 0; k < kP; ++k) p.Q[k][k] = sigma2;
  for (size_t i : use) {
    const auto& t = terms[i];
    const double y = observed[i], w = 1 - t.overlap;
    const double e = (t.Predict(at_d) - y) / y;
    const Vec g{w * t.bandwidth_s * p.tau[0] / y, w * t.hop_steps * p.tau[1] / y, w * t.steps * p.tau[2] / y};
    for (int a = 0; a < kP; ++a) {
      p.q[a] += e * g[a];
      for (int c = 0; c < kP; ++c) p.Q[a][c] += g[a] * g[c];
    }
    p.e.push_back(e);
    p.g.push_back(g);
  }
  return p;
}

double Dot(const Vec& a, const Vec& b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

}  // namespace

Result<FitResult> FitCalibration(const std::vector<ObservationTerms>& terms, const std::vector<double>& observed,
                                 const CalibrationParams& in_force, const FitSettings& settings) {
  if (terms.size() != observed.size()) return InvalidArgument("terms and observations differ in length");
  const auto& pr = settings.prior;
  if (!(pr.noise > 0 && pr.goodput > 0 && pr.per_hop_latency_s > 0 && pr.per_message_overhead_s > 0)) {
    return InvalidArgument("calibration prior: every width and the noise must be > 0");
  }
  std::vector<size_t> use;
  for (size_t i = 0; i < terms.size(); ++i) {
    if (terms[i].connected && CheckObservedIteration(observed[i], "") && terms[i].overlap < 1) use.push_back(i);
  }
  if (use.size() < 3) {
    return InvalidArgument(fmt::format("calibration needs at least 3 usable observations, got {}", use.size()));
  }
  const size_t n = use.size();
  const Scaled p = Scale(terms, observed, use, settings);
  const Vec z = BoxQp(p.Q, p.q, p.lo, p.hi);

  FitResult r;
  r.params = p.ToParams(z);
  r.observations = static_cast<int>(n);
  double sse_before = 0, sse_after = 0, rel_before = 0, rel_after = 0;
  std::vector<double> rel;
  for (size_t i : use) {
    const double y = observed[i];
    double pb = terms[i].Predict(in_force), pa = terms[i].Predict(r.params);
    sse_before += (pb - y) * (pb - y);
    sse_after += (pa - y) * (pa - y);
    rel_before += (pb - y) * (pb - y) / (y * y);
    rel_after += (pa - y) * (pa - y) / (y * y);
    rel.push_back(std::fabs(pa - y) / y);
  }
  r.rmse_before_s = Rmse(sse_before, n);
  r.rmse_s = Rmse(sse_after, n);
  r.median_rel_error = Quantile(rel, 0.5);
  r.p90_rel_error = Quantile(rel, 0.9);

  // Identifiability. The data's Fisher information in prior units is
  // F = sum g g' / s^2, with s the relative noise: the assumed floor, or the
  // residual scatter of this fit (3 parameters taken off the degrees of
  // freedom) when that is larger. The posterior covariance (Laplace) is
  // C = (F + I)^-1, I being the prior's precision. A direction the data
  // cannot see (F v = 0: two parameters that only ever appear in one fixed
  // combination, or a term every observation is insensitive to) keeps the
  // prior's variance, so C_kk stays near 1 for the parameters along it.
  r.noise = std::max(pr.noise, std::sqrt(rel_after / static_cast<double>(std::max<size_t>(1, n - 3))));
  Mat P{};
  for (int a = 0; a < kP; ++a) {
    for (int c = 0; c < kP; ++c) P[a][c] = (p.Q[a][c] - (a == c ? pr.noise * pr.noise : 0)) / (r.noise * r.noise);
    P[a][a] += 1;
  }
  const Mat C = Inverse3(P);
  const Vec defaults_x = p.d;
  ParamReport* reports[kP] = {&r.goodput, &r.per_hop_latency, &r.per_message_overhead};
  for (int k = 0; k < kP; ++k) {
    ParamReport& rep = *reports[k];
    rep.data_share = std::clamp(1 - C[k][k], 0.0, 1.0);
    rep.identified = rep.data_share >= 0.75;
    const double x = p.d[k] + p.tau[k] * z[k];
    rep.value = k == 0 ? 1 / x : x;
    rep.default_value = k == 0 ? 1 / defaults_x[k] : defaults_x[k];
    if (rep.identified) {
      const double half = 1.96 * std::sqrt(std::max(0.0, C[k][k])) * p.tau[k];
      const double xlo = p.d[k] + p.tau[k] * p.lo[k], xhi = p.d[k] + p.tau[k] * p.hi[k];
      const double lo = std::clamp(x - half, xlo, xhi), hi = std::clamp(x + half, xlo, xhi);
      rep.lo = k == 0 ? 1 / hi : lo;  // goodput = 1 / u: the interval turns round
      rep.hi = k == 0 ? 1 / lo : hi;
    }
  }

  // Leave-one-out, exactly: the fit without observation j is the box QP of
  // Q - g_j g_j' and q - e_j g_j (still positive definite), so n refits
  // cost O(n), not O(n^2). The parameters in force are not fitted: their
  // held-out error is their error on every observation.
  r.folds = static_cast<int>(n);
  double loo_sse = 0, loo_rel = 0;
  for (size_t j = 0; j < n; ++j) {
    Mat Q = p.Q;
    Vec q = p.q;
    const Vec& g = p.g[j];
    for (int a = 0; a < kP; ++a) {
      q[a] -= p.e[j] * g[a];
      for (int c = 0; c < kP; ++c) Q[a][c] -= g[a] * g[c];
    }
    const Vec zj = BoxQp(Q, q, p.lo, p.hi);
    const double rj = p.e[j] + Dot(g, zj);  // relative error of the held-out prediction
    const double y = observed[use[j]];
    loo_rel += rj * rj;
    loo_sse += rj * rj * y * y;
  }
  r.holdout_rmse_s = Rmse(loo_sse, n);
  r.holdout_rmse_before_s = r.rmse_before_s;
  r.holdout_rel_rms = Rmse(loo_rel, n);
  r.holdout_rel_rms_before = Rmse(rel_before, n);

  const double figures[] = {r.rmse_s,
                            r.rmse_before_s,
                            r.median_rel_error,
                            r.p90_rel_error,
                            r.holdout_rmse_s,
                            r.holdout_rmse_before_s,
                            r.holdout_rel_rms,
                            r.holdout_rel_rms_before,
                            r.params.goodput,
                            r.params.per_hop_latency_s,
                            r.params.per_message_overhead_s};
  if (!std::all_of(std::begin(figures), std::end(figures), [](double v) { return std::isfinite(v); })) {
    r.not_applicable = "the fit's error figures are undefined (not finite)";
  } else if (!(r.holdout_rel_rms < r.holdout_rel_rms_before)) {
    r.not_applicable = fmt::format(
        "the fit does not predict held-out observations better than the parameters in force: leave-one-out "
        "rms relative error {:.4g} % (fit) vs {:.4g} % (in force); rmse {:.6g} s vs {:.6g} s",
        100 * r.holdout_rel_rms, 100 * r.holdout_rel_rms_before, r.holdout_rmse_s, r.holdout_rmse_before_s);
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
