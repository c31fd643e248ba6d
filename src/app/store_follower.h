// Several daemons on one PostgreSQL database: applies the changes the other
// daemons make (Store::SetChangeListener) to this daemon's State, so that
// its next answers use them. A write through this daemon is published by
// the route that made it; the store does not echo it back.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include <spdlog/logger.h>

#include "advisor/advisor.h"
#include "server/state.h"
#include "store/store.h"

namespace drainwise::app {

struct FollowerOptions {
  // The configuration names a policy file: it wins over a stored policy on
  // every daemon, so PUT /v1/policy through another daemon is not applied.
  bool policy_from_config = false;
  advisor::AdvisorOptions advisor;  // the base a stored calibration is parsed against
};

class StoreFollower {
 public:
  // `state` and `store` must outlive the follower; stop the store's
  // notifications (SetChangeListener(nullptr)) before destroying it.
  StoreFollower(server::State* state, store::Store* store, FollowerOptions options,
                std::shared_ptr<spdlog::logger> log);

  // One change (store.h's ChangeListener names); called on the store's
  // notification thread. "reconnected" reloads everything.
  void OnChange(const std::string& what);

  // Before an answer that must include every write committed so far (an
  // assessment): one query for the store's change count, and a reload when
  // another daemon committed something not yet applied. On a database error
  // nothing is done (the last view is served, stale).
  void CatchUp();

  int64_t applied() const { return applied_.load(); }

 private:
  bool Documents();
  void Policy();
  void Calibration();

  server::State* state_;
  store::Store* store_;
  FollowerOptions options_;
  std::shared_ptr<spdlog::logger> log_;
  std::mutex mu_;
  int64_t policy_version_ = 0;       // guarded by mu_: the stored version in force, 0 = none yet
  int64_t calibration_version_ = 0;  // guarded by mu_
  int64_t applied_count_ = 0;        // guarded by mu_: Store::ChangeCount() that the view includes
  std::atomic<int64_t> applied_{0};
};

}  // namespace drainwise::app
