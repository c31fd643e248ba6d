// The REST API in-process: no sockets, a fake engine, a real store.
#include <doctest/doctest.h>

#include "codec/native.h"
#include "server/api.h"
#include "server/state.h"
#include "store/store.h"
#include "testing/fabrics.h"

using namespace drainwise;
using nlohmann::json;

namespace {

// The engine's typed interface with canned answers: every assessment is
// "allow" with nothing affected, the model predicts 1.0 s undrained and
// 1.5 s with any drain. Requests reach it typed (the server's codec parsed
// them), so it records what it was given.
class FakeEngine : public server::Engine {
 public:
  int assessments = 0;
  model::Drain last_active;  // the view's active drains at the last assessment
  int last_active_drain_count = 0;
  Result<engine::AssessOutcome> Assess(const engine::View& view, const engine::AssessRequest& request,
                                       const engine::Call&) override {
    ++assessments;
    last_active = view.active;
    last_active_drain_count = view.active_drain_count;
    engine::AssessOutcome out;
    out.assessment.scenario.drain = request.drain;
    out.assessment.scenario.combined = view.active.Merge(request.drain);
    return out;
  }
  Result<engine::CandidatesOutcome> DrainCandidates(const engine::View&, const engine::CandidatesRequest& request,
                                                    const engine::Call&) override {
    return engine::CandidatesOutcome{{}, request.tier, 0};
  }
  Result<engine::PlanOutcome> Plan(const engine::View&, const engine::PlanRequest&, const engine::Call&) override {
    return engine::PlanOutcome{};
  }
  Result<double> PredictIteration(const engine::View&, model::JobId, const model::Drain& d,
                                  const engine::Call&) override {
    return d.empty() ? 1.0 : 1.5;  // the model: draining anything costs 50%
  }
  Result<engine::FitOutcome> Calibrate(const engine::View& view, const std::vector<engine::StoredObservation>& obs,
                                       const engine::Call&) override {
    engine::FitOutcome out;
    out.fit.observations = static_cast<int>(obs.size());
    out.fitted = *view.calibration;
    return out;
  }
};

struct Fixture {
  std::unique_ptr<store::Store> db = std::move(*store::Store::Open(":memory:"));
  server::State state{db.get()};
  FakeEngine engine;
  server::Api api{&state, &engine};

  server::ApiResponse Call(std::string method, std::string target, std::string body = "",
                           std::map<std::string, std::string> headers = {}) {
    server::ApiRequest r;
    r.method = std::move(method);
    r.target = std::move(target);
    r.body = std::move(body);
    r.headers = std::move(headers);
    return api.Handle(r);
  }
};

json Jobs() {
  return {{"format", "drainwise.jobs/v1"}, {"jobs", {{{"id", "j1"}, {"hosts", {"h0", "h2"}}, {"priority", 50}}}}};
}

}  // namespace

TEST_CASE("before any topology: live, not ready, 503 on reads") {
  Fixture f;
  CHECK(f.Call("GET", "/healthz").status == 200);
  auto r = f.Call("GET", "/readyz");
  CHECK(r.status == 503);
  CHECK(r.content_type == "application/problem+json");
  CHECK(f.Call("GET", "/v1/topology").status == 503);
  CHECK(f.Call("PUT", "/v1/jobs", Jobs().dump()).status == 409);
}

TEST_CASE("PUT topology then jobs; a rejected document changes nothing") {
  Fixture f;
  auto r = f.Call("PUT", "/v1/topology", testing::TwoByTwo().dump());
  CHECK(r.status == 201);
  CHECK(json::parse(r.body)["version"] == 1);
  CHECK(f.Call("PUT", "/v1/jobs", Jobs().dump()).status == 201);
  // Same document again: no new version.
  r = f.Call("PUT", "/v1/topology", testing::TwoByTwo().dump());
  CHECK(r.status == 200);
  CHECK(json::parse(r.body)["created"] == false);

  json bad = testing::TwoByTwo();
  bad["links"].push_back({{"a", "leaf0"}, {"b", "spine-9"}, {"gbps", 100}});
  r = f.Call("PUT", "/v1/topology", bad.dump());
  CHECK(r.status == 400);
  CHECK(r.content_type == "application/problem+json");
  auto problem = json::parse(r.body);
  CHECK(problem["status"] == 400);
  CHECK(problem["detail"].get<std::string>().find("unknown node 'spine-9'") != std::string::npos);
  auto topo = f.Call("GET", "/v1/topology");
  CHECK(topo.status == 200);
  CHECK(json::parse(topo.body) == codec::TopologyToJson(testing::TopologyFromJson(testing::TwoByTwo())));

  r = f.Call("PUT", "/v1/jobs", R"({"format":"drainwise.jobs/v1","jobs":[{"id":"x","hosts":["nope"]}]})");
  CHECK(r.status == 400);
  CHECK(json::parse(r.body)["detail"] == "jobs[0] ('x'): hosts[0]: unknown host 'nope'");
  CHECK(json::parse(f.Call("GET", "/v1/jobs").body)["jobs"].size() == 1);
  CHECK(f.Call("GET", "/v1/jobs/j1").status == 200);
  CHECK(f.Call("GET", "/v1/jobs/zzz").status == 404);

  auto snaps = json::parse(f.Call("GET", "/v1/snapshots").body);
  CHECK(snaps["current"]["topology_version"] == 1);
  CHECK(snaps["current"]["jobs_version"] == 1);
  CHECK(snaps["versions"].size() == 2);
}

TEST_CASE("malformed bodies, unknown routes and methods") {
  Fixture f;
  auto r = f.Call("PUT", "/v1/topology", "{not json");
  CHECK(r.status == 400);
  CHECK(json::parse(r.body)["detail"].get<std::string>().rfind(
            "request body: malformed JSON at byte 3: parse error at line 1, column 3", 0) == 0);
  CHECK(f.Call("PUT", "/v1/topology", "").status == 400);
  CHECK(f.Call("GET", "/v2/whatever").status == 404);
  CHECK(f.Call("DELETE", "/v1/topology").status == 405);
}

TEST_CASE("assessments are stored, found by ticket, and idempotent") {
  Fixture f;
  f.Call("PUT", "/v1/topology", testing::TwoByTwo().dump());
  json req = {{"drain", {{"switches", {"spine0"}}}}, {"ticket", "CHG-7"}, {"requested_by", "bob"}};
  auto r = f.Call("POST", "/v1/assessments", req.dump(), {{"idempotency-key", "abc"}});
  REQUIRE(r.status == 201);
  auto body = json::parse(r.body);
  std::string id = body["id"];
  CHECK(body["verdict"] == "allow");
  CHECK(body["ticket"] == "CHG-7");
  CHECK(body["topology_version"] == 1);
  auto again = f.Call("POST", "/v1/assessments", req.dump(), {{"idempotency-key", "abc"}});
  CHECK(again.status == 200);
  CHECK(json::parse(again.body)["id"] == id);
  CHECK(f.engine.assessments == 1);  // the replay did not simulate again
  CHECK(json::parse(f.Call("GET", "/v1/assessments/" + id).body)["drain"]["switches"][0] == "spine0");
  CHECK(json::parse(f.Call("GET", "/v1/assessments?ticket=CHG-7").body)["assessments"].size() == 1);
  CHECK(f.Call("GET", "/v1/assessments/nope").status == 404);
  auto text = f.Call("GET", "/v1/assessments/" + id + "?format=text");
  CHECK(text.content_type.rfind("text/plain", 0) == 0);
  CHECK(text.body.rfind("ALLOW  drain [spine0]  assessment " + id, 0) == 0);  // rendered from the stored record
  CHECK(f.Call("POST", "/v1/assessments", R"({"ticket":"x"})").status == 400);
}

TEST_CASE("active drains are recorded, applied to assessments, and ended") {
  Fixture f;
  f.Call("PUT", "/v1/topology", testing::TwoByTwo().dump());
  auto r = f.Call("POST", "/v1/drains", R"({"drain":{"switches":["spine1"]},"ticket":"CHG-1"})");
  REQUIRE(r.status == 201);
  std::string id = json::parse(r.body)["id"];
  CHECK(f.Call("POST", "/v1/drains", R"({"drain":{"switches":["spine9"]}})").status == 400);
  CHECK(json::parse(f.Call("GET", "/v1/drains").body)["drains"].size() == 1);
  f.Call("POST", "/v1/assessments", R"({"drain":{"switches":["spine0"]}})");
  CHECK(f.engine.last_active.switches.size() == 1);
  CHECK(f.engine.last_active_drain_count == 1);
  CHECK(f.Call("DELETE", "/v1/drains/" + id).status == 200);
  CHECK(f.Call("DELETE", "/v1/drains/" + id).status == 404);
  CHECK(json::parse(f.Call("GET", "/v1/drains").body)["drains"].empty());
  CHECK(json::parse(f.Call("GET", "/v1/drains?all=true").body)["drains"].size() == 1);
}

TEST_CASE("query parsing and admission classes") {
  auto q = server::ParseQuery("tier=spine&switches=a%2Cb&switches=c&x");
  CHECK(q["tier"] == "spine");
  CHECK(q["switches"] == "a,b,c");
  CHECK(q.count("x") == 1);
  Fixture f;
  server::ApiRequest r;
  r.method = "POST";
  r.target = "/v1/assessments";
  CHECK(f.api.Route(r).admission == server::Admission::kSimulation);
  r.method = "GET";
  r.target = "/healthz";
  CHECK(f.api.Route(r).admission == server::Admission::kInline);
  r.target = "/v1/assessments/a-1";
  CHECK(f.api.Route(r).RouteName() == "GET /v1/assessments/{id}");
  CHECK(f.api.Route(r).admission == server::Admission::kRead);
}

TEST_CASE("observations are stored with the model's prediction; calibration reports the error") {
  Fixture f;
  f.Call("PUT", "/v1/topology", testing::TwoByTwo().dump());
  f.Call("PUT", "/v1/jobs", Jobs().dump());
  // Observed 1.0 s undrained, 1.2 s with spine0 drained: observed slowdown
  // 20%; the fake model predicts 1.0 and 1.5 (50%): error 30 points.
  auto r = f.Call("POST", "/v1/observations", R"({"observations":[{"job":"j1","iteration_s":1.0},
      {"job":"j1","iteration_s":1.2,"drain":{"switches":["spine0"]}}]})");
  REQUIRE(r.status == 201);
  auto stored = json::parse(r.body)["stored"];
  REQUIRE(stored.size() == 2);
  CHECK(stored[1]["predicted_s"] == 1.5);
  CHECK(stored[1]["error_pct"].get<double>() == doctest::Approx(25.0));  // 1.5 / 1.2 - 1
  auto cal = json::parse(f.Call("GET", "/v1/calibration").body);
  CHECK(cal["observations"] == 2);
  CHECK(cal["slowdown_error_pct_points"]["pairs"] == 1);
  CHECK(cal["slowdown_error_pct_points"]["median"].get<double>() == doctest::Approx(30.0));
  // Iteration errors: 0% and 25%: median 12.5%.
  CHECK(cal["iteration_error_pct"]["median"].get<double>() == doctest::Approx(12.5));
  // A bad item rejects the whole batch.
  auto bad = f.Call("POST", "/v1/observations", R"([{"job":"j1","iteration_s":1.0},{"job":"nope","iteration_s":2}])");
  CHECK(bad.status == 404);
  CHECK(json::parse(f.Call("GET", "/v1/observations").body)["observations"].size() == 2);
  CHECK(f.Call("POST", "/v1/observations", R"({"job":"j1","iteration_s":-1})").status == 400);
}

TEST_CASE("list endpoints answer text tables for curl users") {
  Fixture f;
  f.Call("PUT", "/v1/topology", testing::TwoByTwo().dump());
  f.Call("PUT", "/v1/jobs", Jobs().dump());
  f.Call("POST", "/v1/drains", R"({"drain":{"switches":["spine1"]},"ticket":"CHG-3"})");
  auto jobs = f.Call("GET", "/v1/jobs", "", {{"accept", "text/plain"}});
  CHECK(jobs.content_type.rfind("text/plain", 0) == 0);
  CHECK(jobs.body.find("JOB") != std::string::npos);
  CHECK(jobs.body.find("j1") != std::string::npos);
  auto snaps = f.Call("GET", "/v1/snapshots?format=text");
  CHECK(snaps.body.rfind("serving topology v1 (4 switches, 4 hosts, 4 GPUs) and jobs v1 (1 jobs, 0 dropped)", 0) == 0);
  auto drains = f.Call("GET", "/v1/drains?format=text");
  CHECK(drains.body.find("CHG-3") != std::string::npos);
  // JSON stays the default.
  CHECK(f.Call("GET", "/v1/jobs").content_type == "application/json");
}
