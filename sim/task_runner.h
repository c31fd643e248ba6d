// How the simulators use their caller's threads.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace drainwise::sim {

// Runs task(i) for every i in [0, n), possibly several at once on the
// caller's threads, and returns when every call has returned. The simulators
// start no thread themselves: they hand independent work (the seeds of the
// hash modes, the components of one flow problem) to the runner their
// caller passes. An empty runner runs the tasks one after another on the
// calling thread. A simulator never calls the runner from inside one of its
// tasks, so a runner over a fixed pool of threads cannot deadlock on it.
using TaskRunner = std::function<void(size_t n, const std::function<void(size_t)>& task)>;

// task(i) for every i in [0, n): through `runner` when there is one and more
// than one task, else in order on the calling thread.
inline void RunTasks(const TaskRunner& runner, size_t n, const std::function<void(size_t)>& task) {
  if (n == 0) return;
  if (runner && n > 1) {
    runner(n, task);
    return;
  }
  for (size_t i = 0; i < n; ++i) task(i);
}

// A fixed pool of helper threads, started once and kept: each Run hands
// its tasks to the helpers and works on them itself, returning when every
// one has returned. Callers may Run at once from several threads (their
// tasks queue; a helper takes the oldest call with tasks left), and a task
// may Run on the same pool: the caller of each call works on its own
// tasks, so a call never waits for a helper that is not inside it.
//
// Kept, rather than started per call: the hash modes made 53 calls per
// 8-seed run, each starting a thread (a stack to fault in, an arena to
// find). What a helper's allocations cost depends on malloc's arenas too
// (src/process/malloc_tunables.h); docs/performance.md, "One malloc
// arena, a kept pool", has the figures with and without each.
class TaskPool {
 public:
  explicit TaskPool(int helpers);
  ~TaskPool();
  TaskPool(const TaskPool&) = delete;
  TaskPool& operator=(const TaskPool&) = delete;

  void Run(size_t n, const std::function<void(size_t)>& task);
  int helpers() const { return static_cast<int>(helpers_.size()); }

 private:
  struct Call;
  void Help();

  std::mutex mu_;
  std::condition_variable work_;  // a call was queued, or the pool stops
  std::condition_variable idle_;  // a helper left a call
  std::deque<Call*> calls_;       // calls with tasks not yet taken, oldest first
  bool stopping_ = false;
  std::vector<std::thread> helpers_;
};

// A runner over `pool`'s helpers and the calling thread, sharing the pool
// (for callers that keep one pool across runners: the daemon keeps one
// across the advisors it rebuilds on every calibration or telemetry
// change, src/engine/view.h). Empty for a null pool.
inline TaskRunner PoolRunner(std::shared_ptr<TaskPool> pool) {
  if (!pool) return {};
  return [pool = std::move(pool)](size_t n, const std::function<void(size_t)>& task) { pool->Run(n, task); };
}

// A runner for callers without a pool of their own: the tasks of each call
// on the calling thread and on threads - 1 helpers of a TaskPool that the
// runner (and every copy of it) shares, started with it and joined when
// the last copy is destroyed. Empty (tasks in order on the calling thread)
// for threads <= 1.
inline TaskRunner ThreadsRunner(int threads) {
  if (threads <= 1) return {};
  return PoolRunner(std::make_shared<TaskPool>(threads - 1));
}

}  // namespace drainwise::sim
