// drainwise check: asks a running daemon about a drain; the exit code gates
// a change (0 allow, and warn unless --fail-on-warn; 1 deny, and warn with
// --fail-on-warn; 2 usage, connection, authentication or server error).
//
// A busy daemon answers 503 with Retry-After; check waits and asks again, a
// bounded number of times within --timeout, so a gate in CI does not fail on
// a momentary queue. With several --server URLs (daemons sharing one
// PostgreSQL database) it tries the next one at once on a connection failure
// or a 503. The POST carries an Idempotency-Key, so a repeat can never
// record a second assessment, whichever daemon it reaches.
#include <cstdio>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "app/http_client.h"

namespace drainwise::app {

namespace {

struct CheckArgs {
  ClientArgs client;
  std::vector<std::string> switches;
  std::vector<std::string> links;
  std::string ticket;
  std::string requested_by;
  std::string format = "text";
  bool fail_on_warn = false;
  bool flow = true;
  double timeout_s = 120;
  RetryPolicy retry{.retries = 5, .max_wait_s = 30, .first_backoff_s = 1};
};

// 128 random bits: unique per run of check, shared by its retries.
std::string NewIdempotencyKey() {
  std::random_device rd;
  std::uniform_int_distribution<uint64_t> dist;
  auto word = [&] { return (static_cast<uint64_t>(rd()) << 32) ^ rd(); };
  return fmt::format("drainwise-check-{:016x}{:016x}", word(), word());
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
  auto clients = ClientsFromArgs(a.client);
  if (!clients) {
    fmt::print(stderr, "drainwise check: {}\n", clients.error().message);
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

  auto sent = SendWithFailover(*clients, "POST", "/v1/assessments", body.dump(), a.timeout_s, a.retry,
                               {{"Idempotency-Key", NewIdempotencyKey()}},
                               [](const std::string& line) { fmt::print(stderr, "drainwise check: {}\n", line); });
  const DaemonClient* client = &(*clients)[sent.server];  // the text report from the daemon that answered
  std::string attempts = sent.gave_up.empty() ? ""
                                              : fmt::format(" (gave up after {} attempt{}: {})", sent.attempts,
                                                            sent.attempts == 1 ? "" : "s", sent.gave_up);
  if (!sent.last) {
    fmt::print(stderr, "drainwise check: {}{}\n", sent.last.error().message, attempts);
    return 2;
  }
  const HttpReply* res = &*sent.last;
  if (res->status != 201 && res->status != 200) {
    fmt::print(stderr, "drainwise check: {}{}\n", DescribeFailure(*res), attempts);
    return 2;
  }
  auto doc = nlohmann::json::parse(res->body, nullptr, false);
  if (!doc.is_object() || !doc.contains("verdict") || !doc["verdict"].is_string()) {
    fmt::print(stderr, "drainwise check: the server's answer has no verdict\n");
    return 2;
  }
  std::string verdict = doc["verdict"];
  if (a.format == "json") {
    fmt::print("{}\n", doc.dump(2));
  } else {
    // The same table the server renders for ?format=text, fetched by id so
    // the summary is exactly what was stored.
    auto text =
        client->Send("GET", "/v1/assessments/" + doc.value("id", "") + "?format=text", "", 30, {}, "text/plain");
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
  auto* cmd =
      app.add_subcommand("check", "Ask a running daemon whether a drain may go ahead (exit 0 allow, 1 deny, 2 error)");
  cmd->footer(
      "Exit codes: 0 allow (and warn without --fail-on-warn); 1 deny (and warn with --fail-on-warn); 2 usage,\n"
      "connection, TLS, authentication (401/403) or server error, and a 503 that outlasts the retries.\n"
      "Retries: after a 503 or a refused connection, check asks again at most --retries times (0-10),\n"
      "waiting the 503's Retry-After, else 1 s doubled each time, plus up to half that again at random.\n"
      "It gives up when a wait would exceed --max-retry-wait or end past --timeout, which bounds the\n"
      "whole run, attempts and waits included.\n"
      "Several --server (daemons on one PostgreSQL database): each attempt tries them in order and moves\n"
      "on to the next at once after a connection failure or a 503; the waits above come between rounds.\n"
      "Every attempt sends the same Idempotency-Key, so a repeat never records a second assessment.\n"
      "Token: --token-file FILE, --token T, or the DRAINWISE_TOKEN environment variable.");
  AddClientOptions(cmd, &args->client);
  cmd->add_option("--switch", args->switches, "Switch to drain (repeatable)");
  cmd->add_option("--link", args->links, "Link to drain as A:B (repeatable)");
  cmd->add_option("--ticket", args->ticket, "Change ticket id, stored with the assessment");
  cmd->add_option("--requested-by", args->requested_by, "Who asks (default drainwise-check)");
  cmd->add_option("--format", args->format, "text | json")->capture_default_str();
  cmd->add_option("--timeout", args->timeout_s, "Seconds to wait for the verdict, retries and their waits included")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 3600.0));
  cmd->add_option("--retries", args->retry.retries, "Attempts after the first one on 503 or a refused connection")
      ->capture_default_str()
      ->check(CLI::Range(0, 10));
  cmd->add_option("--max-retry-wait", args->retry.max_wait_s,
                  "Longest wait between attempts, in seconds; a longer Retry-After ends the retries")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 300.0));
  cmd->add_flag("--fail-on-warn", args->fail_on_warn, "Exit 1 on warn too");
  cmd->add_flag("!--no-flow", args->flow, "Job-level only (faster, no slowdown rules)");
  cmd->callback([args, exit_code] { *exit_code = RunCheck(*args); });
}

}  // namespace drainwise::app
