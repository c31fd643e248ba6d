#include <doctest/doctest.h>

#include "server/api.h"
#include "server/auth.h"
#include "server/metrics.h"
#include "store/store.h"
#include "testing/fabrics.h"

using namespace drainwise;

TEST_CASE("SHA-256 of a known string") {
  // FIPS 180-2 test vector.
  CHECK(server::Sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("tokens file: hashes and roles, errors name the line") {
  std::string text = "# comment\n" + server::Sha256Hex("reader-token-0123456") + " reader alice\n" +
                     server::Sha256Hex("admin-token-0123456789") + " admin  # bob\n";
  auto t = server::TokenTable::Parse(text, "tokens");
  REQUIRE(t.has_value());
  CHECK(t->size() == 2);
  CHECK(t->Find("reader-token-0123456")->name == "alice");
  CHECK(t->Find("admin-token-0123456789")->role == server::Role::kAdmin);
  CHECK_FALSE(t->Find("nope").has_value());
  CHECK(server::TokenTable::Parse("abc reader\n", "f").error().message ==
        "f:1: expected a lower-case hex SHA-256 hash (64 characters)");
  CHECK(server::TokenTable::Parse(server::Sha256Hex("x") + " root\n", "f").error().message ==
        "f:1: role 'root' is not reader, operator or admin");
}

TEST_CASE("roles are enforced per route: 401 without a token, 403 with a weak one") {
  auto db = std::move(*store::Store::Open(":memory:"));
  server::State state(db.get());
  REQUIRE(state.PutTopology(testing::TwoByTwo(), "test").has_value());
  server::Api api(&state, nullptr);
  std::string text = server::Sha256Hex("reader-token-0123456") + " reader alice\n" +
                     server::Sha256Hex("admin-token-0123456789") + " admin bob\n";
  api.RequireTokens(std::make_shared<const server::TokenTable>(*server::TokenTable::Parse(text, "t")));
  auto call = [&](std::string method, std::string target, std::string token, std::string body = "") {
    server::ApiRequest r;
    r.method = std::move(method);
    r.target = std::move(target);
    r.body = std::move(body);
    if (!token.empty()) r.headers["authorization"] = "Bearer " + token;
    return api.Handle(r);
  };
  CHECK(call("GET", "/healthz", "").status == 200);  // always open
  CHECK(call("GET", "/readyz", "").status == 200);
  auto unauth = call("GET", "/v1/topology", "");
  CHECK(unauth.status == 401);
  CHECK(unauth.content_type == "application/problem+json");
  CHECK(call("GET", "/v1/topology", "wrong-token-000000").status == 401);
  CHECK(call("GET", "/v1/topology", "reader-token-0123456").status == 200);
  auto forbidden = call("PUT", "/v1/topology", "reader-token-0123456", testing::TwoByTwo().dump());
  CHECK(forbidden.status == 403);
  CHECK(nlohmann::json::parse(forbidden.body)["detail"] ==
        "PUT /v1/topology needs the admin role; token 'alice' is reader");
  CHECK(call("PUT", "/v1/topology", "admin-token-0123456789", testing::TwoByTwo().dump()).status == 200);
  CHECK(call("POST", "/v1/drains", "reader-token-0123456", "{}").status == 403);
}

TEST_CASE("metrics render in the Prometheus text format") {
  server::Metrics m;
  m.DeclareCounter("x_total", "Things.");
  m.DeclareHistogram("lat_seconds", "Latency.", {0.1, 1});
  m.Add("x_total", {{"route", "GET /a"}, {"status", "200"}});
  m.Add("x_total", {{"route", "GET /a"}, {"status", "200"}}, 2);
  m.Observe("lat_seconds", {}, 0.05);
  m.Observe("lat_seconds", {}, 0.5);
  m.Observe("lat_seconds", {}, 5);
  m.Add("quote", {{"v", "a\"b"}});
  std::string text = m.Render();
  CHECK(text.find("# TYPE x_total counter\n") != std::string::npos);
  CHECK(text.find("x_total{route=\"GET /a\",status=\"200\"} 3\n") != std::string::npos);
  // Buckets are cumulative: <=0.1: 1, <=1: 2, +Inf: 3.
  CHECK(text.find("lat_seconds_bucket{le=\"0.1\"} 1\n") != std::string::npos);
  CHECK(text.find("lat_seconds_bucket{le=\"1\"} 2\n") != std::string::npos);
  CHECK(text.find("lat_seconds_bucket{le=\"+Inf\"} 3\n") != std::string::npos);
  CHECK(text.find("lat_seconds_sum 5.55\n") != std::string::npos);
  CHECK(text.find("lat_seconds_count 3\n") != std::string::npos);
  CHECK(text.find("quote{v=\"a\\\"b\"} 1\n") != std::string::npos);
}
