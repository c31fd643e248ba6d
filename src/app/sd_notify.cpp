#include "app/sd_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace drainwise::app {

bool SdNotify(std::string_view state, std::string* error) {
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (path == nullptr || path[0] == '\0') return true;
  auto fail = [error](std::string message) {
    if (error) *error = std::move(message);
    return false;
  };
  std::string name(path);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (name.size() >= sizeof(addr.sun_path)) return fail("NOTIFY_SOCKET path too long: " + name);
  if (name[0] != '/' && name[0] != '@') return fail("NOTIFY_SOCKET is neither a path nor an abstract name: " + name);
  std::memcpy(addr.sun_path, name.data(), name.size());
  // An abstract name starts with a NUL byte and is not NUL-terminated: its
  // length is exactly what is passed in the address length.
  if (name[0] == '@') addr.sun_path[0] = '\0';
  auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size() + (name[0] == '/' ? 1 : 0));

  int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return fail(std::string("NOTIFY_SOCKET: socket: ") + std::strerror(errno));
  ssize_t sent = ::sendto(fd, state.data(), state.size(), MSG_NOSIGNAL, reinterpret_cast<sockaddr*>(&addr), len);
  int saved = errno;
  ::close(fd);
  if (sent < 0) return fail("NOTIFY_SOCKET " + name + ": " + std::strerror(saved));
  if (static_cast<size_t>(sent) != state.size()) return fail("NOTIFY_SOCKET " + name + ": short write");
  return true;
}

std::chrono::microseconds SdWatchdogInterval() {
  const char* usec = std::getenv("WATCHDOG_USEC");
  if (usec == nullptr || usec[0] == '\0') return std::chrono::microseconds{0};
  // systemd sets WATCHDOG_PID so that a child that inherited the variable
  // does not ping on the service's behalf.
  if (const char* pid = std::getenv("WATCHDOG_PID"); pid != nullptr && pid[0] != '\0') {
    char* end = nullptr;
    long p = std::strtol(pid, &end, 10);
    if (*end != '\0' || p != static_cast<long>(::getpid())) return std::chrono::microseconds{0};
  }
  char* end = nullptr;
  unsigned long long v = std::strtoull(usec, &end, 10);
  if (*end != '\0' || v == 0) return std::chrono::microseconds{0};
  return std::chrono::microseconds{static_cast<long long>(v)};
}

SdWatchdog::SdWatchdog(std::chrono::microseconds interval, std::function<bool()> healthy) {
  if (interval.count() <= 0) return;
  // Half the interval, as sd_watchdog_enabled(3) recommends, so one late
  // ping does not get the service killed.
  auto period = interval / 2;
  thread_ = std::jthread([period, healthy = std::move(healthy)](std::stop_token stop) {
    std::mutex m;
    std::condition_variable_any cv;
    std::unique_lock lock(m);
    while (!stop.stop_requested()) {
      if (!healthy || healthy()) SdNotify("WATCHDOG=1");
      cv.wait_for(lock, stop, period, [] { return false; });
    }
  });
}

}  // namespace drainwise::app
