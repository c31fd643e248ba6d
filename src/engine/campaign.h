// POST /v1/campaigns at the engine's edge: the request document into an
// advisor::CampaignRequest resolved on one topology, and the schedule into
// the document the API returns and stores (with each batch's Slurm
// maintenance reservation) and its terminal text.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "advisor/campaign.h"
#include "engine/view.h"
#include "model/error.h"
#include "model/topology.h"

namespace drainwise::engine {

using CampaignRequest = advisor::CampaignRequest;

struct CampaignOutcome {
  advisor::Campaign campaign;
  CampaignRequest request;
  double delay_gpu_hours_per_hour = 0;  // the price of delay in force
  double total_ms = 0;
};

// {"items": [{"switches", "links", "duration_s", "earliest", "deadline"}],
//  "window": {"start", "end"}, "constraints": {"max_concurrent", "blackouts":
//  [{"start", "end"}]}, "objective": "gpu_hours" | "finish", "modes"}; ticket
// and requested_by are accepted and ignored. Times RFC 3339. Without a window:
// `now` to now + 7 days. Errors: kInvalidArgument naming the field.
Result<CampaignRequest> ParseCampaignRequest(const nlohmann::json& body, const model::Topology& topology, int64_t now);

// A {"start", "end"} object of RFC 3339 times at `path`; end after start.
Result<advisor::TimeWindow> ParseTimeWindow(const nlohmann::json& doc, const std::string& path);

// The stored document. `name` prefixes the Slurm reservation names
// ("<name>-b<k>"): the record id.
nlohmann::json CampaignJson(const CampaignOutcome& outcome, const View& view, const std::string& name);
std::string CampaignText(const nlohmann::json& document);

}  // namespace drainwise::engine
