// HTTP/1.1 on Boost.Beast: a listener, one session per connection, the Api
// behind it. Quick routes are answered on the I/O threads; simulations go to
// a separate worker pool (bounded: past `queue_limit` they get 503 with
// Retry-After), so health checks never wait behind them.
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
  // Blocks until Stop() (from another thread or a signal handler thread).
  void Wait();
  void Stop();

  // Called after every request (metrics).
  void OnRequest(std::function<void(const RequestStats&)> fn);
  // Simulations waiting or running now.
  int queued() const;

  struct Impl;  // public so the session code in the .cpp can name it

 private:
  std::unique_ptr<Impl> impl_;
};

// "127.0.0.1:8080", "[::1]:0", ":8080" (all interfaces).
Result<std::pair<std::string, unsigned short>> ParseListen(const std::string& listen);

}  // namespace drainwise::server
