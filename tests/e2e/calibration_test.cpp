// Closed loop against the real daemon: observations in, a fitted
// calibration out, used by the next assessments and kept across a restart.
#include <doctest/doctest.h>

#include <filesystem>

#include "testing/daemon.h"

using namespace drainwise;
using nlohmann::json;

TEST_CASE("observations, calibrate --apply, and the calibration in later assessments") {
  std::string dir = testing::MakeTempDir();
  testing::Daemon d({}, dir);
  REQUIRE_MESSAGE(d.started(), d.log());
  // What the model predicts now for a few jobs, undrained and with a spine
  // drained; the "observed" times are 10% slower than predicted.
  json batch = json::array();
  for (auto job : {"job-0001", "job-0002", "job-0003", "job-0005", "job-0006"}) {
    batch.push_back({{"job", job}, {"iteration_s", 1.0}});
    batch.push_back({{"job", job}, {"iteration_s", 1.0}, {"drain", {{"switches", {"p0-spine1"}}}}});
  }
  auto probe = d.Call("POST", "/v1/observations", json{{"observations", batch}}.dump());
  REQUIRE(probe.status == 201);
  json observed = json::array();
  for (size_t i = 0; i < batch.size(); ++i) {
    double predicted = probe.Json()["stored"][i]["predicted_s"];
    REQUIRE(predicted > 0);
    json o = batch[i];
    o["iteration_s"] = predicted * 1.1;
    observed.push_back(o);
  }
  REQUIRE(d.Call("POST", "/v1/observations", observed.dump()).status == 201);
  auto before = d.Get("/v1/calibration").Json();
  CHECK(before["observations"] == 20);
  CHECK(before["source"] == "configuration");

  std::string out, err;
  std::string server = "127.0.0.1:" + std::to_string(d.port());
  REQUIRE(testing::RunDrainwise({"calibrate", "--server", server}, &out, &err) == 0);
  CHECK(out.find("not applied") != std::string::npos);
  CHECK(d.Get("/v1/calibration").Json()["source"] == "configuration");
  REQUIRE(testing::RunDrainwise({"calibrate", "--server", server, "--apply"}, &out, &err) == 0);
  CHECK(out.find("applied (calibration v1)") != std::string::npos);
  auto after = d.Get("/v1/calibration").Json();
  CHECK(after["source"] == "fit");
  // 10% slower everywhere is best explained by lower goodput or higher
  // overheads: the fitted model moves away from the defaults.
  bool moved = after["goodput"].get<double>() < 0.95 - 1e-6 || after["per_hop_latency_us"].get<double>() > 1 + 1e-6 ||
               after["per_message_overhead_us"].get<double>() > 5 + 1e-6;
  CHECK(moved);
  auto a = d.Call("POST", "/v1/assessments", R"({"drain":{"switches":["p0-spine1"]},"modes":["job","flow"]})");
  REQUIRE(a.status == 201);
  CHECK(a.Json()["model"]["calibration"]["source"] == "fit");
  CHECK(a.Json()["model"]["goodput"] == after["goodput"]);

  // Kept across a restart.
  d.Stop();
  testing::Daemon again({}, dir);
  REQUIRE_MESSAGE(again.started(), again.log());
  CHECK(again.Get("/v1/calibration").Json()["goodput"] == after["goodput"]);
  std::filesystem::remove_all(dir);
}
