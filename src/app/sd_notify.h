// systemd's notification protocol (sd_notify(3)), spoken directly: one
// AF_UNIX datagram per message to the socket named by $NOTIFY_SOCKET, so the
// daemon needs no libsystemd. Outside systemd (no $NOTIFY_SOCKET) every call
// is a no-op that succeeds.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <thread>

namespace drainwise::app {

// Sends `state` (e.g. "READY=1\nSTATUS=listening on 127.0.0.1:8080") to
// $NOTIFY_SOCKET. A name starting with '@' is an abstract socket name.
// Returns false (and sets *error when given) when the variable is set but the
// datagram could not be sent; true when sent or when there is nothing to do.
// Thread-safe: opens and closes its own socket.
bool SdNotify(std::string_view state, std::string* error = nullptr);

// The watchdog interval from $WATCHDOG_USEC, or zero when the watchdog is off
// (unset, unparsable, or $WATCHDOG_PID names another process).
std::chrono::microseconds SdWatchdogInterval();

// Sends WATCHDOG=1 every half interval on its own thread while alive; does
// nothing when the interval is zero. When `healthy` is given, a ping is sent
// only while it returns true, so a wedged daemon is restarted by systemd.
// The destructor stops the thread promptly (a condition-variable wait, not a
// sleep).
class SdWatchdog {
 public:
  explicit SdWatchdog(std::chrono::microseconds interval = SdWatchdogInterval(), std::function<bool()> healthy = {});
  ~SdWatchdog() = default;  // std::jthread requests stop and joins
  SdWatchdog(const SdWatchdog&) = delete;
  SdWatchdog& operator=(const SdWatchdog&) = delete;

  bool active() const { return thread_.joinable(); }

 private:
  std::jthread thread_;
};

}  // namespace drainwise::app
