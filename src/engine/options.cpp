#include "engine/options.h"

#include <cmath>

#include "codec/json_reader.h"

namespace drainwise::engine {

using nlohmann::json;

Result<sim::FlowOptions> ParseFlowOptions(const json& simulation) {
  sim::FlowOptions o;
  try {
    codec::ObjectReader r(simulation, "simulation");
    r.RejectUnknown({"routing", "hash_seeds", "seed", "goodput", "per_hop_latency_us", "per_message_overhead_us",
                     "overload_threshold", "overload_penalty", "hot_links", "ring_phase_overlap"});
    if (r.Has("routing")) {
      auto m = sim::ParseFlowRouting(r.String("routing"));
      if (!m)
        throw codec::FieldError(r.Child("routing"),
                                "expected spray, spray-path, hash, hash-resilient, hash-rehash or adaptive");
      o.routing = *m;
      o.routing_source = "config";
    }
    o.hash_seeds = static_cast<int>(r.IntOr("hash_seeds", o.hash_seeds));
    o.seed = static_cast<uint64_t>(r.IntOr("seed", static_cast<int64_t>(o.seed)));
    o.goodput = r.NumberOr("goodput", o.goodput);
    o.per_hop_latency_s = r.NumberOr("per_hop_latency_us", o.per_hop_latency_s * 1e6) / 1e6;
    o.per_message_overhead_s = r.NumberOr("per_message_overhead_us", o.per_message_overhead_s * 1e6) / 1e6;
    o.overload_threshold = r.NumberOr("overload_threshold", o.overload_threshold);
    o.overload_penalty = r.NumberOr("overload_penalty", o.overload_penalty);
    o.hot_links = static_cast<int>(r.IntOr("hot_links", o.hot_links));
    o.ring_phase_overlap = r.NumberOr("ring_phase_overlap", o.ring_phase_overlap);
    if (!(o.ring_phase_overlap >= 0 && o.ring_phase_overlap <= 1)) {
      throw codec::FieldError(r.Child("ring_phase_overlap"), "must be within [0, 1]");
    }
    if (!(o.goodput > 0 && o.goodput <= 1)) throw codec::FieldError(r.Child("goodput"), "must be within (0, 1]");
    if (o.hash_seeds < 1 || o.hash_seeds > 1024) throw codec::FieldError(r.Child("hash_seeds"), "must be 1..1024");
    if (o.per_hop_latency_s < 0) throw codec::FieldError(r.Child("per_hop_latency_us"), "must be >= 0");
    if (o.per_message_overhead_s < 0) throw codec::FieldError(r.Child("per_message_overhead_us"), "must be >= 0");
    if (o.overload_penalty < 0 || o.overload_penalty >= 1) {
      throw codec::FieldError(r.Child("overload_penalty"), "must be within [0, 1)");
    }
  } catch (const codec::FieldError& e) {
    return InvalidArgument(e.what());
  }
  return o;
}

Result<advisor::AdvisorOptions> ParseAdvisorOptions(const json& advisor_json, const json& simulation) {
  advisor::AdvisorOptions o;
  auto flow = ParseFlowOptions(simulation);
  if (!flow) return tl::unexpected(flow.error());
  o.flow = *flow;
  try {
    codec::ObjectReader r(advisor_json, "advisor");
    r.RejectUnknown({"default_restart_cost_s", "default_checkpoint_interval_s", "max_migrations", "worse_tolerance_pct",
                     "max_alternatives", "delay_gpu_hours_per_hour", "default_drain_duration_s", "flow_threads"});
    o.default_restart_cost_s = r.NumberOr("default_restart_cost_s", o.default_restart_cost_s);
    o.default_checkpoint_interval_s = r.NumberOr("default_checkpoint_interval_s", o.default_checkpoint_interval_s);
    o.max_migrations = static_cast<int>(r.IntOr("max_migrations", o.max_migrations));
    o.worse_tolerance_pct = r.NumberOr("worse_tolerance_pct", o.worse_tolerance_pct);
    o.max_alternatives = static_cast<int>(r.IntOr("max_alternatives", o.max_alternatives));
    o.delay_gpu_hours_per_hour = r.NumberOr("delay_gpu_hours_per_hour", o.delay_gpu_hours_per_hour);
    o.default_drain_duration_s = r.NumberOr("default_drain_duration_s", o.default_drain_duration_s);
    const int64_t flow_threads = r.IntOr("flow_threads", o.flow_threads);
    if (flow_threads < 1 || flow_threads > 64) throw codec::FieldError("advisor.flow_threads", "must be 1..64");
    o.flow_threads = static_cast<int>(flow_threads);
    if (!(o.delay_gpu_hours_per_hour >= 0 && std::isfinite(o.delay_gpu_hours_per_hour))) {
      throw codec::FieldError("advisor.delay_gpu_hours_per_hour", "must be a finite number >= 0");
    }
    if (!(o.default_drain_duration_s > 0)) throw codec::FieldError("advisor.default_drain_duration_s", "must be > 0");
    if (o.default_restart_cost_s < 0) throw codec::FieldError("advisor.default_restart_cost_s", "must be >= 0");
    if (o.default_checkpoint_interval_s <= 0) {
      throw codec::FieldError("advisor.default_checkpoint_interval_s", "must be > 0");
    }
    if (o.max_migrations < 0) throw codec::FieldError("advisor.max_migrations", "must be >= 0");
  } catch (const codec::FieldError& e) {
    return InvalidArgument(e.what());
  }
  return o;
}

}  // namespace drainwise::engine
