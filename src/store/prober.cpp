#include "store/prober.h"

#include <fmt/format.h>

namespace drainwise::store {

StoreProber::StoreProber(Store* store, ProberOptions options)
    : store_(store), options_(options), thread_([this](std::stop_token stop) { Run(stop); }) {}

StoreProber::~StoreProber() {
  thread_.request_stop();
  wait_cv_.notify_all();
}  // ~jthread joins

int64_t StoreProber::NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void StoreProber::Run(std::stop_token stop) {
  while (!stop.stop_requested()) {
    probing_since_ms_.store(NowMs());
    auto st = store_->ProbeWrite();
    probing_since_ms_.store(0);
    probes_.fetch_add(1);
    const bool was_ok = ok_.load();
    if (st) {
      ok_.store(true);
    } else {
      failures_.fetch_add(1);
      {
        std::lock_guard lock(error_mu_);
        error_ = st.error().message;
      }
      ok_.store(false);
    }
    if (options_.on_change && was_ok != st.has_value()) {
      options_.on_change(st.has_value(), st ? std::string() : st.error().message);
    }
    std::unique_lock lock(wait_mu_);
    wait_cv_.wait_for(lock, stop, options_.interval, [] { return false; });
  }
}

bool StoreProber::Writable(std::string* why) const {
  int64_t since = probing_since_ms_.load();
  if (since != 0) {
    int64_t running = NowMs() - since;
    if (running > options_.stall_after.count()) {
      if (why) {
        *why = fmt::format("database {}: a write probe has not returned for {} ms", store_->path(), running);
      }
      return false;
    }
  }
  if (ok_.load()) return true;
  if (why) {
    std::lock_guard lock(error_mu_);
    *why = error_;
  }
  return false;
}

}  // namespace drainwise::store
