// The route table and target normalisation: one decoding, one match, and
// everything (admission, auth, metrics label, 404/405) from the matched row.
#include <doctest/doctest.h>

#include <set>

#include <fmt/format.h>

#include "server/api.h"
#include "server/auth.h"
#include "server/metrics.h"
#include "server/routes/target.h"
#include "store/store.h"
#include "testing/fabrics.h"

using namespace drainwise;
using nlohmann::json;
using server::Admission;

namespace {

server::ApiRequest Request(std::string method, std::string target) {
  server::ApiRequest r;
  r.method = std::move(method);
  r.target = std::move(target);
  return r;
}

// `pattern` with each {name} replaced by a value: a concrete path of the row.
std::string Concrete(const std::string& pattern) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '{') {
      i = pattern.find('}', i);
      out += "x1";
    } else {
      out.push_back(pattern[i]);
    }
  }
  return out;
}

// `path` with the first letter of every segment percent-encoded
// ("/v1/assessments" -> "/%76%31/%61ssessments"): another spelling of it.
std::string EncodeFirstLetters(const std::string& path) {
  std::string out;
  bool start = false;
  for (char c : path) {
    if (start && c != '/') {
      out += fmt::format("%{:02X}", static_cast<unsigned char>(c));
    } else {
      out.push_back(c);
    }
    start = c == '/';
  }
  return out;
}

}  // namespace

TEST_CASE("targets are decoded once and normalised, or refused naming the rule") {
  struct Case {
    const char* target;
    const char* path;   // expected path, or nullptr for a refusal
    const char* error;  // a fragment of the refusal
  };
  const Case cases[] = {
      {"/", "/", nullptr},
      {"/v1/%61ssessments", "/v1/assessments", nullptr},
      {"/%76%31/%74opology", "/v1/topology", nullptr},
      {"/v1/jobs/j%2B1", "/v1/jobs/j+1", nullptr},  // '+' is a space only in queries
      {"/v1/jobs/j+1", "/v1/jobs/j+1", nullptr},
      {"/v1/jobs/a%20b", "/v1/jobs/a b", nullptr},
      {"/v1/jobs/100%25", "/v1/jobs/100%", nullptr},  // an escaped '%' is not decoded twice
      {"/v1/jobs/a%2Fb", nullptr, "encodes a '/' (%2F)"},
      {"/v1/jobs/a%2fb", nullptr, "encodes a '/' (%2F)"},
      {"/v1//topology", nullptr, "empty segment"},
      {"/v1/topology/", nullptr, "empty segment"},
      {"/v1/../healthz", nullptr, "dot segment '..'"},
      {"/v1/./topology", nullptr, "dot segment '.'"},
      {"/v1/%2e%2e/healthz", nullptr, "dot segment '%2e%2e'"},
      {"/v1/%zzopology", nullptr, "invalid percent-encoding '%zz'"},
      {"/v1/topology%4", nullptr, "invalid percent-encoding '%4'"},
      {"/v1/jobs/%00", nullptr, "control character 0x00"},
      {"/v1/jobs/%0a", nullptr, "control character 0x0a"},
      {"/v1/jobs/a b", nullptr, "byte 0x20 at offset 10 must be percent-encoded"},
      {"/v1/jobs/\xc3\xa9", nullptr, "byte 0xc3 at offset 9 must be percent-encoded"},
      {"http://example.com/v1/topology", nullptr, "expected an absolute path starting with '/'"},
      {"*", nullptr, "origin-form"},
      {"", nullptr, "origin-form"},
      {"/v1/topology?x=%zz", nullptr, "query: invalid percent-encoding '%zz'"},
  };
  for (const auto& c : cases) {
    INFO(c.target);
    auto t = server::routing::NormaliseTarget(c.target);
    if (c.path) {
      REQUIRE(t.has_value());
      CHECK(t->path == c.path);
    } else {
      REQUIRE_FALSE(t.has_value());
      CHECK(t.error().code == ErrorCode::kInvalidArgument);
      CHECK(t.error().message.find(c.error) != std::string::npos);
    }
  }
  auto q = server::routing::NormaliseTarget("/v1/drain-candidates?tier=%73pine&switches=a%2Cb&switches=c+d&x&=y");
  REQUIRE(q.has_value());
  CHECK(q->query == std::map<std::string, std::string>{{"tier", "spine"}, {"switches", "a,b,c d"}, {"x", ""}});
}

TEST_CASE("the table: one row per method and pattern, and only probes and console files inline") {
  std::set<std::string> names;
  std::set<std::string> inline_routes;
  for (const auto& r : server::Api::Routes()) {
    INFO(r.name());
    CHECK(names.insert(r.name()).second);
    CHECK(r.handler != nullptr);
    CHECK(!r.summary.empty());
    if (r.admission == Admission::kInline) inline_routes.insert(r.name());
  }
  CHECK(inline_routes ==
        std::set<std::string>{"GET /healthz", "GET /readyz", "GET /metrics", "GET /", "GET /ui/{file}"});
  // Where the work is: simulations on the simulation queue, the documents and store on the read queue.
  auto admission_of = [](const std::string& name) {
    for (const auto& r : server::Api::Routes()) {
      if (r.name() == name) return r.admission;
    }
    FAIL("no route " << name);
    return Admission::kInline;
  };
  for (const char* sim : {"POST /v1/assessments", "POST /v1/plans", "GET /v1/drain-candidates", "POST /v1/observations",
                          "POST /v1/calibration", "POST /v1/simulations"}) {
    CHECK_MESSAGE(admission_of(sim) == Admission::kSimulation, sim);
  }
  for (const char* read : {"GET /v1/topology", "PUT /v1/topology", "GET /v1/jobs", "GET /v1/assessments",
                           "GET /v1/observations", "GET /v1/calibration", "POST /v1/drains"}) {
    CHECK_MESSAGE(admission_of(read) == Admission::kRead, read);
  }
}

TEST_CASE("every row is reached by its plain and its percent-encoded path alike") {
  server::Api api(nullptr, nullptr);
  for (const auto& row : server::Api::Routes()) {
    std::string path = Concrete(row.pattern);
    for (const std::string& target : {path, EncodeFirstLetters(path), path + "?format=json"}) {
      INFO(row.name() << " as " << target);
      auto rr = api.Route(Request(row.method, target));
      REQUIRE(rr.route == &row);
      CHECK_FALSE(rr.problem.has_value());
      CHECK(rr.admission == row.admission);
      CHECK(rr.RouteName() == row.name());
      CHECK(rr.path == path);
    }
  }
  // The cases of issue 12: the encoded spellings run where the plain ones do.
  CHECK(api.Route(Request("POST", "/v1/%61ssessments")).admission == Admission::kSimulation);
  CHECK(api.Route(Request("POST", "/v1/%70lans")).admission == Admission::kSimulation);
  CHECK(api.Route(Request("GET", "/v1/%74opology")).admission == Admission::kRead);
  // HEAD is served by the GET row, and admitted like it.
  auto head = api.Route(Request("HEAD", "/v1/%74opology"));
  CHECK(head.RouteName() == "GET /v1/topology");
  CHECK(head.admission == Admission::kRead);
  auto rr = api.Route(Request("GET", "/v1/jobs/j%2D1/paths?x=1"));
  CHECK(rr.Param("id") == "j-1");
  CHECK(rr.Query("x") == "1");
  CHECK(rr.Param("nope").empty());
}

TEST_CASE("404, 405 with Allow, and 400 for a broken target: problems carrying their real status") {
  auto db = std::move(*store::Store::Open(":memory:"));
  server::State state(db.get());
  server::Api api(&state, nullptr);
  struct Case {
    const char* method;
    const char* target;
    int status;
    const char* allow;  // expected Allow header, or nullptr for none
  };
  const Case cases[] = {
      {"DELETE", "/v1/topology", 405, "GET, HEAD, PUT"},
      {"POST", "/v1/%74opology", 405, "GET, HEAD, PUT"},
      {"PATCH", "/v1/drains/d-1", 405, "DELETE"},
      {"PUT", "/healthz", 405, "GET, HEAD"},
      {"GET", "/v1/plans", 405, "POST"},
      {"GET", "/v2/whatever", 404, nullptr},
      {"GET", "/v1/topology/extra", 404, nullptr},
      {"GET", "/v1//topology", 400, nullptr},
      {"GET", "/v1/jobs/a%2Fb", 400, nullptr},
      {"GET", "/v1/%", 400, nullptr},
  };
  for (const auto& c : cases) {
    INFO(c.method << " " << c.target);
    auto r = api.Handle(Request(c.method, c.target));
    CHECK(r.status == c.status);
    CHECK(r.content_type == "application/problem+json");
    auto body = json::parse(r.body);
    CHECK(body["status"] == c.status);
    std::string allow;
    for (const auto& [name, value] : r.headers) {
      if (name == "Allow") allow = value;
    }
    CHECK(allow == (c.allow ? c.allow : ""));
  }
  auto r = json::parse(api.Handle(Request("DELETE", "/v1/topology")).body);
  CHECK(r["detail"] == "DELETE is not allowed on /v1/topology; allowed: GET, HEAD, PUT");
  CHECK(r["type"] == "https://drainwise.dev/problems/method-not-allowed");
}

TEST_CASE("roles come from the table: every row refuses a weaker token and a missing one") {
  auto db = std::move(*store::Store::Open(":memory:"));
  server::State state(db.get());
  server::Api api(&state, nullptr);
  const std::map<server::Role, std::string> tokens = {{server::Role::kReader, "reader-token-0123456"},
                                                      {server::Role::kOperator, "operator-token-012345"},
                                                      {server::Role::kAdmin, "admin-token-0123456789"}};
  std::string text;
  for (const auto& [role, token] : tokens) {
    text += server::Sha256Hex(token) + " " + std::string(server::RoleName(role)) + " " +
            std::string(server::RoleName(role)) + "-bot\n";
  }
  api.RequireTokens(std::make_shared<const server::TokenTable>(*server::TokenTable::Parse(text, "t")));
  for (const auto& row : server::Api::Routes()) {
    INFO(row.name());
    std::string target = Concrete(row.pattern);
    auto anonymous = api.Handle(Request(row.method, target));
    if (!row.role) {
      CHECK(anonymous.status != 401);
      continue;
    }
    CHECK(anonymous.status == 401);
    CHECK(json::parse(anonymous.body)["status"] == 401);
    for (const auto& [role, token] : tokens) {
      if (role >= *row.role) continue;
      auto req = Request(row.method, EncodeFirstLetters(target));
      req.headers["authorization"] = "Bearer " + token;
      auto weak = api.Handle(req);
      CHECK(weak.status == 403);
      CHECK(json::parse(weak.body)["detail"].get<std::string>().find(
                fmt::format("needs the {} role", server::RoleName(*row.role))) != std::string::npos);
    }
  }
  // Issue 12: fitting with apply changes the calibration in force, as PUT does: both need admin.
  auto role_of = [](const std::string& name) {
    for (const auto& r : server::Api::Routes()) {
      if (r.name() == name) return r.role;
    }
    return std::optional<server::Role>();
  };
  CHECK(role_of("POST /v1/calibration") == server::Role::kAdmin);
  CHECK(role_of("PUT /v1/calibration") == server::Role::kAdmin);
  // Which paths exist is for token holders: an unknown path or method is 401 first.
  CHECK(api.Handle(Request("GET", "/v2/nothing")).status == 401);
  CHECK(api.Handle(Request("DELETE", "/v1/topology")).status == 401);
}

TEST_CASE("metrics labels are bounded: a route name or 'unmatched', a known method or 'other'") {
  CHECK(server::MethodLabel("GET") == "GET");
  CHECK(server::MethodLabel("DELETE") == "DELETE");
  CHECK(server::MethodLabel("get") == "other");
  CHECK(server::MethodLabel("BREW") == "other");
  server::Api api(nullptr, nullptr);
  CHECK(api.Route(Request("BREW", "/v1/%74opology")).RouteName() == "unmatched");
  CHECK(api.Route(Request("GET", "/v1/nothing")).RouteName() == "unmatched");
  CHECK(api.Route(Request("GET", "/v1//topology")).RouteName() == "unmatched");
}

TEST_CASE("every problem carries its HTTP status in the body") {
  // Failing requests of every kind the API answers without an engine:
  // empty bodies on every write (400), a broken target (400), no snapshot
  // yet (503), unknown records (404), wrong methods (405).
  auto db = std::move(*store::Store::Open(":memory:"));
  server::State state(db.get());
  server::Api api(&state, nullptr);
  std::vector<server::ApiRequest> requests;
  for (const auto& row : server::Api::Routes()) {
    if (row.method == "POST" || row.method == "PUT") requests.push_back(Request(row.method, Concrete(row.pattern)));
  }
  for (const char* target : {"/v1/jobs/x1", "/v1/topology", "/v1/assessments/x1", "/readyz", "/v1//x", "/v1/%"}) {
    requests.push_back(Request("GET", target));
  }
  requests.push_back(Request("DELETE", "/v1/drains/nope"));
  requests.push_back(Request("PUT", "/v1/drains/nope"));
  std::set<int> seen;
  for (const auto& req : requests) {
    INFO(req.method << " " << req.target);
    auto r = api.Handle(req);
    REQUIRE(r.status >= 400);
    CHECK(r.content_type == "application/problem+json");
    auto body = json::parse(r.body, nullptr, false);
    REQUIRE(body.is_object());
    CHECK(body["status"] == r.status);
    seen.insert(r.status);
  }
  CHECK(seen == std::set<int>{400, 404, 405, 503});
}
