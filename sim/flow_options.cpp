#include <cmath>

#include <fmt/format.h>

#include "sim/flow_sim.h"

namespace drainwise::sim {

std::string_view FlowRoutingName(FlowRouting routing) {
  switch (routing) {
    case FlowRouting::kSpray:
      return "spray";
    case FlowRouting::kSprayPath:
      return "spray-path";
    case FlowRouting::kHashResilient:
      return "hash";
    case FlowRouting::kHashRehash:
      return "hash-rehash";
    case FlowRouting::kAdaptive:
      return "adaptive";
  }
  return "spray";
}

std::optional<FlowRouting> ParseFlowRouting(std::string_view name) {
  if (name == "spray") return FlowRouting::kSpray;
  if (name == "spray-path") return FlowRouting::kSprayPath;
  if (name == "hash" || name == "hash-resilient") return FlowRouting::kHashResilient;
  if (name == "hash-rehash") return FlowRouting::kHashRehash;
  if (name == "adaptive") return FlowRouting::kAdaptive;
  return std::nullopt;
}

FlowOptions WithDeclaredLoadBalancing(FlowOptions options, const model::LoadBalancing& declared) {
  if (!declared.declared()) return options;
  auto routing = ParseFlowRouting(declared.routing);
  if (!routing) return options;
  options.routing = *routing;
  options.routing_source = "topology";
  if (declared.hash_seeds > 0) options.hash_seeds = declared.hash_seeds;
  return options;
}

Status ValidateFlowOptions(const FlowOptions& o, const model::Topology& topology) {
  if (!(o.goodput > 0 && o.goodput <= 1)) return InvalidArgument(fmt::format("goodput {} is not in (0, 1]", o.goodput));
  if (!(o.per_hop_latency_s >= 0) || !std::isfinite(o.per_hop_latency_s)) {
    return InvalidArgument(fmt::format("per_hop_latency_s {} is not >= 0", o.per_hop_latency_s));
  }
  if (!(o.per_message_overhead_s >= 0) || !std::isfinite(o.per_message_overhead_s)) {
    return InvalidArgument(fmt::format("per_message_overhead_s {} is not >= 0", o.per_message_overhead_s));
  }
  if (!(o.overload_penalty >= 0 && o.overload_penalty < 1)) {
    return InvalidArgument(fmt::format("overload_penalty {} is not in [0, 1)", o.overload_penalty));
  }
  if (!(o.ring_phase_overlap >= 0 && o.ring_phase_overlap <= 1)) {
    return InvalidArgument(fmt::format("ring_phase_overlap {} is not in [0, 1]", o.ring_phase_overlap));
  }
  if (!(o.overload_threshold > 0)) {
    return InvalidArgument(fmt::format("overload_threshold {} is not > 0", o.overload_threshold));
  }
  if (o.hash_seeds < 1 || o.hash_seeds > 1024) {
    return InvalidArgument(fmt::format("hash_seeds {} is not in [1, 1024]", o.hash_seeds));
  }
  if (!o.background_bps.empty() && o.background_bps.size() != 2 * topology.link_count()) {
    return InvalidArgument(fmt::format("background_bps has {} entries, expected one per directed link ({})",
                                       o.background_bps.size(), 2 * topology.link_count()));
  }
  for (size_t i = 0; i < o.background_bps.size(); ++i) {
    if (!(o.background_bps[i] >= 0) || !std::isfinite(o.background_bps[i])) {
      return InvalidArgument(fmt::format("background_bps[{}] ({}) is not a finite rate >= 0", i,
                                         topology.LinkName(model::LinkId(static_cast<uint32_t>(i / 2)))));
    }
  }
  return {};
}

}  // namespace drainwise::sim
