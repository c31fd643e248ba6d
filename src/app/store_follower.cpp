#include "app/store_follower.h"

#include <algorithm>

#include "codec/json_reader.h"
#include "engine/codec.h"
#include "policies/policy.h"

namespace drainwise::app {

StoreFollower::StoreFollower(server::State* state, store::Store* store, FollowerOptions options,
                             std::shared_ptr<spdlog::logger> log)
    : state_(state), store_(store), options_(std::move(options)), log_(std::move(log)) {
  // What the daemon put in force at start: a "reconnected" right after start
  // then changes nothing.
  if (auto p = store_->LatestDocument(store::DocKind::kPolicy); p && *p) policy_version_ = (*p)->info.version;
  if (auto c = store_->LatestDocument(store::DocKind::kCalibration); c && *c) {
    calibration_version_ = (*c)->info.version;
  }
}

void StoreFollower::OnChange(const std::string& what) {
  // The count first: whatever the reload below reads includes every write
  // counted by then.
  auto count = store_->ChangeCount();
  std::lock_guard lock(mu_);
  const bool all = what == "reconnected";
  bool ok = true;
  if (all || what == "topology" || what == "jobs" || what == "drains") ok = Documents();
  if (all || what == "policy") Policy();
  if (all || what == "calibration") Calibration();
  if (ok && all && count) applied_count_ = std::max(applied_count_, *count);
  applied_.fetch_add(1);
}

void StoreFollower::CatchUp() {
  auto count = store_->ChangeCount();
  if (!count) return;
  std::lock_guard lock(mu_);
  if (*count <= applied_count_) return;
  bool ok = Documents();
  Policy();
  Calibration();
  if (ok) applied_count_ = *count;
}

bool StoreFollower::Documents() {
  auto r = state_->LoadLatestIfChanged();
  if (!r) {
    // The view stays as it was; the next change or reconnection retries.
    log_->warn("another daemon's change not applied: {}", r.error().message);
    return false;
  }
  if (*r) {
    auto snap = state_->snapshot();
    log_->info("from another daemon: serving topology v{} and jobs v{}", snap->topology_version,
               snap->jobs_version);
  }
  return true;
}

void StoreFollower::Policy() {
  if (options_.policy_from_config) return;
  auto doc = store_->LatestDocument(store::DocKind::kPolicy);
  if (!doc) {
    log_->warn("another daemon's policy not applied: {}", doc.error().message);
    return;
  }
  if (!*doc || (*doc)->info.version == policy_version_) return;
  auto policy = policies::ParsePolicyText((*doc)->body);
  if (!policy) {
    log_->warn("stored policy v{} ignored: {}", (*doc)->info.version, policy.error().message);
    return;
  }
  policy_version_ = (*doc)->info.version;
  log_->info("from another daemon: policy '{}' v{} in force", policy->name, policy_version_);
  state_->SetPolicy(std::move(*policy));
}

void StoreFollower::Calibration() {
  auto doc = store_->LatestDocument(store::DocKind::kCalibration);
  if (!doc) {
    log_->warn("another daemon's calibration not applied: {}", doc.error().message);
    return;
  }
  if (!*doc || (*doc)->info.version == calibration_version_) return;
  auto json = codec::ParseJsonText((*doc)->body);
  auto c = json ? engine::ParseCalibration(*json, options_.advisor)
                : Result<engine::Calibration>(tl::unexpected(json.error()));
  if (!c) {
    log_->warn("stored calibration v{} ignored: {}", (*doc)->info.version, c.error().message);
    return;
  }
  calibration_version_ = (*doc)->info.version;
  log_->info("from another daemon: calibration v{} in force", calibration_version_);
  state_->SetCalibration(std::move(*c));
}

}  // namespace drainwise::app
