// Link health routes: the daemon's LinkHealthService answers them
// (src/app/link_health_hooks.h); without it they are 404 "not configured".
#include <fmt/format.h>

#include "server/api.h"

namespace drainwise::server {

namespace {
ApiResponse Answer(const std::function<Result<HookAnswer>(const RoutedRequest&)>& hook, const RoutedRequest& rr) {
  if (!hook) {
    return ErrorResponse(
        Error{ErrorCode::kNotFound, "link health is not configured (the configuration has no link_health section)"},
        rr.path);
  }
  auto r = hook(rr);
  if (!r) return ErrorResponse(r.error(), rr.path);
  if (WantsText(rr.request, rr.query) && !r->text.empty()) return TextResponse(200, std::move(r->text));
  return JsonResponse(200, r->json);
}
}  // namespace

ApiResponse Api::GetLinksHealth(const RoutedRequest& rr) { return Answer(hooks_.links_health, rr); }
ApiResponse Api::GetJobsAtRisk(const RoutedRequest& rr) { return Answer(hooks_.jobs_at_risk, rr); }
ApiResponse Api::GetJobNetwork(const RoutedRequest& rr) { return Answer(hooks_.job_network, rr); }

}  // namespace drainwise::server
