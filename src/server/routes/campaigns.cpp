// Campaigns: POST /v1/campaigns runs the scheduler (kSimulation) and stores
// the schedule like an assessment (kind "campaign", same idempotency, audit
// trail and ?format=text); GET /v1/campaigns/{id} reads one back.
#include <fmt/format.h>

#include "engine/campaign.h"
#include "server/api.h"
#include "server/routes/common.h"

namespace drainwise::server {

using nlohmann::json;

ApiResponse Api::PostCampaign(const RoutedRequest& rr) { return PostSimulation(rr, "campaign"); }

Result<std::pair<json, double>> Api::ComputeCampaign(const RoutedRequest& rr, const json& body,
                                                     const engine::View& view, const std::string& id) {
  auto call = Call(rr.request);
  auto typed = engine::ParseCampaignRequest(body, *view.snapshot->topology, call.now);
  if (!typed) return tl::unexpected(typed.error());
  auto outcome = engine_->Campaign(view, *typed, call);
  if (!outcome) return tl::unexpected(outcome.error());
  return std::make_pair(engine::CampaignJson(*outcome, view, id), outcome->total_ms);
}

ApiResponse Api::GetCampaign(const RoutedRequest& rr) {
  const std::string& id = rr.Param("id");
  auto rec = state_->store().GetAssessment(id);
  if (!rec) return ErrorResponse(rec.error(), rr.path);
  if (!*rec || (*rec)->kind != "campaign") {
    return ErrorResponse(Error{ErrorCode::kNotFound, fmt::format("unknown campaign '{}'", id)}, rr.path);
  }
  return GetAssessment(rr);
}

}  // namespace drainwise::server
