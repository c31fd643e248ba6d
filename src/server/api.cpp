// Routing and the response helpers. The route table is in routes/table.cpp,
// target normalisation in routes/target.cpp, the handlers in routes/*.cpp.
#include "server/api.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "server/background.h"
#include "server/problem.h"
#include "server/routes/common.h"
#include "server/routes/idempotency.h"
#include "server/routes/target.h"

namespace drainwise::server {

using nlohmann::json;

std::string_view AdmissionName(Admission admission) {
  switch (admission) {
    case Admission::kInline:
      return "inline";
    case Admission::kRead:
      return "read";
    case Admission::kSimulation:
      return "simulation";
  }
  return "inline";
}

std::string ApiRequest::Header(const std::string& name) const {
  auto it = headers.find(name);
  return it == headers.end() ? std::string() : it->second;
}

const std::string& RoutedRequest::Param(const std::string& name) const {
  static const std::string kEmpty;
  auto it = params.find(name);
  return it == params.end() ? kEmpty : it->second;
}

const std::string& RoutedRequest::Query(const std::string& name) const {
  static const std::string kEmpty;
  auto it = query.find(name);
  return it == query.end() ? kEmpty : it->second;
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
  // The rules of routing::NormaliseTarget; an invalid query gives an empty
  // map (a request that reaches a handler has passed them already).
  auto t = routing::NormaliseTarget("/?" + std::string(query));
  return t ? t->query : std::map<std::string, std::string>{};
}

Api::Api(State* state, Engine* engine, ApiHooks hooks)
    : state_(state),
      engine_(engine),
      hooks_(std::move(hooks)),
      keys_in_flight_(std::make_unique<routing::KeysInFlight>()),
      background_(std::make_unique<BackgroundRuns>()) {}

// Background runs stop first: they may log through the hooks.
Api::~Api() { background_.reset(); }

RoutedRequest Api::Route(ApiRequest request) const {
  RoutedRequest rr;
  rr.request = std::move(request);
  auto target = routing::NormaliseTarget(rr.request.target);
  if (!target) {
    rr.problem = ErrorResponse(target.error());
    return rr;
  }
  rr.path = std::move(target->path);
  rr.query = std::move(target->query);
  const std::string& method = rr.request.method;
  std::vector<std::string> allow;
  for (const server::Route& r : Routes()) {
    std::map<std::string, std::string> params;
    if (!routing::MatchPattern(r.pattern, rr.path, &params)) continue;
    if (r.method == method || (method == "HEAD" && r.method == "GET")) {
      rr.route = &r;
      rr.params = std::move(params);
      rr.admission = r.admission;
      return rr;
    }
    allow.push_back(r.method);
    if (r.method == "GET") allow.push_back("HEAD");
  }
  if (allow.empty()) {
    rr.problem = ErrorResponse(Error{ErrorCode::kNotFound, fmt::format("no route {}", rr.path)}, rr.path);
    return rr;
  }
  std::string allowed = fmt::format("{}", fmt::join(allow, ", "));
  rr.problem =
      routing::ProblemResponse(405, "method-not-allowed", "Method not allowed",
                               fmt::format("{} is not allowed on {}; allowed: {}", method, rr.path, allowed), rr.path);
  rr.problem->headers.emplace_back("Allow", allowed);
  return rr;
}

std::optional<ApiResponse> Api::Authorize(RoutedRequest& rr) const {
  const ApiRequest& req = rr.request;
  rr.principal = fmt::format("anonymous ({})", req.peer.empty() ? "unknown peer" : req.peer);
  if (!tokens_) return std::nullopt;
  std::optional<Principal> who;
  std::string auth = req.Header("authorization");
  if (auth.rfind("Bearer ", 0) == 0) who = tokens_->Find(std::string_view(auth).substr(7));
  if (who) rr.principal = fmt::format("{} ({})", who->name, RoleName(who->role));
  std::optional<Role> need;
  if (rr.route) {
    need = rr.route->role;
  } else if (rr.problem && rr.problem->status != 400) {
    need = Role::kReader;  // which paths and methods exist is for token holders only
  }
  if (!need) return std::nullopt;
  if (!who) {
    auto r = ErrorResponse(Error{ErrorCode::kUnauthenticated, "a valid bearer token is required"}, rr.path);
    r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"drainwise\"");
    return r;
  }
  if (static_cast<int>(who->role) < static_cast<int>(*need)) {
    return ErrorResponse(
        Error{ErrorCode::kPermissionDenied, fmt::format("{} {} needs the {} role; token '{}' is {}", req.method,
                                                        rr.path, RoleName(*need), who->name, RoleName(who->role))},
        rr.path);
  }
  return std::nullopt;
}

ApiResponse Api::Handle(RoutedRequest& rr) {
  try {
    if (auto denied = Authorize(rr)) return *denied;
    if (rr.problem) return *rr.problem;
    if (!rr.route || !rr.route->handler) {
      return ErrorResponse(Error{ErrorCode::kInternal, "request was not routed: call Api::Route first"}, rr.path);
    }
    return (this->*(rr.route->handler))(rr);
  } catch (const std::exception& e) {
    // A bug must not take the daemon down; report it and keep serving.
    return ErrorResponse(Error{ErrorCode::kInternal, std::string("unexpected: ") + e.what()}, rr.path);
  }
}

ApiResponse Api::Handle(const ApiRequest& request) {
  RoutedRequest rr = Route(request);
  return Handle(rr);
}

engine::Call Api::Call(const ApiRequest& req) { return engine::Call{routing::NowSeconds(), req.stop}; }

}  // namespace drainwise::server
