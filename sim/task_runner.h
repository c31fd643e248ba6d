// How the simulators use their caller's threads.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
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

// A runner for callers without a pool: each call runs the tasks on the
// calling thread and threads - 1 threads started for the call (no more than
// there are tasks), taking the next index as each finishes. Empty (tasks in
// order on the calling thread) for threads <= 1.
inline TaskRunner ThreadsRunner(int threads) {
  if (threads <= 1) return {};
  return [threads](size_t n, const std::function<void(size_t)>& task) {
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t i = next++; i < n; i = next++) task(i);
    };
    std::vector<std::thread> helpers;
    for (int t = 1; t < threads && static_cast<size_t>(t) < n; ++t) helpers.emplace_back(work);
    work();
    for (auto& h : helpers) h.join();
  };
}

}  // namespace drainwise::sim
