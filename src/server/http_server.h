// HTTP/1.1 on Boost.Beast: a listener, one session per connection, the Api
// behind it.
//
// Where a request runs (its admission class):
//   - inline: on the I/O thread (health, readiness, metrics, the console's
//     static files), so nothing queues in front of them;
//   - read: a pool of `read_workers` threads (documents, listings), at most
//     `read_queue_limit` waiting or running, past it 503 with Retry-After;
//   - simulation: a separate pool of `workers` threads (assessments, plans,
//     candidates, calibration), at most `queue_limit` waiting or running.
// The two pools are separate, so bulk reads cannot take the simulations'
// threads or queue slots. Pool threads run at nice 10, so the I/O threads
// (health checks) preempt them on a busy machine. Every pooled request has a
// deadline (`assessment_deadline_s`, 504 past it, also when it is still
// waiting) and a stop token that fires on the deadline, when the client goes
// away, and on Stop().
//
// A connection may pipeline: up to 8 requests are read ahead, run one after
// the other, and answered in order. HEAD answers carry the GET's headers and
// no body. Request bodies held in memory (announced length, or the body
// limit for a chunked body, until the request is answered) are capped
// server-wide by `body_memory_limit_bytes`: past it 503 with Retry-After and
// the connection is closed. Accept errors (EMFILE, ENFILE, ...) back off from
// 10 to 500 ms and are logged at most once a second.
//
// Per request: one log line (method, path, status, bytes, latency) on the
// "http" logger.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <spdlog/logger.h>

#include "config/config.h"
#include "server/api.h"

namespace drainwise::server {

struct RequestStats {
  std::string method;
  std::string route;
  int status = 0;
  double seconds = 0;
};

class HttpServer {
 public:
  HttpServer(Api* api, config::ServerOptions options, std::shared_ptr<spdlog::logger> log);
  ~HttpServer();

  // Binds and starts accepting. Errors: kIo naming the address.
  Status Start();
  // The port actually bound (useful with port 0).
  unsigned short port() const;
  // Blocks until the server has stopped (after Stop()).
  void Wait();
  // Closes the listener and fires every in-flight request's stop token
  // (running simulations cancel, queued ones answer 503 without running),
  // then lets answers already on their way go out for at most 2 s; Wait()
  // returns after that. Safe from any thread, idempotent.
  void Stop();

  // Called after every request (metrics).
  void OnRequest(std::function<void(const RequestStats&)> fn);
  // Simulations waiting or running now.
  int queued() const;
  // Pooled reads waiting or running now.
  int reads_queued() const;
  // Bytes of request bodies held now (what body_memory_limit_bytes caps).
  int64_t body_bytes() const;

  struct Impl;  // public so the session code in the .cpp can name it

 private:
  std::unique_ptr<Impl> impl_;
};

// "127.0.0.1:8080", "[::1]:0", ":8080" (all interfaces).
Result<std::pair<std::string, unsigned short>> ParseListen(const std::string& listen);

}  // namespace drainwise::server
