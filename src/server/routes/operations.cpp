// Probes, metrics, the console, the OpenAPI document and the connector
// hooks: routes that own no data of their own.
#include <fmt/format.h>

#include "server/api.h"
#include "server/console.h"

namespace drainwise::server {

using nlohmann::json;

// docs/openapi.yaml as JSON, embedded at build time by docs/openapi.cmake.
std::string_view OpenApiDocument();

namespace {
ApiResponse NotConfigured(std::string_view what, std::string_view path) {
  return ErrorResponse(Error{ErrorCode::kNotFound, fmt::format("{} is not configured", what)}, path);
}
}  // namespace

ApiResponse Api::Health(const RoutedRequest&) { return JsonResponse(200, {{"status", "ok"}}); }

ApiResponse Api::Ready(const RoutedRequest& rr) {
  auto snap = state_->snapshot();
  if (!snap) return ErrorResponse(Error{ErrorCode::kUnavailable, "no snapshot loaded yet"}, rr.path);
  std::string why;
  if (hooks_.store_writable && !hooks_.store_writable(&why)) {
    return ErrorResponse(Error{ErrorCode::kUnavailable, "the store cannot write: " + why}, rr.path);
  }
  json body = {{"status", "ready"}, {"topology_version", snap->topology_version}, {"jobs_version", snap->jobs_version}};
  if (hooks_.store_fresh && !hooks_.store_fresh(&why)) {
    body["status"] = "stale";
    body["detail"] = why;
    return JsonResponse(200, body);
  }
  if (hooks_.sources_ready && !hooks_.sources_ready(&why)) {
    body["status"] = "degraded";
    body["detail"] = why;
    // Stale sources still leave a usable (last good) snapshot: the daemon
    // keeps answering, and says so.
  }
  return JsonResponse(200, body);
}

ApiResponse Api::GetMetrics(const RoutedRequest& rr) {
  if (!hooks_.metrics) return ErrorResponse(Error{ErrorCode::kNotFound, "metrics are not enabled"}, rr.path);
  ApiResponse r;
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  r.body = hooks_.metrics();
  return r;
}

ApiResponse Api::GetConsole(const RoutedRequest& rr) { return ConsoleResponse(rr.path); }

ApiResponse Api::GetOpenApi(const RoutedRequest&) {
  ApiResponse r;
  r.body = std::string(OpenApiDocument());
  return r;
}

ApiResponse Api::GetSources(const RoutedRequest&) {
  return JsonResponse(200, hooks_.sources ? hooks_.sources() : json{{"sources", json::array()}});
}

ApiResponse Api::GetLinks(const RoutedRequest& rr) {
  if (!hooks_.links) return NotConfigured("link telemetry", rr.path);
  auto r = hooks_.links(rr.request);
  return r ? JsonResponse(200, *r) : ErrorResponse(r.error(), rr.path);
}

ApiResponse Api::GetTopologyDrift(const RoutedRequest& rr) {
  // From the serving view, so the drift always belongs to the topology
  // version GET /v1/topology serves (the connectors may be a merge ahead).
  auto view = state_->view();
  const engine::TopologyDrift* drift = view->CurrentDrift();
  if (!drift) {
    // One source (or none), or a topology PUT over the API: nothing to compare, which is not an error.
    json empty = {{"items", json::array()},
                  {"counts", json::object()},
                  {"sources", json::object()},
                  {"note", "no connector topology is merged: nothing to compare"}};
    if (WantsText(rr.request, rr.query)) return TextResponse(200, "no drift: no connector topology is merged\n");
    return JsonResponse(200, empty);
  }
  if (WantsText(rr.request, rr.query)) return TextResponse(200, drift->text);
  auto r = JsonResponse(200, drift->document);
  r.headers.emplace_back("Drainwise-Topology-Version", std::to_string(drift->topology_version));
  return r;
}

ApiResponse Api::GetJobPaths(const RoutedRequest& rr) {
  if (!hooks_.job_paths) return NotConfigured("path inspection", rr.path);
  auto r = hooks_.job_paths(rr.Param("id"));
  return r ? JsonResponse(200, *r) : ErrorResponse(r.error(), rr.path);
}

}  // namespace drainwise::server
