#include "connectors/telemetry.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "connectors/util.h"

namespace drainwise::connectors {

std::vector<InterfaceTelemetry> ComputeRates(const CounterSample& previous, const CounterSample& current) {
  std::map<std::pair<std::string, std::string>, const InterfaceCounters*> prev;
  for (const auto& c : previous.interfaces) prev[{c.device, c.interface}] = &c;
  std::vector<InterfaceTelemetry> out;
  out.reserve(current.interfaces.size());
  for (const auto& cur : current.interfaces) {
    InterfaceTelemetry t;
    t.device = cur.device;
    t.interface = cur.interface;
    t.speed_bps = cur.speed_bps;
    t.oper_up = cur.oper_up;
    auto it = prev.find({cur.device, cur.interface});
    if (it != prev.end()) {
      const InterfaceCounters& p = *it->second;
      double t0 = p.time_s.value_or(previous.time_s);
      double t1 = cur.time_s.value_or(current.time_s);
      double dt = t1 - t0;
      if (dt > 0) {
        t.has_rates = true;
        auto rate = [&](const std::optional<double>& a, const std::optional<double>& b) -> double {
          if (!a || !b) return 0;
          double delta = *b - *a;
          if (delta < 0) {
            t.counter_reset = true;
            delta = *b;  // restarted from zero since the previous sample
          }
          return delta / dt;
        };
        t.rx_bps = rate(p.rx_bytes, cur.rx_bytes) * 8;
        t.tx_bps = rate(p.tx_bytes, cur.tx_bytes) * 8;
        t.rx_errors_per_s = rate(p.rx_errors, cur.rx_errors);
        t.tx_errors_per_s = rate(p.tx_errors, cur.tx_errors);
        t.rx_discards_per_s = rate(p.rx_discards, cur.rx_discards);
        t.tx_discards_per_s = rate(p.tx_discards, cur.tx_discards);
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

double LinkTelemetry::Utilization() const {
  return capacity_bps > 0 ? std::max(a_to_b_bps, b_to_a_bps) / capacity_bps : 0;
}

LinkTelemetrySet MapToLinks(const model::Topology& topology, const std::vector<InterfaceTelemetry>& interfaces,
                            const NameOptions& names) {
  // (lower-case node name, port) -> (link, is the a end)
  std::map<std::pair<std::string, std::string>, std::pair<model::LinkId, bool>> ends;
  for (size_t i = 0; i < topology.link_count(); ++i) {
    const model::Link& l = topology.links()[i];
    model::LinkId id(i);
    if (!l.a_port.empty()) ends[{internal::ToLower(topology.node(l.a).name), l.a_port}] = {id, true};
    if (!l.b_port.empty()) ends[{internal::ToLower(topology.node(l.b).name), l.b_port}] = {id, false};
  }
  std::map<uint32_t, LinkTelemetry> by_link;
  std::set<std::string> unmatched;
  for (const auto& t : interfaces) {
    auto it = ends.find({internal::ToLower(NormaliseDeviceName(t.device, names)), t.interface});
    if (it == ends.end()) {
      unmatched.insert(t.device + ":" + t.interface);
      continue;
    }
    auto [id, is_a] = it->second;
    LinkTelemetry& lt = by_link[id.value];
    lt.link = id;
    lt.capacity_bps = topology.link(id).capacity_bps;
    if (t.has_rates) {
      lt.has_rates = true;
      double out_bps = t.tx_bps, in_bps = t.rx_bps;
      double& ab = lt.a_to_b_bps;
      double& ba = lt.b_to_a_bps;
      if (is_a) {
        ab = std::max(ab, out_bps);
        ba = std::max(ba, in_bps);
      } else {
        ba = std::max(ba, out_bps);
        ab = std::max(ab, in_bps);
      }
      lt.errors_per_s += t.rx_errors_per_s + t.tx_errors_per_s;
      lt.discards_per_s += t.rx_discards_per_s + t.tx_discards_per_s;
    }
    if (t.oper_up) lt.oper_up = lt.oper_up.value_or(true) && *t.oper_up;
    if (t.speed_bps && *t.speed_bps > 0) {
      lt.speed_bps = lt.speed_bps ? std::min(*lt.speed_bps, *t.speed_bps) : *t.speed_bps;
    }
  }
  LinkTelemetrySet set;
  for (auto& [_, lt] : by_link) set.links.push_back(std::move(lt));
  set.unmatched.assign(unmatched.begin(), unmatched.end());
  return set;
}

std::vector<std::pair<double, double>> BackgroundBps(const model::Topology& topology, const LinkTelemetrySet& set) {
  std::vector<std::pair<double, double>> out(topology.link_count(), {0.0, 0.0});
  for (const auto& lt : set.links) {
    if (lt.has_rates && lt.link.value < out.size()) out[lt.link.value] = {lt.a_to_b_bps, lt.b_to_a_bps};
  }
  return out;
}

std::vector<std::string> DegradedReasons(const LinkTelemetry& l, const DegradedThresholds& th) {
  std::vector<std::string> reasons;
  if (l.oper_up && !*l.oper_up) reasons.push_back("oper down");
  if (l.has_rates && l.errors_per_s > th.max_errors_per_s) {
    reasons.push_back(fmt::format("errors {:.3g}/s > {:.3g}/s", l.errors_per_s, th.max_errors_per_s));
  }
  if (l.has_rates && l.discards_per_s > th.max_discards_per_s) {
    reasons.push_back(fmt::format("discards {:.3g}/s > {:.3g}/s", l.discards_per_s, th.max_discards_per_s));
  }
  if (l.speed_bps && l.capacity_bps > 0 && *l.speed_bps < l.capacity_bps * 0.999) {
    reasons.push_back(fmt::format("running at {:.3g} Gb/s of {:.3g} Gb/s", *l.speed_bps / 1e9, l.capacity_bps / 1e9));
  }
  if (l.has_rates && l.Utilization() > th.max_utilization) {
    reasons.push_back(fmt::format("utilisation {:.0f}% > {:.0f}%", l.Utilization() * 100, th.max_utilization * 100));
  }
  return reasons;
}

}  // namespace drainwise::connectors
