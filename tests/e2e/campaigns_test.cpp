// POST /v1/campaigns through the real daemon (issue 15): a timed schedule on
// the demo fabric, stored like an assessment (kind "campaign"), read back as
// JSON and text, listed in the audit trail, with each batch's Slurm
// reservation; bad requests are 400s naming the field.
#include <doctest/doctest.h>

#include "testing/daemon.h"

using namespace drainwise;
using nlohmann::json;

TEST_CASE("campaigns: schedule, store, read back, text, audit trail, Slurm reservations") {
  testing::Daemon d;
  REQUIRE_MESSAGE(d.started(), d.log());
  json req = {{"items",
               {{{"switches", {"p0-leaf3-r0"}}, {"duration_s", 1800}},
                {{"switches", {"p0-spine0"}}, {"duration_s", 3600}},
                {{"switches", {"p0-spine1"}}, {"duration_s", 3600}}}},
              {"constraints", {{"max_concurrent", 1}}},
              {"objective", "gpu_hours"},
              {"ticket", "CHG-15"}};
  auto post = d.Call("POST", "/v1/campaigns", req.dump());
  REQUIRE_MESSAGE(post.status == 201, post.body);
  json c = post.Json();
  std::string id = c["id"];
  CHECK(id.rfind("c-", 0) == 0);
  CHECK(post.headers["location"] == "/v1/campaigns/" + id);
  CHECK(c["kind"] == "campaign");
  CHECK(c["ticket"] == "CHG-15");
  // max_concurrent 1: one item per batch, batches one after another.
  REQUIRE(c["batches"].size() == 3);
  std::string previous_end;
  for (const auto& b : c["batches"]) {
    CHECK(b["items"].size() == 1);
    CHECK(b["start"].is_string());
    CHECK(b["end"].is_string());
    if (!previous_end.empty()) CHECK(b["start"].get<std::string>() >= previous_end);
    previous_end = b["end"];
    CHECK(b["gpu_hours"]["total"].is_number());
    CHECK(b["slurm"]["reservation"] == "drainwise-" + id + "-b" + std::to_string(b["index"].get<int>()));
  }
  // The leaf batch keeps jobs off the leaf's hosts: a Slurm maintenance reservation.
  bool leaf_seen = false;
  for (const auto& b : c["batches"]) {
    if (b["drain"]["switches"][0] != "p0-leaf3-r0") continue;
    leaf_seen = true;
    REQUIRE(b["slurm"].contains("scontrol"));
    std::string sc = b["slurm"]["scontrol"];
    CHECK(sc.rfind("scontrol create reservation ReservationName=drainwise-" + id, 0) == 0);
    CHECK(sc.find("Flags=MAINT,IGNORE_JOBS") != std::string::npos);
    CHECK(sc.find("Duration=30 ") != std::string::npos);
    CHECK(b["slurm"]["slurmrestd"]["path"] == "/slurm/v0.0.43/reservation");
    CHECK(b["slurm"]["slurmrestd"]["body"]["duration"]["number"] == 30);
    CHECK(b["slurm"]["slurmrestd"]["body"]["node_list"] == b["slurm"]["hosts"]);
    CHECK_FALSE(b["slurm"]["hosts"].empty());
  }
  CHECK(leaf_seen);
  // The comparison: the chosen schedule and the two simple strategies, the
  // chosen one no dearer than either.
  REQUIRE(c["comparison"].size() == 3);
  CHECK(c["comparison"][0]["chosen"] == true);
  double chosen = c["comparison"][0]["gpu_hours"]["total"];
  CHECK(c["comparison"][1]["strategy"] == "now");
  CHECK(c["comparison"][2]["strategy"] == "after_jobs_end");
  if (c["comparison"][1]["all_allowed"] == c["comparison"][0]["all_allowed"]) {
    CHECK(chosen <= c["comparison"][1]["gpu_hours"]["total"].get<double>() + 1e-9);
  }

  auto got = d.Get("/v1/campaigns/" + id);
  REQUIRE(got.status == 200);
  CHECK(got.Json()["batches"] == c["batches"]);
  auto text = d.Get("/v1/campaigns/" + id + "?format=text");
  REQUIRE(text.status == 200);
  CHECK(text.body.find("BATCHES") != std::string::npos);
  CHECK(text.body.find("COMPARISON") != std::string::npos);
  CHECK(text.body.find("scontrol create reservation") != std::string::npos);
  // The audit trail lists it with the assessments.
  auto list = d.Get("/v1/assessments?ticket=CHG-15");
  REQUIRE(list.status == 200);
  REQUIRE(list.Json()["assessments"].size() == 1);
  CHECK(list.Json()["assessments"][0]["kind"] == "campaign");
  CHECK(list.Json()["assessments"][0]["id"] == id);

  // An assessment is not a campaign.
  auto a = d.Call("POST", "/v1/assessments", R"({"drain":{"switches":["p0-spine0"]}})");
  REQUIRE(a.status == 201);
  CHECK(d.Get("/v1/campaigns/" + a.Json()["id"].get<std::string>()).status == 404);
  CHECK(d.Get("/v1/campaigns/c-nope").status == 404);
}

TEST_CASE("campaigns: bad requests are 400 problems naming the field") {
  testing::Daemon d;
  REQUIRE_MESSAGE(d.started(), d.log());
  struct Case {
    const char* body;
    const char* field;
  } cases[] = {
      {R"({"items":[]})", "items"},
      {R"({"items":[{"switches":["nope"]}]})", "nope"},
      {R"({"items":[{"switches":["p0-spine0"],"duration_s":-1}]})", "duration_s"},
      {R"({"items":[{"switches":["p0-spine0"]}],"window":{"start":"2026-12-02T00:00:00Z","end":"2026-12-01T00:00:00Z"}})",
       "window.end"},
      {R"({"items":[{"switches":["p0-spine0"]}],"constraints":{"max_concurrent":0}})", "max_concurrent"},
      {R"({"items":[{"switches":["p0-spine0"]}],"objective":"cheap"})", "objective"},
      {R"({"items":[{"switches":["p0-spine0"]}],"constraints":{"blackouts":[{"start":"x","end":"y"}]}})", "blackouts"},
  };
  for (const auto& k : cases) {
    CAPTURE(k.body);
    auto r = d.Call("POST", "/v1/campaigns", k.body);
    CHECK(r.status == 400);
    CHECK(r.headers["content-type"] == "application/problem+json");
    CHECK(r.Json()["detail"].get<std::string>().find(k.field) != std::string::npos);
  }
}
