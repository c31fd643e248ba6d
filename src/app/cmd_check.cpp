// drainwise check: asks a running daemon about a drain; the exit code gates
// a change (0 allow, and warn unless --fail-on-warn; 1 deny; 2 usage or
// connection error).
#include <cstdio>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "app/http_client.h"

namespace drainwise::app {

namespace {

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

int RunCheck(const CheckArgs& a) {
  if (a.switches.empty() && a.links.empty()) {
    fmt::print(stderr, "drainwise check: name at least one --switch or --link\n");
    return 2;
  }
  if (a.format != "text" && a.format != "json") {
    fmt::print(stderr, "drainwise check: --format must be text or json\n");
    return 2;
  }
  auto url = ParseServerUrl(a.server);
  if (!url) {
    fmt::print(stderr, "drainwise check: --{}\n", url.error().message);
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

  auto res = HttpRequest(*url, "POST", "/v1/assessments", body.dump(), a.token, a.timeout_s);
  if (!res) {
    fmt::print(stderr, "drainwise check: {}\n", res.error().message);
    return 2;
  }
  auto doc = nlohmann::json::parse(res->body, nullptr, false);
  if (res->status != 201 && res->status != 200) {
    std::string detail = doc.is_object() ? doc.value("detail", res->body) : res->body;
    fmt::print(stderr, "drainwise check: {} {}: {}\n", res->status, res->reason, detail);
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
    auto text = HttpRequest(*url, "GET", "/v1/assessments/" + doc.value("id", "") + "?format=text", "", a.token, 30,
                            "text/plain");
    if (text && text->status == 200) {
      fmt::print("{}", text->body);
    } else {
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
