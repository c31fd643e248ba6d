// drainwise calibrate: fits the flow-level model's transport parameters
// (goodput, per-hop latency, per-message overhead) to the iteration times a
// running daemon has been told about (POST /v1/observations), and with
// --apply makes the daemon use them.
#include <utility>  // before Boost 1.74: asio/awaitable.hpp uses std::exchange

#include <chrono>

#include <boost/asio.hpp>
#include <boost/beast.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app/commands.h"

namespace drainwise::app {

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;

struct CalibrateArgs {
  std::string host = "127.0.0.1";
  std::string port = "8080";
  std::string token;
  bool apply = false;
};

int RunCalibrate(const CalibrateArgs& a) {
  http::response<http::string_body> res;
  try {
    net::io_context ioc;
    net::ip::tcp::resolver resolver(ioc);
    beast::tcp_stream stream(ioc);
    stream.expires_after(std::chrono::seconds(600));
    stream.connect(resolver.resolve(a.host, a.port));
    http::request<http::string_body> req{http::verb::post, "/v1/calibration", 11};
    req.set(http::field::host, a.host);
    req.set(http::field::content_type, "application/json");
    if (!a.token.empty()) req.set(http::field::authorization, "Bearer " + a.token);
    req.body() = nlohmann::json{{"apply", a.apply}}.dump();
    req.prepare_payload();
    http::write(stream, req);
    beast::flat_buffer buffer;
    http::read(stream, buffer, res);
  } catch (const std::exception& e) {
    fmt::print(stderr, "drainwise calibrate: {}:{}: {}\n", a.host, a.port, e.what());
    return 2;
  }
  auto doc = nlohmann::json::parse(res.body(), nullptr, false);
  if (res.result_int() != 200 || !doc.is_object()) {
    fmt::print(stderr, "drainwise calibrate: {}: {}\n", res.result_int(),
               doc.is_object() ? doc.value("detail", res.body()) : res.body());
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
  fmt::print("{}\n", a.apply ? fmt::format("applied (calibration v{})", doc.value("version", 0))
                             : "not applied: run again with --apply to use it");
  return 0;
}

}  // namespace

void RegisterCalibrate(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<CalibrateArgs>();
  auto server = std::make_shared<std::string>("127.0.0.1:8080");
  auto* cmd = app.add_subcommand("calibrate", "Fit the flow model's transport parameters to observed iteration times");
  cmd->add_option("--server", *server, "Daemon HOST:PORT (http)")->capture_default_str();
  cmd->add_option("--token", args->token, "Bearer token (operator)")->envname("DRAINWISE_TOKEN");
  cmd->add_flag("--apply", args->apply, "Make the daemon use the fitted parameters");
  cmd->callback([args, server, exit_code] {
    std::string s = *server;
    if (s.rfind("http://", 0) == 0) s = s.substr(7);
    while (!s.empty() && s.back() == '/') s.pop_back();
    size_t colon = s.rfind(':');
    args->host = s.substr(0, colon);
    if (colon != std::string::npos) args->port = s.substr(colon + 1);
    *exit_code = RunCalibrate(*args);
  });
}

}  // namespace drainwise::app
