// The per-thread scratch of the job-level simulator.
#include <algorithm>

#include "sim/job_sim_internal.h"

namespace drainwise::sim {

void JobSimWorkspace::State::Begin(const JobSimIndex& index) {
  const size_t n = index.topology().node_count();
  const size_t np = index.impl().pairs.size();
  if (last_index != &index || pair_epoch.size() != np || dirty.size() != n) {
    // Another index (or the first use): every stamp starts over.
    pair_epoch.assign(np, 0);
    after.assign(np, After{});
    for (int a = 0; a < 2; ++a) {
      tree_epoch[a].assign(n, 0);
      tree_of[a].assign(n, nullptr);
    }
    dirty.assign(n, 0);
    dirty_hosts.clear();
    epoch = 0;
    last_index = &index;
    const auto& m = index.impl();
    live_count.resize(m.bundles.size());
    live_cap.resize(m.bundles.size());
    for (size_t b = 0; b < m.bundles.size(); ++b) {
      live_count[b] = m.bundles[b].count;
      live_cap[b] = m.bundles[b].min_capacity_bps;
    }
    touched.clear();
    node_touched.assign(n, 0);
    down.assign(n, 0);
    down_list.clear();
    down_degree.assign(n, 0);
    degree_list.clear();
    dest_epoch.assign(index.routing().class_count(), 0);
    dead_lists.assign(index.routing().class_count(), {});
    dead_mark.assign(n, 0);
    pred_lists.assign(index.routing().class_count(), {});
    pred_mark.assign(n, 0);
    dead_links.assign(n, 0);
    dead_epoch = 0;
    clean.assign(n, 0);
    frac.assign(n, 0);
    fwd.assign(n, 0);
    seen.assign(n, 0);
    seen_epoch = 0;
  }
  {
    const auto& m = index.impl();
    for (uint32_t b : touched) {
      live_count[b] = m.bundles[b].count;
      live_cap[b] = m.bundles[b].min_capacity_bps;
    }
    touched.clear();
    for (NodeId d : down_list) down[d.value] = 0;
    down_list.clear();
    for (uint32_t v : degree_list) down_degree[v] = 0;
    degree_list.clear();
    current_dest = RoutingIndex::kNoClass;
    memo_dest = RoutingIndex::kNoClass;
  }
  for (NodeId h : dirty_hosts) dirty[h.value] = 0;
  dirty_hosts.clear();
  pool_used = 0;
  if (++epoch == 0) {
    std::fill(pair_epoch.begin(), pair_epoch.end(), 0);
    for (auto& v : tree_epoch) std::fill(v.begin(), v.end(), 0);
    std::fill(dest_epoch.begin(), dest_epoch.end(), 0);
    std::fill(node_touched.begin(), node_touched.end(), 0);
    epoch = 1;
  }
}

PathTree* JobSimWorkspace::State::NewTree() {
  if (pool_used == pool.size()) pool.push_back(std::make_unique<PathTree>());
  return pool[pool_used++].get();
}

JobSimWorkspace::JobSimWorkspace() : state_(std::make_unique<State>()) {}
JobSimWorkspace::~JobSimWorkspace() = default;
JobSimWorkspace::JobSimWorkspace(JobSimWorkspace&&) noexcept = default;
JobSimWorkspace& JobSimWorkspace::operator=(JobSimWorkspace&&) noexcept = default;

}  // namespace drainwise::sim
