#include "advisor/advisor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <thread>
#include <unordered_set>

#include <fmt/format.h>

#include "advisor/prediction.h"

namespace drainwise::advisor {

using model::Drain;
using model::JobId;
using model::NodeId;
using policies::Decision;
using namespace internal;

Result<std::vector<sim::DrainCandidate>> Advisor::Candidates(const Context& ctx, std::span<const NodeId> switches,
                                                             std::stop_token stop) const {
  auto index = JobIndex(ctx);
  // Two halves on two threads (each with its own workspace), merged and
  // ranked: the sweep is the one request that runs every switch of a tier.
  const size_t half = switches.size() / 2;
  if (half < 8) {
    sim::JobSimWorkspace ws;
    return sim::SweepDrainCandidates(*index, switches, ws, stop);
  }
  Result<std::vector<sim::DrainCandidate>> second;
  std::thread helper([&] {
    sim::JobSimWorkspace ws;
    second = sim::SweepDrainCandidates(*index, switches.subspan(half), ws, stop);
  });
  sim::JobSimWorkspace ws;
  auto first = sim::SweepDrainCandidates(*index, switches.first(half), ws, stop);
  helper.join();
  if (!first) return first;
  if (!second) return second;
  first->insert(first->end(), std::make_move_iterator(second->begin()), std::make_move_iterator(second->end()));
  sim::RankCandidates(*ctx.snapshot->topology, *first);
  return first;
}

}  // namespace drainwise::advisor
