// drainwise calibrate: fits the flow-level model's transport parameters
// (goodput, per-hop latency, per-message overhead) to the iteration times a
// running daemon has been told about (POST /v1/observations), shows which
// of them the observations identify and the leave-one-out errors, and with
// --apply makes the daemon use them; the daemon refuses (409, exit 1 here)
// a fit that predicts held-out observations no better than the parameters
// in force (docs/calibration.md).
#include <cmath>
#include <string>

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

// The fit's table: parameters in force and fitted, what the data
// identifies (with 95 % intervals), and the leave-one-out errors.
void PrintFit(const nlohmann::json& doc) {
  const auto& c = doc["calibration"];
  const auto& b = doc["before"];
  const auto& params = doc["parameters"];
  auto num = [](const nlohmann::json& j, const char* key) {
    return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<double>() : NAN;
  };
  fmt::print("{:<26} {:>12} {:>12}  {}\n", "", "in force", "fitted", "identified by the data (95 % interval)");
  struct Row {
    const char* label;
    const char* key;
    const char* fmt;
  } rows[] = {{"goodput", "goodput", "{:.4f}"},
              {"per-hop latency (us)", "per_hop_latency_us", "{:.3f}"},
              {"per-message overhead (us)", "per_message_overhead_us", "{:.3f}"}};
  for (const auto& r : rows) {
    std::string ident = "-";
    if (params.is_object() && params[r.key].is_object()) {
      const auto& p = params[r.key];
      const auto& iv = p["interval95"];
      if (p.value("identified", false) && iv.is_array() && iv.size() == 2 && iv[0].is_number() && iv[1].is_number()) {
        ident = fmt::format(fmt::runtime("yes [" + std::string(r.fmt) + ", " + r.fmt + "]"), iv[0].get<double>(),
                            iv[1].get<double>());
      } else {
        ident = fmt::format("no (data share {:.0f} %; default {:g})", 100 * p.value("data_share", 0.0),
                            p.value("default", 0.0));
      }
    }
    fmt::print("{:<26} {:>12} {:>12}  {}\n", r.label, fmt::format(fmt::runtime(r.fmt), num(b, r.key)),
               fmt::format(fmt::runtime(r.fmt), num(c, r.key)), ident);
  }
  fmt::print("{:<26} {:>12.5f} {:>12.5f}\n", "rmse of iteration (s)", num(b, "rmse_s"), num(c, "rmse_s"));
  fmt::print("observations used: {} (skipped {}); relative error median {:.2f}%, p90 {:.2f}%\n",
             c.value("observations", 0), doc.value("skipped", 0), 100 * c.value("median_rel_error", 0.0),
             100 * c.value("p90_rel_error", 0.0));
  const auto& h = doc["holdout"];
  if (h.is_object() && h["rmse_s"].is_number()) {
    fmt::print(
        "held-out ({}, {} refits): rms relative error fitted {:.3f}%, in force {:.3f}%; rmse {:.5f} s vs {:.5f} s\n",
        h.value("method", "k-fold"), h.value("folds", 0), 100 * num(h, "rel_rms_error"),
        100 * num(h, "rel_rms_error_before"), num(h, "rmse_s"), num(h, "rmse_before_s"));
  }
}

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
  if (res->status == 409 && doc.is_object() && doc["fit"].is_object()) {
    // --apply refused: the fit predicts held-out observations no better.
    PrintFit(doc["fit"]);
    fmt::print(stderr, "drainwise calibrate: refused: {}\n", doc.value("detail", "the fit is not applicable"));
    return 1;
  }
  if (res->status != 200 || !doc.is_object()) {
    fmt::print(stderr, "drainwise calibrate: {}\n", DescribeFailure(*res));
    return 1;
  }
  PrintFit(doc);
  if (doc.value("applied", false)) {
    fmt::print("applied (calibration v{})\n", doc.value("version", 0));
  } else if (!doc.value("applicable", true)) {
    fmt::print("not applicable: {}\n", doc.value("not_applicable", "the fit is not applicable"));
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
      "Exit codes: 0 fitted (and applied with --apply), 1 the daemon refused (the reason on stderr; with\n"
      "--apply also a fit that predicts held-out observations no better than the parameters in force),\n"
      "2 usage, connection or TLS error. Token: --token-file FILE, --token T or DRAINWISE_TOKEN.");
  AddClientOptions(cmd, &args->client);
  cmd->add_option("--timeout", args->timeout_s, "Seconds to wait for the fit")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 3600.0));
  cmd->add_flag("--apply", args->apply, "Make the daemon use the fitted parameters");
  cmd->callback([args, exit_code] { *exit_code = RunCalibrate(*args); });
}

}  // namespace drainwise::app
