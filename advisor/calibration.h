// Closed-loop calibration: observed iteration times against the flow-level
// model's predictions, and a bounded least-squares fit of the three
// transport parameters the model cannot know a priori (docs/validation.md).
//
// The model's iteration time of a job under a drain is
//   iteration = compute + (1 - overlap) * (B / goodput + h * H + o * S)
// where B is the job's fluid bandwidth time at goodput 1, H = sum over its
// collectives of steps x path hops, S = sum of steps (sim/flow_sim.h), h the
// per-hop latency and o the per-message overhead. B, H and S come from the
// simulator (two probe runs per distinct drain); the fit then needs no further
// simulation: in x = (1 / goodput, h, o) the model is linear, so the
// regularised, bounded fit is a strictly convex three-variable quadratic
// program, solved exactly (docs/calibration.md).
//
// Pure: no I/O; safe to call concurrently.
#pragma once

#include <cmath>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "model/drain.h"
#include "model/error.h"
#include "model/snapshot.h"
#include "sim/flow_sim.h"

namespace drainwise::advisor {

// Bounds on an observed iteration time (docs/validation.md): a finite number
// of seconds in (0, kMaxIterationSeconds]. A training iteration longer than
// 11.6 days is a unit error, not a measurement.
inline constexpr double kMaxIterationSeconds = 1e6;

// Checks one observed iteration time against those bounds.
// Errors: kInvalidArgument "<field>: must be a finite number of seconds in
// (0, 1e+06], got <value>".
Status CheckObservedIteration(double seconds, std::string_view field);

struct Observation {
  model::JobId job;
  model::Drain drain;      // the drains in effect when it was measured (empty = none)
  double iteration_s = 0;  // observed
};

struct CalibrationParams {
  double goodput = 0.95;
  double per_hop_latency_s = 1e-6;
  double per_message_overhead_s = 5e-6;
};

struct CalibrationBounds {
  double goodput_min = 0.5, goodput_max = 1.0;
  double per_hop_latency_max_s = 50e-6;
  double per_message_overhead_max_s = 500e-6;
};

// The model terms of one observation (see the formula above).
struct ObservationTerms {
  double compute_s = 0;
  double overlap = 0;
  double bandwidth_s = 0;  // B: at goodput 1
  double hop_steps = 0;    // H
  double steps = 0;        // S
  bool connected = true;

  double Predict(const CalibrationParams& p) const {
    return compute_s + (1 - overlap) * (bandwidth_s / p.goodput + p.per_hop_latency_s * hop_steps +
                                        p.per_message_overhead_s * steps);
  }
};

// Runs the flow-level model (options' routing, background) to get the terms
// of every observation. Errors: kInvalidArgument (bad job id), kCancelled.
Result<std::vector<ObservationTerms>> ComputeTerms(const model::SnapshotPtr& snapshot,
                                                   const std::vector<Observation>& observations,
                                                   const sim::FlowOptions& options, std::stop_token stop = {});

// Prior widths (one standard deviation about the defaults) and the assumed
// relative measurement noise: together they set the penalty that pulls the
// fit towards the defaults (docs/calibration.md). The widths are of the
// order of the defaults' own uncertainty: packet-level baselines ran 5-6 %
// slower than fluid (goodput), fabrics span 0.3-2 us per hop and NCCL's
// per-step overhead a few microseconds.
struct CalibrationPrior {
  double goodput = 0.05;
  double per_hop_latency_s = 1e-6;
  double per_message_overhead_s = 5e-6;
  // Relative noise of one observed iteration time (1 % = step-to-step
  // jitter of a training job; an assumption, not a measurement). It weighs
  // the data against the prior in the fit, and is the floor of the noise
  // used for the intervals.
  double noise = 0.01;
};

struct FitSettings {
  CalibrationParams defaults;  // the centre of the penalty (the configuration's parameters)
  CalibrationBounds bounds;
  CalibrationPrior prior;
};

// What the data says about one parameter. In prior units (z = (x - default)
// / prior width, x = 1 / goodput for goodput) the posterior covariance is
// C = (F + I)^-1 with F the data's Fisher information (docs/calibration.md);
// data_share = 1 - C_kk is the share of the parameter's posterior precision
// that comes from the observations. Identified iff data_share >= 0.75: the
// observations at least quarter the prior's variance (halve its width).
struct ParamReport {
  double value = 0;  // fitted, in the parameter's unit (goodput: fraction; latencies: seconds)
  double default_value = 0;
  double data_share = 0;  // in [0, 1]
  bool identified = false;
  // 95 % interval (normal approximation, clipped to the bounds); NaN when
  // not identified.
  double lo = NAN, hi = NAN;
};

struct FitResult {
  CalibrationParams params;
  int observations = 0;      // used (connected, iteration time within bounds)
  double rmse_s = 0;         // of iteration times, fitted
  double rmse_before_s = 0;  // with the parameters in force
  double median_rel_error = 0;
  double p90_rel_error = 0;
  // Identifiability, per parameter, in the order goodput, per-hop latency,
  // per-message overhead.
  ParamReport goodput, per_hop_latency, per_message_overhead;
  double noise = 0;  // relative noise used for the intervals: max(prior.noise, residual scatter)
  // Leave-one-out: each observation predicted by the fit made without it
  // (exact refit, not an approximation), and by the parameters in force
  // (which were not fitted to it, so their held-out error is their error).
  // rel: root mean square of (predicted - observed) / observed; the fit's
  // objective, and the figure that decides.
  int folds = 0;  // = observations (leave-one-out)
  double holdout_rmse_s = 0;
  double holdout_rmse_before_s = 0;
  double holdout_rel_rms = 0;
  double holdout_rel_rms_before = 0;
  // True only when every error figure above is finite and the fit predicts
  // the held-out observations strictly better (holdout_rel_rms <
  // holdout_rel_rms_before); else `not_applicable` says why, naming both
  // errors. Callers apply the fit only when true.
  bool applicable = false;
  std::string not_applicable;
};

// Regularised, bounded least squares of relative errors of iteration times
// over all observations together, the identifiability of each parameter,
// and the leave-one-out test that decides whether the result may replace
// `in_force`. Observations outside CheckObservedIteration's bounds are not
// used. Errors: kInvalidArgument with fewer than 3 usable observations.
Result<FitResult> FitCalibration(const std::vector<ObservationTerms>& terms, const std::vector<double>& observed,
                                 const CalibrationParams& in_force, const FitSettings& settings = {});

// Prediction error of slowdowns: for each (job, drain) observed both with
// and without that drain, |predicted slowdown - observed slowdown| in
// percentage points; median and p90.
struct SlowdownError {
  int pairs = 0;
  double median_abs_pct = 0;
  double p90_abs_pct = 0;
};
SlowdownError SlowdownErrors(const std::vector<double>& predicted_slowdown_pct,
                             const std::vector<double>& observed_slowdown_pct);

// q-quantile (0..1) of `values` by linear interpolation; 0 when empty.
double Quantile(std::vector<double> values, double q);

}  // namespace drainwise::advisor
