// The one HTTP/1.1 client of the CLI commands that talk to a running daemon
// (check, calibrate). http:// or https:// (Boost.Beast + OpenSSL: the
// daemon's certificate is verified against --ca-file or the system store,
// with host name verification and SNI); a bearer token from --token-file,
// --token or DRAINWISE_TOKEN; a connect timeout and a total timeout per
// request; bounded retries of 503 (honouring Retry-After) and of refused
// connections for the commands that ask for them.
#pragma once

#include <ctime>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "model/error.h"

namespace boost::asio::ssl {
class context;
}

namespace drainwise::app {

struct ServerUrl {
  bool tls = false;
  std::string host;         // without brackets for IPv6
  std::string port = "80";  // "443" for https when absent
  std::string base;         // path prefix, without a trailing slash
};

// "http://HOST[:PORT][/PREFIX]", "https://HOST[:PORT][/PREFIX]" or
// "HOST:PORT" (plain http). Errors (kInvalidArgument) name the URL.
Result<ServerUrl> ParseServerUrl(const std::string& url);

struct ClientOptions {
  std::string server = "http://127.0.0.1:8080";
  std::string ca_file;            // PEM bundle trusted for https; empty = the system store
  std::string token;              // bearer token; empty = none
  double connect_timeout_s = 10;  // resolve + TCP connect + TLS handshake, per attempt
};

struct HttpReply {
  int status = 0;
  std::string reason;
  std::string body;
  std::string retry_after;  // the Retry-After header, "" when absent
};

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

struct RetryPolicy {
  int retries = 0;             // sends after the first one
  double max_wait_s = 30;      // the longest wait honoured; a longer Retry-After ends the retries
  double first_backoff_s = 1;  // wait without Retry-After; doubled after each such wait
};

// How a request with retries ended: the last attempt's result, how many
// attempts were made, and why no further one was (empty when the last result
// was final: anything but 503 or a refused connection).
struct RetriedReply {
  Result<HttpReply> last;
  int attempts = 0;
  std::string gave_up;
  size_t server = 0;  // SendWithFailover: the index of the client that gave `last`
};

class DaemonClient {
 public:
  // Parses the URL and, for https, loads the trusted certificates. Errors:
  // kInvalidArgument naming the URL or the option, kIo naming the CA file.
  static Result<DaemonClient> Create(const ClientOptions& options);

  // One request on a fresh connection; the whole exchange (connect, TLS,
  // request, response) is bounded by `timeout_s`, its connect part also by
  // the connect timeout. An HTTP answer of any status is a reply. Errors,
  // when no answer came back: kUnavailable = the connection was refused
  // (nothing was sent, so sending again is safe); kDeadlineExceeded = a
  // timeout; kIo = anything else (resolve, TLS handshake or certificate,
  // reset). Messages name the server and the stage that failed.
  Result<HttpReply> Send(const std::string& method, const std::string& path, const std::string& body, double timeout_s,
                         const HttpHeaders& headers = {}, const std::string& accept = "application/json") const;

  // Send, sent again after a 503 or a refused connection, at most
  // `policy.retries` more times, all within `timeout_s` from now. A 503 waits
  // its Retry-After (delta-seconds or HTTP-date); otherwise the wait is
  // first_backoff_s, doubled each time. No retry when the wait would exceed
  // policy.max_wait_s or end past `timeout_s`. A random extra of up to half
  // the wait (within those bounds) spreads clients turned away together.
  // `on_retry` hears one line per wait, before it. The request must be safe
  // to repeat (an Idempotency-Key makes a POST so).
  RetriedReply SendWithRetries(const std::string& method, const std::string& path, const std::string& body,
                               double timeout_s, const RetryPolicy& policy, const HttpHeaders& headers = {},
                               const std::function<void(const std::string&)>& on_retry = {}) const;

  const ServerUrl& url() const { return url_; }
  // "https://127.0.0.1:8443", for messages.
  std::string Display() const;

 private:
  ServerUrl url_;
  ClientOptions options_;
  std::shared_ptr<boost::asio::ssl::context> tls_;  // set for https
};

// The seconds a Retry-After value asks to wait: delta-seconds, or an
// HTTP-date (RFC 9110) relative to `now`, never negative. nullopt when the
// value is neither.
std::optional<double> ParseRetryAfter(std::string_view value, std::time_t now);

// The bearer token, in this order: --token-file's first line (surrounding
// whitespace dropped), --token, the DRAINWISE_TOKEN environment variable,
// else none (""). Errors (kIo / kInvalidArgument) name the file.
Result<std::string> ResolveToken(const std::string& token, const std::string& token_file);

// The command-line options every command that talks to the daemon shares.
struct ClientArgs {
  std::string server = "http://127.0.0.1:8080";  // when no --server is given
  std::vector<std::string> servers;              // every --server, in order
  std::string ca_file;
  std::string token;
  std::string token_file;
  double connect_timeout_s = 10;
};

// Adds --server, --ca-file, --token-file, --token and --connect-timeout.
void AddClientOptions(CLI::App* cmd, ClientArgs* args);
// A client for the options: token resolved, URL parsed, CA file loaded.
// Errors name the option.
Result<DaemonClient> ClientFromArgs(const ClientArgs& args);  // the first --server
// One client per --server, in order (the default server when none is given).
Result<std::vector<DaemonClient>> ClientsFromArgs(const ClientArgs& args);

// SendWithRetries over several daemons sharing one database: each round
// asks the servers in order and moves on to the next at once after a
// connection failure (refused, reset, timeout, TLS) or a 503; a round in
// which every server failed waits as SendWithRetries does (Retry-After, else
// a doubling backoff) before the next, at most policy.retries more rounds,
// all within `timeout_s`. One server: exactly SendWithRetries. The request
// must be safe to repeat on another daemon (an Idempotency-Key, stored in
// the shared database, makes a POST so).
RetriedReply SendWithFailover(const std::vector<DaemonClient>& clients, const std::string& method,
                              const std::string& path, const std::string& body, double timeout_s,
                              const RetryPolicy& policy, const HttpHeaders& headers = {},
                              const std::function<void(const std::string&)>& on_retry = {});

// The problem+json detail of an error answer (or its body), with a hint for
// 401 and 403: "401 Unauthorized: no bearer token (give one with ...)".
std::string DescribeFailure(const HttpReply& reply);

}  // namespace drainwise::app
