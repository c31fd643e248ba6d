// JSON documents and terminal tables of the advisor's results: assessments,
// drain plans and drain candidates. Used by the REST API (through the app's
// engine) and by the CLI, so both say the same thing.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "advisor/advisor.h"
#include "model/snapshot.h"

namespace drainwise::report {

struct AssessmentJsonOptions {
  int max_jobs = 200;  // affected jobs listed, worst first (the counts are always complete)
  bool flow = false;
};

nlohmann::json AssessmentToJson(const advisor::Assessment& assessment, const model::Snapshot& snapshot,
                                const AssessmentJsonOptions& options);
nlohmann::json RecommendationToJson(const advisor::Recommendation& r, const model::Snapshot& snapshot);
nlohmann::json PredictionToJson(const advisor::Prediction& p);
nlohmann::json PlanToJson(const advisor::Plan& plan, const model::Snapshot& snapshot);

// Aligned tables from the JSON documents above (so stored results render the
// same way as fresh ones).
std::string AssessmentText(const nlohmann::json& assessment);
std::string PlanText(const nlohmann::json& plan);
std::string CandidatesText(const nlohmann::json& candidates);  // of report::DrainCandidatesToJson

}  // namespace drainwise::report
