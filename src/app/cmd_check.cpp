// drainwise check: asks a running daemon about a drain; the exit code gates
// a change (0 allow, and warn unless --fail-on-warn; 1 deny; 2 usage or
// connection error).
#include <chrono>
#include <cstdio>
#include <utility>  // before Boost 1.74: asio/awaitable.hpp uses std::exchange

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

struct CheckArgs {
  std::string server = "http://127.0.0.1:8080";
  std::vector<std::string> switches;
  std::vector<std::string> links;
  std::string ticket;
  std::string requested_by;
  std::string format = "text";
  std::string token;
  bool fail_on_warn = false;
  bool flow = true;
  int timeout_s = 120;
};

struct Url {
  std::string host;
  std::string port;
  std::string base;  // path prefix without trailing slash
};

bool ParseUrl(const std::string& url, Url* out, std::string* error) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0) {
    *error = fmt::format("--server '{}': expected http://HOST[:PORT][/PREFIX]", url);
    return false;
  }
  std::string rest = url.substr(scheme.size());
  size_t slash = rest.find('/');
  std::string hostport = rest.substr(0, slash);
  out->base = slash == std::string::npos ? "" : rest.substr(slash);
  while (!out->base.empty() && out->base.back() == '/') out->base.pop_back();
  if (!hostport.empty() && hostport.front() == '[') {
    size_t close = hostport.find(']');
    out->host = hostport.substr(1, close - 1);
    out->port = close + 1 < hostport.size() && hostport[close + 1] == ':' ? hostport.substr(close + 2) : "80";
  } else {
    size_t colon = hostport.rfind(':');
    out->host = hostport.substr(0, colon);
    out->port = colon == std::string::npos ? "80" : hostport.substr(colon + 1);
  }
  if (out->host.empty()) {
    *error = fmt::format("--server '{}': no host", url);
    return false;
  }
  return true;
}

int RunCheck(const CheckArgs& a) {
  if (a.switches.empty() && a.links.empty()) {
    fmt::print(stderr, "drainwise check: name at least one --switch or --link\n");
    return 2;
  }
  if (a.format != "text" && a.format != "json") {
    fmt::print(stderr, "drainwise check: --format must be text or json\n");
    return 2;
  }
  Url url;
  std::string error;
  if (!ParseUrl(a.server, &url, &error)) {
    fmt::print(stderr, "drainwise check: {}\n", error);
    return 2;
  }
  nlohmann::json links = nlohmann::json::array();
  for (const auto& l : a.links) {
    size_t colon = l.find(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == l.size()) {
      fmt::print(stderr, "drainwise check: --link '{}': expected A:B\n", l);
      return 2;
    }
    links.push_back({{"a", l.substr(0, colon)}, {"b", l.substr(colon + 1)}});
  }
  nlohmann::json body = {{"drain", {{"switches", a.switches}, {"links", links}}},
                         {"modes", a.flow ? nlohmann::json{"job", "flow"} : nlohmann::json{"job"}}};
  if (!a.ticket.empty()) body["ticket"] = a.ticket;
  body["requested_by"] = a.requested_by.empty() ? "drainwise-check" : a.requested_by;

  http::response<http::string_body> res;
  try {
    net::io_context ioc;
    net::ip::tcp::resolver resolver(ioc);
    beast::tcp_stream stream(ioc);
    stream.expires_after(std::chrono::seconds(a.timeout_s));
    stream.connect(resolver.resolve(url.host, url.port));
    http::request<http::string_body> req{http::verb::post, url.base + "/v1/assessments", 11};
    req.set(http::field::host, url.host);
    req.set(http::field::content_type, "application/json");
    req.set(http::field::accept, "application/json");
    if (!a.token.empty()) req.set(http::field::authorization, "Bearer " + a.token);
    req.body() = body.dump();
    req.prepare_payload();
    http::write(stream, req);
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(1ull << 30);
    http::read(stream, buffer, parser);
    res = parser.release();
    beast::error_code ec;
    stream.socket().shutdown(net::ip::tcp::socket::shutdown_both, ec);
  } catch (const std::exception& e) {
    fmt::print(stderr, "drainwise check: {}: {}\n", a.server, e.what());
    return 2;
  }
  auto doc = nlohmann::json::parse(res.body(), nullptr, false);
  if (res.result_int() != 201 && res.result_int() != 200) {
    std::string detail = doc.is_object() ? doc.value("detail", res.body()) : res.body();
    fmt::print(stderr, "drainwise check: {} {}: {}\n", res.result_int(), std::string(res.reason()), detail);
    return 2;
  }
  if (!doc.is_object() || !doc.contains("verdict")) {
    fmt::print(stderr, "drainwise check: the server's answer has no verdict\n");
    return 2;
  }
  std::string verdict = doc["verdict"];
  if (a.format == "json") {
    fmt::print("{}\n", doc.dump(2));
  } else {
    // The same table the server renders for ?format=text, fetched by id so
    // the summary is exactly what was stored.
    try {
      net::io_context ioc;
      net::ip::tcp::resolver resolver(ioc);
      beast::tcp_stream stream(ioc);
      stream.expires_after(std::chrono::seconds(30));
      stream.connect(resolver.resolve(url.host, url.port));
      http::request<http::string_body> req{http::verb::get,
                                           url.base + "/v1/assessments/" + doc.value("id", "") + "?format=text", 11};
      req.set(http::field::host, url.host);
      if (!a.token.empty()) req.set(http::field::authorization, "Bearer " + a.token);
      http::write(stream, req);
      beast::flat_buffer buffer;
      http::response<http::string_body> text;
      http::read(stream, buffer, text);
      fmt::print("{}", text.body());
    } catch (const std::exception&) {
      fmt::print("{} (assessment {})\n", verdict, doc.value("id", ""));
    }
  }
  if (verdict == "deny") return 1;
  if (verdict == "warn" && a.fail_on_warn) return 1;
  return 0;
}

}  // namespace

void RegisterCheck(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<CheckArgs>();
  auto* cmd = app.add_subcommand("check", "Ask a running daemon whether a drain may go ahead (exit 0 allow, 1 deny, 2 error)");
  cmd->add_option("--server", args->server, "Daemon URL")->capture_default_str();
  cmd->add_option("--switch", args->switches, "Switch to drain (repeatable)");
  cmd->add_option("--link", args->links, "Link to drain as A:B (repeatable)");
  cmd->add_option("--ticket", args->ticket, "Change ticket id, stored with the assessment");
  cmd->add_option("--requested-by", args->requested_by, "Who asks (default drainwise-check)");
  cmd->add_option("--format", args->format, "text | json")->capture_default_str();
  cmd->add_option("--token", args->token, "Bearer token")->envname("DRAINWISE_TOKEN");
  cmd->add_option("--timeout", args->timeout_s, "Seconds to wait for the verdict")->capture_default_str();
  cmd->add_flag("--fail-on-warn", args->fail_on_warn, "Exit 1 on warn too");
  cmd->add_flag("!--no-flow", args->flow, "Job-level only (faster, no slowdown rules)");
  cmd->callback([args, exit_code] { *exit_code = RunCheck(*args); });
}

}  // namespace drainwise::app
