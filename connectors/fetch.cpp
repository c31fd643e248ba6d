#include "connectors/fetch.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <optional>
#include <type_traits>

#include <fmt/format.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

extern char** environ;

namespace drainwise::connectors {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;

std::string Display(const ParsedUrl& u) {
  bool v6 = u.host.find(':') != std::string::npos;
  return fmt::format("{}://{}{}{}:{}{}", u.tls ? "https" : "http", v6 ? "[" : "", u.host, v6 ? "]" : "", u.port,
                     u.target);
}

Error HttpStatusError(int status, const std::string& reason, const ParsedUrl& u) {
  ErrorCode code = ErrorCode::kUnavailable;
  if (status == 401)
    code = ErrorCode::kUnauthenticated;
  else if (status == 403)
    code = ErrorCode::kPermissionDenied;
  else if (status == 404)
    code = ErrorCode::kNotFound;
  return Error{code, fmt::format("GET {}: HTTP {} {}", Display(u), status, reason)};
}

template <bool kTls>
Result<std::string> DoGet(const ParsedUrl& u, const std::vector<HttpHeader>& headers, const FetchLimits& limits) {
  using Stream = std::conditional_t<kTls, beast::ssl_stream<beast::tcp_stream>, beast::tcp_stream>;
  auto timeout = std::chrono::milliseconds(static_cast<int64_t>(limits.timeout_s * 1000));
  net::io_context ioc;
  std::optional<ssl::context> ctx;
  std::optional<Stream> stream;
  if constexpr (kTls) {
    ctx.emplace(ssl::context::tls_client);
    boost::system::error_code ec;
    if (limits.insecure_skip_verify) {
      ctx->set_verify_mode(ssl::verify_none);
    } else {
      if (limits.ca_file.empty())
        ctx->set_default_verify_paths(ec);
      else
        ctx->load_verify_file(limits.ca_file, ec);
      if (ec) return MakeError(ErrorCode::kIo, fmt::format("GET {}: CA certificates: {}", Display(u), ec.message()));
      ctx->set_verify_mode(ssl::verify_peer);
    }
    stream.emplace(ioc, *ctx);
    if (!SSL_set_tlsext_host_name(stream->native_handle(), u.host.c_str())) {
      return MakeError(ErrorCode::kUnavailable, fmt::format("GET {}: cannot set TLS SNI", Display(u)));
    }
    if (!limits.insecure_skip_verify) stream->set_verify_callback(ssl::host_name_verification(u.host));
  } else {
    stream.emplace(ioc);
  }
  auto& lowest = beast::get_lowest_layer(*stream);
  tcp::resolver resolver(ioc);

  http::request<http::empty_body> req{http::verb::get, u.target, 11};
  bool default_port = u.port == (u.tls ? "443" : "80");
  bool v6 = u.host.find(':') != std::string::npos;
  std::string host_header = (v6 ? "[" + u.host + "]" : u.host) + (default_port ? "" : ":" + u.port);
  req.set(http::field::host, host_header);
  req.set(http::field::user_agent, "drainwise");
  req.set(http::field::accept, "application/json, text/plain;q=0.9, */*;q=0.5");
  for (const auto& h : headers) req.set(h.name, h.value);

  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(limits.max_bytes);
  beast::error_code failure;
  const char* stage = "resolve";
  bool done = false;

  lowest.expires_after(timeout);  // one deadline for the whole exchange
  resolver.async_resolve(u.host, u.port, [&](beast::error_code ec, tcp::resolver::results_type results) {
    if (ec) {
      failure = ec;
      return;
    }
    stage = "connect";
    lowest.async_connect(results, [&](beast::error_code ec, const tcp::endpoint&) {
      if (ec) {
        failure = ec;
        return;
      }
      auto send = [&](beast::error_code ec) {
        if (ec) {
          failure = ec;
          return;
        }
        stage = "write";
        http::async_write(*stream, req, [&](beast::error_code ec, size_t) {
          if (ec) {
            failure = ec;
            return;
          }
          stage = "read";
          // Header first: Beast 1.74 loses the body_limit error of a too
          // large Content-Length when it parses header and body eagerly.
          http::async_read_header(*stream, buffer, parser, [&](beast::error_code ec, size_t) {
            if (!ec && parser.content_length() && *parser.content_length() > limits.max_bytes) {
              ec = http::error::body_limit;
            }
            if (ec) {
              failure = ec;
              return;
            }
            http::async_read(*stream, buffer, parser, [&](beast::error_code ec, size_t) {
              if (ec) {
                failure = ec;
                return;
              }
              done = true;
            });
          });
        });
      };
      if constexpr (kTls) {
        stage = "TLS handshake";
        stream->async_handshake(ssl::stream_base::client, send);
      } else {
        send({});
      }
    });
  });
  // The stream's deadline covers connect/TLS/IO; this bounds the resolver too.
  ioc.run_for(timeout + std::chrono::milliseconds(500));
  if (!done) {
    if (!failure || failure == beast::error::timeout || failure == net::error::operation_aborted) {
      return MakeError(ErrorCode::kDeadlineExceeded,
                       fmt::format("GET {}: timed out after {:g} s ({})", Display(u), limits.timeout_s, stage));
    }
    if (failure == http::error::body_limit) {
      return MakeError(ErrorCode::kTooLarge,
                       fmt::format("GET {}: body larger than {} bytes", Display(u), limits.max_bytes));
    }
    return MakeError(ErrorCode::kUnavailable, fmt::format("GET {}: {}: {}", Display(u), stage, failure.message()));
  }
  auto& res = parser.get();
  beast::error_code ignored;
  lowest.socket().shutdown(tcp::socket::shutdown_both, ignored);
  int status = res.result_int();
  if (status < 200 || status >= 300) {
    return tl::unexpected(HttpStatusError(status, std::string(res.reason()), u));
  }
  return std::move(res.body());
}

}  // namespace

Result<ParsedUrl> ParseUrl(std::string_view url) {
  ParsedUrl u;
  std::string_view rest;
  if (url.substr(0, 7) == "http://") {
    rest = url.substr(7);
  } else if (url.substr(0, 8) == "https://") {
    u.tls = true;
    rest = url.substr(8);
  } else {
    return InvalidArgument(fmt::format("url '{}': expected http:// or https://", url));
  }
  size_t slash = rest.find_first_of("/?");
  std::string_view authority = rest.substr(0, slash);
  u.target = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
  if (!u.target.empty() && u.target[0] == '?') u.target = "/" + u.target;
  if (authority.find('@') != std::string_view::npos) {
    return InvalidArgument("url: user info is not supported (use token_env or token_file)");
  }
  if (!authority.empty() && authority[0] == '[') {
    auto close = authority.find(']');
    if (close == std::string_view::npos) return InvalidArgument(fmt::format("url '{}': unbalanced '['", url));
    u.host = std::string(authority.substr(1, close - 1));
    auto after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return InvalidArgument(fmt::format("url '{}': bad authority", url));
      u.port = std::string(after.substr(1));
    }
  } else {
    auto colon = authority.rfind(':');
    u.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) u.port = std::string(authority.substr(colon + 1));
  }
  if (u.host.empty()) return InvalidArgument(fmt::format("url '{}': no host", url));
  if (u.port.empty()) u.port = u.tls ? "443" : "80";
  for (char c : u.port) {
    if (c < '0' || c > '9') return InvalidArgument(fmt::format("url '{}': bad port '{}'", url, u.port));
  }
  return u;
}

Result<std::string> HttpGet(const std::string& url, const std::vector<HttpHeader>& headers, const FetchLimits& limits) {
  auto u = ParseUrl(url);
  if (!u) return tl::unexpected(u.error());
  try {
    return u->tls ? DoGet<true>(*u, headers, limits) : DoGet<false>(*u, headers, limits);
  } catch (const std::exception& e) {
    // Asio/Beast throw only on resource exhaustion or programming errors.
    return MakeError(ErrorCode::kUnavailable, fmt::format("GET {}: {}", Display(*u), e.what()));
  }
}

Result<std::string> ReadFileLimited(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return MakeError(ErrorCode::kIo, fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  std::string out;
  char buf[65536];
  while (in) {
    in.read(buf, sizeof buf);
    out.append(buf, static_cast<size_t>(in.gcount()));
    if (out.size() > max_bytes) {
      return MakeError(ErrorCode::kTooLarge, fmt::format("{}: larger than {} bytes", path, max_bytes));
    }
  }
  if (in.bad()) return MakeError(ErrorCode::kIo, fmt::format("{}: read error", path));
  return out;
}

Result<std::string> RunCommand(const std::string& command, const FetchLimits& limits) {
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return MakeError(ErrorCode::kIo, "command: pipe failed");
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    return MakeError(ErrorCode::kIo, "command: pipe failed");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);  // own group, so a timeout kills the whole pipeline
  const char* argv[] = {"/bin/sh", "-c", command.c_str(), nullptr};
  pid_t pid = -1;
  int rc = posix_spawn(&pid, "/bin/sh", &actions, &attr, const_cast<char* const*>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    return MakeError(ErrorCode::kIo, fmt::format("command: cannot start /bin/sh: {}", std::strerror(rc)));
  }
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(limits.timeout_s * 1000));
  std::string out, err;
  std::optional<Error> failure;
  bool out_open = true, err_open = true;
  char buf[65536];
  while ((out_open || err_open) && !failure) {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      failure = Error{ErrorCode::kDeadlineExceeded, fmt::format("command timed out after {:g} s", limits.timeout_s)};
      break;
    }
    pollfd fds[2] = {{out_open ? out_pipe[0] : -1, POLLIN, 0}, {err_open ? err_pipe[0] : -1, POLLIN, 0}};
    int n = poll(fds, 2, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (n < 0 && errno != EINTR) {
      failure = Error{ErrorCode::kIo, "command: poll failed"};
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got <= 0) {
        (i == 0 ? out_open : err_open) = false;
        continue;
      }
      if (i == 0) {
        out.append(buf, static_cast<size_t>(got));
        if (out.size() > limits.max_bytes) {
          failure = Error{ErrorCode::kTooLarge, fmt::format("command output larger than {} bytes", limits.max_bytes)};
        }
      } else if (err.size() < 4096) {
        err.append(buf, static_cast<size_t>(std::min<ssize_t>(got, 4096)));
      }
    }
  }
  close(out_pipe[0]);
  close(err_pipe[0]);
  if (failure) kill(-pid, SIGKILL);
  // The output is closed; the shell may still linger. Wait, within the deadline.
  int status = 0;
  while (true) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid || (w < 0 && errno != EINTR)) break;
    if (w == 0 && std::chrono::steady_clock::now() >= deadline) {
      kill(-pid, SIGKILL);
      if (!failure) {
        failure = Error{ErrorCode::kDeadlineExceeded, fmt::format("command timed out after {:g} s", limits.timeout_s)};
      }
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    if (w == 0) usleep(2000);
  }
  if (failure) return tl::unexpected(*failure);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string first = err.substr(0, err.find('\n'));
    return MakeError(ErrorCode::kUnavailable,
                     fmt::format("command {} {}{}{}", WIFEXITED(status) ? "exited with" : "killed by signal",
                                 WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), first.empty() ? "" : ": ",
                                 first.substr(0, 200)));
  }
  return out;
}

}  // namespace drainwise::connectors
