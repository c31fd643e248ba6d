// drainwise calibrate: fits the flow-level model's transport parameters
// (goodput, per-hop latency, per-message overhead) to the iteration times a
// running daemon has been told about (POST /v1/observations), and with
// --apply makes the daemon use them.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "app/http_client.h"

namespace drainwise::app {

namespace {

struct CalibrateArgs {
  ClientArgs client;
  bool apply = false;
  double timeout_s = 600;  // a fit over many observations takes a while
};

int RunCalibrate(const CalibrateArgs& a) {
  auto client = ClientFromArgs(a.client);
  if (!client) {
    fmt::print(stderr, "drainwise calibrate: {}\n", client.error().message);
    return 2;
  }
  auto res = client->Send("POST", "/v1/calibration", nlohmann::json{{"apply", a.apply}}.dump(), a.timeout_s);
  if (!res) {
    fmt::print(stderr, "drainwise calibrate: {}\n", res.error().message);
    return 2;
  }
  auto doc = nlohmann::json::parse(res->body, nullptr, false);
  if (res->status != 200 || !doc.is_object()) {
    fmt::print(stderr, "drainwise calibrate: {}\n", DescribeFailure(*res));
    return 1;
  }
  const auto& c = doc["calibration"];
  const auto& b = doc["before"];
  fmt::print("{:<26} {:>12} {:>12}\n", "", "before", "fitted");
  fmt::print("{:<26} {:>12.4f} {:>12.4f}\n", "goodput", b.value("goodput", 0.0), c.value("goodput", 0.0));
  fmt::print("{:<26} {:>12.3f} {:>12.3f}\n", "per-hop latency (us)", b.value("per_hop_latency_us", 0.0),
             c.value("per_hop_latency_us", 0.0));
  fmt::print("{:<26} {:>12.3f} {:>12.3f}\n", "per-message overhead (us)", b.value("per_message_overhead_us", 0.0),
             c.value("per_message_overhead_us", 0.0));
  fmt::print("{:<26} {:>12.5f} {:>12.5f}\n", "rmse of iteration (s)", b.value("rmse_s", 0.0), c.value("rmse_s", 0.0));
  fmt::print("observations used: {} (skipped {}); relative error median {:.2f}%, p90 {:.2f}%\n",
             c.value("observations", 0), doc.value("skipped", 0), 100 * c.value("median_rel_error", 0.0),
             100 * c.value("p90_rel_error", 0.0));
  const auto& h = doc["holdout"];
  if (h.is_object() && h["rmse_s"].is_number()) {
    fmt::print("held-out rmse ({} folds): fitted {:.5f} s, in force {:.5f} s\n", h.value("folds", 0),
               h.value("rmse_s", 0.0), h.value("rmse_before_s", 0.0));
  }
  if (doc.value("applied", false)) {
    fmt::print("applied (calibration v{})\n", doc.value("version", 0));
  } else if (!doc.value("applicable", true)) {
    fmt::print("not applied: {}\n", doc.value("not_applicable", "the fit is not applicable"));
    return a.apply ? 1 : 0;
  } else {
    fmt::print("not applied: run again with --apply to use it\n");
  }
  return 0;
}

}  // namespace

void RegisterCalibrate(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<CalibrateArgs>();
  auto* cmd = app.add_subcommand("calibrate", "Fit the flow model's transport parameters to observed iteration times");
  cmd->footer(
      "Exit codes: 0 fitted (and applied with --apply), 1 the daemon refused (the reason on stderr),\n"
      "2 usage, connection or TLS error. Token: --token-file FILE, --token T or DRAINWISE_TOKEN.");
  AddClientOptions(cmd, &args->client);
  cmd->add_option("--timeout", args->timeout_s, "Seconds to wait for the fit")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 3600.0));
  cmd->add_flag("--apply", args->apply, "Make the daemon use the fitted parameters");
  cmd->callback([args, exit_code] { *exit_code = RunCalibrate(*args); });
}

}  // namespace drainwise::app
