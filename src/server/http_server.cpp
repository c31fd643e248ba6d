#include "server/http_server.h"

#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <deque>
#include <optional>
#include <stop_token>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast.hpp>
#include <boost/beast/ssl.hpp>

namespace drainwise::server {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

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

namespace {

// CPU priority of the worker pools' threads, as a nice value (Linux: per
// thread). The I/O threads keep the process's own, so on a busy machine a
// health check's few microseconds of work preempt simulations and renders
// instead of waiting for a time slice behind them.
constexpr int kWorkerNice = 10;

// A fixed set of threads running posted work in order.
class WorkerPool {
 public:
  WorkerPool(int threads, int nice) : guard_(net::make_work_guard(ctx_)) {
    for (int i = 0; i < threads; ++i) {
      threads_.emplace_back([this, nice] {
        // Lowering a thread's priority needs no privilege; if it fails the
        // pool still works, only without the preference.
        (void)setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), nice);
        ctx_.run();
      });
    }
  }
  ~WorkerPool() { Join(); }
  net::io_context& context() { return ctx_; }
  // Runs what is queued (stopped requests answer at once), then ends the threads.
  void Join() {
    guard_.reset();
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  net::io_context ctx_;
  net::executor_work_guard<net::io_context::executor_type> guard_;
  std::vector<std::thread> threads_;
};

}  // namespace

struct HttpServer::Impl {
  Api* api;
  config::ServerOptions options;
  std::shared_ptr<spdlog::logger> log;
  std::function<void(const RequestStats&)> on_request;
  // Declared before the io_context: sessions still queued in it when it is
  // destroyed release their body bytes and stop callbacks into these.
  std::atomic<int> sim_queued{0};
  std::atomic<int> read_queued{0};
  std::atomic<int> pooled_in_flight{0};  // both pools: posted and not yet answered
  std::atomic<int64_t> body_bytes{0};
  std::stop_source stopping;  // fired by Stop(): every request's token follows it
  std::atomic<bool> stopped{false};

  net::io_context ioc;
  WorkerPool sim_workers;
  WorkerPool read_workers;
  tcp::acceptor acceptor{ioc};
  std::vector<std::thread> io_threads;
  std::unique_ptr<net::ssl::context> tls;  // set when serving HTTPS

  // Accept errors: backoff and rate-limited logging (touched only by the one
  // outstanding accept's handler, so no lock).
  net::steady_timer accept_timer{ioc};
  std::chrono::milliseconds accept_backoff{0};
  Clock::time_point accept_logged_at{};
  int accept_unlogged = 0;
  net::steady_timer stop_timer{ioc};

  Impl(Api* a, config::ServerOptions o, std::shared_ptr<spdlog::logger> l)
      : api(a),
        options(std::move(o)),
        log(std::move(l)),
        sim_workers(options.workers, kWorkerNice),
        read_workers(options.read_workers, kWorkerNice) {}
};

namespace {

using Response = http::response<http::string_body>;

// Requests read ahead on one connection, waiting or running, before the
// session stops reading (Beast's advanced server uses the same bound).
constexpr size_t kPipelineLimit = 8;

ApiResponse InternalError() {
  ApiResponse r;
  r.status = 500;
  r.content_type = "application/problem+json";
  r.body = R"({"type":"https://drainwise.dev/problems/internal","title":"Internal error","status":500,)"
           R"("detail":"unexpected error while handling the request"})";
  return r;
}

// The last line of defence: whatever a handler throws becomes a 500, never
// the end of the daemon.
ApiResponse SafeHandle(Api& api, RoutedRequest& routed) {
  try {
    return api.Handle(routed);
  } catch (...) {
    return InternalError();
  }
}

// `head`: the GET's headers, Content-Length included, and no body (RFC 9110
// 9.3.2).
Response ToBeast(ApiResponse&& r, unsigned version, bool keep_alive, bool head) {
  Response res{static_cast<http::status>(r.status), version};
  res.set(http::field::server, "drainwise");
  res.set(http::field::content_type, r.content_type);
  for (auto& [k, v] : r.headers) res.set(k, v);
  res.keep_alive(keep_alive);
  if (head) {
    res.content_length(r.body.size());
  } else {
    res.body() = std::move(r.body);
    res.prepare_payload();
  }
  return res;
}

// Bytes of one request body counted against body_memory_limit_bytes, given
// back when the last holder lets go.
class BodyReservation {
 public:
  BodyReservation(std::atomic<int64_t>* total, int64_t bytes) : total_(total), bytes_(bytes) {}
  ~BodyReservation() { total_->fetch_sub(bytes_); }
  BodyReservation(const BodyReservation&) = delete;
  BodyReservation& operator=(const BodyReservation&) = delete;

 private:
  std::atomic<int64_t>* total_;
  int64_t bytes_;
};

std::shared_ptr<BodyReservation> Reserve(std::atomic<int64_t>* total, int64_t bytes, int64_t limit) {
  int64_t cur = total->load();
  do {
    if (cur + bytes > limit) return nullptr;
  } while (!total->compare_exchange_weak(cur, cur + bytes));
  return std::make_shared<BodyReservation>(total, bytes);
}

// One request's cancellation: its own stop source, fired by the deadline, by
// the client going away, and (through the callback) by HttpServer::Stop().
struct RequestControl {
  // kAbandoned: answered 504 while still queued; kAnswered: the pool's answer is back.
  enum Phase { kQueued, kRunning, kAbandoned, kAnswered };
  std::stop_source stop;
  std::atomic<bool> deadline_hit{false};
  std::atomic<int> phase{kQueued};
  std::optional<std::stop_callback<std::function<void()>>> on_server_stop;

  explicit RequestControl(std::stop_token server) {
    on_server_stop.emplace(std::move(server), [this] { stop.request_stop(); });
  }
};

// One request read from a connection, until its answer is written.
struct Pending {
  RoutedRequest routed;  // routed once, on the I/O thread; its admission says where it runs
  std::string method, target, route;
  unsigned version = 11;
  bool keep_alive = true;
  Clock::time_point start = Clock::now();
  std::shared_ptr<BodyReservation> body;
  std::shared_ptr<RequestControl> control;
  bool started = false;
  std::optional<ApiResponse> response;
};

// One connection. `Stream` is beast::tcp_stream (HTTP) or
// beast::ssl_stream<beast::tcp_stream> (HTTPS); the rest is the same.
//
// Reading runs ahead of the work (up to kPipelineLimit requests), which also
// notices a client that hangs up while its simulation runs. Requests run one
// at a time in arrival order, each answer is written in that order. All
// members are touched only on the connection's strand.
template <class Stream>
class Session : public std::enable_shared_from_this<Session<Stream>> {
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;
  using std::enable_shared_from_this<Session<Stream>>::shared_from_this;

 public:
  template <class... Args>
  Session(tcp::socket&& socket, HttpServer::Impl* server, Args&&... args)
      : stream_(std::move(socket), std::forward<Args>(args)...),
        server_(server),
        idle_timer_(beast::get_lowest_layer(stream_).get_executor()) {
    beast::error_code ec;
    auto ep = beast::get_lowest_layer(stream_).socket().remote_endpoint(ec);
    if (!ec) peer_ = ep.address().to_string();
  }

  void Run() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      if constexpr (kTls) {
        beast::get_lowest_layer(self->stream_)
            .expires_after(std::chrono::seconds(self->server_->options.read_timeout_s));
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
  // ---- reading ----

  void DoRead() {
    if (reading_ || read_closed_ || pipeline_.size() >= kPipelineLimit) return;
    reading_ = true;
    parser_.emplace();
    parser_->body_limit(static_cast<uint64_t>(server_->options.body_limit_bytes));
    parser_->header_limit(64 * 1024);
    // Reads have no stream timeout: the idle timer below bounds them while
    // the connection waits on its client, and nothing does while it waits on
    // the server.
    beast::get_lowest_layer(stream_).expires_never();
    if (pipeline_.empty()) ArmIdle();
    http::async_read_header(stream_, buffer_, *parser_,
                            beast::bind_front_handler(&Session::OnHeader, shared_from_this()));
  }

  void OnHeader(beast::error_code ec, std::size_t) {
    if (ec) return OnReadError(ec);
    // Count the body against the server-wide cap before reading it.
    int64_t bytes = 0;
    if (auto length = parser_->content_length()) {
      bytes = static_cast<int64_t>(*length);
    } else if (parser_->chunked()) {
      bytes = server_->options.body_limit_bytes;  // unknown until read: the most it may be
    }
    std::shared_ptr<BodyReservation> body;
    if (bytes > 0) {
      body = Reserve(&server_->body_bytes, bytes, server_->options.body_memory_limit_bytes);
      if (!body) {
        // The body stays unread, so the connection cannot carry on.
        reading_ = false;
        read_closed_ = true;
        DisarmIdle();
        Pending p = FromHeader();
        p.keep_alive = false;
        p.response = ErrorResponse(
            Error{ErrorCode::kUnavailable, fmt::format("request bodies in flight would exceed {} bytes; retry shortly",
                                                       server_->options.body_memory_limit_bytes)});
        pipeline_.push_back(std::move(p));
        return Pump();
      }
    }
    if (parser_->is_done()) return OnRequest(std::move(body));
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this(), body = std::move(body)](beast::error_code ec, std::size_t) mutable {
                       if (ec) return self->OnReadError(ec);
                       self->OnRequest(std::move(body));
                     });
  }

  // The request line and method of the message being parsed, for answers
  // given before its body is read.
  Pending FromHeader() {
    Pending p;
    const auto& h = parser_->get();
    p.method = std::string(h.method_string());
    p.target = std::string(h.target());
    p.version = h.version();
    return p;
  }

  void OnRequest(std::shared_ptr<BodyReservation> body) {
    reading_ = false;
    DisarmIdle();
    auto msg = parser_->release();
    Pending p;
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
    p.method = req.method;
    p.target = req.target;
    p.version = msg.version();
    p.keep_alive = msg.keep_alive();
    p.body = std::move(body);
    try {
      // Decoded and matched once; 400/404/405 come back as routed.problem,
      // answered inline.
      p.routed = server_->api->Route(std::move(req));
      p.route = p.routed.RouteName();
    } catch (...) {
      p.response = InternalError();
    }
    if (!p.keep_alive) read_closed_ = true;  // nothing after it is read
    pipeline_.push_back(std::move(p));
    Pump();
    DoRead();
  }

  void OnReadError(beast::error_code ec) {
    reading_ = false;
    read_closed_ = true;
    DisarmIdle();
    if (ec == http::error::body_limit) {
      Pending p = FromHeader();
      p.keep_alive = false;
      p.response = ErrorResponse(
          Error{ErrorCode::kTooLarge, fmt::format("request body exceeds {} bytes", server_->options.body_limit_bytes)});
      pipeline_.push_back(std::move(p));
      return Pump();
    }
    const bool gone = ec == http::error::end_of_stream || ec == http::error::partial_message || ec == net::error::eof ||
                      ec == net::error::connection_reset || ec == net::error::operation_aborted ||
                      ec == net::error::bad_descriptor || ec == beast::error::timeout ||
                      ec == net::ssl::error::stream_truncated;
    if (!gone && parser_ && parser_->got_some()) {
      Pending p = parser_->is_header_done() ? FromHeader() : Pending{};
      if (p.method.empty()) p.method = p.target = "-";
      p.keep_alive = false;
      p.response = ErrorResponse(Error{ErrorCode::kInvalidArgument, "malformed HTTP request: " + ec.message()});
      pipeline_.push_back(std::move(p));
      return Pump();
    }
    // The client closed or the connection failed: whatever it still waits
    // for is cancelled (running work sees its stop token, queued work is not
    // started).
    bool cancelled = false;
    for (auto& p : pipeline_) {
      if (p.response) continue;
      if (p.started && p.control) {
        p.control->stop.request_stop();
        cancelled = true;
      } else if (!p.started) {
        p.response = ErrorResponse(Error{ErrorCode::kCancelled, "the client went away"});
      }
    }
    client_gone_ = true;
    if (cancelled) server_->log->info("{} went away: cancelling its simulation", peer_);
    if (pipeline_.empty()) return DoClose();
    MaybeWrite();
  }

  // While the connection waits on its client (a read pending, nothing of its
  // own in progress), the client has read_timeout_s to send a whole request.
  void ArmIdle() {
    ++idle_generation_;
    idle_timer_.expires_after(std::chrono::seconds(server_->options.read_timeout_s));
    idle_timer_.async_wait([self = shared_from_this(), gen = idle_generation_](beast::error_code ec) {
      if (ec || gen != self->idle_generation_ || !self->pipeline_.empty()) return;
      beast::get_lowest_layer(self->stream_).close();  // the pending read ends with an error
    });
  }
  void DisarmIdle() {
    ++idle_generation_;
    idle_timer_.cancel();
  }

  // ---- running, in arrival order ----

  void Pump() {
    for (auto& p : pipeline_) {
      if (p.response) continue;
      if (p.started) break;  // one at a time: the rest wait for this one
      Start(p);
      if (!p.response) break;  // went to a pool
    }
    MaybeWrite();
  }

  void Start(Pending& p) {
    p.started = true;
    p.start = Clock::now();
    if (p.routed.admission == Admission::kInline) {
      p.response = SafeHandle(*server_->api, p.routed);
      p.routed = RoutedRequest{};
      p.body.reset();
      return;
    }
    HttpServer::Impl* s = server_;
    if (s->stopped) {
      p.response = ErrorResponse(Error{ErrorCode::kUnavailable, "the daemon is shutting down"});
      return;
    }
    const bool sim = p.routed.admission == Admission::kSimulation;
    std::atomic<int>& count = sim ? s->sim_queued : s->read_queued;
    const int limit = sim ? s->options.queue_limit : s->options.read_queue_limit;
    // Bounded queue per lane: refuse rather than pile up.
    if (count.fetch_add(1) >= limit) {
      count.fetch_sub(1);
      p.response =
          ErrorResponse(Error{ErrorCode::kUnavailable, fmt::format("{} {} already queued; retry shortly", limit,
                                                                   sim ? "simulations" : "bulk reads")});
      p.routed = RoutedRequest{};
      p.body.reset();
      return;
    }
    // The deadline timer lives on the connection's strand; the deadline, the
    // client hanging up and Stop() all reach the work through one stop token.
    auto control = std::make_shared<RequestControl>(s->stopping.get_token());
    p.control = control;
    p.routed.request.stop = control->stop.get_token();
    // `pending` stays valid: deque elements do not move, and an entry leaves
    // the pipeline only once answered.
    Pending* pending = &p;
    auto timer = std::make_shared<net::steady_timer>(stream_.get_executor());
    timer->expires_after(std::chrono::seconds(s->options.assessment_deadline_s));
    timer->async_wait([self = shared_from_this(), control, pending, sim](beast::error_code ec) {
      if (ec) return;
      control->deadline_hit = true;
      control->stop.request_stop();
      // Still waiting for a thread: answer now, the pool skips it later.
      int queued = RequestControl::kQueued;
      if (control->phase.compare_exchange_strong(queued, RequestControl::kAbandoned)) {
        HttpServer::Impl* s = self->server_;
        (sim ? s->sim_queued : s->read_queued).fetch_sub(1);
        s->pooled_in_flight.fetch_sub(1);
        pending->response = ErrorResponse(
            Error{ErrorCode::kDeadlineExceeded,
                  fmt::format("request waited past the {} s deadline for a worker", s->options.assessment_deadline_s)});
        self->Pump();
      }
    });
    s->pooled_in_flight.fetch_add(1);
    if (read_closed_ && !reading_ && !client_gone_) WatchForHangup(control);
    auto work = [self = shared_from_this(), pending, routed = std::move(p.routed), body = std::move(p.body), control,
                 timer, sim]() mutable {
      HttpServer::Impl* s = self->server_;
      int queued = RequestControl::kQueued;
      if (!control->phase.compare_exchange_strong(queued, RequestControl::kRunning)) return;  // answered already
      ApiResponse res = control->stop.stop_requested() ? ErrorResponse(Error{ErrorCode::kCancelled, "cancelled"})
                                                       : SafeHandle(*s->api, routed);
      routed = RoutedRequest{};  // the body's memory goes before the reservation does
      body.reset();
      if (res.status == 499) {
        if (control->deadline_hit) {
          res = ErrorResponse(Error{ErrorCode::kDeadlineExceeded, fmt::format("request exceeded the {} s deadline",
                                                                              s->options.assessment_deadline_s)});
        } else if (s->stopped) {
          res = ErrorResponse(Error{ErrorCode::kUnavailable, "the daemon is shutting down"});
        }
      }
      (sim ? s->sim_queued : s->read_queued).fetch_sub(1);
      net::post(self->stream_.get_executor(), [self, pending, timer, control, res = std::move(res)]() mutable {
        timer->cancel();
        control->phase = RequestControl::kAnswered;
        pending->response = std::move(res);
        self->server_->pooled_in_flight.fetch_sub(1);
        self->Pump();
      });
    };
    net::post((sim ? s->sim_workers : s->read_workers).context(), std::move(work));
  }

  // ---- writing, in arrival order ----

  void MaybeWrite() {
    if (writing_ || pipeline_.empty() || !pipeline_.front().response) return;
    Pending& p = pipeline_.front();
    ApiResponse res = std::move(*p.response);
    const int status = res.status;
    const size_t bytes = res.body.size();
    const bool head = p.method == "HEAD";
    auto sp = std::make_shared<Response>(ToBeast(std::move(res), p.version, p.keep_alive, head));
    double seconds = std::chrono::duration<double>(Clock::now() - p.start).count();
    server_->log->info("{} {} {} {} {}B {:.1f}ms", peer_, p.method, p.target, status, head ? 0 : bytes, seconds * 1e3);
    if (server_->on_request) {
      server_->on_request(RequestStats{p.method, p.route.empty() ? "unmatched" : p.route, status, seconds});
    }
    writing_ = true;
    // Only the write timer is set when a read is pending (Beast keeps one per
    // direction).
    beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(server_->options.read_timeout_s));
    http::async_write(stream_, *sp, [self = shared_from_this(), sp](beast::error_code ec, std::size_t) {
      self->OnWrite(ec, sp->need_eof());
    });
  }

  void OnWrite(beast::error_code ec, bool close) {
    writing_ = false;
    pipeline_.pop_front();
    if (ec || close) {
      read_closed_ = true;
      for (auto& p : pipeline_) {
        if (p.control) p.control->stop.request_stop();
      }
      if (ec || reading_ || !pipeline_.empty()) {
        // Ends a pending read; work still running answers into a closed
        // socket and the session goes with its last handler.
        beast::get_lowest_layer(stream_).close();
        return;
      }
      return DoClose();
    }
    if (pipeline_.empty()) {
      if (read_closed_ && !reading_) return DoClose();
      if (reading_) ArmIdle();
    }
    DoRead();
    MaybeWrite();
  }

  // With no read pending (the request asked to close the connection), a
  // client that hangs up is seen by waiting for the socket to become
  // readable: end-of-stream then means it went away. (Data instead is a
  // request sent after "Connection: close", ignored.) DoClose() cancels it.
  void WatchForHangup(std::shared_ptr<RequestControl> control) {
    auto& socket = beast::get_lowest_layer(stream_).socket();
    socket.async_wait(tcp::socket::wait_read, [self = shared_from_this(), control](beast::error_code ec) {
      const int phase = control->phase;
      if (ec || phase == RequestControl::kAbandoned || phase == RequestControl::kAnswered) return;
      char byte;
      ssize_t n =
          ::recv(beast::get_lowest_layer(self->stream_).socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
        if (!control->stop.stop_requested()) {
          self->server_->log->info("{} went away: cancelling its simulation", self->peer_);
        }
        self->client_gone_ = true;
        control->stop.request_stop();
      }
    });
  }

  void DoClose() {
    DisarmIdle();
    beast::error_code ignored;
    beast::get_lowest_layer(stream_).socket().cancel(ignored);  // a hang-up watch; nothing else is pending
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
  net::steady_timer idle_timer_;
  uint64_t idle_generation_ = 0;
  beast::flat_buffer buffer_;  // kept across requests: it may hold the next pipelined one
  std::optional<http::request_parser<http::string_body>> parser_;
  std::deque<Pending> pipeline_;  // read, not yet answered; front = next answer to write
  bool reading_ = false;
  bool read_closed_ = false;  // nothing more is read: EOF, an error, or a request that ends the connection
  bool writing_ = false;
  bool client_gone_ = false;  // seen end-of-stream: what it asked for is cancelled
  std::string peer_;
};

void DoAccept(HttpServer::Impl* s);

// Out of descriptors (EMFILE, ENFILE) or other accept errors: the pending
// connection stays in the backlog, so re-arming at once would spin. Wait
// 10 ms, doubling up to 500 ms, and log at most one line a second.
void OnAcceptError(HttpServer::Impl* s, const beast::error_code& ec) {
  s->accept_backoff = s->accept_backoff.count() == 0 ? std::chrono::milliseconds(10)
                                                     : std::min(s->accept_backoff * 2, std::chrono::milliseconds(500));
  auto now = Clock::now();
  if (now - s->accept_logged_at >= std::chrono::seconds(1)) {
    if (s->accept_unlogged > 0) {
      s->log->warn("accept: {}; retrying in {} ms ({} more since the last line)", ec.message(),
                   s->accept_backoff.count(), s->accept_unlogged);
    } else {
      s->log->warn("accept: {}; retrying in {} ms", ec.message(), s->accept_backoff.count());
    }
    s->accept_logged_at = now;
    s->accept_unlogged = 0;
  } else {
    ++s->accept_unlogged;
  }
  s->accept_timer.expires_after(s->accept_backoff);
  s->accept_timer.async_wait([s](beast::error_code ec) {
    if (ec || s->stopped) return;
    DoAccept(s);
  });
}

void DoAccept(HttpServer::Impl* s) {
  s->acceptor.async_accept(net::make_strand(s->ioc), [s](beast::error_code ec, tcp::socket socket) {
    if (ec == net::error::operation_aborted || s->stopped) return;
    if (ec) return OnAcceptError(s, ec);
    if (s->accept_backoff.count() != 0) {
      s->log->info("accept: recovered ({} errors not logged)", s->accept_unlogged);
      s->accept_backoff = std::chrono::milliseconds(0);
      s->accept_unlogged = 0;
    }
    if (s->tls) {
      std::make_shared<Session<beast::ssl_stream<beast::tcp_stream>>>(std::move(socket), s, *s->tls)->Run();
    } else {
      std::make_shared<Session<beast::tcp_stream>>(std::move(socket), s)->Run();
    }
    DoAccept(s);
  });
}

// After Stop(): answers of cancelled work go out, until `until` at the latest.
void StopWhenDrained(HttpServer::Impl* s, Clock::time_point until) {
  if (s->pooled_in_flight.load() == 0 || Clock::now() >= until) {
    if (s->pooled_in_flight.load() > 0) {
      s->log->warn("stopping with {} requests still running", s->pooled_in_flight.load());
    }
    s->ioc.stop();
    return;
  }
  s->stop_timer.expires_after(std::chrono::milliseconds(20));
  s->stop_timer.async_wait([s, until](beast::error_code) { StopWhenDrained(s, until); });
}

}  // namespace

HttpServer::HttpServer(Api* api, config::ServerOptions options, std::shared_ptr<spdlog::logger> log)
    : impl_(std::make_unique<Impl>(api, std::move(options), std::move(log))) {}

HttpServer::~HttpServer() {
  Stop();
  for (auto& t : impl_->io_threads) {
    if (t.joinable()) t.join();
  }
  impl_->sim_workers.Join();
  impl_->read_workers.Join();
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
  impl_->stopping.request_stop();  // every running request's stop token fires, here and now
  if (impl_->io_threads.empty()) {
    impl_->ioc.stop();
    return;
  }
  net::post(impl_->ioc, [s = impl_.get()] {
    beast::error_code ec;
    s->acceptor.close(ec);
    s->accept_timer.cancel();
    StopWhenDrained(s, Clock::now() + std::chrono::seconds(2));
  });
}

void HttpServer::OnRequest(std::function<void(const RequestStats&)> fn) { impl_->on_request = std::move(fn); }

int HttpServer::queued() const { return impl_->sim_queued.load(); }
int HttpServer::reads_queued() const { return impl_->read_queued.load(); }
int64_t HttpServer::body_bytes() const { return impl_->body_bytes.load(); }

}  // namespace drainwise::server
