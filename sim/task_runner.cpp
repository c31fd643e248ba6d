#include "sim/task_runner.h"

#include <algorithm>
#include <atomic>

namespace drainwise::sim {

struct TaskPool::Call {
  size_t n = 0;
  const std::function<void(size_t)>* task = nullptr;
  std::atomic<size_t> next{0};  // the next index to take
  int helping = 0;              // helpers inside it (under mu_)
};

TaskPool::TaskPool(int helpers) {
  helpers_.reserve(static_cast<size_t>(std::max(helpers, 0)));
  for (int i = 0; i < helpers; ++i) helpers_.emplace_back([this] { Help(); });
}

TaskPool::~TaskPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_.notify_all();
  for (std::thread& t : helpers_) t.join();
}

void TaskPool::Run(size_t n, const std::function<void(size_t)>& task) {
  if (n == 0) return;
  Call call;
  call.n = n;
  call.task = &task;
  if (n > 1 && !helpers_.empty()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      calls_.push_back(&call);
    }
    // No more helpers woken than there are tasks besides the caller's first.
    if (n - 1 >= helpers_.size()) {
      work_.notify_all();
    } else {
      for (size_t i = 0; i + 1 < n; ++i) work_.notify_one();
    }
  }
  for (size_t i = call.next++; i < n; i = call.next++) task(i);
  // Every index is taken: once no helper is inside the call, every task
  // has returned.
  std::unique_lock<std::mutex> lock(mu_);
  std::erase(calls_, &call);
  idle_.wait(lock, [&] { return call.helping == 0; });
}

void TaskPool::Help() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_.wait(lock, [&] { return stopping_ || !calls_.empty(); });
    if (stopping_) return;
    Call* call = calls_.front();
    ++call->helping;
    lock.unlock();
    for (size_t i = call->next++; i < call->n; i = call->next++) (*call->task)(i);
    lock.lock();
    // Nothing left to take: no other helper should pick it up.
    std::erase(calls_, call);
    if (--call->helping == 0) idle_.notify_all();
  }
}

}  // namespace drainwise::sim
