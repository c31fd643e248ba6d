// Reading a source's bytes: http(s) URLs, files and commands, each bounded in
// time and size. Credentials travel in headers only and never appear in an
// error message.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "model/error.h"

namespace drainwise::connectors {

struct HttpHeader {
  std::string name;
  std::string value;
};

struct FetchLimits {
  double timeout_s = 10;        // whole exchange: resolve, connect, TLS, request, response
  size_t max_bytes = 64 << 20;  // body (or command output) larger than this is an error
  // https only:
  std::string ca_file;                // PEM bundle; empty = system default paths
  bool insecure_skip_verify = false;  // no certificate or host name check (lab use)
};

struct ParsedUrl {
  bool tls = false;
  std::string host;    // without brackets for IPv6
  std::string port;    // "80"/"443" when absent
  std::string target;  // path + query, "/" when absent
};

// http://host[:port][/path][?query] and https://...; user info is rejected
// (put credentials in token_env/token_file).
Result<ParsedUrl> ParseUrl(std::string_view url);

// One GET. Errors: kDeadlineExceeded (timeout), kTooLarge (body limit),
// kUnauthenticated / kPermissionDenied / kNotFound for 401 / 403 / 404,
// kUnavailable for other failures and statuses. Redirects are not followed.
Result<std::string> HttpGet(const std::string& url, const std::vector<HttpHeader>& headers, const FetchLimits& limits);

// The whole file; kTooLarge beyond max_bytes, kIo when unreadable.
Result<std::string> ReadFileLimited(const std::string& path, size_t max_bytes);

// Runs `command` with /bin/sh -c in its own process group and returns its
// standard output. Killed (the group) after timeout_s (kDeadlineExceeded) or
// when the output exceeds max_bytes (kTooLarge); a non-zero exit is kUnavailable
// with the start of its standard error in the message.
Result<std::string> RunCommand(const std::string& command, const FetchLimits& limits);

}  // namespace drainwise::connectors
