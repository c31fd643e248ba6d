// The runner the simulators take their threads from (sim/task_runner.h):
// every task of a call runs exactly once and has returned when the call
// does, from one caller or several at once, and ThreadsRunner's helpers are
// started once and kept, not started again for every call.
#include "sim/task_runner.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <doctest/doctest.h>

namespace drainwise {
namespace {

TEST_CASE("task runner: every index once, all returned when the call returns") {
  for (int threads : {1, 2, 4}) {
    const sim::TaskRunner runner = sim::ThreadsRunner(threads);
    CHECK(static_cast<bool>(runner) == (threads > 1));
    for (size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{3}, size_t{100}, size_t{1000}}) {
      std::vector<std::atomic<int>> runs(n);
      std::atomic<size_t> finished{0};
      sim::RunTasks(runner, n, [&](size_t i) {
        // A little work, so that the helpers take some of the indices.
        volatile double x = 0;
        for (int k = 0; k < 200; ++k) x = x + static_cast<double>(k * i);
        runs[i].fetch_add(1);
        finished.fetch_add(1);
      });
      CHECK(finished.load() == n);
      for (size_t i = 0; i < n; ++i) CHECK_MESSAGE(runs[i].load() == 1, "threads ", threads, " n ", n, " i ", i);
    }
  }
}

TEST_CASE("task runner: callers on several threads at once share one pool") {
  const sim::TaskRunner runner = sim::ThreadsRunner(3);
  constexpr int kCallers = 4, kCalls = 50;
  std::atomic<int> bad{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      for (int call = 0; call < kCalls; ++call) {
        const size_t n = 1 + static_cast<size_t>((c * 7 + call) % 23);
        std::vector<std::atomic<int>> runs(n);
        sim::RunTasks(runner, n, [&](size_t i) { runs[i].fetch_add(1); });
        // Every task of this call has returned, each exactly once.
        for (size_t i = 0; i < n; ++i) {
          if (runs[i].load() != 1) bad.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& t : callers) t.join();
  CHECK(bad.load() == 0);
}

// A number per thread, fresh for every thread started (std::thread::id
// values come back once a thread is joined).
int ThisThread() {
  static std::atomic<int> next{0};
  thread_local const int mine = next++;
  return mine;
}

TEST_CASE("task runner: the helpers are kept from one call to the next") {
  // Two tasks, the first waiting until the second has started: the caller
  // is inside the first, so a helper must run the second. Over 20 calls,
  // a runner of two threads runs on two threads only; one that started a
  // helper per call would show 21.
  const sim::TaskRunner runner = sim::ThreadsRunner(2);
  std::set<int> seen;
  std::mutex mu;
  bool timed_out = false;
  for (int call = 0; call < 20 && !timed_out; ++call) {
    std::condition_variable cv;
    bool second_started = false;
    sim::RunTasks(runner, 2, [&](size_t i) {
      std::unique_lock<std::mutex> lock(mu);
      seen.insert(ThisThread());
      if (i == 1) {
        second_started = true;
        cv.notify_all();
      } else if (!cv.wait_for(lock, std::chrono::seconds(30), [&] { return second_started; })) {
        timed_out = true;
      }
    });
  }
  REQUIRE_FALSE(timed_out);
  CHECK(seen.size() == 2);
  CHECK(seen.count(ThisThread()) == 1);
}

TEST_CASE("task runner: a task may run the runner again") {
  // Not what the simulators do (sim/task_runner.h), but a caller's own
  // tasks might: the caller of each call works on its own tasks, so a
  // nested call finishes even with every helper busy.
  const sim::TaskRunner runner = sim::ThreadsRunner(2);
  std::atomic<int> inner{0};
  sim::RunTasks(runner, 4, [&](size_t) { sim::RunTasks(runner, 5, [&](size_t) { inner.fetch_add(1); }); });
  CHECK(inner.load() == 20);
}

}  // namespace
}  // namespace drainwise
