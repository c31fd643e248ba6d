// systemd Type=notify end to end: the real daemon, $NOTIFY_SOCKET pointing at
// a datagram socket this test owns, READY=1 once the port is bound and
// STOPPING=1 on SIGTERM. WATCHDOG=1 arrives when $WATCHDOG_USEC is set.
#include <doctest/doctest.h>

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "testing/daemon.h"

using namespace drainwise;

namespace {

// A bound AF_UNIX datagram socket, the role systemd plays.
class NotifySocket {
 public:
  explicit NotifySocket(std::string path) : path_(std::move(path)) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path_.c_str(), sizeof(addr.sun_path) - 1);
    bound_ = fd_ >= 0 && ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~NotifySocket() {
    if (fd_ >= 0) ::close(fd_);
    std::filesystem::remove(path_);
  }
  bool bound() const { return bound_; }

  // Reads datagrams until one contains `needle` or `timeout` passes; returns
  // the matching datagram or "" (every datagram read is appended to seen_).
  std::string WaitFor(const std::string& needle, std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(std::max<long>(1, left.count()))) <= 0) continue;
      char buf[4096];
      ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) continue;
      std::string msg(buf, static_cast<size_t>(n));
      seen_ += msg + "\n--\n";
      if (msg.find(needle) != std::string::npos) return msg;
    }
    return "";
  }
  const std::string& seen() const { return seen_; }

 private:
  std::string path_;
  int fd_ = -1;
  bool bound_ = false;
  std::string seen_;
};

// Sets an environment variable for the daemons started in this scope; the
// Daemon helper forks and execs, so the child inherits it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) { ::setenv(name, value.c_str(), 1); }
  ~ScopedEnv() { ::unsetenv(name_); }

 private:
  const char* name_;
};

}  // namespace

TEST_CASE("the daemon sends READY=1 once listening and STOPPING=1 on SIGTERM") {
  std::string dir = testing::MakeTempDir();
  NotifySocket sock(dir + "/notify");
  REQUIRE(sock.bound());
  ScopedEnv env("NOTIFY_SOCKET", dir + "/notify");
  testing::Daemon d({}, dir);
  REQUIRE_MESSAGE(d.started(), d.log());
  auto ready = sock.WaitFor("READY=1", std::chrono::seconds(10));
  REQUIRE_MESSAGE(!ready.empty(), sock.seen());
  // The status line names the real port, so an operator sees it in `systemctl status`.
  CHECK(ready.find("STATUS=listening on 127.0.0.1:0 (port " + std::to_string(d.port()) + ")") != std::string::npos);
  // READY came after the port file: the daemon answers already.
  CHECK(d.Get("/healthz").status == 200);
  // No watchdog without WATCHDOG_USEC.
  CHECK(sock.WaitFor("WATCHDOG=1", std::chrono::milliseconds(300)).empty());
  CHECK(d.Stop() == 0);
  CHECK_MESSAGE(!sock.WaitFor("STOPPING=1", std::chrono::seconds(5)).empty(), sock.seen());
  std::filesystem::remove_all(dir);
}

TEST_CASE("an abstract NOTIFY_SOCKET name and the watchdog pings at half the interval") {
  std::string name = "drainwise-test-" + std::to_string(::getpid());
  // Abstract socket: sun_path starts with NUL, the length is the name's.
  int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0);
  ScopedEnv env("NOTIFY_SOCKET", "@" + name);
  ScopedEnv wd("WATCHDOG_USEC", "400000");  // 0.4 s: a ping every 0.2 s
  testing::Daemon d;
  REQUIRE_MESSAGE(d.started(), d.log());
  auto recv_until = [fd](const std::string& needle, int max_ms) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(max_ms);
    int count = 0;
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      char buf[4096];
      ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n > 0 && std::string(buf, static_cast<size_t>(n)).find(needle) != std::string::npos) ++count;
    }
    return count;
  };
  // In 1.5 s at one ping per 0.2 s: about 7; at least 4 allows for a loaded machine.
  int pings = recv_until("WATCHDOG=1", 1500);
  CHECK(pings >= 4);
  CHECK(pings <= 12);
  CHECK(d.log().find("systemd watchdog on (400 ms)") != std::string::npos);
  // Stop is prompt even though the watchdog thread is waiting.
  auto t0 = std::chrono::steady_clock::now();
  CHECK(d.Stop() == 0);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
  ::close(fd);
}
