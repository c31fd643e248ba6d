#include "advisor/prediction.h"

#include <algorithm>
#include <cmath>

namespace drainwise::advisor {

namespace internal {

using policies::Decision;

double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

int Severity(Decision d) { return d == Decision::kDeny ? 2 : d == Decision::kWarn ? 1 : 0; }

bool SameJobMeasures(const sim::JobImpact& a, const sim::JobImpact& b) {
  auto close = [](double x, double y) { return std::fabs(x - y) <= 1e-9; };
  return a.connected == b.connected && close(a.path_fraction, b.path_fraction) &&
         close(a.bandwidth_fraction, b.bandwidth_fraction) && a.min_paths_after == b.min_paths_after;
}

Prediction Predict(const Scenario& s) {
  Prediction p;
  p.decision = s.verdict.decision;
  p.reasons = static_cast<int>(s.verdict.reasons.size());
  p.jobs_affected = s.jobs_affected;
  p.jobs_disconnected = s.jobs_disconnected;
  p.max_slowdown_pct = s.max_slowdown_pct;
  return p;
}

// Lexicographic "better outcome" order for predictions.
bool BetterPrediction(const Prediction& a, const Prediction& b) {
  if (Severity(a.decision) != Severity(b.decision)) return Severity(a.decision) < Severity(b.decision);
  if (a.jobs_disconnected != b.jobs_disconnected) return a.jobs_disconnected < b.jobs_disconnected;
  if (std::fabs(a.max_slowdown_pct - b.max_slowdown_pct) > 1e-9) return a.max_slowdown_pct < b.max_slowdown_pct;
  if (a.reasons != b.reasons) return a.reasons < b.reasons;
  return a.jobs_affected < b.jobs_affected;
}

std::set<std::string> ViolatorSet(const policies::Verdict& v) {
  auto ids = policies::JobsViolating(v, policies::Action::kWarn);
  return {ids.begin(), ids.end()};
}

bool HasFabricReason(const policies::Verdict& v) {
  return std::any_of(v.reasons.begin(), v.reasons.end(), [](const policies::Reason& r) { return !r.job_rule; });
}

}  // namespace internal

std::string_view RecommendationKindName(RecommendationKind kind) {
  switch (kind) {
    case RecommendationKind::kMigrate:
      return "migrate";
    case RecommendationKind::kWait:
      return "wait";
    case RecommendationKind::kAlternative:
      return "alternative";
  }
  return "migrate";
}

}  // namespace drainwise::advisor
