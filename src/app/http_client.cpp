#include "app/http_client.h"

#include <utility>  // before Boost 1.74: asio/awaitable.hpp uses std::exchange

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <optional>
#include <random>
#include <thread>
#include <type_traits>

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <fmt/format.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <nlohmann/json.hpp>

namespace drainwise::app {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;

namespace {

constexpr uint64_t kBodyLimit = 1ull << 30;  // a 32k fabric's topology is far below this

std::chrono::milliseconds Millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(std::max(0.0, seconds) * 1000));
}

bool IsIpLiteral(const std::string& host) {
  beast::error_code ec;
  net::ip::make_address(host, ec);
  return !ec;
}

// The reason a TLS handshake failed: OpenSSL's verify result names what was
// wrong with the certificate ("self-signed certificate", "hostname mismatch").
template <class Stream>
std::string HandshakeFailure(Stream& stream, const beast::error_code& ec, const std::string& host) {
  if constexpr (std::is_same_v<Stream, beast::ssl_stream<beast::tcp_stream>>) {
    long verify = SSL_get_verify_result(stream.native_handle());
    if (verify == X509_V_ERR_HOSTNAME_MISMATCH || verify == X509_V_ERR_IP_ADDRESS_MISMATCH) {
      return fmt::format("the server's certificate is not for '{}' ({})", host, X509_verify_cert_error_string(verify));
    }
    if (verify != X509_V_OK) {
      return fmt::format("the server's certificate is not trusted: {} (check --ca-file)",
                         X509_verify_cert_error_string(verify));
    }
  }
  return ec.message();
}

template <bool kTls>
Result<HttpReply> Exchange(const ServerUrl& u, const std::string& display, ssl::context* tls,
                           http::request<http::string_body>& req, double connect_timeout_s, double timeout_s) {
  using Stream = std::conditional_t<kTls, beast::ssl_stream<beast::tcp_stream>, beast::tcp_stream>;
  net::io_context ioc;
  std::optional<Stream> stream;
  if constexpr (kTls) {
    stream.emplace(ioc, *tls);
    // SNI carries host names only (RFC 6066), never an address. OpenSSL's
    // own name check (rather than a verify callback) reports a mismatch as
    // "hostname mismatch" / "IP address mismatch".
    SSL* native = stream->native_handle();
    X509_VERIFY_PARAM* param = SSL_get0_param(native);
    bool ok = IsIpLiteral(u.host) ? X509_VERIFY_PARAM_set1_ip_asc(param, u.host.c_str()) == 1
                                  : SSL_set_tlsext_host_name(native, u.host.c_str()) == 1 &&
                                        (X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS),
                                         X509_VERIFY_PARAM_set1_host(param, u.host.c_str(), 0) == 1);
    if (!ok) return MakeError(ErrorCode::kIo, fmt::format("{}: cannot set the TLS server name", display));
  } else {
    stream.emplace(ioc);
  }
  auto& lowest = beast::get_lowest_layer(*stream);
  tcp::resolver resolver(ioc);
  auto start = std::chrono::steady_clock::now();
  auto total = Millis(timeout_s);
  auto connect_limit = std::min(total, Millis(connect_timeout_s));

  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(kBodyLimit);
  beast::error_code failure;
  std::string failure_text;
  const char* stage = "resolve";
  bool connecting = true;
  bool done = false;

  auto fail = [&](beast::error_code ec) { failure = ec; };
  auto read_response = [&] {
    stage = "read";
    http::async_read(*stream, buffer, parser, [&](beast::error_code ec, size_t) {
      if (ec) return fail(ec);
      done = true;
    });
  };
  auto send = [&] {
    connecting = false;
    // The rest of the total budget covers the request and the answer.
    lowest.expires_at(start + total);
    stage = "write";
    http::async_write(*stream, req, [&](beast::error_code ec, size_t) {
      if (ec) return fail(ec);
      read_response();
    });
  };
  lowest.expires_after(connect_limit);
  resolver.async_resolve(u.host, u.port, [&](beast::error_code ec, tcp::resolver::results_type results) {
    if (ec) return fail(ec);
    stage = "connect";
    lowest.async_connect(results, [&](beast::error_code ec, const tcp::endpoint&) {
      if (ec) return fail(ec);
      if constexpr (kTls) {
        stage = "TLS handshake";
        stream->async_handshake(ssl::stream_base::client, [&](beast::error_code ec) {
          if (ec) {
            failure_text = HandshakeFailure(*stream, ec, u.host);
            return fail(ec);
          }
          send();
        });
      } else {
        send();
      }
    });
  });
  // The stream's deadline covers connect, TLS and I/O; this bounds the
  // resolver too.
  ioc.run_for(total + std::chrono::milliseconds(200));
  if (!done) {
    bool timed_out = !failure || failure == beast::error::timeout || failure == net::error::operation_aborted;
    if (timed_out) {
      if (connecting) {
        return MakeError(ErrorCode::kDeadlineExceeded,
                         fmt::format("{}: {} timed out after {:.3g} s", display, stage,
                                     std::chrono::duration<double>(connect_limit).count()));
      }
      return MakeError(ErrorCode::kDeadlineExceeded,
                       fmt::format("{}: no answer within {:.3g} s ({})", display, timeout_s, stage));
    }
    if (failure == net::error::connection_refused) {
      return MakeError(ErrorCode::kUnavailable, fmt::format("{}: connection refused", display));
    }
    if (!u.tls && stage == std::string_view("read") && failure == http::error::end_of_stream) {
      return MakeError(
          ErrorCode::kIo,
          fmt::format("{}: the connection closed without an answer (does the daemon serve https?)", display));
    }
    if (failure == http::error::body_limit) {
      return MakeError(ErrorCode::kIo, fmt::format("{}: answer larger than {} bytes", display, kBodyLimit));
    }
    return MakeError(ErrorCode::kIo, fmt::format("{}: {}: {}", display, stage,
                                                 failure_text.empty() ? failure.message() : failure_text));
  }
  auto res = parser.release();
  HttpReply reply{static_cast<int>(res.result_int()), std::string(res.reason()), std::move(res.body()), ""};
  if (auto it = res.find(http::field::retry_after); it != res.end()) reply.retry_after = std::string(it->value());
  // The answer is complete: the socket is closed without waiting for the
  // peer's TLS close_notify.
  beast::error_code ignored;
  lowest.socket().shutdown(tcp::socket::shutdown_both, ignored);
  return reply;
}

std::string Trim(std::string s) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!s.empty() && space(s.back())) s.pop_back();
  size_t i = 0;
  while (i < s.size() && space(s[i])) ++i;
  return s.substr(i);
}

}  // namespace

Result<ServerUrl> ParseServerUrl(const std::string& url) {
  ServerUrl t;
  std::string rest = url;
  if (rest.rfind("http://", 0) == 0) {
    rest = rest.substr(7);
  } else if (rest.rfind("https://", 0) == 0) {
    t.tls = true;
    t.port = "443";
    rest = rest.substr(8);
  } else if (rest.find("://") != std::string::npos) {
    return InvalidArgument(fmt::format("server '{}': expected http(s)://HOST[:PORT][/PREFIX]", url));
  }
  size_t slash = rest.find('/');
  std::string hostport = rest.substr(0, slash);
  t.base = slash == std::string::npos ? "" : rest.substr(slash);
  while (!t.base.empty() && t.base.back() == '/') t.base.pop_back();
  if (hostport.find('@') != std::string::npos) {
    return InvalidArgument(fmt::format("server '{}': no user info in the URL (use --token-file)", url));
  }
  if (!hostport.empty() && hostport.front() == '[') {
    size_t close = hostport.find(']');
    if (close == std::string::npos) return InvalidArgument(fmt::format("server '{}': unclosed '['", url));
    t.host = hostport.substr(1, close - 1);
    if (close + 1 < hostport.size()) {
      if (hostport[close + 1] != ':') return InvalidArgument(fmt::format("server '{}': bad address", url));
      t.port = hostport.substr(close + 2);
    }
  } else {
    size_t colon = hostport.rfind(':');
    t.host = hostport.substr(0, colon);
    if (colon != std::string::npos) t.port = hostport.substr(colon + 1);
  }
  if (t.host.empty()) return InvalidArgument(fmt::format("server '{}': no host", url));
  if (t.port.empty() || t.port.find_first_not_of("0123456789") != std::string::npos) {
    return InvalidArgument(fmt::format("server '{}': bad port '{}'", url, t.port));
  }
  return t;
}

Result<DaemonClient> DaemonClient::Create(const ClientOptions& options) {
  auto url = ParseServerUrl(options.server);
  if (!url) return tl::unexpected(url.error());
  if (!(options.connect_timeout_s > 0)) return InvalidArgument("--connect-timeout: must be > 0 seconds");
  DaemonClient c;
  c.url_ = *url;
  c.options_ = options;
  if (!url->tls) {
    if (!options.ca_file.empty()) {
      return InvalidArgument(fmt::format("--ca-file: the server '{}' is not https://", options.server));
    }
    return c;
  }
  try {
    auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
    ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                     ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
    beast::error_code ec;
    if (options.ca_file.empty()) {
      ctx->set_default_verify_paths(ec);
      if (ec) return MakeError(ErrorCode::kIo, fmt::format("the system's CA certificates: {}", ec.message()));
    } else {
      if (!std::ifstream(options.ca_file)) {
        return MakeError(ErrorCode::kIo, fmt::format("--ca-file {}: cannot be read", options.ca_file));
      }
      ctx->load_verify_file(options.ca_file, ec);
      if (ec) {
        return MakeError(ErrorCode::kIo,
                         fmt::format("--ca-file {}: not a PEM certificate bundle ({})", options.ca_file, ec.message()));
      }
    }
    ctx->set_verify_mode(ssl::verify_peer);
    c.tls_ = std::move(ctx);
  } catch (const std::exception& e) {
    return MakeError(ErrorCode::kIo, fmt::format("TLS setup: {}", e.what()));
  }
  return c;
}

std::string DaemonClient::Display() const {
  bool v6 = url_.host.find(':') != std::string::npos;
  return fmt::format("{}://{}{}{}:{}{}", url_.tls ? "https" : "http", v6 ? "[" : "", url_.host, v6 ? "]" : "",
                     url_.port, url_.base);
}

Result<HttpReply> DaemonClient::Send(const std::string& method, const std::string& path, const std::string& body,
                                     double timeout_s, const HttpHeaders& headers, const std::string& accept) const {
  auto verb = http::string_to_verb(method);
  if (verb == http::verb::unknown) return InvalidArgument(fmt::format("unknown HTTP method '{}'", method));
  http::request<http::string_body> req{verb, url_.base + path, 11};
  bool default_port = url_.port == (url_.tls ? "443" : "80");
  bool v6 = url_.host.find(':') != std::string::npos;
  req.set(http::field::host, (v6 ? "[" + url_.host + "]" : url_.host) + (default_port ? "" : ":" + url_.port));
  req.set(http::field::user_agent, "drainwise-cli");
  req.set(http::field::accept, accept);
  if (!options_.token.empty()) req.set(http::field::authorization, "Bearer " + options_.token);
  for (const auto& [name, value] : headers) req.set(name, value);
  if (!body.empty()) {
    req.set(http::field::content_type, "application/json");
    req.body() = body;
  }
  req.prepare_payload();
  try {
    return url_.tls ? Exchange<true>(url_, Display(), tls_.get(), req, options_.connect_timeout_s, timeout_s)
                    : Exchange<false>(url_, Display(), nullptr, req, options_.connect_timeout_s, timeout_s);
  } catch (const std::exception& e) {
    // Asio/Beast throw only on resource exhaustion or programming errors.
    return MakeError(ErrorCode::kIo, fmt::format("{}: {}", Display(), e.what()));
  }
}

RetriedReply DaemonClient::SendWithRetries(const std::string& method, const std::string& path, const std::string& body,
                                           double timeout_s, const RetryPolicy& policy, const HttpHeaders& headers,
                                           const std::function<void(const std::string&)>& on_retry) const {
  using Clock = std::chrono::steady_clock;
  auto deadline = Clock::now() + Millis(timeout_s);
  double backoff = policy.first_backoff_s;
  std::mt19937_64 rng(std::random_device{}());
  RetriedReply out{MakeError(ErrorCode::kInternal, "no attempt"), 0, ""};
  while (true) {
    double left = std::chrono::duration<double>(deadline - Clock::now()).count();
    out.last = Send(method, path, body, left, headers);
    ++out.attempts;
    bool refused = !out.last && out.last.error().code == ErrorCode::kUnavailable;
    bool busy = out.last && out.last->status == 503;
    if (!refused && !busy) return out;
    if (out.attempts > policy.retries) {
      out.gave_up = fmt::format("no retry left (--retries {})", policy.retries);
      return out;
    }
    double wait = backoff;
    bool asked_wait = false;
    std::string why = refused ? "connection refused" : fmt::format("{} {}", out.last->status, out.last->reason);
    if (busy && !out.last->retry_after.empty()) {
      auto asked = ParseRetryAfter(out.last->retry_after, std::time(nullptr));
      if (asked) {
        wait = *asked;
        asked_wait = true;
        why += fmt::format(", Retry-After {}", out.last->retry_after);
      }
    }
    if (!asked_wait) backoff *= 2;
    if (wait > policy.max_wait_s) {
      out.gave_up =
          fmt::format("the server asks to wait {:g} s, more than --max-retry-wait {:g} s", wait, policy.max_wait_s);
      return out;
    }
    left = std::chrono::duration<double>(deadline - Clock::now()).count();
    if (wait >= left) {
      out.gave_up = fmt::format("waiting {:g} s more would pass --timeout {:g} s", wait, timeout_s);
      return out;
    }
    // Up to half the wait again, at random: clients turned away together
    // (one Retry-After for all) do not all come back in the same instant.
    // Never earlier than asked, never past the bounds.
    double jitter_cap = std::min({0.5 * wait, policy.max_wait_s - wait, left - wait - 0.05});
    if (jitter_cap > 0) wait += std::uniform_real_distribution<double>(0, jitter_cap)(rng);
    if (on_retry) {
      on_retry(fmt::format("{}; retry {} of {} in {:.1f} s", why, out.attempts, policy.retries, wait));
    }
    std::this_thread::sleep_for(Millis(wait));
  }
}

std::optional<double> ParseRetryAfter(std::string_view value, std::time_t now) {
  std::string v = Trim(std::string(value));
  if (v.empty()) return std::nullopt;
  if (v.find_first_not_of("0123456789") == std::string::npos) {
    if (v.size() > 9) return std::nullopt;  // more than 31 years: not a real request
    return static_cast<double>(std::stol(v));
  }
  // IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT".
  std::tm tm{};
  const char* end = strptime(v.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (!end || *end != '\0') return std::nullopt;
  std::time_t at = timegm(&tm);
  return static_cast<double>(std::max<std::time_t>(0, at - now));
}

Result<std::string> ResolveToken(const std::string& token, const std::string& token_file) {
  if (!token_file.empty()) {
    std::ifstream in(token_file);
    if (!in) return MakeError(ErrorCode::kIo, fmt::format("--token-file {}: cannot be read", token_file));
    std::string line;
    std::getline(in, line);
    line = Trim(line);
    if (line.empty()) return InvalidArgument(fmt::format("--token-file {}: the first line is empty", token_file));
    return line;
  }
  if (!token.empty()) return token;
  const char* env = std::getenv("DRAINWISE_TOKEN");
  return env ? Trim(env) : std::string();
}

void AddClientOptions(CLI::App* cmd, ClientArgs* args) {
  cmd->add_option("--server", args->servers,
                  "Daemon URL: http(s)://HOST[:PORT][/PREFIX] or HOST:PORT; repeat it for several daemons on one "
                  "database (check tries the next on a connection failure or 503)")
      ->default_str(args->server);
  cmd->add_option("--ca-file", args->ca_file,
                  "PEM certificates to trust for an https:// server (default: the system store); the "
                  "server's name or address must match its certificate");
  auto* file = cmd->add_option("--token-file", args->token_file,
                               "File whose first line is the bearer token (preferred: a token on the command line "
                               "shows in the process list)");
  cmd->add_option("--token", args->token, "Bearer token; without --token-file or --token, DRAINWISE_TOKEN is used")
      ->excludes(file);
  cmd->add_option("--connect-timeout", args->connect_timeout_s,
                  "Seconds for connecting (TCP and TLS handshake), per attempt")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 600.0));
}

Result<DaemonClient> ClientFromArgs(const ClientArgs& args) {
  auto token = ResolveToken(args.token, args.token_file);
  if (!token) return tl::unexpected(token.error());
  ClientOptions o;
  o.server = args.servers.empty() ? args.server : args.servers.front();
  o.ca_file = args.ca_file;
  o.token = *token;
  o.connect_timeout_s = args.connect_timeout_s;
  auto c = DaemonClient::Create(o);
  if (!c && c.error().message.rfind("server '", 0) == 0) {
    return MakeError(c.error().code, "--" + c.error().message);  // "--server '...': ..."
  }
  return c;
}

std::string DescribeFailure(const HttpReply& reply) {
  auto doc = nlohmann::json::parse(reply.body, nullptr, false);
  std::string detail = reply.body;
  if (doc.is_object() && doc.contains("detail") && doc["detail"].is_string()) detail = doc["detail"];
  std::string text = fmt::format("{} {}: {}", reply.status, reply.reason, detail);
  if (reply.status == 401) {
    text += " (give a token with --token-file FILE or the DRAINWISE_TOKEN environment variable)";
  } else if (reply.status == 403) {
    text += " (the token's role is not enough for this request)";
  }
  return text;
}

}  // namespace drainwise::app
