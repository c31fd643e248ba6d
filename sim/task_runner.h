// How the simulators use their caller's threads.
#pragma once

#include <cstddef>
#include <functional>

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

}  // namespace drainwise::sim
