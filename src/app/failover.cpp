// drainwise check with several --server URLs (http_client.h, SendWithFailover).
#include <algorithm>
#include <chrono>
#include <ctime>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "app/http_client.h"

namespace drainwise::app {

Result<std::vector<DaemonClient>> ClientsFromArgs(const ClientArgs& args) {
  std::vector<DaemonClient> out;
  std::vector<std::string> servers = args.servers.empty() ? std::vector<std::string>{args.server} : args.servers;
  for (const auto& server : servers) {
    ClientArgs one = args;
    one.servers = {server};
    auto c = ClientFromArgs(one);
    if (!c) return tl::unexpected(c.error());
    out.push_back(std::move(*c));
  }
  return out;
}

RetriedReply SendWithFailover(const std::vector<DaemonClient>& clients, const std::string& method,
                              const std::string& path, const std::string& body, double timeout_s,
                              const RetryPolicy& policy, const HttpHeaders& headers,
                              const std::function<void(const std::string&)>& on_retry) {
  if (clients.size() == 1)
    return clients.front().SendWithRetries(method, path, body, timeout_s, policy, headers, on_retry);
  using Clock = std::chrono::steady_clock;
  auto seconds = [](double s) { return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s)); };
  auto deadline = Clock::now() + seconds(timeout_s);
  double backoff = policy.first_backoff_s;
  std::mt19937_64 rng(std::random_device{}());
  RetriedReply out{MakeError(ErrorCode::kInternal, "no attempt"), 0, ""};
  for (int round = 0;; ++round) {
    std::optional<double> asked;  // the longest Retry-After of this round's 503s
    std::string why;
    for (size_t i = 0; i < clients.size(); ++i) {
      double left = std::chrono::duration<double>(deadline - Clock::now()).count();
      if (left <= 0) {
        out.gave_up = fmt::format("--timeout {:g} s passed", timeout_s);
        return out;
      }
      out.last = clients[i].Send(method, path, body, left, headers);
      out.server = i;
      ++out.attempts;
      bool failed =
          !out.last && (out.last.error().code == ErrorCode::kUnavailable || out.last.error().code == ErrorCode::kIo ||
                        out.last.error().code == ErrorCode::kDeadlineExceeded);
      bool busy = out.last && out.last->status == 503;
      if (!failed && !busy) return out;
      why = failed ? out.last.error().message : fmt::format("{} {}", out.last->status, out.last->reason);
      if (busy && !out.last->retry_after.empty()) {
        if (auto a = ParseRetryAfter(out.last->retry_after, std::time(nullptr)))
          asked = std::max(asked.value_or(0), *a);
      }
      if (on_retry && i + 1 < clients.size()) {
        on_retry(fmt::format("{}: {}; trying {}", clients[i].Display(), why, clients[i + 1].Display()));
      }
    }
    if (round >= policy.retries) {
      out.gave_up = fmt::format("every server failed, no retry left (--retries {})", policy.retries);
      return out;
    }
    double wait = asked ? *asked : backoff;
    if (!asked) backoff *= 2;
    if (wait > policy.max_wait_s) {
      out.gave_up =
          fmt::format("the servers ask to wait {:g} s, more than --max-retry-wait {:g} s", wait, policy.max_wait_s);
      return out;
    }
    double left = std::chrono::duration<double>(deadline - Clock::now()).count();
    if (wait >= left) {
      out.gave_up = fmt::format("waiting {:g} s more would pass --timeout {:g} s", wait, timeout_s);
      return out;
    }
    double jitter_cap = std::min({0.5 * wait, policy.max_wait_s - wait, left - wait - 0.05});
    if (jitter_cap > 0) wait += std::uniform_real_distribution<double>(0, jitter_cap)(rng);
    if (on_retry) {
      on_retry(fmt::format("every server failed ({} last: {}); round {} of {} in {:.1f} s", clients.back().Display(),
                           why, round + 1, policy.retries, wait));
    }
    std::this_thread::sleep_for(seconds(wait));
  }
}

}  // namespace drainwise::app
