// docs/openapi.yaml against the route table: the document served at
// GET /v1/openapi.json (embedded from docs/openapi.yaml at build time) must
// describe exactly the rows of Api::Routes(), no more and no fewer, each with
// the row's role (x-drainwise-role, and `security: []` exactly when open)
// and admission class (x-drainwise-admission).
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "server/api.h"
#include "server/state.h"
#include "store/store.h"

using namespace drainwise;
using nlohmann::json;

namespace {

// The served document. The route touches neither the engine nor the
// snapshot, so a null engine is enough.
json ServedDocument(server::ApiResponse* response = nullptr) {
  auto db = std::move(*store::Store::Open(":memory:"));
  server::State state(db.get());
  server::Api api(&state, nullptr);
  server::ApiRequest req;
  req.method = "GET";
  req.target = "/v1/openapi.json";
  auto r = api.Handle(req);
  if (response) *response = r;
  return json::parse(r.body, nullptr, false);
}

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// Every "$ref" in `j`, as JSON pointers ("#/components/schemas/Problem").
void CollectRefs(const json& j, std::set<std::string>* out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.key() == "$ref" && it->is_string())
        out->insert(it->get<std::string>());
      else
        CollectRefs(*it, out);
    }
  } else if (j.is_array()) {
    for (const auto& x : j) CollectRefs(x, out);
  }
}

}  // namespace

TEST_CASE("GET /v1/openapi.json serves an OpenAPI 3.1 JSON document") {
  server::ApiResponse r;
  json doc = ServedDocument(&r);
  CHECK(r.status == 200);
  CHECK(r.content_type == "application/json");
  REQUIRE_MESSAGE(!doc.is_discarded(), "the embedded document is not JSON: strip-comments step or syntax broken");
  CHECK(doc["openapi"] == "3.1.0");
  CHECK(doc["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer");
  CHECK(doc["components"]["schemas"].contains("Problem"));
}

TEST_CASE("every route is in the document and every documented operation is a route") {
  json doc = ServedDocument();
  REQUIRE(doc.is_object());
  REQUIRE(doc.contains("paths"));
  std::set<std::string> routes, documented;
  for (const auto& r : server::Api::Routes()) routes.insert(r.method + " " + r.pattern);
  static const std::set<std::string> kMethods = {"get", "put", "post", "delete", "patch", "head", "options", "trace"};
  for (auto p = doc["paths"].begin(); p != doc["paths"].end(); ++p) {
    for (auto m = p->begin(); m != p->end(); ++m) {
      if (kMethods.count(m.key())) documented.insert(Upper(m.key()) + " " + p.key());
    }
  }
  std::string missing, extra;
  for (const auto& r : routes) {
    if (!documented.count(r)) missing += "  " + r + "\n";
  }
  for (const auto& d : documented) {
    if (!routes.count(d)) extra += "  " + d + "\n";
  }
  CHECK_MESSAGE(missing.empty(), "routes missing from docs/openapi.yaml:\n" << missing);
  CHECK_MESSAGE(extra.empty(), "docs/openapi.yaml documents operations the router does not have:\n" << extra);
  CHECK(routes.size() == server::Api::Routes().size());  // no duplicate route
}

TEST_CASE("every operation declares its path parameters, a success response and problem+json errors") {
  json doc = ServedDocument();
  REQUIRE(doc.is_object());
  for (const auto& r : server::Api::Routes()) {
    std::string method = r.method;
    for (char& c : method) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const json* op = nullptr;
    if (doc["paths"].contains(r.pattern) && doc["paths"][r.pattern].contains(method))
      op = &doc["paths"][r.pattern][method];
    if (!op) continue;  // reported by the test above
    INFO(r.method << " " << r.pattern);
    // {name} segments of the pattern are declared as path parameters.
    std::set<std::string> declared;
    for (const auto& p : op->value("parameters", json::array())) {
      if (p.value("in", "") == "path") declared.insert(p.value("name", ""));
    }
    for (size_t open = r.pattern.find('{'); open != std::string::npos; open = r.pattern.find('{', open + 1)) {
      std::string name = r.pattern.substr(open + 1, r.pattern.find('}', open) - open - 1);
      CHECK_MESSAGE(declared.count(name), "path parameter {" << name << "} not declared");
    }
    const json& responses = (*op)["responses"];
    bool success = false, problem = false;
    for (auto it = responses.begin(); it != responses.end(); ++it) {
      if (it.key().front() == '2') success = true;
      if (it.key().front() == '4' || it.key().front() == '5') problem = true;
    }
    CHECK(success);
    // Liveness has no failure answer of its own: no process, no reply.
    if (r.pattern != "/healthz") CHECK(problem);
    // The role and admission class are the table's.
    std::string role = r.role ? std::string(server::RoleName(*r.role)) : "none";
    CHECK(op->value("x-drainwise-role", "(missing)") == role);
    CHECK(op->value("x-drainwise-admission", "(missing)") == std::string(server::AdmissionName(r.admission)));
    // Open routes opt out of the bearer scheme explicitly, and only they do.
    CHECK(!r.role == (op->contains("security") && (*op)["security"].empty()));
  }
}

TEST_CASE("every $ref in the document resolves") {
  json doc = ServedDocument();
  REQUIRE(doc.is_object());
  std::set<std::string> refs;
  CollectRefs(doc, &refs);
  CHECK(refs.size() > 10);
  for (const auto& ref : refs) {
    INFO(ref);
    REQUIRE(ref.rfind("#/", 0) == 0);
    CHECK(doc.contains(json::json_pointer(ref.substr(1))));
  }
}
