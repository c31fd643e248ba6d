// The engine's wire codec: JSON request documents into the engine's typed
// requests (resolved against one topology), and typed results into the JSON
// documents the API returns and stores. The server calls these at its edge.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "engine/view.h"
#include "model/error.h"
#include "model/topology.h"

namespace drainwise::engine {

// An assessment request: drain, any_of, modes, routing, recommend (ticket
// and requested_by are the server's, accepted and ignored here). Errors:
// kInvalidArgument naming the field; unknown elements name themselves.
Result<AssessRequest> ParseAssessRequest(const nlohmann::json& request, const model::Topology& topology);
// A plan request: switches (required, non-empty), modes.
Result<PlanRequest> ParsePlanRequest(const nlohmann::json& request, const model::Topology& topology);
// Named switches (`switches` non-empty), else every switch of `tier`.
// Errors: an unknown switch; a tier the fabric lacks (naming its tiers).
Result<CandidatesRequest> ResolveCandidates(const std::string& tier, const std::vector<std::string>& switches,
                                            const model::Topology& topology);
// A drainwise.calibration/v1 document applied to `base` (the configuration's
// options). Errors name the field and the rule.
Result<Calibration> ParseCalibration(const nlohmann::json& doc, const advisor::AdvisorOptions& base);

// The calibration in force (GET /v1/calibration's parameters and provenance).
nlohmann::json CalibrationJson(const Calibration& calibration);
// The calibration as a storable drainwise.calibration/v1 document.
nlohmann::json CalibrationDocument(const Calibration& calibration);

// Result documents; `view` is the one the result was computed on.
nlohmann::json AssessmentJson(const AssessOutcome& outcome, const View& view);
nlohmann::json CandidatesJson(const CandidatesOutcome& outcome, const View& view);
nlohmann::json PlanJson(const PlanOutcome& outcome, const View& view);
// {calibration, before, holdout, applicable, [not_applicable], skipped, applied}.
nlohmann::json FitJson(const FitOutcome& outcome, bool applied);

// The verdict of a result document ("" when it has none).
std::string VerdictOf(const nlohmann::json& document);
// A terminal table of a result document: kind "assessment", "plan" or "candidates".
std::string RenderText(std::string_view kind, const nlohmann::json& document);

}  // namespace drainwise::engine
