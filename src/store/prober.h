// Store health for /readyz: a background thread calls Store::ProbeWrite()
// every `interval` and keeps the outcome in atomics, so a readiness check
// reads the last result and never waits on the database. A probe that has
// not returned after `stall_after` (a disk hanging in fsync) counts as a
// failure even though its thread is still blocked.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>

#include "store/store.h"

namespace drainwise::store {

struct ProberOptions {
  std::chrono::milliseconds interval{2000};     // between the end of one probe and the start of the next
  std::chrono::milliseconds stall_after{5000};  // a probe running longer than this: not writable
  // Called on the prober's thread when a probe's outcome differs from the
  // previous one (the first failure, the first success after failures),
  // with the error message or "": for one log line per change.
  std::function<void(bool writable, const std::string& why)> on_change{};
};

class StoreProber {
 public:
  // Starts probing at once. `store` must outlive the prober.
  explicit StoreProber(Store* store, ProberOptions options = {});
  // Stops the thread; waits for a probe in flight to return.
  ~StoreProber();
  StoreProber(const StoreProber&) = delete;
  StoreProber& operator=(const StoreProber&) = delete;

  // True while the last probe succeeded (or none finished yet) and none has
  // been running for longer than stall_after; else false with the reason in
  // `*why` (naming the database). Never blocks on the store: it reads
  // atomics and copies the last error message under a mutex that the prober
  // holds only to replace that string.
  bool Writable(std::string* why = nullptr) const;

  int64_t probes() const { return probes_.load(); }
  int64_t failures() const { return failures_.load(); }

 private:
  void Run(std::stop_token stop);
  static int64_t NowMs();

  Store* store_;
  ProberOptions options_;
  std::atomic<bool> ok_{true};
  std::atomic<int64_t> probing_since_ms_{0};  // steady clock ms; 0 = no probe running
  std::atomic<int64_t> probes_{0};
  std::atomic<int64_t> failures_{0};
  mutable std::mutex error_mu_;  // guards error_ only
  std::string error_;
  std::mutex wait_mu_;
  std::condition_variable_any wait_cv_;
  std::jthread thread_;  // last: starts after every member above is ready
};

}  // namespace drainwise::store
