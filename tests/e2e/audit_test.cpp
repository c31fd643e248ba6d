// Idempotency keys and the audit trail against the real daemon (issue 12):
// a key is scoped to the authenticated principal and bound to the request
// that first used it, so reusing it for another drain is a 422, never the
// earlier verdict; every record names the principal apart from the
// client's requested_by; text listings cannot be forged with a line break.
#include <doctest/doctest.h>

#include <openssl/evp.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "testing/daemon.h"

using namespace drainwise;
using nlohmann::json;

namespace {

std::string Sha256Hex(const std::string& text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(text.data(), text.size(), digest, &len, EVP_sha256(), nullptr);
  std::string out;
  for (unsigned i = 0; i < len; ++i) out += fmt::format("{:02x}", digest[i]);
  return out;
}

constexpr const char* kAlice = "alice-operator-token-0001";
constexpr const char* kBob = "bob-operator-token-000002";
constexpr const char* kAdmin = "carol-admin-token-0000003";

std::map<std::string, std::string> Auth(const std::string& token, const std::string& key = "") {
  std::map<std::string, std::string> h = {{"Authorization", "Bearer " + token}};
  if (!key.empty()) h["Idempotency-Key"] = key;
  return h;
}

}  // namespace

TEST_CASE("Idempotency-Key: replay, 422 for another request, scoped to the principal; principals recorded") {
  std::string dir = testing::MakeTempDir();
  std::ofstream(dir + "/tokens") << Sha256Hex(kAlice) << " operator alice\n"
                                 << Sha256Hex(kBob) << " operator bob\n"
                                 << Sha256Hex(kAdmin) << " admin carol\n";
  std::ofstream(dir + "/config.json") << R"({"server":{"tokens_file":")" << dir << R"(/tokens"}})";
  testing::Daemon d({"--config", dir + "/config.json"}, dir);
  REQUIRE_MESSAGE(d.started(), d.log());

  // The demo fabric.
  json mild = {{"drain", {{"switches", {"p0-spine0"}}}}, {"ticket", "CHG-1"}, {"requested_by", "alice@example"}};
  auto first = d.Call("POST", "/v1/assessments", mild.dump(), Auth(kAlice, "\"key-1\""));
  REQUIRE_MESSAGE(first.status == 201, first.body);
  std::string id = first.Json()["id"];
  CHECK(first.Json()["principal"] == "alice (operator)");
  CHECK(first.Json()["requested_by"] == "alice@example");

  SUBCASE("the same request again is replayed, even spelled with an encoded path") {
    auto again = d.Call("POST", "/v1/%61ssessments", mild.dump(), Auth(kAlice, "\"key-1\""));
    CHECK(again.status == 200);
    CHECK(again.headers["idempotent-replayed"] == "true");
    CHECK(again.Json()["id"] == id);
    CHECK(again.headers["location"] == "/v1/assessments/" + id);
  }
  SUBCASE("the same key with another body is refused with 422 naming the key") {
    json other = mild;
    other["drain"]["switches"] = {"p0-spine1"};
    auto reused = d.Call("POST", "/v1/assessments", other.dump(), Auth(kAlice, "\"key-1\""));
    CHECK(reused.status == 422);
    CHECK(reused.headers["content-type"] == "application/problem+json");
    CHECK(reused.Json()["status"] == 422);
    CHECK(reused.Json()["detail"].get<std::string>().find("'key-1'") != std::string::npos);
    CHECK(reused.headers.count("idempotent-replayed") == 0);
    // The same key on another route is another request too.
    auto plan = d.Call("POST", "/v1/plans", R"({"switches":["p0-spine0"]})", Auth(kAlice, "\"key-1\""));
    CHECK(plan.status == 422);
  }
  SUBCASE("another principal's key of the same name is its own") {
    json other = mild;
    other["drain"]["switches"] = {"p0-spine1"};
    auto bobs = d.Call("POST", "/v1/assessments", other.dump(), Auth(kBob, "\"key-1\""));
    CHECK(bobs.status == 201);
    CHECK(bobs.Json()["id"] != id);
    CHECK(bobs.Json()["principal"] == "bob (operator)");
  }
  SUBCASE("drains and documents record the principal too") {
    auto drain = d.Call("POST", "/v1/drains", R"({"drain":{"switches":["p0-spine0"]},"requested_by":"someone else"})",
                        Auth(kBob));
    REQUIRE(drain.status == 201);
    CHECK(drain.Json()["principal"] == "bob (operator)");
    CHECK(drain.Json()["requested_by"] == "someone else");
    auto listed = d.Call("GET", "/v1/drains", "", Auth(kBob)).Json();
    CHECK(listed["drains"][0]["principal"] == "bob (operator)");
    auto policy = d.Call("GET", "/v1/policy", "", Auth(kAdmin));
    REQUIRE(policy.status == 200);
    auto put = d.Call("PUT", "/v1/policy", policy.body, Auth(kAdmin));
    CHECK((put.status == 200 || put.status == 201));
    auto listing = d.Call("GET", "/v1/assessments", "", Auth(kBob)).Json();
    CHECK(listing["assessments"][0]["principal"] == "alice (operator)");
  }
  d.Stop();
  std::filesystem::remove_all(dir);
}

TEST_CASE("anonymous requests are recorded with the peer address; a line break cannot forge a text row") {
  testing::Daemon d;
  REQUIRE_MESSAGE(d.started(), d.log());
  std::string forged = "CHG-9\nd-20990101T000000-ffffffff  2099-01-01T00:00:00Z  -  -  CHG-0  {}";
  auto drain = d.Call("POST", "/v1/drains", json{{"drain", {{"switches", {"p0-spine0"}}}}, {"ticket", forged}}.dump());
  REQUIRE_MESSAGE(drain.status == 201, drain.body);
  CHECK(drain.Json()["principal"] == "anonymous (127.0.0.1)");
  CHECK(drain.Json()["ticket"] == forged);  // JSON keeps the value as given
  auto text = d.Get("/v1/drains?format=text");
  REQUIRE(text.status == 200);
  // A header and one row: the line break is shown as \n inside the cell.
  CHECK(std::count(text.body.begin(), text.body.end(), '\n') == 2);
  CHECK(text.body.find("CHG-9\\nd-20990101T000000-ffffffff") != std::string::npos);
  CHECK(text.body.find("anonymous (127.0.0.1)") != std::string::npos);
  d.Stop();
}
