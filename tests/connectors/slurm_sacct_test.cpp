// sacct --json as a workload trace (connectors/slurm_sacct.h), on the two
// shapes in tests/data/connectors (origins in that folder's README.md).
#include "connectors/slurm_sacct.h"

#include <doctest/doctest.h>

#include "connectors/test_data.h"

namespace drainwise::connectors {
namespace {

TEST_CASE("sacct --json of Slurm 23.11 (data_parser v0.0.40)") {
  Diagnostics diag;
  auto jobs = ParseSacctJson(testdata::ReadText("connectors/sacct_v0040_mixed.json"), &diag);
  REQUIRE(jobs);
  REQUIRE(jobs->size() == 3);
  const SacctJob& a = (*jobs)[0];
  CHECK(a.id == "1001");
  CHECK(a.name == "pretrain-7b");
  CHECK(a.state == "COMPLETED");
  CHECK(a.submit == 1764547200);
  CHECK(a.start == 1764547260);
  CHECK(a.elapsed_s == 14400);
  CHECK(a.limit_s == 480 * 60);  // limit.number is in minutes
  CHECK(a.nodes == 2);
  CHECK(a.gpus == 16);
  CHECK(a.nodelist == "gpu-[001-002]");
  CHECK((*jobs)[1].id == "1002_3");  // array task
  CHECK((*jobs)[2].state == "RUNNING");
  CHECK((*jobs)[2].end == 0);
  CHECK((*jobs)[2].elapsed_s == 7200);
  REQUIRE(diag.skipped.size() == 1);
  CHECK(diag.skipped[0].item == "job 1004");
  CHECK(diag.skipped[0].reason == "never ran (state PENDING, start 0, 0 nodes allocated)");
}

TEST_CASE("sacct --json of Slurm 21.08 (openapi/dbv0.0.37)") {
  auto jobs = ParseSacctJson(testdata::ReadText("connectors/sacct_v0037_requeued.json"));
  REQUIRE(jobs);
  REQUIRE(jobs->size() == 1);
  const SacctJob& j = jobs->front();
  CHECK(j.id == "55978384");
  CHECK(j.state == "REQUEUED");   // a plain string before 23.02
  CHECK(j.limit_s == 1440 * 60);  // a plain number of minutes
  CHECK(j.nodes == 2);
  CHECK(j.gpus == 16);
  CHECK(j.submit == 1673274000);
  CHECK(j.elapsed_s == 86301);
}

TEST_CASE("sacct --json: what is not a trace is refused or skipped, by name") {
  auto bad = ParseSacctJson("{\"nodes\": []}");
  REQUIRE(!bad);
  CHECK(bad.error().message == "sacct --json: no \"jobs\" list (is this the output of sacct --json?)");
  CHECK(!ParseSacctJson("not json"));
  Diagnostics diag;
  auto jobs = ParseSacctJson(R"({"jobs":[42, {"name":"x"}]})", &diag);
  REQUIRE(jobs);
  CHECK(jobs->empty());
  REQUIRE(diag.skipped.size() == 2);
  CHECK(diag.skipped[1].item == "jobs[1]");
  // Unset and infinite limits are 0 (no limit known).
  jobs = ParseSacctJson(
      R"({"jobs":[{"job_id":7,"allocation_nodes":{"set":true,"number":1},
          "time":{"start":10,"submission":5,"elapsed":60,"limit":{"set":true,"infinite":true,"number":0}}}]})");
  REQUIRE(jobs);
  REQUIRE(jobs->size() == 1);
  CHECK(jobs->front().limit_s == 0);
  CHECK(jobs->front().nodes == 1);
}

}  // namespace
}  // namespace drainwise::connectors
