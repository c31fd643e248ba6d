#include "engine/view.h"

namespace drainwise::engine {

advisor::CalibrationParams ConfiguredParams(const Calibration& c) {
  if (c.source == "configuration") {
    const auto& f = c.options.flow;
    return {f.goodput, f.per_hop_latency_s, f.per_message_overhead_s};
  }
  if (c.configured) return *c.configured;
  const sim::FlowOptions f;
  return {f.goodput, f.per_hop_latency_s, f.per_message_overhead_s};
}

Calibration Rebase(const Calibration& calibration, const advisor::AdvisorOptions& base) {
  Calibration out = calibration;
  out.options = base;
  if (calibration.source != "configuration") {
    const auto& f = calibration.options.flow;
    out.options.flow.goodput = f.goodput;
    out.options.flow.per_hop_latency_s = f.per_hop_latency_s;
    out.options.flow.per_message_overhead_s = f.per_message_overhead_s;
  }
  return out;
}

void UpdateDerived(View& v, const View* previous) {
  if (!v.snapshot) {
    v.cache.reset();
    v.link_state.reset();
  } else if (previous && previous->cache && previous->snapshot == v.snapshot) {
    v.cache = previous->cache;  // the same snapshot keeps its caches
  } else if (!v.cache || v.cache->snapshot() != v.snapshot) {
    v.cache = std::make_shared<const advisor::SimCache>(v.snapshot);
  }
  if (v.link_state && (!v.snapshot || v.link_state->topology_version != v.snapshot->topology_version)) {
    v.link_state.reset();
  }
  if (!v.calibration) v.calibration = std::make_shared<const Calibration>();
  const int helpers = v.calibration->options.flow_threads - 1;
  if (helpers < 1) {
    v.flow_pool.reset();
  } else if (previous && previous->flow_pool && previous->flow_pool->helpers() == helpers) {
    v.flow_pool = previous->flow_pool;
  } else if (!v.flow_pool || v.flow_pool->helpers() != helpers) {
    v.flow_pool = std::make_shared<sim::TaskPool>(helpers);
  }
  const bool same_calibration = previous && previous->calibration == v.calibration && previous->advisor;
  if (same_calibration) {
    v.advisor = previous->advisor;
  } else {
    v.advisor = std::make_shared<const advisor::Advisor>(v.calibration->options, sim::PoolRunner(v.flow_pool));
  }
  if (!v.link_state || v.link_state->background_bps.empty()) {
    v.advisor_background.reset();
  } else if (same_calibration && previous->link_state == v.link_state && previous->advisor_background) {
    v.advisor_background = previous->advisor_background;
  } else {
    auto options = v.calibration->options;
    options.flow.background_bps = v.link_state->background_bps;
    v.advisor_background = std::make_shared<const advisor::Advisor>(std::move(options), sim::PoolRunner(v.flow_pool));
  }
}

}  // namespace drainwise::engine
