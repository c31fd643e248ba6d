// The small blocking HTTP/1.1 client of the CLI commands that talk to a
// running daemon (check, calibrate). Plain http only; the daemon listens on
// loopback or behind a proxy that terminates TLS.
#pragma once

#include <string>

#include "model/error.h"

namespace drainwise::app {

struct HttpTarget {
  std::string host;
  std::string port = "80";
  std::string base;  // path prefix, without a trailing slash
};

// "http://HOST[:PORT][/PREFIX]" or "HOST:PORT". Errors name the URL.
Result<HttpTarget> ParseServerUrl(const std::string& url);

struct HttpReply {
  int status = 0;
  std::string reason;
  std::string body;
};

// One request on a fresh connection, bounded by `timeout_s`. Errors
// (kUnavailable) say what failed: resolve, connect, write or read.
Result<HttpReply> HttpRequest(const HttpTarget& target, const std::string& method, const std::string& path,
                              const std::string& body, const std::string& token, int timeout_s,
                              const std::string& accept = "application/json");

}  // namespace drainwise::app
