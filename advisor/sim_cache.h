// The simulators' precomputation for one snapshot: the job-level index and
// one flow simulator per set of flow options, built on first use and shared
// by every request on that snapshot.
//
// It belongs to the snapshot, not to an advisor or a calibration: the daemon
// publishes a new serving view when link telemetry (the flow model's
// background load) or the calibration changes, and the new view keeps the
// same SimCache. Only the flow simulators of options it has not seen are
// built then; the job index and the simulators of other options stay.
// Flow simulators of an older background load are dropped when one of a
// newer background is added (at most one background is kept), so the cache
// does not grow with telemetry refreshes.
//
// Thread safety: every method may be called from any thread. Two threads
// missing the same entry at once may both build it; the first one stored wins.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>

#include "model/error.h"
#include "model/snapshot.h"
#include "sim/flow_sim.h"
#include "sim/job_sim.h"

namespace drainwise::advisor {

class SimCache {
 public:
  // REQUIRES: snapshot != nullptr.
  explicit SimCache(model::SnapshotPtr snapshot);

  const model::SnapshotPtr& snapshot() const { return snapshot_; }

  std::shared_ptr<const sim::JobSimIndex> JobIndex() const;
  // Errors: kInvalidArgument (options), kCancelled. A simulator built here
  // runs its independent parts (hash seeds, flow components) through
  // `runner` (sim/task_runner.h).
  Result<std::shared_ptr<const sim::FlowSimulator>> FlowSim(const sim::FlowOptions& options, std::stop_token stop = {},
                                                            const sim::TaskRunner& runner = {}) const;

  // What has been built so far (tests and logs): each number counts builds,
  // not lookups.
  struct Stats {
    int job_indexes_built = 0;
    int flow_sims_built = 0;
    int flow_sims_held = 0;
  };
  Stats stats() const;

  // The cache key of `options`: every field, with the background load as a
  // content hash.
  static std::string FlowKey(const sim::FlowOptions& options);

 private:
  model::SnapshotPtr snapshot_;
  mutable std::mutex mu_;
  mutable std::shared_ptr<const sim::JobSimIndex> job_index_;
  struct Entry {
    std::shared_ptr<const sim::FlowSimulator> sim;
    uint64_t background = 0;  // 0: none
  };
  mutable std::map<std::string, Entry> flow_;
  mutable Stats stats_;
};

}  // namespace drainwise::advisor
