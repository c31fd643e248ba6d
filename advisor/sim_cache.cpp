#include "advisor/sim_cache.h"

#include <cstring>

#include <fmt/format.h>

namespace drainwise::advisor {

namespace {
// FNV-1a over the 64-bit patterns of the rates; 0 is reserved for "none".
uint64_t BackgroundHash(const std::vector<double>& bps) {
  if (bps.empty()) return 0;
  uint64_t h = 1469598103934665603ull;
  for (double v : bps) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    h = (h ^ bits) * 1099511628211ull;
  }
  return h == 0 ? 1 : h;
}
}  // namespace

SimCache::SimCache(model::SnapshotPtr snapshot) : snapshot_(std::move(snapshot)) {}

// Every field of sim::FlowOptions: a simulator keeps the options it was
// created with, so two option sets may share one only when all agree
// (a field added to FlowOptions belongs here too).
std::string SimCache::FlowKey(const sim::FlowOptions& o) {
  return fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{:x}|{}|{}|{}|{}|{}", sim::FlowRoutingName(o.routing),
                     o.routing_source, o.hash_seeds, o.seed, o.goodput, o.per_hop_latency_s, o.per_message_overhead_s,
                     o.overload_threshold, o.overload_penalty, o.background_bps.size(),
                     BackgroundHash(o.background_bps), o.incremental_solver, o.hot_links, o.hot_links_fabric_only,
                     o.bottlenecks_per_job, o.jobs_per_link);
}

std::shared_ptr<const sim::JobSimIndex> SimCache::JobIndex() const {
  {
    std::lock_guard lock(mu_);
    if (job_index_) return job_index_;
  }
  auto index = std::make_shared<const sim::JobSimIndex>(snapshot_);
  std::lock_guard lock(mu_);
  ++stats_.job_indexes_built;
  if (!job_index_) job_index_ = std::move(index);
  return job_index_;
}

Result<std::shared_ptr<const sim::FlowSimulator>> SimCache::FlowSim(const sim::FlowOptions& options,
                                                                    std::stop_token stop,
                                                                    const sim::TaskRunner& runner) const {
  const std::string key = FlowKey(options);
  {
    std::lock_guard lock(mu_);
    if (auto it = flow_.find(key); it != flow_.end()) return it->second.sim;
  }
  auto sim = sim::FlowSimulator::Create(snapshot_, options, stop, runner);
  if (!sim) return tl::unexpected(sim.error());
  const uint64_t background = BackgroundHash(options.background_bps);
  std::lock_guard lock(mu_);
  ++stats_.flow_sims_built;
  if (auto it = flow_.find(key); it != flow_.end()) return it->second.sim;
  if (background != 0) {
    // A newer background load: simulators of any other background are stale.
    std::erase_if(flow_, [&](const auto& e) { return e.second.background != 0 && e.second.background != background; });
  }
  flow_[key] = Entry{*sim, background};
  return *sim;
}

SimCache::Stats SimCache::stats() const {
  std::lock_guard lock(mu_);
  Stats s = stats_;
  s.flow_sims_held = static_cast<int>(flow_.size());
  return s;
}

}  // namespace drainwise::advisor
