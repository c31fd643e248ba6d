#include "server/http_server.h"

#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <thread>
#include <vector>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast.hpp>
#include <boost/beast/ssl.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace drainwise::server {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

Result<std::pair<std::string, unsigned short>> ParseListen(const std::string& listen) {
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos) return InvalidArgument(fmt::format("listen '{}': expected HOST:PORT", listen));
  std::string host = listen.substr(0, colon);
  std::string port = listen.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty()) host = "0.0.0.0";
  char* end = nullptr;
  long p = std::strtol(port.c_str(), &end, 10);
  if (port.empty() || *end != '\0' || p < 0 || p > 65535) {
    return InvalidArgument(fmt::format("listen '{}': bad port '{}'", listen, port));
  }
  return std::make_pair(host, static_cast<unsigned short>(p));
}

struct HttpServer::Impl {
  Api* api;
  config::ServerOptions options;
  std::shared_ptr<spdlog::logger> log;
  net::io_context ioc;
  net::thread_pool workers;
  tcp::acceptor acceptor{ioc};
  std::vector<std::thread> io_threads;
  std::atomic<int> queued{0};
  std::function<void(const RequestStats&)> on_request;
  std::atomic<bool> stopped{false};
  std::unique_ptr<net::ssl::context> tls;  // set when serving HTTPS

  Impl(Api* a, config::ServerOptions o, std::shared_ptr<spdlog::logger> l)
      : api(a), options(std::move(o)), log(std::move(l)), workers(static_cast<size_t>(options.workers)) {}
};

namespace {

using Response = http::response<http::string_body>;

// The last line of defence: whatever a handler throws becomes a 500, never
// the end of the daemon.
ApiResponse SafeHandle(Api& api, const ApiRequest& req) {
  try {
    return api.Handle(req);
  } catch (const std::exception&) {
    ApiResponse r;
    r.status = 500;
    r.content_type = "application/problem+json";
    r.body = R"({"type":"https://drainwise.dev/problems/internal","title":"Internal error","status":500,)"
             R"("detail":"unexpected error while handling the request"})";
    return r;
  } catch (...) {
    ApiResponse r;
    r.status = 500;
    r.content_type = "application/problem+json";
    r.body = R"({"type":"https://drainwise.dev/problems/internal","title":"Internal error","status":500})";
    return r;
  }
}

Response ToBeast(ApiResponse&& r, unsigned version, bool keep_alive) {
  Response res{static_cast<http::status>(r.status), version};
  res.set(http::field::server, "drainwise");
  res.set(http::field::content_type, r.content_type);
  for (auto& [k, v] : r.headers) res.set(k, v);
  res.keep_alive(keep_alive);
  res.body() = std::move(r.body);
  res.prepare_payload();
  return res;
}

// One connection. `Stream` is beast::tcp_stream (HTTP) or
// beast::ssl_stream<beast::tcp_stream> (HTTPS); the rest is the same.
template <class Stream>
class Session : public std::enable_shared_from_this<Session<Stream>> {
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;
  using std::enable_shared_from_this<Session<Stream>>::shared_from_this;

 public:
  template <class... Args>
  Session(tcp::socket&& socket, HttpServer::Impl* server, Args&&... args)
      : stream_(std::move(socket), std::forward<Args>(args)...), server_(server) {
    beast::error_code ec;
    auto ep = beast::get_lowest_layer(stream_).socket().remote_endpoint(ec);
    if (!ec) peer_ = ep.address().to_string();
  }

  void Run() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      if constexpr (kTls) {
        beast::get_lowest_layer(self->stream_).expires_after(std::chrono::seconds(self->server_->options.read_timeout_s));
        self->stream_.async_handshake(net::ssl::stream_base::server, [self](beast::error_code ec) {
          if (ec) {
            self->server_->log->debug("{} TLS handshake: {}", self->peer_, ec.message());
            return;
          }
          self->DoRead();
        });
      } else {
        self->DoRead();
      }
    });
  }

 private:
  void DoRead() {
    parser_.emplace();
    parser_->body_limit(static_cast<uint64_t>(server_->options.body_limit_bytes));
    parser_->header_limit(64 * 1024);
    beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(server_->options.read_timeout_s));
    http::async_read(stream_, buffer_, *parser_, beast::bind_front_handler(&Session::OnRead, shared_from_this()));
  }

  void OnRead(beast::error_code ec, std::size_t) {
    if (ec == http::error::end_of_stream || ec == net::error::eof || ec == net::error::connection_reset ||
        ec == net::ssl::error::stream_truncated) {
      return DoClose();
    }
    if (ec == beast::error::timeout) return DoClose();
    start_ = std::chrono::steady_clock::now();
    if (ec == http::error::body_limit) {
      return Reply(ErrorResponse(Error{ErrorCode::kTooLarge,
                                       fmt::format("request body exceeds {} bytes",
                                                   server_->options.body_limit_bytes)}),
                   "-", "-", 11, false);
    }
    if (ec) {
      return Reply(ErrorResponse(Error{ErrorCode::kInvalidArgument, "malformed HTTP request: " + ec.message()}),
                   "-", "-", 11, false);
    }
    auto msg = parser_->release();
    ApiRequest req;
    req.method = std::string(msg.method_string());
    req.target = std::string(msg.target());
    req.body = std::move(msg.body());
    req.peer = peer_;
    for (const auto& f : msg) {
      std::string name(f.name_string());
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      req.headers[name] = std::string(f.value());
    }
    const unsigned version = msg.version();
    const bool keep_alive = msg.keep_alive();
    beast::get_lowest_layer(stream_).expires_never();

    if (!server_->api->IsSlow(req)) {
      std::string route = server_->api->RouteName(req);
      std::string method = req.method, target = req.target;
      return Reply(SafeHandle(*server_->api, req), method, target, version, keep_alive, route);
    }
    // Bounded queue of simulations: refuse rather than pile up.
    if (server_->queued.fetch_add(1) >= server_->options.queue_limit) {
      server_->queued.fetch_sub(1);
      return Reply(ErrorResponse(Error{ErrorCode::kUnavailable,
                                       fmt::format("{} simulations already queued; retry shortly",
                                                   server_->options.queue_limit)}),
                   req.method, req.target, version, keep_alive, server_->api->RouteName(req));
    }
    // Set up on the connection's strand, before the work leaves it: the
    // deadline timer and a watch for the client hanging up. Either stops the
    // simulation through the request's stop token (the simulators poll it).
    auto stop = std::make_shared<std::stop_source>();
    auto deadline_hit = std::make_shared<std::atomic<bool>>(false);
    req.stop = stop->get_token();
    auto timer = std::make_shared<net::steady_timer>(stream_.get_executor());
    timer->expires_after(std::chrono::seconds(server_->options.assessment_deadline_s));
    timer->async_wait([stop, deadline_hit](beast::error_code ec) {
      if (ec) return;
      deadline_hit->store(true);
      stop->request_stop();
    });
    WatchForHangup(stop);
    net::post(server_->workers, [self = shared_from_this(), req = std::move(req), version, keep_alive, stop,
                                 deadline_hit, timer]() mutable {
      std::string route = self->server_->api->RouteName(req);
      std::string method = req.method, target = req.target;
      ApiResponse res = SafeHandle(*self->server_->api, req);
      if (deadline_hit->load() && res.status == 499) {
        res = ErrorResponse(Error{ErrorCode::kDeadlineExceeded,
                                  fmt::format("simulation exceeded the {} s deadline",
                                              self->server_->options.assessment_deadline_s)});
      }
      self->server_->queued.fetch_sub(1);
      net::post(self->stream_.get_executor(), [self, timer, res = std::move(res), method, target, route, version,
                                               keep_alive]() mutable {
        timer->cancel();
        beast::error_code ec;
        beast::get_lowest_layer(self->stream_).socket().cancel(ec);  // ends the hang-up watch
        self->Reply(std::move(res), method, target, version, keep_alive, route);
      });
    });
  }

  // While a simulation runs nothing reads the socket; if it becomes readable
  // and a peek sees end-of-stream, the client went away: stop the work.
  // (Readable with data is a pipelined request: leave it for the next read.)
  void WatchForHangup(std::shared_ptr<std::stop_source> stop) {
    auto& socket = beast::get_lowest_layer(stream_).socket();
    socket.async_wait(tcp::socket::wait_read, [self = shared_from_this(), stop](beast::error_code ec) {
      if (ec) return;  // cancelled: the reply is on its way
      char byte;
      auto& s = beast::get_lowest_layer(self->stream_).socket();
      ssize_t n = ::recv(s.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
        self->server_->log->info("{} went away: cancelling its simulation", self->peer_);
        stop->request_stop();
      }
    });
  }

  void Reply(ApiResponse&& res, const std::string& method, const std::string& target, unsigned version,
             bool keep_alive, const std::string& route = "unmatched") {
    int status = res.status;
    size_t bytes = res.body.size();
    auto sp = std::make_shared<Response>(ToBeast(std::move(res), version, keep_alive));
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    server_->log->info("{} {} {} {} {}B {:.1f}ms", peer_, method, target, status, bytes, seconds * 1e3);
    if (server_->on_request) server_->on_request(RequestStats{method, route, status, seconds});
    beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(server_->options.read_timeout_s));
    http::async_write(stream_, *sp, [self = shared_from_this(), sp](beast::error_code ec, std::size_t) {
      self->OnWrite(ec, sp->need_eof());
    });
  }

  void OnWrite(beast::error_code ec, bool close) {
    if (ec) return;
    if (close) return DoClose();
    buffer_.consume(buffer_.size());
    DoRead();
  }

  void DoClose() {
    if constexpr (kTls) {
      beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(5));
      stream_.async_shutdown([self = shared_from_this()](beast::error_code) {});
    } else {
      beast::error_code ec;
      stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    }
  }

  Stream stream_;
  HttpServer::Impl* server_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::string peer_;
  std::chrono::steady_clock::time_point start_;
};

void DoAccept(HttpServer::Impl* s) {
  s->acceptor.async_accept(net::make_strand(s->ioc), [s](beast::error_code ec, tcp::socket socket) {
    if (ec) {
      if (ec == net::error::operation_aborted || s->stopped) return;
      s->log->warn("accept: {}", ec.message());
    } else if (s->tls) {
      std::make_shared<Session<beast::ssl_stream<beast::tcp_stream>>>(std::move(socket), s, *s->tls)->Run();
    } else {
      std::make_shared<Session<beast::tcp_stream>>(std::move(socket), s)->Run();
    }
    DoAccept(s);
  });
}

}  // namespace

HttpServer::HttpServer(Api* api, config::ServerOptions options, std::shared_ptr<spdlog::logger> log)
    : impl_(std::make_unique<Impl>(api, std::move(options), std::move(log))) {}

HttpServer::~HttpServer() {
  Stop();
  for (auto& t : impl_->io_threads) {
    if (t.joinable()) t.join();
  }
  impl_->workers.join();
}

Status HttpServer::Start() {
  auto hp = ParseListen(impl_->options.listen);
  if (!hp) return tl::unexpected(hp.error());
  beast::error_code ec;
  auto address = net::ip::make_address(hp->first, ec);
  if (ec) return InvalidArgument(fmt::format("listen '{}': bad address: {}", impl_->options.listen, ec.message()));
  tcp::endpoint ep{address, hp->second};
  if (!impl_->options.tls_cert.empty()) {
    auto ctx = std::make_unique<net::ssl::context>(net::ssl::context::tls_server);
    ctx->set_options(net::ssl::context::default_workarounds | net::ssl::context::no_sslv2 |
                     net::ssl::context::no_sslv3 | net::ssl::context::no_tlsv1 | net::ssl::context::no_tlsv1_1);
    ctx->use_certificate_chain_file(impl_->options.tls_cert, ec);
    if (ec) return MakeError(ErrorCode::kIo, fmt::format("tls_cert {}: {}", impl_->options.tls_cert, ec.message()));
    ctx->use_private_key_file(impl_->options.tls_key, net::ssl::context::pem, ec);
    if (ec) return MakeError(ErrorCode::kIo, fmt::format("tls_key {}: {}", impl_->options.tls_key, ec.message()));
    impl_->tls = std::move(ctx);
  }
  auto& a = impl_->acceptor;
  a.open(ep.protocol(), ec);
  if (!ec) a.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return MakeError(ErrorCode::kIo, fmt::format("listen {}: {}", impl_->options.listen, ec.message()));
  DoAccept(impl_.get());
  for (int i = 0; i < impl_->options.io_threads; ++i) {
    impl_->io_threads.emplace_back([this] { impl_->ioc.run(); });
  }
  return {};
}

unsigned short HttpServer::port() const {
  beast::error_code ec;
  auto ep = impl_->acceptor.local_endpoint(ec);
  return ec ? 0 : ep.port();
}

void HttpServer::Wait() {
  for (auto& t : impl_->io_threads) {
    if (t.joinable()) t.join();
  }
}

void HttpServer::Stop() {
  if (impl_->stopped.exchange(true)) return;
  net::post(impl_->ioc, [this] {
    beast::error_code ec;
    impl_->acceptor.close(ec);
  });
  impl_->ioc.stop();
}

void HttpServer::OnRequest(std::function<void(const RequestStats&)> fn) { impl_->on_request = std::move(fn); }

int HttpServer::queued() const { return impl_->queued.load(); }

}  // namespace drainwise::server
