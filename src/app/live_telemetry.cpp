#include "app/live_telemetry.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "sim/routing.h"

namespace drainwise::app {

using nlohmann::json;

void LiveTelemetry::Set(std::shared_ptr<const std::vector<connectors::InterfaceTelemetry>> interfaces) {
  std::lock_guard lock(mu_);
  interfaces_ = std::move(interfaces);
}

bool LiveTelemetry::empty() const {
  std::lock_guard lock(mu_);
  return !interfaces_ || interfaces_->empty();
}

void LiveTelemetry::SetThresholds(connectors::DegradedThresholds thresholds) {
  std::lock_guard lock(mu_);
  thresholds_ = thresholds;
}

connectors::DegradedThresholds LiveTelemetry::Thresholds() const {
  std::lock_guard lock(mu_);
  return thresholds_;
}

std::shared_ptr<const engine::LinkState> LiveTelemetry::LinkStateFor(const model::Snapshot& snapshot) const {
  if (empty()) return nullptr;
  auto state = std::make_shared<engine::LinkState>();
  state->topology_version = snapshot.topology_version;
  state->background_bps = BackgroundBps(*snapshot.topology);
  state->degraded = Degraded(*snapshot.topology);
  return state;
}

connectors::LinkTelemetrySet LiveTelemetry::Map(const model::Topology& topology) const {
  std::shared_ptr<const std::vector<connectors::InterfaceTelemetry>> ifs;
  {
    std::lock_guard lock(mu_);
    ifs = interfaces_;
  }
  if (!ifs) return {};
  return connectors::MapToLinks(topology, *ifs);
}

std::vector<double> LiveTelemetry::BackgroundBps(const model::Topology& topology) const {
  auto set = Map(topology);
  if (set.links.empty()) return {};
  auto pairs = connectors::BackgroundBps(topology, set);
  std::vector<double> out(2 * topology.link_count(), 0.0);
  for (size_t l = 0; l < pairs.size() && l < topology.link_count(); ++l) {
    out[2 * l] = pairs[l].first;
    out[2 * l + 1] = pairs[l].second;
  }
  return out;
}

std::vector<std::pair<model::LinkId, std::vector<std::string>>> LiveTelemetry::Degraded(
    const model::Topology& topology) const {
  std::vector<std::pair<model::LinkId, std::vector<std::string>>> out;
  const auto thresholds = Thresholds();
  for (const auto& lt : Map(topology).links) {
    auto reasons = connectors::DegradedReasons(lt, thresholds);
    if (!reasons.empty()) out.emplace_back(lt.link, std::move(reasons));
  }
  return out;
}

namespace {
json LinkTelemetryJson(const model::Topology& t, const connectors::LinkTelemetry& lt,
                       const std::vector<std::string>& reasons) {
  const auto& L = t.link(lt.link);
  json o = {{"link", t.LinkName(lt.link)},
            {"a", t.node(L.a).name},
            {"b", t.node(L.b).name},
            {"a_port", L.a_port},
            {"b_port", L.b_port},
            {"capacity_gbps", L.capacity_bps / 1e9},
            {"has_rates", lt.has_rates},
            {"a_to_b_gbps", lt.a_to_b_bps / 1e9},
            {"b_to_a_gbps", lt.b_to_a_bps / 1e9},
            {"utilisation", lt.Utilization()},
            {"errors_per_s", lt.errors_per_s},
            {"discards_per_s", lt.discards_per_s},
            {"degraded", !reasons.empty()},
            {"reasons", reasons}};
  if (lt.oper_up) o["oper_up"] = *lt.oper_up;
  return o;
}
}  // namespace

json LiveTelemetry::LinksJson(const model::Topology& topology, bool degraded_only) const {
  auto set = Map(topology);
  const auto thresholds = Thresholds();
  json links = json::array();
  for (const auto& lt : set.links) {
    auto reasons = connectors::DegradedReasons(lt, thresholds);
    if (degraded_only && reasons.empty()) continue;
    links.push_back(LinkTelemetryJson(topology, lt, reasons));
  }
  return {{"links", links},
          {"unmatched_interfaces", set.unmatched},
          {"thresholds",
           {{"max_errors_per_s", thresholds.max_errors_per_s},
            {"max_discards_per_s", thresholds.max_discards_per_s},
            {"max_utilization", thresholds.max_utilization}}}};
}

Result<json> LiveTelemetry::JobPaths(const model::Snapshot& snapshot, const std::string& job_id) const {
  auto j = snapshot.jobs->FindJob(job_id);
  if (!j) return NotFound(fmt::format("unknown job '{}'", job_id));
  const auto& topo = *snapshot.topology;
  const auto& job = snapshot.jobs->job(*j);
  sim::RoutingIndex index(topo);
  model::DrainMask mask(topo, model::Drain{});
  // One representative host per attachment class: hosts of a class route
  // alike, so class pairs weighted by their host pairs give the job's mix.
  std::map<uint32_t, std::pair<model::NodeId, int>> classes;  // class -> (representative, hosts)
  for (auto h : job.hosts) {
    auto& c = classes[index.class_of(h)];
    if (c.second++ == 0) c.first = h;
  }
  std::map<uint32_t, double> share;  // link value -> pair-weighted traffic share
  double pairs_total = 0;
  sim::PathTree tree;
  sim::RouteWorkspace ws;
  for (const auto& [dc, dst] : classes) {
    tree.Build(index, mask, index.HostAttachment(dst.first));
    for (const auto& [sc, src] : classes) {
      double pairs = static_cast<double>(src.second) * (sc == dc ? src.second - 1 : dst.second);
      if (pairs <= 0) continue;
      model::NodeId s = src.first;
      if (s == dst.first) {
        // Two hosts of one class: route from another member of the class.
        for (auto h : index.class_hosts(sc)) {
          if (h != dst.first) {
            s = h;
            break;
          }
        }
        if (s == dst.first) continue;
      }
      auto r = ws.Route(index, mask, tree, index.HostAttachment(s));
      if (!r.connected) continue;
      pairs_total += pairs;
      for (const auto& l : ws.links()) share[l.link] += l.hop_share * pairs;
    }
  }
  auto set = Map(topo);
  const auto thresholds = Thresholds();
  std::map<uint32_t, const connectors::LinkTelemetry*> by_link;
  for (const auto& lt : set.links) by_link[lt.link.value] = &lt;
  std::vector<std::pair<uint32_t, double>> ordered(share.begin(), share.end());
  std::sort(ordered.begin(), ordered.end(),
            [](auto& a, auto& b) { return a.second > b.second || (a.second == b.second && a.first < b.first); });
  json links = json::array();
  int degraded = 0;
  for (const auto& [l, w] : ordered) {
    json o = {{"link", topo.LinkName(model::LinkId(l))}, {"share", pairs_total > 0 ? w / pairs_total : 0.0}};
    if (auto it = by_link.find(l); it != by_link.end()) {
      auto reasons = connectors::DegradedReasons(*it->second, thresholds);
      o["utilisation"] = it->second->Utilization();
      o["degraded"] = !reasons.empty();
      o["reasons"] = reasons;
      degraded += !reasons.empty();
    }
    links.push_back(std::move(o));
  }
  return json{{"job", job.id},  {"hosts", job.hosts.size()},  {"host_pairs", pairs_total},
              {"links", links}, {"degraded_links", degraded}, {"telemetry", !set.links.empty()}};
}

}  // namespace drainwise::app
