// Starts the real `drainwise serve` on 127.0.0.1 with an ephemeral port and a
// throw-away database, and talks HTTP/1.1 to it. Used by end-to-end tests.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace drainwise::testing {

// Built with AddressSanitizer (the sanitizer pass of packaging/test.sh): the
// daemon and the tests run 2-3x slower, so latency bounds that a release
// build meets are looser there, and the release pass holds the real ones.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitizerBuild = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kSanitizerBuild = true;
#else
inline constexpr bool kSanitizerBuild = false;
#endif
#else
inline constexpr bool kSanitizerBuild = false;
#endif

struct HttpReply {
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // lower-case names

  nlohmann::json Json() const;
};

// One request on a fresh connection to 127.0.0.1:port (bounded by a 60 s timeout).
HttpReply HttpCall(unsigned short port, const std::string& method, const std::string& target,
                   const std::string& body = "", const std::map<std::string, std::string>& headers = {});

class Daemon {
 public:
  // `args` are appended to `drainwise serve --listen 127.0.0.1:0 --db <dir>/d.db`.
  explicit Daemon(std::vector<std::string> args = {}, std::string dir = "");
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  bool started() const { return port_ != 0; }
  int pid() const { return pid_; }  // for signals other than Stop()'s SIGTERM; -1 once stopped
  unsigned short port() const { return port_; }
  const std::string& dir() const { return dir_; }
  std::string db_path() const { return dir_ + "/d.db"; }
  std::string log() const;  // what the daemon wrote to stderr

  HttpReply Get(const std::string& target) { return HttpCall(port_, "GET", target); }
  HttpReply Call(const std::string& method, const std::string& target, const std::string& body = "",
                 const std::map<std::string, std::string>& headers = {}) {
    return HttpCall(port_, method, target, body, headers);
  }
  // SIGTERM and wait (up to 10 s, then SIGKILL). Returns the exit status.
  int Stop();
  void Kill();  // SIGKILL, no cleanup: the crash test

 private:
  int pid_ = -1;
  unsigned short port_ = 0;
  std::string dir_;
  bool own_dir_ = false;
};

// A fresh temporary directory (removed by the caller or left for inspection).
std::string MakeTempDir();
// The whole file, or "" when it cannot be read.
std::string ReadFile(const std::string& path);
// Polls `pred` every 20 ms until it holds or `limit` passes; returns its last value.
bool Eventually(const std::function<bool()>& pred, std::chrono::milliseconds limit = std::chrono::seconds(30));
// Runs the drainwise binary with `args`, returns exit code and stdout.
int RunDrainwise(const std::vector<std::string>& args, std::string* out, std::string* err = nullptr);

}  // namespace drainwise::testing
