// Comparing outcomes: what the advisor ranks recommendations, alternatives and
// plan batches by. Internal to advisor/ (not part of its public header).
#pragma once

#include <chrono>
#include <set>
#include <string>

#include "advisor/advisor.h"

namespace drainwise::advisor::internal {

double MsSince(std::chrono::steady_clock::time_point start);
// allow 0, warn 1, deny 2.
int Severity(policies::Decision d);
// Same job-level measures (connectivity, path and bandwidth fractions, paths left).
bool SameJobMeasures(const sim::JobImpact& a, const sim::JobImpact& b);
Prediction Predict(const Scenario& s);
// Lexicographic "better outcome" order: severity, then disconnected jobs,
// then worst slowdown, then reasons, then affected jobs.
bool BetterPrediction(const Prediction& a, const Prediction& b);
// Ids of the jobs that break a rule of at least warn level.
std::set<std::string> ViolatorSet(const policies::Verdict& v);
// A fabric (not job) rule fires: moving jobs cannot fix it.
bool HasFabricReason(const policies::Verdict& v);

}  // namespace drainwise::advisor::internal
