#include "server/api.h"

#include <chrono>
#include <cmath>
#include <random>

#include <fmt/format.h>

#include "advisor/calibration.h"
#include "codec/json_reader.h"
#include "codec/native.h"
#include "server/console.h"
#include "report/table.h"
#include "server/problem.h"

namespace drainwise::server {

using nlohmann::json;

// docs/openapi.yaml as JSON, embedded at build time by docs/openapi.cmake.
std::string_view OpenApiDocument();

namespace {

int64_t NowSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::vector<std::string_view> Split(std::string_view path) {
  std::vector<std::string_view> out;
  size_t start = 1;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    out.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

bool Match(std::string_view pattern, std::string_view path, std::map<std::string, std::string>* params) {
  auto ps = Split(pattern);
  auto xs = Split(path);
  if (ps.size() != xs.size()) return false;
  for (size_t i = 0; i < ps.size(); ++i) {
    if (ps[i].size() > 2 && ps[i].front() == '{' && ps[i].back() == '}') {
      if (xs[i].empty()) return false;
      if (params) (*params)[std::string(ps[i].substr(1, ps[i].size() - 2))] = std::string(xs[i]);
    } else if (ps[i] != xs[i]) {
      return false;
    }
  }
  return true;
}

std::string PercentDecode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out.push_back(static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16)));
      i += 2;
    } else if (s[i] == '+') {
      out.push_back(' ');
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// A sortable, unique id: time, then a random suffix ("a-20261130T131500-3f9c1a").
std::string NewId(std::string_view prefix, std::atomic<uint64_t>& seq) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  auto now = NowSeconds();
  std::string t = codec::FormatRfc3339(now);
  std::string compact;
  for (char c : t) {
    if (c != '-' && c != ':' && c != 'Z') compact.push_back(c);
  }
  return fmt::format("{}-{}-{:04x}{:04x}", prefix, compact, seq.fetch_add(1) & 0xffff, rng() & 0xffff);
}

Result<json> ParseBody(const ApiRequest& req) {
  if (req.body.empty()) return InvalidArgument("request body: expected a JSON document, got nothing");
  auto j = codec::ParseJsonText(req.body);
  if (!j) return tl::unexpected(j.error().Wrap("request body"));
  return j;
}


}  // namespace

std::string ApiRequest::Header(const std::string& name) const {
  auto it = headers.find(name);
  return it == headers.end() ? std::string() : it->second;
}

ApiResponse JsonResponse(int status, const json& body) {
  ApiResponse r;
  r.status = status;
  // `replace`: a string from the request (a path, an id) may be invalid
  // UTF-8; throwing here would escape to the I/O thread and end the daemon.
  r.body = body.dump(2, ' ', false, json::error_handler_t::replace);
  r.body.push_back('\n');
  return r;
}

ApiResponse ErrorResponse(const Error& error, std::string_view instance) {
  ApiResponse r;
  r.status = HttpStatusFor(error.code);
  r.content_type = std::string(kProblemContentType);
  r.body = ProblemJson(error, instance).dump(2, ' ', false, json::error_handler_t::replace) + "\n";
  if (error.code == ErrorCode::kUnavailable) r.headers.emplace_back("Retry-After", "1");
  return r;
}

ApiResponse TextResponse(int status, std::string text) {
  ApiResponse r;
  r.status = status;
  r.content_type = "text/plain; charset=utf-8";
  r.body = std::move(text);
  if (r.body.empty() || r.body.back() != '\n') r.body.push_back('\n');
  return r;
}

bool WantsText(const ApiRequest& request, const std::map<std::string, std::string>& query) {
  auto f = query.find("format");
  if (f != query.end()) return f->second == "text" || f->second == "table";
  std::string accept = request.Header("accept");
  return accept.find("text/plain") != std::string::npos && accept.find("application/json") == std::string::npos;
}

std::map<std::string, std::string> ParseQuery(std::string_view query) {
  std::map<std::string, std::string> out;
  size_t start = 0;
  while (start < query.size()) {
    size_t end = query.find('&', start);
    if (end == std::string_view::npos) end = query.size();
    auto kv = query.substr(start, end - start);
    size_t eq = kv.find('=');
    std::string key = PercentDecode(kv.substr(0, eq));
    std::string value = eq == std::string_view::npos ? "" : PercentDecode(kv.substr(eq + 1));
    if (!key.empty()) {
      auto& slot = out[key];
      slot = slot.empty() ? value : slot + "," + value;  // repeated keys join with commas
    }
    start = end + 1;
  }
  return out;
}

const std::vector<Route>& Api::Routes() {
  static const std::vector<Route> routes = {
      {"GET", "/healthz", false, "Liveness"},
      {"GET", "/readyz", false, "Readiness: a snapshot is loaded and no source is stale"},
      {"GET", "/metrics", false, "Prometheus metrics"},
      {"GET", "/", false, "The operator console (a web page over this API)"},
      {"GET", "/ui/{file}", false, "The operator console's scripts and styles"},
      {"GET", "/v1/openapi.json", false, "The OpenAPI 3.1 description of this API (docs/openapi.yaml)"},
      // Large documents (12 MB at 32k GPUs) render on the worker pool so
      // health checks never wait behind them.
      {"GET", "/v1/topology", true, "The current topology document"},
      {"PUT", "/v1/topology", true, "Replace the topology (a new version)"},
      {"GET", "/v1/jobs", true, "The current jobs document"},
      {"PUT", "/v1/jobs", true, "Replace the jobs (a new version)"},
      {"GET", "/v1/jobs/{id}", false, "One job"},
      {"GET", "/v1/jobs/{id}/paths", true, "The links a job's traffic crosses, with load and health"},
      {"GET", "/v1/snapshots", false, "Stored versions and the snapshot in use"},
      {"POST", "/v1/assessments", true, "Assess a proposed drain"},
      {"GET", "/v1/assessments", false, "Stored assessments (filter: ticket)"},
      {"GET", "/v1/assessments/{id}", false, "One stored assessment"},
      {"GET", "/v1/drain-candidates", true, "Every single-switch drain of a tier, safest first"},
      {"POST", "/v1/plans", true, "Order a maintenance list into safe batches"},
      {"GET", "/v1/drains", false, "Drains in progress (all=true for history)"},
      {"POST", "/v1/drains", false, "Record a drain as started"},
      {"DELETE", "/v1/drains/{id}", false, "End a drain"},
      {"GET", "/v1/policy", false, "The gating policy in force"},
      {"PUT", "/v1/policy", false, "Replace the gating policy"},
      {"GET", "/v1/sources", false, "Connectors and their freshness"},
      {"GET", "/v1/links", true, "Links with telemetry (degraded=true for the unhealthy)"},
      {"POST", "/v1/observations", true, "Observed iteration times, stored with the model's prediction"},
      {"GET", "/v1/observations", false, "Stored observations (filter: job)"},
      {"GET", "/v1/calibration", false, "The calibration in force and the prediction error against observations"},
      {"POST", "/v1/calibration", true, "Fit the transport parameters to the observations (apply=true to use them)"},
      {"PUT", "/v1/calibration", false, "Replace the calibration (drainwise.calibration/v1)"},
  };
  return routes;
}

Api::Api(State* state, Engine* engine, ApiHooks hooks)
    : state_(state), engine_(engine), hooks_(std::move(hooks)) {}

namespace {
const Route* FindRoute(const std::string& method, std::string_view path, std::map<std::string, std::string>* params,
                       bool* path_known) {
  *path_known = false;
  for (const Route& r : Api::Routes()) {
    if (!Match(r.pattern, path, nullptr)) continue;
    *path_known = true;
    if (r.method == method || (method == "HEAD" && r.method == "GET")) {
      Match(r.pattern, path, params);
      return &r;
    }
  }
  return nullptr;
}
std::string_view PathOf(const std::string& target) {
  std::string_view t(target);
  return t.substr(0, t.find('?'));
}
}  // namespace

bool Api::IsSlow(const ApiRequest& req) const {
  bool known;
  const Route* r = FindRoute(req.method, PathOf(req.target), nullptr, &known);
  return r && r->slow;
}

std::string Api::RouteName(const ApiRequest& req) const {
  bool known;
  const Route* r = FindRoute(req.method, PathOf(req.target), nullptr, &known);
  return r ? r->method + " " + r->pattern : "unmatched";
}

ApiResponse Api::Handle(const ApiRequest& req) {
  std::string_view target(req.target);
  size_t q = target.find('?');
  std::string path = PercentDecode(target.substr(0, q));
  auto query = ParseQuery(q == std::string_view::npos ? std::string_view() : target.substr(q + 1));
  if (tokens_) {
    if (auto role = RequiredRole(req.method, path)) {
      std::string auth = req.Header("authorization");
      std::optional<Principal> who;
      if (auth.rfind("Bearer ", 0) == 0) who = tokens_->Find(std::string_view(auth).substr(7));
      if (!who) {
        auto r = ErrorResponse(Error{ErrorCode::kUnauthenticated, "a valid bearer token is required"}, path);
        r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"drainwise\"");
        return r;
      }
      if (static_cast<int>(who->role) < static_cast<int>(*role)) {
        return ErrorResponse(Error{ErrorCode::kPermissionDenied,
                                   fmt::format("{} {} needs the {} role; token '{}' is {}", req.method, path,
                                               RoleName(*role), who->name, RoleName(who->role))},
                             path);
      }
    }
  }
  try {
    return Dispatch(req, path, query);
  } catch (const std::exception& e) {
    // A bug must not take the daemon down; report it and keep serving.
    return ErrorResponse(Error{ErrorCode::kInternal, std::string("unexpected: ") + e.what()}, path);
  }
}

ApiResponse Api::Dispatch(const ApiRequest& req, const std::string& path, const Query& query) {
  Params p;
  bool known = false;
  const Route* route = FindRoute(req.method, path, &p, &known);
  if (!route) {
    if (known) {
      auto r = ErrorResponse(Error{ErrorCode::kInvalidArgument, fmt::format("{} is not allowed on {}", req.method, path)},
                             path);
      r.status = 405;
      return r;
    }
    return ErrorResponse(Error{ErrorCode::kNotFound, fmt::format("no route {}", path)}, path);
  }
  const std::string key = route->method + " " + route->pattern;
  if (key == "GET /healthz") return Health();
  if (key == "GET /readyz") return Ready();
  if (key == "GET /" || key == "GET /ui/{file}") return ConsoleResponse(path);
  if (key == "GET /metrics") {
    if (!hooks_.metrics) return ErrorResponse(Error{ErrorCode::kNotFound, "metrics are not enabled"}, path);
    ApiResponse r;
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = hooks_.metrics();
    return r;
  }
  if (key == "GET /v1/openapi.json") {
    ApiResponse r;
    r.body = std::string(OpenApiDocument());
    return r;
  }
  if (key == "GET /v1/topology") return GetTopology();
  if (key == "PUT /v1/topology") return PutTopology(req);
  if (key == "GET /v1/jobs") return GetJobs(req, query);
  if (key == "PUT /v1/jobs") return PutJobs(req);
  if (key == "GET /v1/jobs/{id}") return GetJob(p["id"]);
  if (key == "GET /v1/snapshots") return GetSnapshots(req, query);
  if (key == "POST /v1/assessments") return PostAssessment(req, query);
  if (key == "GET /v1/assessments") return ListAssessments(req, query);
  if (key == "GET /v1/assessments/{id}") return GetAssessment(req, p["id"], query);
  if (key == "GET /v1/drain-candidates") return DrainCandidates(req, query);
  if (key == "POST /v1/plans") return PostPlan(req, query);
  if (key == "GET /v1/drains") return ListDrains(req, query);
  if (key == "POST /v1/drains") return PostDrain(req);
  if (key == "DELETE /v1/drains/{id}") return DeleteDrain(p["id"]);
  if (key == "GET /v1/policy") return GetPolicy();
  if (key == "PUT /v1/policy") return PutPolicy(req);
  auto not_configured = [&](std::string_view what) {
    return ErrorResponse(Error{ErrorCode::kNotFound, fmt::format("{} is not configured", what)}, path);
  };
  if (key == "GET /v1/sources") {
    return JsonResponse(200, hooks_.sources ? hooks_.sources() : json{{"sources", json::array()}});
  }
  if (key == "GET /v1/links") {
    if (!hooks_.links) return not_configured("link telemetry");
    auto r = hooks_.links(req);
    return r ? JsonResponse(200, *r) : ErrorResponse(r.error(), path);
  }
  if (key == "GET /v1/jobs/{id}/paths") {
    if (!hooks_.job_paths) return not_configured("path inspection");
    auto r = hooks_.job_paths(p["id"]);
    return r ? JsonResponse(200, *r) : ErrorResponse(r.error(), path);
  }
  if (key == "POST /v1/observations") return PostObservations(req);
  if (key == "GET /v1/observations") return ListObservations(query);
  if (key == "GET /v1/calibration") return GetCalibration();
  if (key == "POST /v1/calibration") return PostCalibration(req);
  if (key == "PUT /v1/calibration") return PutCalibration(req);
  return ErrorResponse(Error{ErrorCode::kInternal, "route without handler: " + key}, path);
}

ApiResponse Api::Health() { return JsonResponse(200, {{"status", "ok"}}); }

ApiResponse Api::Ready() {
  auto snap = state_->snapshot();
  if (!snap) return ErrorResponse(Error{ErrorCode::kUnavailable, "no snapshot loaded yet"}, "/readyz");
  json body = {{"status", "ready"},
               {"topology_version", snap->topology_version},
               {"jobs_version", snap->jobs_version}};
  std::string why;
  if (hooks_.sources_ready && !hooks_.sources_ready(&why)) {
    body["status"] = "degraded";
    body["detail"] = why;
    // Stale sources still leave a usable (last good) snapshot: the daemon
    // keeps answering, and says so.
  }
  return JsonResponse(200, body);
}

ApiResponse Api::GetTopology() {
  auto snap = state_->snapshot();
  if (!snap) return ErrorResponse(Error{ErrorCode::kUnavailable, "no topology loaded yet"}, "/v1/topology");
  auto r = JsonResponse(200, codec::TopologyToJson(*snap->topology));
  r.headers.emplace_back("Drainwise-Topology-Version", std::to_string(snap->topology_version));
  r.headers.emplace_back("ETag", fmt::format("\"topology-{}\"", snap->topology_version));
  return r;
}

ApiResponse Api::PutTopology(const ApiRequest& req) {
  auto body = ParseBody(req);
  if (!body) return ErrorResponse(body.error(), "/v1/topology");
  auto out = state_->PutTopology(*body, "api" + (req.peer.empty() ? "" : ":" + req.peer));
  if (!out) return ErrorResponse(out.error(), "/v1/topology");
  auto snap = state_->snapshot();
  return JsonResponse(out->created ? 201 : 200, {{"version", out->version},
                                                 {"created", out->created},
                                                 {"nodes", snap->topology->node_count()},
                                                 {"links", snap->topology->link_count()},
                                                 {"dropped_jobs", out->dropped_jobs}});
}

ApiResponse Api::GetJobs(const ApiRequest& req, const Query& query) {
  auto snap = state_->snapshot();
  if (!snap) return ErrorResponse(Error{ErrorCode::kUnavailable, "no snapshot loaded yet"}, "/v1/jobs");
  if (WantsText(req, query)) {
    report::Table t({"JOB", "NAME", "TENANT", "PRIO", "HOSTS", "GPUS", "PROFILE", "EXPECTED_END"});
    for (const auto& j : snap->jobs->jobs()) {
      t.Add({j.id, j.name.empty() ? "-" : j.name, j.tenant.empty() ? "-" : j.tenant, std::to_string(j.priority),
             std::to_string(j.hosts.size()),
             std::to_string(j.hosts.size() * static_cast<size_t>(model::GpusPerHost(j, *snap->topology))),
             j.profile_source, j.expected_end ? codec::FormatRfc3339(*j.expected_end) : "-"});
    }
    return TextResponse(200, fmt::format("jobs v{} ({} jobs)\n", snap->jobs_version, snap->jobs->size()) + t.Render());
  }
  json jobs = json::array();
  for (const auto& j : snap->jobs->jobs()) jobs.push_back(codec::JobToJson(j, *snap->topology));
  auto r = JsonResponse(200, {{"format", codec::kJobsFormat}, {"jobs", std::move(jobs)}});
  r.headers.emplace_back("Drainwise-Jobs-Version", std::to_string(snap->jobs_version));
  return r;
}

ApiResponse Api::GetJob(const std::string& id) {
  auto snap = state_->snapshot();
  if (!snap) return ErrorResponse(Error{ErrorCode::kUnavailable, "no snapshot loaded yet"});
  auto j = snap->jobs->FindJob(id);
  if (!j) return ErrorResponse(Error{ErrorCode::kNotFound, fmt::format("unknown job '{}'", id)}, "/v1/jobs/" + id);
  return JsonResponse(200, codec::JobToJson(snap->jobs->job(*j), *snap->topology));
}

ApiResponse Api::PutJobs(const ApiRequest& req) {
  auto body = ParseBody(req);
  if (!body) return ErrorResponse(body.error(), "/v1/jobs");
  auto out = state_->PutJobs(*body, "api" + (req.peer.empty() ? "" : ":" + req.peer));
  if (!out) return ErrorResponse(out.error(), "/v1/jobs");
  auto snap = state_->snapshot();
  return JsonResponse(out->created ? 201 : 200,
                      {{"version", out->version}, {"created", out->created}, {"jobs", snap->jobs->size()}});
}

ApiResponse Api::GetSnapshots(const ApiRequest& req, const Query& query) {
  int limit = 50;
  if (auto it = query.find("limit"); it != query.end()) limit = std::clamp(std::atoi(it->second.c_str()), 1, 1000);
  auto docs = state_->store().ListDocuments(std::nullopt, limit);
  if (!docs) return ErrorResponse(docs.error(), "/v1/snapshots");
  json versions = json::array();
  for (const auto& d : *docs) {
    json v = {{"kind", store::DocKindName(d.kind)},
              {"version", d.version},
              {"source", d.source},
              {"created_at", codec::FormatRfc3339(d.created_at)},
              {"hash", d.hash}};
    if (d.kind == store::DocKind::kTopology) {
      v["nodes"] = d.items;
      v["links"] = d.links;
    } else {
      v["items"] = d.items;
    }
    versions.push_back(std::move(v));
  }
  json current = nullptr;
  if (auto snap = state_->snapshot()) {
    const auto& t = *snap->topology;
    current = {{"topology_version", snap->topology_version},
               {"jobs_version", snap->jobs_version},
               {"published_at", codec::FormatRfc3339(state_->published_at())},
               {"nodes", t.node_count()},
               {"links", t.link_count()},
               {"switches", t.switches().size()},
               {"hosts", t.hosts().size()},
               {"gpus", t.total_gpus()},
               {"jobs", snap->jobs->size()},
               {"dropped_jobs", snap->dropped_jobs}};
  }
  if (WantsText(req, query)) {
    std::string out;
    if (!current.is_null()) {
      out = fmt::format("serving topology v{} ({} switches, {} hosts, {} GPUs) and jobs v{} ({} jobs, {} dropped)\n\n",
                        current["topology_version"].get<int64_t>(), current["switches"].get<size_t>(),
                        current["hosts"].get<size_t>(), current["gpus"].get<int>(),
                        current["jobs_version"].get<int64_t>(), current["jobs"].get<size_t>(),
                        current["dropped_jobs"].size());
    }
    report::Table t({"KIND", "VERSION", "CREATED", "SOURCE", "ITEMS"});
    for (const auto& v : versions) {
      t.Add({v["kind"], std::to_string(v["version"].get<int64_t>()), v["created_at"], v["source"],
             std::to_string(v.contains("nodes") ? v["nodes"].get<int64_t>() : v["items"].get<int64_t>())});
    }
    return TextResponse(200, out + t.Render());
  }
  return JsonResponse(200, {{"current", current}, {"versions", versions}});
}

EngineContext Api::Context(const ApiRequest& req, model::SnapshotPtr snapshot) const {
  EngineContext ctx;
  ctx.active = state_->ActiveDrainUnion(*snapshot->topology);
  ctx.active_drain_count = static_cast<int>(state_->active_drains().size());
  ctx.snapshot = std::move(snapshot);
  ctx.now = NowSeconds();
  ctx.stop = req.stop;
  return ctx;
}

namespace {
json RecordJson(const store::AssessmentRecord& r) {
  json body = json::parse(r.result, nullptr, false);
  if (body.is_discarded() || !body.is_object()) body = json::object();
  json out = {{"id", r.id},
              {"kind", r.kind},
              {"created_at", codec::FormatRfc3339(r.created_at)},
              {"ticket", r.ticket},
              {"requested_by", r.requested_by},
              {"topology_version", r.topology_version},
              {"jobs_version", r.jobs_version}};
  json request = json::parse(r.request, nullptr, false);
  if (!request.is_discarded()) out["request"] = request;
  if (!r.verdict.empty()) out["verdict"] = r.verdict;
  for (auto it = body.begin(); it != body.end(); ++it) {
    if (!out.contains(it.key())) out[it.key()] = it.value();
  }
  return out;
}
}  // namespace

ApiResponse Api::PostAssessment(const ApiRequest& req, const Query& query) {
  const std::string where = "/v1/assessments";
  auto body = ParseBody(req);
  if (!body) return ErrorResponse(body.error(), where);
  if (!body->is_object()) return ErrorResponse(Error{ErrorCode::kInvalidArgument, "request body: expected an object"}, where);
  std::string key = req.Header("idempotency-key");
  if (!key.empty()) {
    auto prior = state_->store().FindByIdempotencyKey(key);
    if (!prior) return ErrorResponse(prior.error(), where);
    if (*prior) {
      auto r = WantsText(req, query) ? TextResponse(200, engine_->RenderText("assessment", RecordJson(**prior)))
                                     : JsonResponse(200, RecordJson(**prior));
      r.headers.emplace_back("Location", where + "/" + (*prior)->id);
      r.headers.emplace_back("Idempotent-Replayed", "true");
      return r;
    }
  }
  auto snap = state_->snapshot();
  if (!snap) return ErrorResponse(Error{ErrorCode::kUnavailable, "no snapshot loaded yet"}, where);
  std::string ticket, requested_by;
  try {
    codec::ObjectReader r(*body, "");
    ticket = r.StringOr("ticket", "");
    requested_by = r.StringOr("requested_by", "");
  } catch (const codec::FieldError& e) {
    return ErrorResponse(Error{ErrorCode::kInvalidArgument, e.what()}, where);
  }
  auto result = engine_->Assess(Context(req, snap), *body);
  if (!result) return ErrorResponse(result.error(), where);
  store::AssessmentRecord rec;
  rec.id = NewId("a", sequence_);
  rec.created_at = NowSeconds();
  rec.kind = "assessment";
  rec.ticket = ticket;
  rec.requested_by = requested_by;
  rec.topology_version = snap->topology_version;
  rec.jobs_version = snap->jobs_version;
  rec.verdict = result->verdict;
  rec.idempotency_key = key;
  rec.request = body->dump();
  rec.result = result->body.dump();
  if (auto st = state_->store().PutAssessment(rec); !st) return ErrorResponse(st.error(), where);
  if (hooks_.on_result) {
    hooks_.on_result("assessment", rec.verdict, result->body.value("timings_ms", json::object()).value("total", 0.0) / 1e3);
  }
  json out = RecordJson(rec);
  auto r = WantsText(req, query) ? TextResponse(201, engine_->RenderText("assessment", out)) : JsonResponse(201, out);
  r.headers.emplace_back("Location", where + "/" + rec.id);
  return r;
}

ApiResponse Api::GetAssessment(const ApiRequest& req, const std::string& id, const Query& query) {
  auto rec = state_->store().GetAssessment(id);
  if (!rec) return ErrorResponse(rec.error());
  if (!*rec) return ErrorResponse(Error{ErrorCode::kNotFound, fmt::format("unknown assessment '{}'", id)});
  json out = RecordJson(**rec);
  if (WantsText(req, query)) return TextResponse(200, engine_->RenderText((*rec)->kind, out));
  return JsonResponse(200, out);
}

ApiResponse Api::ListAssessments(const ApiRequest& req, const Query& query) {
  std::string ticket = query.count("ticket") ? query.at("ticket") : "";
  int limit = 50;
  if (auto it = query.find("limit"); it != query.end()) limit = std::clamp(std::atoi(it->second.c_str()), 1, 1000);
  auto recs = state_->store().ListAssessments(ticket, limit);
  if (!recs) return ErrorResponse(recs.error());
  json list = json::array();
  for (const auto& r : *recs) {
    json request = json::parse(r.request, nullptr, false);
    json item = {{"id", r.id},
                 {"kind", r.kind},
                 {"created_at", codec::FormatRfc3339(r.created_at)},
                 {"ticket", r.ticket},
                 {"requested_by", r.requested_by},
                 {"verdict", r.verdict},
                 {"topology_version", r.topology_version},
                 {"jobs_version", r.jobs_version}};
    if (!request.is_discarded() && request.contains("drain")) item["drain"] = request["drain"];
    list.push_back(std::move(item));
  }
  if (WantsText(req, query)) {
    report::Table t({"ID", "CREATED", "KIND", "VERDICT", "TICKET", "REQUESTED_BY"});
    for (const auto& r : *recs) {
      t.Add({r.id, codec::FormatRfc3339(r.created_at), r.kind, r.verdict.empty() ? "-" : r.verdict,
             r.ticket.empty() ? "-" : r.ticket, r.requested_by.empty() ? "-" : r.requested_by});
    }
    return TextResponse(200, t.Render());
  }
  return JsonResponse(200, {{"assessments", list}});
}

ApiResponse Api::DrainCandidates(const ApiRequest& req, const Query& query) {
  auto snap = state_->snapshot();
  if (!snap) return ErrorResponse(Error{ErrorCode::kUnavailable, "no snapshot loaded yet"});
  std::string tier = query.count("tier") ? query.at("tier") : "";
  std::vector<std::string> switches;
  if (auto it = query.find("switches"); it != query.end()) {
    std::string_view s = it->second;
    size_t start = 0;
    while (start <= s.size()) {
      size_t end = s.find(',', start);
      if (end == std::string_view::npos) end = s.size();
      if (end > start) switches.emplace_back(s.substr(start, end - start));
      start = end + 1;
    }
  }
  if (tier.empty() && switches.empty()) tier = "spine";
  auto r = engine_->DrainCandidates(Context(req, snap), tier, switches);
  if (!r) return ErrorResponse(r.error(), "/v1/drain-candidates");
  (*r)["topology_version"] = snap->topology_version;
  (*r)["jobs_version"] = snap->jobs_version;
  if (WantsText(req, query)) return TextResponse(200, engine_->RenderText("candidates", *r));
  return JsonResponse(200, *r);
}

ApiResponse Api::PostPlan(const ApiRequest& req, const Query& query) {
  const std::string where = "/v1/plans";
  auto body = ParseBody(req);
  if (!body) return ErrorResponse(body.error(), where);
  if (!body->is_object()) return ErrorResponse(Error{ErrorCode::kInvalidArgument, "request body: expected an object"}, where);
  auto snap = state_->snapshot();
  if (!snap) return ErrorResponse(Error{ErrorCode::kUnavailable, "no snapshot loaded yet"}, where);
  auto result = engine_->Plan(Context(req, snap), *body);
  if (!result) return ErrorResponse(result.error(), where);
  store::AssessmentRecord rec;
  rec.id = NewId("p", sequence_);
  rec.created_at = NowSeconds();
  rec.kind = "plan";
  rec.ticket = body->value("ticket", "");
  rec.requested_by = body->value("requested_by", "");
  rec.topology_version = snap->topology_version;
  rec.jobs_version = snap->jobs_version;
  rec.verdict = result->verdict;
  rec.request = body->dump();
  rec.result = result->body.dump();
  if (auto st = state_->store().PutAssessment(rec); !st) return ErrorResponse(st.error(), where);
  if (hooks_.on_result) {
    hooks_.on_result("plan", rec.verdict, result->body.value("timings_ms", json::object()).value("total", 0.0) / 1e3);
  }
  json out = RecordJson(rec);
  auto r = WantsText(req, query) ? TextResponse(201, engine_->RenderText("plan", out)) : JsonResponse(201, out);
  r.headers.emplace_back("Location", "/v1/assessments/" + rec.id);
  return r;
}

namespace {
json DrainJson(const store::DrainRecord& r) {
  json spec = json::parse(r.spec, nullptr, false);
  json out = {{"id", r.id},
              {"ticket", r.ticket},
              {"requested_by", r.requested_by},
              {"started_at", codec::FormatRfc3339(r.started_at)},
              {"drain", spec.is_discarded() ? json() : spec}};
  out["expected_end"] = r.expected_end ? json(codec::FormatRfc3339(*r.expected_end)) : json();
  out["ended_at"] = r.ended_at ? json(codec::FormatRfc3339(*r.ended_at)) : json();
  return out;
}
}  // namespace

ApiResponse Api::PostDrain(const ApiRequest& req) {
  const std::string where = "/v1/drains";
  auto body = ParseBody(req);
  if (!body) return ErrorResponse(body.error(), where);
  auto snap = state_->snapshot();
  if (!snap) return ErrorResponse(Error{ErrorCode::kUnavailable, "no snapshot loaded yet"}, where);
  store::DrainRecord rec;
  try {
    codec::ObjectReader r(*body, "");
    r.RejectUnknown({"drain", "ticket", "requested_by", "expected_end", "assessment"});
    if (!r.Has("drain")) throw codec::FieldError("drain", "required");
    auto spec = codec::ParseDrain(r.Raw("drain"));
    if (!spec) return ErrorResponse(spec.error(), where);
    if (spec->empty()) throw codec::FieldError("drain", "names no switch and no link");
    auto resolved = model::ResolveDrain(*spec, *snap->topology);
    if (!resolved) return ErrorResponse(resolved.error().Wrap("drain"), where);
    rec.ticket = r.StringOr("ticket", "");
    rec.requested_by = r.StringOr("requested_by", "");
    if (r.Has("expected_end")) {
      auto t = codec::ParseRfc3339(r.String("expected_end"));
      if (!t) throw codec::FieldError("expected_end", "not an RFC 3339 time");
      rec.expected_end = *t;
    }
    rec.spec = codec::DrainSpecToJson(*spec).dump();
  } catch (const codec::FieldError& e) {
    return ErrorResponse(Error{ErrorCode::kInvalidArgument, e.what()}, where);
  }
  rec.id = NewId("d", sequence_);
  rec.started_at = NowSeconds();
  if (auto st = state_->store().PutDrain(rec); !st) return ErrorResponse(st.error(), where);
  if (auto st = state_->ReloadDrains(); !st) return ErrorResponse(st.error(), where);
  auto r = JsonResponse(201, DrainJson(rec));
  r.headers.emplace_back("Location", where + "/" + rec.id);
  return r;
}

ApiResponse Api::ListDrains(const ApiRequest& req, const Query& query) {
  bool all = query.count("all") && (query.at("all") == "true" || query.at("all") == "1");
  auto recs = state_->store().ListDrains(!all);
  if (!recs) return ErrorResponse(recs.error());
  if (WantsText(req, query)) {
    report::Table t({"ID", "STARTED", "EXPECTED_END", "ENDED", "TICKET", "DRAIN"});
    for (const auto& r : *recs) {
      t.Add({r.id, codec::FormatRfc3339(r.started_at), r.expected_end ? codec::FormatRfc3339(*r.expected_end) : "-",
             r.ended_at ? codec::FormatRfc3339(*r.ended_at) : "-", r.ticket.empty() ? "-" : r.ticket, r.spec});
    }
    return TextResponse(200, t.Render());
  }
  json list = json::array();
  for (const auto& r : *recs) list.push_back(DrainJson(r));
  return JsonResponse(200, {{"drains", list}});
}

ApiResponse Api::DeleteDrain(const std::string& id) {
  auto ended = state_->store().EndDrain(id, NowSeconds());
  if (!ended) return ErrorResponse(ended.error());
  if (!*ended) return ErrorResponse(Error{ErrorCode::kNotFound, fmt::format("no active drain '{}'", id)});
  if (auto st = state_->ReloadDrains(); !st) return ErrorResponse(st.error());
  return JsonResponse(200, {{"id", id}, {"ended", true}});
}

ApiResponse Api::GetPolicy() { return JsonResponse(200, engine_->PolicyJson()); }

ApiResponse Api::PutPolicy(const ApiRequest& req) {
  auto body = ParseBody(req);
  if (!body) return ErrorResponse(body.error(), "/v1/policy");
  if (auto st = engine_->SetPolicy(*body); !st) return ErrorResponse(st.error(), "/v1/policy");
  store::DocumentInfo info;
  info.kind = store::DocKind::kPolicy;
  info.source = "api" + (req.peer.empty() ? "" : ":" + req.peer);
  auto put = state_->store().PutDocument(info, body->dump());
  if (!put) return ErrorResponse(put.error(), "/v1/policy");
  return JsonResponse(put->created ? 201 : 200, {{"version", put->version}, {"created", put->created}});
}

namespace {
// A drain's canonical key: the same drain always gives the same text.
std::string DrainKey(const model::Drain& d, const model::Topology& t) {
  if (d.empty()) return "";
  return codec::DrainSpecToJson(model::DescribeDrain(d, t)).dump();
}
}  // namespace

ApiResponse Api::PostObservations(const ApiRequest& req) {
  const std::string where = "/v1/observations";
  auto body = ParseBody(req);
  if (!body) return ErrorResponse(body.error(), where);
  auto snap = state_->snapshot();
  if (!snap) return ErrorResponse(Error{ErrorCode::kUnavailable, "no snapshot loaded yet"}, where);
  json items = body->is_object() && body->contains("observations") ? (*body)["observations"] : *body;
  if (items.is_object()) items = json::array({items});
  if (!items.is_array() || items.empty()) {
    return ErrorResponse(Error{ErrorCode::kInvalidArgument, "observations: expected a non-empty array"}, where);
  }
  auto ctx = Context(req, snap);
  // Validate everything before storing anything.
  std::vector<store::ObservationRecord> records;
  for (size_t i = 0; i < items.size(); ++i) {
    std::string at = fmt::format("observations[{}]", i);
    store::ObservationRecord rec;
    model::Drain drain = ctx.active;
    try {
      codec::ObjectReader r(items[i], at);
      r.RejectUnknown({"job", "iteration_s", "observed_at", "drain"});
      rec.job_id = r.String("job");
      rec.iteration_s = r.Number("iteration_s");
      if (auto ok = advisor::CheckObservedIteration(rec.iteration_s, r.Child("iteration_s")); !ok) {
        return ErrorResponse(ok.error(), where);
      }
      if (r.Has("observed_at")) {
        auto t = codec::ParseRfc3339(r.String("observed_at"));
        if (!t) throw codec::FieldError(r.Child("observed_at"), "not an RFC 3339 time");
        rec.observed_at = *t;
      }
      if (r.Has("drain")) {
        auto spec = codec::ParseDrain(r.Raw("drain"));
        if (!spec) return ErrorResponse(spec.error().Wrap(at), where);
        auto d = model::ResolveDrain(*spec, *snap->topology);
        if (!d) return ErrorResponse(d.error().Wrap(at + ".drain"), where);
        drain = std::move(*d);
      }
    } catch (const codec::FieldError& e) {
      return ErrorResponse(Error{ErrorCode::kInvalidArgument, e.what()}, where);
    }
    auto predicted = engine_->PredictIteration(ctx, rec.job_id, drain);
    if (!predicted) return ErrorResponse(predicted.error().Wrap(at), where);
    rec.predicted_s = *predicted;
    rec.drain_key = DrainKey(drain, *snap->topology);
    rec.body = items[i].dump();
    records.push_back(std::move(rec));
  }
  json stored = json::array();
  for (auto& rec : records) {
    auto id = state_->store().PutObservation(rec);
    if (!id) return ErrorResponse(id.error(), where);
    stored.push_back({{"id", *id},
                      {"job", rec.job_id},
                      {"observed_s", rec.iteration_s},
                      {"predicted_s", rec.predicted_s},
                      {"error_pct", (rec.predicted_s / rec.iteration_s - 1) * 100}});
  }
  return JsonResponse(201, {{"stored", stored}});
}

ApiResponse Api::ListObservations(const Query& query) {
  int limit = 100;
  if (auto it = query.find("limit"); it != query.end()) limit = std::clamp(std::atoi(it->second.c_str()), 1, 100000);
  auto recs = state_->store().ListObservations(query.count("job") ? query.at("job") : "", limit);
  if (!recs) return ErrorResponse(recs.error());
  json list = json::array();
  for (const auto& r : *recs) {
    json drain = r.drain_key.empty() ? json() : json::parse(r.drain_key, nullptr, false);
    list.push_back({{"id", r.id},
                    {"job", r.job_id},
                    {"observed_at", codec::FormatRfc3339(r.observed_at)},
                    {"observed_s", r.iteration_s},
                    {"predicted_s", r.predicted_s},
                    {"drain", drain}});
  }
  return JsonResponse(200, {{"observations", list}});
}

ApiResponse Api::GetCalibration() {
  json out = engine_->CalibrationJson();
  auto recs = state_->store().ListObservations("", 100000);
  if (!recs) return ErrorResponse(recs.error());
  // Error of iteration-time predictions, and of predicted slowdowns: the
  // latest undrained and drained observations of each job, per drain.
  std::vector<double> rel;
  std::map<std::string, const store::ObservationRecord*> base;
  std::map<std::pair<std::string, std::string>, const store::ObservationRecord*> drained;
  for (const auto& r : *recs) {  // newest first
    if (r.predicted_s > 0) rel.push_back(std::fabs(r.predicted_s - r.iteration_s) / r.iteration_s * 100);
    if (r.drain_key.empty()) base.emplace(r.job_id, &r);
    else drained.emplace(std::make_pair(r.job_id, r.drain_key), &r);
  }
  std::vector<double> sd_err;
  for (const auto& [key, d] : drained) {
    auto b = base.find(key.first);
    if (b == base.end() || b->second->predicted_s <= 0 || d->predicted_s <= 0) continue;
    double observed = (d->iteration_s / b->second->iteration_s - 1) * 100;
    double predicted = (d->predicted_s / b->second->predicted_s - 1) * 100;
    sd_err.push_back(std::fabs(predicted - observed));
  }
  auto q = [](std::vector<double> v, double p) {
    if (v.empty()) return json();
    std::sort(v.begin(), v.end());
    double pos = p * static_cast<double>(v.size() - 1);
    size_t lo = static_cast<size_t>(pos);
    size_t hi = std::min(lo + 1, v.size() - 1);
    return json(v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo)));
  };
  out["observations"] = recs->size();
  out["iteration_error_pct"] = {{"median", q(rel, 0.5)}, {"p90", q(rel, 0.9)}};
  out["slowdown_error_pct_points"] = {{"pairs", sd_err.size()}, {"median", q(sd_err, 0.5)}, {"p90", q(sd_err, 0.9)}};
  return JsonResponse(200, out);
}

ApiResponse Api::PostCalibration(const ApiRequest& req) {
  const std::string where = "/v1/calibration";
  bool apply = false;
  if (!req.body.empty()) {
    auto body = ParseBody(req);
    if (!body) return ErrorResponse(body.error(), where);
    try {
      codec::ObjectReader r(*body, "");
      r.RejectUnknown({"apply"});
      apply = r.BoolOr("apply", false);
    } catch (const codec::FieldError& e) {
      return ErrorResponse(Error{ErrorCode::kInvalidArgument, e.what()}, where);
    }
  }
  auto snap = state_->snapshot();
  if (!snap) return ErrorResponse(Error{ErrorCode::kUnavailable, "no snapshot loaded yet"}, where);
  auto recs = state_->store().ListObservations("", 100000);
  if (!recs) return ErrorResponse(recs.error(), where);
  auto fit = engine_->Calibrate(Context(req, snap), *recs, apply);
  if (!fit) return ErrorResponse(fit.error(), where);
  if (fit->value("applied", false)) {
    store::DocumentInfo info;
    info.kind = store::DocKind::kCalibration;
    info.source = "fit";
    auto put = state_->store().PutDocument(info, (*fit)["calibration"].dump());
    if (!put) return ErrorResponse(put.error(), where);
    (*fit)["version"] = put->version;
  }
  return JsonResponse(200, *fit);
}

ApiResponse Api::PutCalibration(const ApiRequest& req) {
  auto body = ParseBody(req);
  if (!body) return ErrorResponse(body.error(), "/v1/calibration");
  if (auto st = engine_->SetCalibration(*body); !st) return ErrorResponse(st.error(), "/v1/calibration");
  store::DocumentInfo info;
  info.kind = store::DocKind::kCalibration;
  info.source = "api" + (req.peer.empty() ? "" : ":" + req.peer);
  auto put = state_->store().PutDocument(info, body->dump());
  if (!put) return ErrorResponse(put.error(), "/v1/calibration");
  return JsonResponse(put->created ? 201 : 200, {{"version", put->version}, {"created", put->created}});
}

}  // namespace drainwise::server
