// Closed loop against the real daemon: observations in, a fitted
// calibration out, used by the next assessments and kept across a restart;
// out-of-range observations refused; a fit applied only when it predicts
// held-out (leave-one-out) observations better than the parameters in
// force, and an apply of a worse one refused with 409 naming both errors.
#include <doctest/doctest.h>

#include <filesystem>

#include "testing/daemon.h"

using namespace drainwise;
using nlohmann::json;

namespace {

const char* const kJobs[] = {"job-0001", "job-0002", "job-0003", "job-0005", "job-0006"};

// What the model predicts now for a few jobs, undrained and with a spine
// drained, asked of a throw-away daemon on the same demo fabric so that the
// daemon under test stores only the observations the test means.
// With `calibration`, the probe first puts that calibration in force.
std::vector<json> Predictions(const json& calibration = nullptr) {
  testing::Daemon probe;
  REQUIRE_MESSAGE(probe.started(), probe.log());
  if (!calibration.is_null()) REQUIRE(probe.Call("PUT", "/v1/calibration", calibration.dump()).status == 201);
  json batch = json::array();
  for (auto job : kJobs) {
    batch.push_back({{"job", job}, {"iteration_s", 1.0}});
    batch.push_back({{"job", job}, {"iteration_s", 1.0}, {"drain", {{"switches", {"p0-spine1"}}}}});
  }
  auto r = probe.Call("POST", "/v1/observations", json{{"observations", batch}}.dump());
  REQUIRE(r.status == 201);
  std::vector<json> out;
  for (size_t i = 0; i < batch.size(); ++i) {
    double predicted = r.Json()["stored"][i]["predicted_s"];
    REQUIRE(predicted > 0);
    json o = batch[i];
    o["iteration_s"] = predicted;
    out.push_back(o);
  }
  return out;
}

}  // namespace

TEST_CASE("observations, calibrate --apply, and the calibration in later assessments") {
  auto predicted = Predictions();
  std::string dir = testing::MakeTempDir();
  testing::Daemon d({}, dir);
  REQUIRE_MESSAGE(d.started(), d.log());
  // The "observed" times are 10% slower than predicted.
  json observed = json::array();
  for (auto o : predicted) {
    o["iteration_s"] = o["iteration_s"].get<double>() * 1.1;
    observed.push_back(o);
  }
  REQUIRE(d.Call("POST", "/v1/observations", observed.dump()).status == 201);
  auto before = d.Get("/v1/calibration").Json();
  CHECK(before["observations"] == 10);
  CHECK(before["source"] == "configuration");

  std::string out, err;
  std::string server = "127.0.0.1:" + std::to_string(d.port());
  REQUIRE(testing::RunDrainwise({"calibrate", "--server", server}, &out, &err) == 0);
  CHECK(out.find("not applied: run again with --apply") != std::string::npos);
  CHECK(d.Get("/v1/calibration").Json()["source"] == "configuration");
  // Both held-out errors are reported; the fit's is the smaller (the
  // parameters in force are 10% off on every observation).
  auto fit = d.Call("POST", "/v1/calibration", R"({"apply":false})").Json();
  CHECK(fit["holdout"]["folds"] == 10);  // leave-one-out: one refit per observation
  CHECK(fit["holdout"]["method"] == "leave-one-out");
  CHECK(fit["applicable"] == true);
  CHECK(fit["holdout"]["rel_rms_error"].get<double>() < fit["holdout"]["rel_rms_error_before"].get<double>());
  CHECK(fit["parameters"]["goodput"]["identified"].is_boolean());
  CHECK(fit["unidentified"].is_array());
  MESSAGE("held-out rmse: fitted " << fit["holdout"]["rmse_s"] << " s, in force " << fit["holdout"]["rmse_before_s"]
                                   << " s");
  CHECK(out.find("held-out (leave-one-out, 10 refits)") != std::string::npos);

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

TEST_CASE("observations with non-finite, negative or out-of-range times are refused with 400 naming the field") {
  testing::Daemon d;
  REQUIRE_MESSAGE(d.started(), d.log());
  // 1e308 s was accepted before; so were 1e6+ s.
  for (std::string bad : {"1e308", "1000001", "-1", "0", "-0.5"}) {
    CAPTURE(bad);
    std::string body =
        R"({"observations":[{"job":"job-0001","iteration_s":0.5},{"job":"job-0002","iteration_s":)" + bad + "}]}";
    auto r = d.Call("POST", "/v1/observations", body);
    CHECK(r.status == 400);
    CHECK(r.headers["content-type"] == "application/problem+json");
    std::string detail = r.Json().value("detail", "");
    INFO(detail);
    CHECK(detail.find("observations[1].iteration_s") != std::string::npos);
    CHECK(detail.find("(0, 1e+06]") != std::string::npos);
  }
  // JSON has no NaN or infinity; a number that overflows a double is
  // refused by the parser, naming it (tests/advisor covers non-finite values).
  auto overflow = d.Call("POST", "/v1/observations", R"({"job":"job-0001","iteration_s":1e400})");
  CHECK(overflow.status == 400);
  CHECK(overflow.Json().value("detail", "").find("1e400") != std::string::npos);
  // Nothing of a refused batch is stored, not even its valid first item.
  CHECK(d.Get("/v1/observations").Json()["observations"].empty());
  CHECK(d.Call("POST", "/v1/observations", R"({"job":"job-0001","iteration_s":1000000})").status == 201);
}

TEST_CASE("apply refuses a fit that predicts held-out observations worse: 409 naming both errors, calibrate exits 1") {
  // An operator's parameters that are right: the observations are exactly
  // what the model predicts with them. The fit is pulled towards the
  // configuration's defaults (0.95, 1 us, 5 us), so each leave-one-out
  // prediction is a little off where the parameters in force are exact.
  const json truth = {{"format", "drainwise.calibration/v1"},
                      {"goodput", 0.85},
                      {"per_hop_latency_us", 2},
                      {"per_message_overhead_us", 12}};
  auto predicted = Predictions(truth);
  testing::Daemon d;
  REQUIRE_MESSAGE(d.started(), d.log());
  REQUIRE(d.Call("PUT", "/v1/calibration", truth.dump()).status == 201);
  json batch = json::array();
  for (const auto& o : predicted) batch.push_back(o);
  REQUIRE(d.Call("POST", "/v1/observations", batch.dump()).status == 201);

  // Without apply: a 200 that says why it is not applicable.
  auto look = d.Call("POST", "/v1/calibration", R"({"apply":false})");
  REQUIRE(look.status == 200);
  CHECK(look.Json()["applicable"] == false);
  CHECK(look.Json()["holdout"]["rel_rms_error"].get<double>() >
        look.Json()["holdout"]["rel_rms_error_before"].get<double>());

  auto r = d.Call("POST", "/v1/calibration", R"({"apply":true})");
  CHECK(r.status == 409);
  CHECK(r.headers["content-type"] == "application/problem+json");
  auto problem = r.Json();
  std::string detail = problem.value("detail", "");
  INFO(detail);
  CHECK(detail.rfind("calibration not applied: the fit does not predict held-out observations better", 0) == 0);
  CHECK(detail.find("(fit) vs") != std::string::npos);
  CHECK(detail.find("(in force)") != std::string::npos);
  CHECK(problem["fit"]["applied"] == false);
  CHECK(problem["fit"]["holdout"]["folds"] == 10);
  // Nothing changed.
  auto now = d.Get("/v1/calibration").Json();
  CHECK(now["source"] == "operator");
  CHECK(now["goodput"] == 0.85);

  std::string out, err;
  const std::string server = "127.0.0.1:" + std::to_string(d.port());
  CHECK(testing::RunDrainwise({"calibrate", "--server", server, "--apply"}, &out, &err) == 1);
  INFO(out << err);
  CHECK(err.find("refused: calibration not applied") != std::string::npos);
  CHECK(err.find("(in force)") != std::string::npos);
  CHECK(out.find("held-out (leave-one-out, 10 refits)") != std::string::npos);
  CHECK(testing::RunDrainwise({"calibrate", "--server", server}, &out, &err) == 0);
  CHECK(out.find("not applicable: the fit does not predict held-out observations better") != std::string::npos);
  CHECK(d.Get("/v1/calibration").Json()["goodput"] == 0.85);
}
