// Background runs (contract in background.h).
#include "server/background.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>

#include <fmt/format.h>

namespace drainwise::server {

namespace {

constexpr int kRunNice = 10;  // as the worker pools: health checks preempt a run

int64_t Now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

std::string_view RunStateName(RunState state) {
  switch (state) {
    case RunState::kRunning:
      return "running";
    case RunState::kDone:
      return "done";
    case RunState::kFailed:
      return "failed";
    case RunState::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

struct BackgroundRuns::Entry {
  RunStatus status;                 // guarded by BackgroundRuns::mu_ (but progress)
  std::atomic<double> progress{0};  // written by the run, read by Get()
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  std::jthread thread;  // joined when the entry goes
};

BackgroundRuns::BackgroundRuns(BackgroundOptions options) : options_(options) {
  options_.max_active = std::max(1, options_.max_active);
  options_.max_kept = std::max(options_.max_active, options_.max_kept);
}

BackgroundRuns::~BackgroundRuns() {
  std::deque<std::shared_ptr<Entry>> entries;
  {
    std::lock_guard lock(mu_);
    entries.swap(entries_);
  }
  for (auto& e : entries) e->thread.request_stop();
  for (auto& e : entries) {
    if (e->thread.joinable()) e->thread.join();
  }
}

Result<std::string> BackgroundRuns::Start(std::string kind, std::string principal, BackgroundRunFn fn) {
  auto entry = std::make_shared<Entry>();
  // Everything under the lock, the thread's start included, so Cancel() never
  // sees the entry without its thread.
  std::lock_guard lock(mu_);
  if (active_ >= options_.max_active) {
    return MakeError(ErrorCode::kUnavailable,
                     fmt::format("{} background runs are running already (the limit); retry when one ends", active_));
  }
  ++active_;
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  entry->status.id = fmt::format("sim-{}-{:08x}", ++seq_, static_cast<uint32_t>(rng()));
  entry->status.kind = std::move(kind);
  entry->status.principal = std::move(principal);
  entry->status.created = Now();
  // The entry owns the thread and outlives it: an entry is only dropped once
  // finished (Finish() ran under mu_ and the thread has nothing left to do),
  // and dropping it joins the thread. So the thread holds a plain pointer.
  Entry* raw = entry.get();
  raw->thread = std::jthread([this, raw, fn = std::move(fn)](std::stop_token stop) {
    // Lowering a thread's priority needs no privilege; if it fails the run still works.
    (void)setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), kRunNice);
    auto progress = [raw](double f) { raw->progress.store(std::clamp(f, 0.0, 1.0), std::memory_order_relaxed); };
    Result<BackgroundResult> result = MakeError(ErrorCode::kInternal, "the run threw");
    try {
      result = fn(progress, stop);
    } catch (const std::exception& e) {
      result = MakeError(ErrorCode::kInternal, std::string("the run threw: ") + e.what());
    }
    Finish(*raw, std::move(result));
  });
  entries_.push_back(entry);
  EvictLocked();
  return raw->status.id;
}

void BackgroundRuns::Finish(Entry& entry, Result<BackgroundResult> result) {
  std::lock_guard lock(mu_);
  RunStatus& s = entry.status;
  s.finished = Now();
  s.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - entry.start).count();
  if (result) {
    s.state = RunState::kDone;
    entry.progress.store(1.0);
    s.result = std::make_shared<const BackgroundResult>(std::move(*result));
  } else {
    s.state = result.error().code == ErrorCode::kCancelled ? RunState::kCancelled : RunState::kFailed;
    s.error = result.error();
  }
  --active_;
}

void BackgroundRuns::EvictLocked() {
  // Forget the oldest finished runs past the bound; running ones stay (there
  // are at most max_active of them, and max_kept >= max_active).
  while (static_cast<int>(entries_.size()) > options_.max_kept) {
    auto it = std::find_if(entries_.begin(), entries_.end(),
                           [](const auto& e) { return e->status.state != RunState::kRunning; });
    if (it == entries_.end()) return;
    // Finished: its thread only returns now, so the join in the entry's
    // destructor (a reader may still hold the entry) is immediate.
    entries_.erase(it);
  }
}

std::optional<RunStatus> BackgroundRuns::Get(const std::string& id) const {
  std::lock_guard lock(mu_);
  for (const auto& e : entries_) {
    if (e->status.id == id) {
      RunStatus s = e->status;
      s.progress = e->progress.load(std::memory_order_relaxed);
      if (s.state == RunState::kRunning) {
        s.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - e->start).count();
      }
      return s;
    }
  }
  return std::nullopt;
}

std::vector<RunStatus> BackgroundRuns::List() const {
  std::vector<RunStatus> out;
  {
    std::lock_guard lock(mu_);
    for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
      RunStatus s = (*it)->status;
      s.progress = (*it)->progress.load(std::memory_order_relaxed);
      s.result.reset();  // listings carry no results
      out.push_back(std::move(s));
    }
  }
  return out;
}

Result<bool> BackgroundRuns::Cancel(const std::string& id) {
  std::shared_ptr<Entry> forgotten;
  std::lock_guard lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if ((*it)->status.id != id) continue;
    if ((*it)->status.state == RunState::kRunning) {
      (*it)->status.cancel_requested = true;
      (*it)->thread.request_stop();
      return true;
    }
    forgotten = *it;
    entries_.erase(it);
    return false;
  }
  return NotFound(
      fmt::format("no background run '{}' (unknown, or forgotten past the last {})", id, options_.max_kept));
}

int BackgroundRuns::active() const {
  std::lock_guard lock(mu_);
  return active_;
}

}  // namespace drainwise::server
