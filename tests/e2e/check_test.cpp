// `drainwise check` gates a change by its exit code, against the real daemon
// serving the demo fabric.
#include <doctest/doctest.h>

#include "testing/daemon.h"

using namespace drainwise;

TEST_CASE("drainwise check exit codes") {
  testing::Daemon d;
  REQUIRE_MESSAGE(d.started(), d.log());
  const std::string server = "http://127.0.0.1:" + std::to_string(d.port());
  std::string out, err;

  // A leaf whose single-homed hosts carry the priority-100 inference job.
  CHECK(testing::RunDrainwise({"check", "--server", server, "--switch", "p0-leaf3-r0", "--ticket", "CHG-9"}, &out,
                              &err) == 1);
  CHECK(out.find("DENY") == 0);
  CHECK(out.find("no-disconnect-priority") != std::string::npos);
  CHECK(out.find("migrate") != std::string::npos);

  // One spine: allowed.
  CHECK(testing::RunDrainwise({"check", "--server", server, "--switch", "p1-spine0"}, &out, &err) == 0);
  CHECK(out.find("ALLOW") == 0);

  // Two spines of one plane: warn, which passes unless --fail-on-warn.
  CHECK(testing::RunDrainwise({"check", "--server", server, "--switch", "p0-spine0", "--switch", "p1-spine0"}, &out,
                              &err) == 0);
  CHECK(out.find("WARN") == 0);
  CHECK(testing::RunDrainwise({"check", "--server", server, "--switch", "p0-spine0", "--switch", "p1-spine0",
                               "--fail-on-warn", "--format", "json"},
                              &out, &err) == 1);
  auto j = nlohmann::json::parse(out, nullptr, false);
  REQUIRE(j.is_object());
  CHECK(j["verdict"] == "warn");

  // Usage and connection errors: 2, with the reason on stderr.
  CHECK(testing::RunDrainwise({"check", "--server", server, "--switch", "no-such-switch"}, &out, &err) == 2);
  CHECK(err.find("unknown switch 'no-such-switch'") != std::string::npos);
  CHECK(testing::RunDrainwise({"check", "--server", server}, &out, &err) == 2);
  CHECK(testing::RunDrainwise({"check", "--server", "http://127.0.0.1:1", "--switch", "p1-spine0", "--retries", "0"},
                              &out, &err) == 2);
  CHECK(err.find("connection refused") != std::string::npos);
  CHECK(testing::RunDrainwise({"check", "--server", "ftp://x", "--switch", "p1-spine0"}, &out, &err) == 2);

  // The assessment was stored with its ticket.
  auto list = d.Get("/v1/assessments?ticket=CHG-9").Json();
  REQUIRE(list["assessments"].size() == 1);
  CHECK(list["assessments"][0]["verdict"] == "deny");
}

TEST_CASE("assessments, candidates and plans over REST on the demo") {
  testing::Daemon d;
  REQUIRE_MESSAGE(d.started(), d.log());
  auto a = d.Call("POST", "/v1/assessments",
                  R"({"drain":{"switches":["p0-leaf3-r0"]},"modes":["job","flow"],"ticket":"T-1"})");
  REQUIRE(a.status == 201);
  auto body = a.Json();
  CHECK(body["verdict"] == "deny");
  CHECK(body["topology_version"] == 1);
  REQUIRE_FALSE(body["allow_after"].empty());
  int idx = body["allow_after"][0];
  CHECK(body["recommendations"][idx]["kind"] == "migrate");
  CHECK(body["recommendations"][idx]["predicted"]["verdict"] == "allow");
  CHECK(a.headers["location"] == "/v1/assessments/" + body["id"].get<std::string>());
  auto again = d.Get("/v1/assessments/" + body["id"].get<std::string>()).Json();
  CHECK(again["verdict"] == "deny");
  CHECK(again["jobs"] == body["jobs"]);

  auto cands = d.Get("/v1/drain-candidates?tier=spine");
  REQUIRE(cands.status == 200);
  CHECK(cands.Json()["candidates"].size() == 8);
  auto text = d.Get("/v1/drain-candidates?tier=leaf&format=text");
  CHECK(text.headers["content-type"].rfind("text/plain", 0) == 0);
  CHECK(d.Get("/v1/drain-candidates?tier=nope").status == 400);

  auto plan =
      d.Call("POST", "/v1/plans", R"({"switches":["p0-spine0","p1-spine0","ss0-0","ss0-1"],"modes":["job","flow"]})");
  REQUIRE(plan.status == 201);
  auto p = plan.Json();
  CHECK(p["all_allowed"] == true);
  for (const auto& b : p["batches"]) CHECK(b["verdict"] == "allow");
  CHECK(d.Call("POST", "/v1/plans", R"({"switches":[]})").status == 400);
  CHECK(d.Call("POST", "/v1/assessments", R"({"drain":{"switches":["p0-spine0"]},"modes":["packet-level"]})").status ==
        400);
}
