// The API side of idempotency keys (IETF Idempotency-Key draft) and of the
// audit trail, in-process with a real store and a fake engine.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <thread>

#include "server/api.h"
#include "server/auth.h"
#include "server/routes/common.h"
#include "server/routes/idempotency.h"
#include "store/store.h"
#include "testing/fabrics.h"

using namespace drainwise;
using nlohmann::json;

namespace {

class CountingEngine : public server::Engine {
 public:
  std::atomic<int> assessments = 0;
  int plans = 0;
  // When set, Assess waits on `gate` after announcing itself on `entered`.
  std::promise<void>* entered = nullptr;
  std::shared_future<void> gate;
  Result<engine::AssessOutcome> Assess(const engine::View& view, const engine::AssessRequest& request,
                                       const engine::Call&) override {
    ++assessments;
    if (entered) {
      entered->set_value();
      gate.wait();
    }
    // deny when the drain names spine0, else allow: a reused key must never
    // turn one verdict into the other.
    bool deny = std::any_of(request.drain.switches.begin(), request.drain.switches.end(),
                            [&](model::NodeId n) { return view.snapshot->topology->node(n).name == "spine0"; });
    engine::AssessOutcome out;
    out.assessment.scenario.drain = request.drain;
    out.assessment.scenario.verdict.decision = deny ? policies::Decision::kDeny : policies::Decision::kAllow;
    return out;
  }
  Result<engine::CandidatesOutcome> DrainCandidates(const engine::View&, const engine::CandidatesRequest&,
                                                    const engine::Call&) override {
    return engine::CandidatesOutcome{};
  }
  Result<engine::PlanOutcome> Plan(const engine::View&, const engine::PlanRequest&, const engine::Call&) override {
    ++plans;
    return engine::PlanOutcome{};
  }
  Result<double> PredictIteration(const engine::View&, model::JobId, const model::Drain&,
                                  const engine::Call&) override {
    return 1.0;
  }
  Result<engine::FitOutcome> Calibrate(const engine::View& view, const std::vector<engine::StoredObservation>&,
                                       const engine::Call&) override {
    engine::FitOutcome out;
    out.fitted = *view.calibration;
    return out;
  }
};

struct AuditFixture {
  explicit AuditFixture(store::StoreOptions options = {}) : db(std::move(*store::Store::Open(":memory:", options))) {
    REQUIRE(state.PutTopology(testing::TwoByTwo(), "test").has_value());
    std::string text = server::Sha256Hex("alice-token-0123456") + " operator alice\n" +
                       server::Sha256Hex("bob-token-012345678") + " operator bob\n" +
                       server::Sha256Hex("carol-token-0123456") + " admin carol\n";
    api.RequireTokens(std::make_shared<const server::TokenTable>(*server::TokenTable::Parse(text, "t")));
  }
  std::unique_ptr<store::Store> db;
  server::State state{db.get()};
  CountingEngine engine;
  server::Api api{&state, &engine};

  server::ApiResponse Call(const std::string& who, std::string method, std::string target, std::string body = "",
                           std::map<std::string, std::string> headers = {}) {
    server::ApiRequest r;
    r.method = std::move(method);
    r.target = std::move(target);
    r.body = std::move(body);
    r.headers = std::move(headers);
    r.peer = "192.0.2.7";
    if (!who.empty())
      r.headers["authorization"] = "Bearer " + who + "-token-" + (who == "bob" ? "012345678" : "0123456");
    return api.Handle(r);
  }
};

std::string HeaderOf(const server::ApiResponse& r, const std::string& name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return "";
}

const std::string kDeny = R"({"drain":{"switches":["spine0"]},"ticket":"CHG-1"})";
const std::string kAllow = R"({"drain":{"switches":["spine1"]},"ticket":"CHG-1"})";

}  // namespace

TEST_CASE("the same key and request replays; another request with the key is a 422 naming it") {
  AuditFixture f;
  auto first = f.Call("alice", "POST", "/v1/assessments", kDeny, {{"idempotency-key", "\"k-1\""}});
  REQUIRE(first.status == 201);
  auto body = json::parse(first.body);
  CHECK(body["verdict"] == "deny");
  CHECK(HeaderOf(first, "Idempotent-Replayed").empty());

  // Quoted (the draft's structured-field string) or bare, on an encoded path: the same request.
  // Plain variables, not a structured binding: clang 14 cannot capture one in INFO's lambda.
  for (const auto& target_key : std::vector<std::pair<std::string, std::string>>{
           {"/v1/assessments", "\"k-1\""}, {"/v1/assessments", "k-1"}, {"/v1/%61ssessments?format=json", "k-1"}}) {
    const std::string& target = target_key.first;
    const std::string& key = target_key.second;
    INFO(target << " " << key);
    auto again = f.Call("alice", "POST", target, kDeny, {{"idempotency-key", key}});
    CHECK(again.status == 200);
    CHECK(HeaderOf(again, "Idempotent-Replayed") == "true");
    CHECK(HeaderOf(again, "Location") == "/v1/assessments/" + body["id"].get<std::string>());
    CHECK(json::parse(again.body)["id"] == body["id"]);
    CHECK(json::parse(again.body)["verdict"] == "deny");
  }
  CHECK(f.engine.assessments == 1);

  // Issue 12: another drain under the same key came back with the first verdict.
  auto reused = f.Call("alice", "POST", "/v1/assessments", kAllow, {{"idempotency-key", "k-1"}});
  CHECK(reused.status == 422);
  CHECK(reused.content_type == "application/problem+json");
  auto problem = json::parse(reused.body);
  CHECK(problem["status"] == 422);
  CHECK(problem["type"] == "https://drainwise.dev/problems/idempotency-key-reused");
  CHECK(problem["detail"].get<std::string>().rfind("Idempotency-Key 'k-1' was first used for a different request", 0) ==
        0);
  // The same body on another route is another request.
  CHECK(f.Call("alice", "POST", "/v1/plans", kDeny, {{"idempotency-key", "k-1"}}).status == 422);
  CHECK(f.engine.assessments == 1);
  CHECK(f.engine.plans == 0);

  // Keys belong to a principal: bob's k-1 is his own.
  auto bobs = f.Call("bob", "POST", "/v1/assessments", kAllow, {{"idempotency-key", "k-1"}});
  CHECK(bobs.status == 201);
  CHECK(json::parse(bobs.body)["verdict"] == "allow");
  CHECK(f.engine.assessments == 2);
}

TEST_CASE("plans take an Idempotency-Key too") {
  AuditFixture f;
  std::string plan = R"({"switches":["spine0"]})";
  auto first = f.Call("alice", "POST", "/v1/plans", plan, {{"idempotency-key", "p-1"}});
  REQUIRE(first.status == 201);
  auto again = f.Call("alice", "POST", "/v1/plans", plan, {{"idempotency-key", "p-1"}});
  CHECK(again.status == 200);
  CHECK(HeaderOf(again, "Idempotent-Replayed") == "true");
  CHECK(json::parse(again.body)["id"] == json::parse(first.body)["id"]);
  CHECK(f.engine.plans == 1);
  CHECK(f.Call("alice", "POST", "/v1/plans", R"({"switches":["spine1"]})", {{"idempotency-key", "p-1"}}).status == 422);
}

TEST_CASE("a malformed Idempotency-Key is a 400 naming the header") {
  AuditFixture f;
  for (const std::string& key : {std::string(""), std::string("\"\""), std::string("a b"), std::string(256, 'k'),
                                 std::string("caf\xc3\xa9"), std::string("\"a\"b\"")}) {
    INFO("[" << key << "]");
    auto r = f.Call("alice", "POST", "/v1/assessments", kDeny, {{"idempotency-key", key}});
    CHECK(r.status == 400);
    CHECK(json::parse(r.body)["detail"].get<std::string>().rfind("Idempotency-Key: ", 0) == 0);
  }
  CHECK(f.Call("alice", "POST", "/v1/assessments", kDeny, {{"idempotency-key", std::string(255, 'k')}}).status == 201);
  CHECK(f.engine.assessments == 1);
}

TEST_CASE("an expired key is forgotten") {
  // The store's clock, which the API's lookup reads too: with the system
  // clock a second boundary between the first two calls expired the key
  // (1 s TTL, whole seconds) and made this test fail now and then.
  std::atomic<int64_t> now{1'000'000};
  store::StoreOptions options;
  options.idempotency_ttl_s = 60;
  options.clock = [&] { return now.load(); };
  AuditFixture f(options);
  REQUIRE(f.Call("alice", "POST", "/v1/assessments", kDeny, {{"idempotency-key", "k"}}).status == 201);
  CHECK(f.Call("alice", "POST", "/v1/assessments", kAllow, {{"idempotency-key", "k"}}).status == 422);
  now += 59;  // created_at + ttl > now: still in use
  CHECK(f.Call("alice", "POST", "/v1/assessments", kAllow, {{"idempotency-key", "k"}}).status == 422);
  now += 1;  // created_at + ttl <= now: expired
  auto later = f.Call("alice", "POST", "/v1/assessments", kAllow, {{"idempotency-key", "k"}});
  CHECK(later.status == 201);
  CHECK(json::parse(later.body)["verdict"] == "allow");
}

TEST_CASE("the fingerprint covers method, normalised path and body, and nothing else") {
  using server::routing::RequestFingerprint;
  auto base = RequestFingerprint("POST", "/v1/assessments", "{}");
  CHECK(base.size() == 64);
  CHECK(base == RequestFingerprint("POST", "/v1/assessments", "{}"));
  CHECK(base != RequestFingerprint("POST", "/v1/plans", "{}"));
  CHECK(base != RequestFingerprint("PUT", "/v1/assessments", "{}"));
  CHECK(base != RequestFingerprint("POST", "/v1/assessments", "{ }"));
  // Length prefixes: moving a boundary changes the input.
  CHECK(RequestFingerprint("POST", "/a", "b") != RequestFingerprint("POST", "/", "ab"));
}

TEST_CASE("every record names the principal apart from requested_by") {
  AuditFixture f;
  auto a = f.Call("alice", "POST", "/v1/assessments",
                  R"json({"drain":{"switches":["spine1"]},"requested_by":"mallory (admin)"})json");
  REQUIRE(a.status == 201);
  auto rec = json::parse(a.body);
  CHECK(rec["principal"] == "alice (operator)");
  CHECK(rec["requested_by"] == "mallory (admin)");
  auto stored = json::parse(f.Call("bob", "GET", "/v1/assessments/" + rec["id"].get<std::string>()).body);
  CHECK(stored["principal"] == "alice (operator)");
  auto list = json::parse(f.Call("bob", "GET", "/v1/assessments").body);
  CHECK(list["assessments"][0]["principal"] == "alice (operator)");

  auto p = f.Call("bob", "POST", "/v1/plans", R"({"switches":["spine0"]})");
  CHECK(json::parse(p.body)["principal"] == "bob (operator)");

  auto d = f.Call("bob", "POST", "/v1/drains", R"({"drain":{"switches":["spine1"]},"requested_by":"alice"})");
  REQUIRE(d.status == 201);
  CHECK(json::parse(d.body)["principal"] == "bob (operator)");
  CHECK(json::parse(d.body)["requested_by"] == "alice");
  CHECK(json::parse(f.Call("bob", "GET", "/v1/drains").body)["drains"][0]["principal"] == "bob (operator)");

  REQUIRE(f.Call("carol", "PUT", "/v1/policy", R"({"format":"drainwise.policy/v1","name":"p"})").status == 201);
  auto snaps = json::parse(f.Call("bob", "GET", "/v1/snapshots").body);
  bool policy_seen = false;
  for (const auto& v : snaps["versions"]) {
    if (v["kind"] == "policy") {
      policy_seen = true;
      CHECK(v["principal"] == "carol (admin)");
    }
  }
  CHECK(policy_seen);

  // Topology and jobs documents put over the API name their principal too.
  REQUIRE(f.Call("carol", "PUT", "/v1/jobs",
                 R"({"format":"drainwise.jobs/v1","jobs":[{"id":"j9","hosts":["h0","h2"]}]})")
              .status < 300);
  snaps = json::parse(f.Call("bob", "GET", "/v1/snapshots").body);
  bool jobs_seen = false;
  for (const auto& v : snaps["versions"]) {
    if (v["kind"] == "jobs" && v["principal"] == "carol (admin)") jobs_seen = true;
  }
  CHECK(jobs_seen);
}

TEST_CASE("without tokens the principal is anonymous with the peer address") {
  auto db = std::move(*store::Store::Open(":memory:"));
  server::State state(db.get());
  REQUIRE(state.PutTopology(testing::TwoByTwo(), "test").has_value());
  CountingEngine engine;
  server::Api api(&state, &engine);
  server::ApiRequest r;
  r.method = "POST";
  r.target = "/v1/drains";
  r.body = R"({"drain":{"switches":["spine1"]}})";
  r.peer = "198.51.100.4";
  auto d = api.Handle(r);
  REQUIRE(d.status == 201);
  CHECK(json::parse(d.body)["principal"] == "anonymous (198.51.100.4)");
  // A bearer token means nothing without a tokens file: still anonymous.
  r.headers["authorization"] = "Bearer alice-token-0123456";
  r.target = "/v1/assessments";
  auto a = api.Handle(r);
  REQUIRE(a.status == 201);
  CHECK(json::parse(a.body)["principal"] == "anonymous (198.51.100.4)");
}

TEST_CASE("text listings escape control characters: a line break cannot forge a row") {
  AuditFixture f;
  const std::string forged = "CHG-1\nd-fake  2099-01-01T00:00:00Z  -  -  CHG-0";
  auto d =
      f.Call("bob", "POST", "/v1/drains",
             json{{"drain", {{"switches", {"spine1"}}}}, {"ticket", forged}, {"requested_by", "eve\r\x1b[2J"}}.dump());
  REQUIRE(d.status == 201);
  auto drains = f.Call("bob", "GET", "/v1/drains?format=text");
  CHECK(std::count(drains.body.begin(), drains.body.end(), '\n') == 2);  // the header and one row
  CHECK(drains.body.find("CHG-1\\nd-fake") != std::string::npos);
  CHECK(drains.body.find("eve\\r\\x1b[2J") != std::string::npos);
  CHECK(drains.body.find("bob (operator)") != std::string::npos);

  auto a = f.Call("alice", "POST", "/v1/assessments",
                  json{{"drain", {{"switches", {"spine1"}}}}, {"ticket", forged}, {"requested_by", "x\ty"}}.dump());
  REQUIRE(a.status == 201);
  auto list = f.Call("bob", "GET", "/v1/assessments?format=text");
  CHECK(std::count(list.body.begin(), list.body.end(), '\n') == 2);
  CHECK(list.body.find("CHG-1\\nd-fake") != std::string::npos);
  CHECK(list.body.find("x\\ty") != std::string::npos);
  CHECK(list.body.find("alice (operator)") != std::string::npos);

  CHECK(server::routing::EscapeControl("a\nb\r\tc\\d\x01\x7f") == "a\\nb\\r\\tc\\\\d\\x01\\x7f");
  CHECK(server::routing::EscapeControl("\xc2\x85next \xc3\xa9") == "\\u0085next \xc3\xa9");  // NEL; é stays
}

TEST_CASE("a retry while the first request with the key still runs is a 409, then the replay") {
  AuditFixture f;
  std::promise<void> entered, open;
  f.engine.entered = &entered;
  f.engine.gate = open.get_future().share();
  auto first = std::async(std::launch::async, [&] {
    return f.Call("alice", "POST", "/v1/assessments", kDeny, {{"idempotency-key", "k"}});
  });
  entered.get_future().wait();  // the first request is inside the simulation
  auto retry = f.Call("alice", "POST", "/v1/assessments", kDeny, {{"idempotency-key", "k"}});
  CHECK(retry.status == 409);
  CHECK(json::parse(retry.body)["status"] == 409);
  CHECK(HeaderOf(retry, "Retry-After") == "1");
  // Another principal's key of the same name is not held.
  f.engine.entered = nullptr;
  CHECK(f.Call("bob", "POST", "/v1/assessments", kDeny, {{"idempotency-key", "k"}}).status == 201);
  open.set_value();
  CHECK(first.get().status == 201);
  auto replay = f.Call("alice", "POST", "/v1/assessments", kDeny, {{"idempotency-key", "k"}});
  CHECK(replay.status == 200);
  CHECK(HeaderOf(replay, "Idempotent-Replayed") == "true");
  CHECK(f.engine.assessments == 2);  // alice's once, bob's once
}
