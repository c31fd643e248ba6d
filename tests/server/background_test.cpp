// Background runs (server/background.h): states, progress, cancellation,
// the bounds on active and remembered runs, and shutdown.
#include "server/background.h"

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include <doctest/doctest.h>

#include "testing/daemon.h"

namespace drainwise::server {
namespace {

using namespace std::chrono_literals;

// A run that reports `progress` and then waits until released or stopped.
struct Gate {
  std::atomic<bool> open{false};
  BackgroundRunFn Fn(double progress) {
    return [this, progress](const BackgroundProgress& report, std::stop_token stop) -> Result<BackgroundResult> {
      report(progress);
      // Bounded: a test that forgets to open the gate fails instead of hanging.
      for (int i = 0; i < 3000 && !open.load(); ++i) {
        if (stop.stop_requested()) return MakeError(ErrorCode::kCancelled, "stopped");
        std::this_thread::sleep_for(10ms);
      }
      BackgroundResult r;
      r.document = {{"answer", 42}};
      r.renditions["text"] = "forty-two";
      return r;
    };
  }
};

RunState StateOf(const BackgroundRuns& runs, const std::string& id) {
  auto s = runs.Get(id);
  REQUIRE(s);
  return s->state;
}

TEST_CASE("a run goes from running with progress to done with its result") {
  BackgroundRuns runs;
  Gate gate;
  auto id = runs.Start("task", "alice (operator)", gate.Fn(0.25));
  REQUIRE(id);
  CHECK(testing::Eventually([&] { return runs.Get(*id)->progress == 0.25; }));
  auto s = runs.Get(*id);
  CHECK(s->state == RunState::kRunning);
  CHECK(s->kind == "task");
  CHECK(s->principal == "alice (operator)");
  CHECK(!s->result);
  gate.open = true;
  CHECK(testing::Eventually([&] { return StateOf(runs, *id) == RunState::kDone; }));
  s = runs.Get(*id);
  CHECK(s->progress == 1.0);
  REQUIRE(s->result);
  CHECK(s->result->document["answer"] == 42);
  CHECK(s->result->renditions.at("text") == "forty-two");
  CHECK(s->finished > 0);
  CHECK(runs.active() == 0);
  auto list = runs.List();
  REQUIRE(list.size() == 1);
  CHECK(!list[0].result);  // listings carry no result
}

TEST_CASE("at most max_active runs at once; a cancelled run frees its slot") {
  BackgroundRuns runs(BackgroundOptions{1, 4});
  Gate gate;
  auto a = runs.Start("task", "", gate.Fn(0.5));
  REQUIRE(a);
  auto b = runs.Start("task", "", gate.Fn(0.5));
  REQUIRE(!b);
  CHECK(b.error().code == ErrorCode::kUnavailable);
  CHECK(b.error().message == "1 background runs are running already (the limit); retry when one ends");
  auto cancelled = runs.Cancel(*a);
  REQUIRE(cancelled);
  CHECK(*cancelled);  // it was running
  CHECK(runs.Get(*a)->cancel_requested);
  CHECK(testing::Eventually([&] { return StateOf(runs, *a) == RunState::kCancelled; }));
  CHECK(runs.Get(*a)->error->code == ErrorCode::kCancelled);
  // The slot is free again; a finished run is forgotten by a second cancel.
  gate.open = true;
  auto c = runs.Start("task", "", gate.Fn(1));
  REQUIRE(c);
  auto forgotten = runs.Cancel(*a);
  REQUIRE(forgotten);
  CHECK(!*forgotten);
  CHECK(!runs.Get(*a));
  CHECK(runs.Cancel(*a).error().code == ErrorCode::kNotFound);
  CHECK(testing::Eventually([&] { return StateOf(runs, *c) == RunState::kDone; }));
}

TEST_CASE("past max_kept the oldest finished run is forgotten") {
  BackgroundRuns runs(BackgroundOptions{1, 2});
  Gate gate;
  gate.open = true;
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    auto id = runs.Start("task", "", gate.Fn(1));
    REQUIRE(id);
    ids.push_back(*id);
    CHECK(testing::Eventually([&] { return StateOf(runs, *id) == RunState::kDone; }));
  }
  CHECK(!runs.Get(ids[0]));
  CHECK(runs.Get(ids[1]));
  CHECK(runs.Get(ids[2]));
  auto list = runs.List();
  REQUIRE(list.size() == 2);
  CHECK(list[0].id == ids[2]);  // newest first
}

TEST_CASE("a run that throws or fails is reported as failed with the message") {
  BackgroundRuns runs;
  auto thrower = runs.Start("task", "", [](const BackgroundProgress&, std::stop_token) -> Result<BackgroundResult> {
    throw std::runtime_error("boom");
  });
  auto failer = runs.Start("task", "", [](const BackgroundProgress&, std::stop_token) -> Result<BackgroundResult> {
    return InvalidArgument("horizon: must be > 0");
  });
  REQUIRE(thrower);
  REQUIRE(failer);
  CHECK(testing::Eventually(
      [&] { return StateOf(runs, *thrower) == RunState::kFailed && StateOf(runs, *failer) == RunState::kFailed; }));
  CHECK(runs.Get(*thrower)->error->message == "the run threw: boom");
  CHECK(runs.Get(*failer)->error->message == "horizon: must be > 0");
}

TEST_CASE("destroying the runs stops a running one and waits for it") {
  std::atomic<bool> saw_stop{false};
  {
    BackgroundRuns runs;
    auto id = runs.Start("task", "", [&](const BackgroundProgress&, std::stop_token stop) -> Result<BackgroundResult> {
      for (int i = 0; i < 3000; ++i) {
        if (stop.stop_requested()) {
          saw_stop = true;
          return MakeError(ErrorCode::kCancelled, "stopped");
        }
        std::this_thread::sleep_for(10ms);
      }
      return BackgroundResult{};
    });
    REQUIRE(id);
  }
  CHECK(saw_stop);
}

}  // namespace
}  // namespace drainwise::server
