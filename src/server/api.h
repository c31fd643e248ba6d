// The REST API as a plain function of a request: routing, validation,
// translation to the State / Engine / Store, and problem+json errors. No
// sockets here, so every route is testable in-process; http_server.h puts it
// on the wire.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <spdlog/logger.h>

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

// Where a route runs (src/server/http_server.cpp admits by this):
//   kInline      on the I/O thread: only /healthz, /readyz, /metrics and the console's static files, which
//                touch neither the store, a simulation nor a large render;
//   kRead        on the worker pool, bulk-read queue: documents, listings, anything that touches the store;
//   kSimulation  on the worker pool, simulation queue: assessments, plans, candidates, calibration fits and
//                predictions; these get the configured deadline and are cancelled when the client goes away.
enum class Admission { kInline, kRead, kSimulation };
std::string_view AdmissionName(Admission admission);  // "inline" | "read" | "simulation"

class Api;
struct RoutedRequest;
namespace routing {
class KeysInFlight;
}

// One row of the route table (Api::Routes()): everything the server knows
// about a route. Auth, the metrics label, 404/405 and the admission class
// come from here; tests/server/openapi_test.cpp checks docs/openapi.yaml
// against it in both directions.
struct Route {
  using Handler = ApiResponse (Api::*)(const RoutedRequest&);

  std::string method;        // "GET", "PUT", "POST", "DELETE" (HEAD is served by GET rows)
  std::string pattern;       // "/v1/assessments/{id}"; a {name} segment matches one non-empty segment
  std::optional<Role> role;  // nullopt: open even with a tokens file
  Admission admission = Admission::kRead;
  Handler handler = nullptr;
  std::string summary;

  std::string name() const { return method + " " + pattern; }  // "GET /v1/assessments/{id}": metrics, logs
};

// A request after Api::Route(): the target decoded and normalised once and
// matched against the table once. Exactly one of `route` and `problem` is
// set when routing is done: `problem` is the ready answer for a target that
// breaks a rule (400), names no route (404) or a route without that method
// (405, with an Allow header).
struct RoutedRequest {
  ApiRequest request;                         // as received; the server may set request.stop after routing
  const Route* route = nullptr;               // the matched row, or nullptr
  std::string path;                           // percent-decoded, normalised: what the route matched
  std::map<std::string, std::string> params;  // {name} segments of the pattern, decoded
  std::map<std::string, std::string> query;   // decoded; repeated keys joined with commas
  Admission admission = Admission::kInline;   // of the route; kInline for an unmatched request
  std::optional<ApiResponse> problem;         // 400 / 404 / 405 when there is no route
  // Set by Api::Handle after authentication (COMMON.md): "<token name> (<role>)" when a bearer token
  // authenticated the request, else "anonymous (<peer address>)".
  std::string principal;

  // The route's name ("GET /v1/assessments/{id}"), or "unmatched"; the metrics label.
  std::string RouteName() const { return route ? route->name() : "unmatched"; }
  const std::string& Param(const std::string& name) const;  // "" when absent
  const std::string& Query(const std::string& name) const;  // "" when absent
};

// A hook's answer for a route with a text form: `json`, and `text` for
// ?format=text (empty when the route has none).
struct HookAnswer {
  nlohmann::json json;
  std::string text;
};

// Extension points the daemon plugs in (connectors, metrics): each returns
// JSON for its route, or nothing when the feature is not configured.
struct ApiHooks {
  std::function<nlohmann::json()> sources;          // GET /v1/sources
  std::function<bool(std::string*)> sources_ready;  // readyz: false + reason when a source is stale
  // readyz: false + reason while the store cannot write (the store prober's last result; must not block).
  std::function<bool(std::string*)> store_writable;
  // readyz with a store shared by several daemons (PostgreSQL): false + reason while the database is
  // unreachable or this daemon may miss the others' changes. The daemon stays ready (200) and says
  // "stale": reads answer from the last view, writes get 503 + Retry-After from the store itself.
  std::function<bool(std::string*)> store_fresh;
  // Several daemons on one store: called before an assessment or plan takes its view, to apply what
  // the other daemons committed before this request arrived (a drain recorded through another daemon
  // counts in this verdict). Must not throw; on a database error it returns and the view is served.
  std::function<void()> catch_up;
  std::function<std::string()> metrics;                                 // GET /metrics (text format)
  std::function<Result<nlohmann::json>(const ApiRequest&)> links;       // GET /v1/links
  std::function<Result<nlohmann::json>(const std::string&)> job_paths;  // GET /v1/jobs/{id}/paths
  // Link health (docs/link-health.md): GET /v1/links/health, GET /v1/jobs/at-risk, GET /v1/jobs/{id}/network.
  std::function<Result<HookAnswer>(const RoutedRequest&)> links_health;
  std::function<Result<HookAnswer>(const RoutedRequest&)> jobs_at_risk;
  std::function<Result<HookAnswer>(const RoutedRequest&)> job_network;
  // After each stored assessment or plan: its kind, verdict and duration.
  std::function<void(const std::string& kind, const std::string& verdict, double seconds)> on_result;
  // Background runs (POST /v1/simulations): start, progress and end lines. May be null.
  std::shared_ptr<spdlog::logger> background_log;
  // The configuration's "task" section: defaults of every task-level request.
  nlohmann::json task_defaults = nlohmann::json::object();
  // Packet-level runs: the program whose `packet-worker` command runs baseline and drained in two processes at
  // once (sim::PacketOptions::worker_program; the daemon: /proc/self/exe). Empty: one after another in this
  // process.
  std::string packet_worker_program;
};

class BackgroundRuns;

class Api {
 public:
  Api(State* state, Engine* engine, ApiHooks hooks = {});
  ~Api();

  // With a token table, every route whose row has a role needs a bearer
  // token of at least that role (401 without one, 403 with too weak a one).
  void RequireTokens(std::shared_ptr<const TokenTable> tokens) { tokens_ = std::move(tokens); }

  // Decodes and normalises the target and matches the table, once. Cheap
  // (no store, no simulation): call it on the I/O thread to learn the
  // admission class, then Handle() wherever that class runs.
  RoutedRequest Route(ApiRequest request) const;
  // Authenticates, then runs the route's handler (or answers routed.problem).
  // Never throws: a handler's exception becomes a 500 problem.
  ApiResponse Handle(RoutedRequest& routed);
  // Route + Handle, for tests and callers without an admission step.
  ApiResponse Handle(const ApiRequest& request);

  // The route table: one row per method and pattern.
  static const std::vector<server::Route>& Routes();

 private:
  // Sets routed.principal; the 401/403 answer when the route's role is not met.
  std::optional<ApiResponse> Authorize(RoutedRequest& routed) const;

  // Handlers, one per row of the table; grouped by file under src/server/routes/.
  ApiResponse Health(const RoutedRequest& rr);
  ApiResponse Ready(const RoutedRequest& rr);
  ApiResponse GetMetrics(const RoutedRequest& rr);
  ApiResponse GetConsole(const RoutedRequest& rr);
  ApiResponse GetOpenApi(const RoutedRequest& rr);
  ApiResponse GetSources(const RoutedRequest& rr);
  ApiResponse GetLinks(const RoutedRequest& rr);
  ApiResponse GetTopologyDrift(const RoutedRequest& rr);
  ApiResponse GetJobPaths(const RoutedRequest& rr);
  ApiResponse GetTopology(const RoutedRequest& rr);
  ApiResponse PutTopology(const RoutedRequest& rr);
  ApiResponse GetJobs(const RoutedRequest& rr);
  ApiResponse GetJob(const RoutedRequest& rr);
  ApiResponse PutJobs(const RoutedRequest& rr);
  ApiResponse GetSnapshots(const RoutedRequest& rr);
  ApiResponse GetPolicy(const RoutedRequest& rr);
  ApiResponse PutPolicy(const RoutedRequest& rr);
  ApiResponse PostAssessment(const RoutedRequest& rr);
  // POST /v1/assessments and /v1/plans: Idempotency-Key, engine, store.
  ApiResponse PostSimulation(const RoutedRequest& rr, std::string_view kind);
  ApiResponse GetAssessment(const RoutedRequest& rr);
  ApiResponse ListAssessments(const RoutedRequest& rr);
  ApiResponse DrainCandidates(const RoutedRequest& rr);
  ApiResponse PostPlan(const RoutedRequest& rr);
  ApiResponse PostDrain(const RoutedRequest& rr);
  ApiResponse ListDrains(const RoutedRequest& rr);
  ApiResponse DeleteDrain(const RoutedRequest& rr);
  ApiResponse PostObservations(const RoutedRequest& rr);
  ApiResponse ListObservations(const RoutedRequest& rr);
  ApiResponse GetCalibration(const RoutedRequest& rr);
  ApiResponse PostCalibration(const RoutedRequest& rr);
  ApiResponse PutCalibration(const RoutedRequest& rr);
  // Background simulations (src/server/routes/simulations.cpp, src/server/background.h).
  ApiResponse PostSimulationRun(const RoutedRequest& rr);
  ApiResponse ListSimulationRuns(const RoutedRequest& rr);
  ApiResponse GetSimulationRun(const RoutedRequest& rr);
  ApiResponse DeleteSimulationRun(const RoutedRequest& rr);
  // Link health (src/server/routes/link_health.cpp).
  ApiResponse GetLinksHealth(const RoutedRequest& rr);
  ApiResponse GetJobsAtRisk(const RoutedRequest& rr);
  ApiResponse GetJobNetwork(const RoutedRequest& rr);
  // Campaigns (src/server/routes/campaigns.cpp): stored like assessments, kind "campaign".
  ApiResponse PostCampaign(const RoutedRequest& rr);
  ApiResponse GetCampaign(const RoutedRequest& rr);
  // The campaign document for PostSimulation, and the engine's time in ms.
  Result<std::pair<nlohmann::json, double>> ComputeCampaign(const RoutedRequest& rr, const nlohmann::json& body,
                                                            const engine::View& view, const std::string& id);

  // The time and the cancellation of an engine call for `req`; the view
  // comes from state_->view(), read once per request.
  static engine::Call Call(const ApiRequest& req);

  State* state_;
  Engine* engine_;
  ApiHooks hooks_;
  std::shared_ptr<const TokenTable> tokens_;
  std::atomic<uint64_t> sequence_{0};
  std::unique_ptr<routing::KeysInFlight> keys_in_flight_;  // Idempotency-Keys whose first request runs
  std::unique_ptr<BackgroundRuns> background_;             // POST /v1/simulations; cancelled and joined first
};

// Helpers shared with the hooks' implementations.
ApiResponse JsonResponse(int status, const nlohmann::json& body);
ApiResponse ErrorResponse(const Error& error, std::string_view instance = {});
ApiResponse TextResponse(int status, std::string text);
bool WantsText(const ApiRequest& request, const std::map<std::string, std::string>& query);
std::map<std::string, std::string> ParseQuery(std::string_view query);

}  // namespace drainwise::server
