// Background runs: long simulations started by a request and polled later
// (POST /v1/simulations -> 202 + Location; GET /v1/simulations/{id};
// DELETE cancels). Generic: a run is a kind (the mode, "task"; later
// "packet"...) and a function; this class knows nothing of what it computes.
//
// How to add a kind: give Start() a RunFn. The function runs on a thread of
// its own (never on an I/O thread nor in the request pools), at nice 10 like
// the worker pools. It must
//   * call `progress(fraction)` now and then (fraction in [0, 1]; cheap,
//     thread-safe), and
//   * return soon after `stop` fires (DELETE, shutdown), with kCancelled;
//   * return its result as a BackgroundResult: a JSON document, and
//     optionally other renditions (text, csv) for GET ?format=.
// See src/server/routes/simulations.cpp for the "task" kind and the table of
// kinds the route accepts.
//
// Bounds (BackgroundOptions): at most `max_active` runs queued or running
// (Start() past it: kUnavailable, HTTP 503), and at most `max_kept` runs
// remembered in memory; past it the oldest finished run is forgotten (GET
// then answers 404). Results are kept in memory only: a restart forgets them.
//
// Thread safety: every method may be called from any thread. The destructor
// cancels every run and waits for them.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/error.h"

namespace drainwise::server {

struct BackgroundResult {
  nlohmann::json document;                        // GET /v1/simulations/{id}: "result"
  std::map<std::string, std::string> renditions;  // format ("text", "csv") -> body, for ?format=
};

using BackgroundProgress = std::function<void(double fraction)>;
using BackgroundRunFn =
    std::function<Result<BackgroundResult>(const BackgroundProgress& progress, std::stop_token stop)>;

enum class RunState { kRunning, kDone, kFailed, kCancelled };
std::string_view RunStateName(RunState state);  // "running" | "done" | "failed" | "cancelled"

struct RunStatus {
  std::string id;
  std::string kind;
  std::string principal;  // who started it
  RunState state = RunState::kRunning;
  bool cancel_requested = false;
  double progress = 0;   // [0, 1]
  int64_t created = 0;   // unix seconds
  int64_t finished = 0;  // 0 while running
  double elapsed_s = 0;
  std::optional<Error> error;                      // kFailed / kCancelled
  std::shared_ptr<const BackgroundResult> result;  // kDone
};

struct BackgroundOptions {
  int max_active = 2;  // runs at once (each takes a core)
  int max_kept = 32;   // runs remembered, finished or not
};

class BackgroundRuns {
 public:
  explicit BackgroundRuns(BackgroundOptions options = {});
  ~BackgroundRuns();
  BackgroundRuns(const BackgroundRuns&) = delete;
  BackgroundRuns& operator=(const BackgroundRuns&) = delete;

  // Starts `fn` on a thread of its own; returns the run's id.
  // Errors: kUnavailable when max_active runs are running.
  Result<std::string> Start(std::string kind, std::string principal, BackgroundRunFn fn);
  // nullopt for an unknown (or forgotten) id.
  std::optional<RunStatus> Get(const std::string& id) const;
  // Every run remembered, newest first.
  std::vector<RunStatus> List() const;
  // A running run: asks it to stop (it turns "cancelled" when it has) and
  // returns true. A finished run: forgets it and returns false.
  // Errors: kNotFound.
  Result<bool> Cancel(const std::string& id);

  int active() const;

 private:
  struct Entry;
  void Finish(Entry& entry, Result<BackgroundResult> result);
  void EvictLocked();

  BackgroundOptions options_;
  mutable std::mutex mu_;
  std::deque<std::shared_ptr<Entry>> entries_;  // oldest first
  int active_ = 0;
  uint64_t seq_ = 0;
};

}  // namespace drainwise::server
