// The REST API as a plain function of a request: routing, validation,
// translation to the State / Engine / Store, and problem+json errors. No
// sockets here, so every route is testable in-process; http_server.h puts it
// on the wire.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/auth.h"
#include "server/engine.h"
#include "server/state.h"

namespace drainwise::server {

struct ApiRequest {
  std::string method;  // "GET", "PUT", ...
  std::string target;  // path and query, as received
  std::string body;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string peer;
  std::stop_token stop;  // fires when the client goes away or the deadline passes

  std::string Header(const std::string& name) const;
};

struct ApiResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

struct Route {
  std::string method;
  std::string pattern;  // "/v1/assessments/{id}"
  bool slow = false;    // runs on the worker pool (simulations)
  std::string summary;
};

// Extension points the daemon plugs in (connectors, metrics): each returns
// JSON for its route, or nothing when the feature is not configured.
struct ApiHooks {
  std::function<nlohmann::json()> sources;            // GET /v1/sources
  std::function<bool(std::string*)> sources_ready;    // readyz: false + reason when a source is stale
  std::function<std::string()> metrics;               // GET /metrics (text format)
  std::function<Result<nlohmann::json>(const ApiRequest&)> links;       // GET /v1/links
  std::function<Result<nlohmann::json>(const std::string&)> job_paths;  // GET /v1/jobs/{id}/paths
  // After each stored assessment or plan: its kind, verdict and duration.
  std::function<void(const std::string& kind, const std::string& verdict, double seconds)> on_result;
};

class Api {
 public:
  Api(State* state, Engine* engine, ApiHooks hooks = {});

  // With a token table, every route but /healthz and /readyz needs a bearer
  // token of a sufficient role (401 without one, 403 with too weak a one).
  void RequireTokens(std::shared_ptr<const TokenTable> tokens) { tokens_ = std::move(tokens); }

  ApiResponse Handle(const ApiRequest& request);

  // Whether `request` should run on the worker pool rather than the I/O thread.
  bool IsSlow(const ApiRequest& request) const;
  // The route a request matched ("GET /v1/assessments/{id}"), for metrics and logs.
  std::string RouteName(const ApiRequest& request) const;
  static const std::vector<Route>& Routes();

 private:
  using Params = std::map<std::string, std::string>;
  using Query = std::map<std::string, std::string>;
  ApiResponse Dispatch(const ApiRequest& req, const std::string& path, const Query& query);

  ApiResponse Health();
  ApiResponse Ready();
  ApiResponse GetTopology();
  ApiResponse PutTopology(const ApiRequest& req);
  ApiResponse GetJobs(const ApiRequest& req, const Query& query);
  ApiResponse GetJob(const std::string& id);
  ApiResponse PutJobs(const ApiRequest& req);
  ApiResponse GetSnapshots(const ApiRequest& req, const Query& query);
  ApiResponse PostAssessment(const ApiRequest& req, const Query& query);
  ApiResponse GetAssessment(const ApiRequest& req, const std::string& id, const Query& query);
  ApiResponse ListAssessments(const ApiRequest& req, const Query& query);
  ApiResponse DrainCandidates(const ApiRequest& req, const Query& query);
  ApiResponse PostPlan(const ApiRequest& req, const Query& query);
  ApiResponse PostDrain(const ApiRequest& req);
  ApiResponse ListDrains(const ApiRequest& req, const Query& query);
  ApiResponse DeleteDrain(const std::string& id);
  ApiResponse GetPolicy();
  ApiResponse PutPolicy(const ApiRequest& req);
  ApiResponse PostObservations(const ApiRequest& req);
  ApiResponse ListObservations(const Query& query);
  ApiResponse GetCalibration();
  ApiResponse PostCalibration(const ApiRequest& req);
  ApiResponse PutCalibration(const ApiRequest& req);

  EngineContext Context(const ApiRequest& req, model::SnapshotPtr snapshot) const;

  State* state_;
  Engine* engine_;
  ApiHooks hooks_;
  std::shared_ptr<const TokenTable> tokens_;
  std::atomic<uint64_t> sequence_{0};
};

// Helpers shared with the hooks' implementations.
ApiResponse JsonResponse(int status, const nlohmann::json& body);
ApiResponse ErrorResponse(const Error& error, std::string_view instance = {});
ApiResponse TextResponse(int status, std::string text);
bool WantsText(const ApiRequest& request, const std::map<std::string, std::string>& query);
std::map<std::string, std::string> ParseQuery(std::string_view query);

}  // namespace drainwise::server
