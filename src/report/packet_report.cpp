#include "report/packet_report.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "report/table.h"
#include "sim/routing.h"

namespace drainwise::report {

using nlohmann::json;

namespace {

double Round(double v, double step) { return std::round(v / step) * step; }

json SideJson(const sim::PacketJobSide& s) {
  return {{"connected", s.connected},
          {"completed", s.completed},
          {"comm_s", s.completed ? json(Round(s.comm_s, 1e-9)) : json(nullptr)},
          {"iteration_s", s.completed ? json(Round(s.iteration_s, 1e-9)) : json(nullptr)}};
}

json RunJson(const sim::PacketRunStats& r) {
  return {{"simulated_s", Round(r.simulated_s, 1e-9)},
          {"wall_s", Round(r.wall_s, 1e-3)},
          {"packets", r.packets_sent},
          {"ecn_marks", r.ecn_marks},
          {"drops", r.drops}};
}

std::string Pct(const json& v) { return v.is_number() ? fmt::format("{:+.1f}%", v.get<double>()) : "-"; }
std::string Us(const json& v) { return v.is_number() ? fmt::format("{:.1f}", v.get<double>() * 1e6) : "-"; }

}  // namespace

json PacketReportToJson(const sim::PacketReport& r, const model::Snapshot& snap, int max_links) {
  const model::Topology& t = *snap.topology;
  json jobs = json::array();
  for (const sim::PacketJobResult& j : r.jobs) {
    const model::Job& job = snap.jobs->job(j.job);
    json o = {{"id", job.id}, {"name", job.name}, {"flows", j.flows}, {"bystander", j.bystander}};
    o["baseline"] = SideJson(j.baseline);
    o["drained"] = SideJson(j.drained);
    o["slowdown_pct"] = j.slowdown_pct ? json(Round(*j.slowdown_pct, 1e-3)) : json(nullptr);
    o["flow"] = {{"baseline_comm_s", Round(j.flow_baseline_comm_s, 1e-9)},
                 {"drained_comm_s", Round(j.flow_drained_comm_s, 1e-9)},
                 {"slowdown_pct", j.flow_slowdown_pct ? json(Round(*j.flow_slowdown_pct, 1e-3)) : json(nullptr)}};
    o["flow_minus_packet_pct"] = j.slowdown_pct && j.flow_slowdown_pct
                                     ? json(Round(*j.flow_slowdown_pct - *j.slowdown_pct, 1e-3))
                                     : json(nullptr);
    jobs.push_back(std::move(o));
  }
  // Links: drained stats joined with the baseline's, busiest drained first.
  std::map<uint32_t, std::pair<const sim::PacketLinkStats*, const sim::PacketLinkStats*>> by_link;
  for (const auto& l : r.baseline.links) by_link[l.directed_link].first = &l;
  for (const auto& l : r.drained.links) by_link[l.directed_link].second = &l;
  std::vector<std::pair<uint32_t, std::pair<const sim::PacketLinkStats*, const sim::PacketLinkStats*>>> rows(
      by_link.begin(), by_link.end());
  auto util = [](const sim::PacketLinkStats* s) { return s ? s->utilisation : 0.0; };
  std::stable_sort(rows.begin(), rows.end(),
                   [&](const auto& a, const auto& b) { return util(a.second.second) > util(b.second.second); });
  if (rows.size() > static_cast<size_t>(std::max(0, max_links))) rows.resize(static_cast<size_t>(max_links));
  json links = json::array();
  for (const auto& [d, pair] : rows) {
    const model::Link& link = t.link(sim::LinkOfDirected(d));
    const bool a_to_b = d % 2 == 0;
    const auto* after = pair.second;
    links.push_back({{"from", t.node(a_to_b ? link.a : link.b).name},
                     {"to", t.node(a_to_b ? link.b : link.a).name},
                     {"link", sim::LinkOfDirected(d).value},
                     {"baseline_utilisation", Round(util(pair.first), 1e-4)},
                     {"drained_utilisation", after ? json(Round(after->utilisation, 1e-4)) : json(nullptr)},
                     {"drained_max_queue_packets", after ? json(after->max_queue_packets) : json(nullptr)},
                     {"drained_ecn_marks", after ? json(after->ecn_marks) : json(nullptr)},
                     {"drained_drops", after ? json(after->drops) : json(nullptr)}});
  }
  const sim::PacketOptions& o = r.options;
  return {
      {"jobs", std::move(jobs)},
      {"blast_radius",
       {{"jobs", r.jobs.size()}, {"hosts", r.hosts}, {"switches", r.switches}, {"links", r.links}, {"flows", r.flows}}},
      {"runs", {{"baseline", RunJson(r.baseline)}, {"drained", RunJson(r.drained)}}},
      {"links", std::move(links)},
      {"model",
       {{"routing", sim::PacketRoutingName(o.routing)},
        {"transport", "dctcp"},
        {"per_hop_delay_s", o.per_hop_delay_s},
        {"per_message_overhead_s", o.per_message_overhead_s},
        {"mtu_bytes", o.mtu_bytes},
        {"ecn_threshold_packets", o.ecn_threshold_packets},
        {"buffer_packets", o.buffer_packets},
        {"flow_routing", sim::FlowRoutingName(o.flow.routing)}}}};
}

std::string PacketReportText(const json& p, int max_rows) {
  std::string out;
  const json& br = p.at("blast_radius");
  out +=
      fmt::format("packet level ({} routing, DCTCP): blast radius {} jobs, {} hosts, {} switches, {} links, {} flows\n",
                  p.at("model").at("routing").get<std::string>(), br.at("jobs").get<int>(), br.at("hosts").get<int>(),
                  br.at("switches").get<int>(), br.at("links").get<int>(), br.at("flows").get<uint64_t>());
  Table jt({"JOB", "PACKET_US_BEFORE", "PACKET_US_AFTER", "PACKET_SLOWDOWN", "FLOW_US_BEFORE", "FLOW_US_AFTER",
            "FLOW_SLOWDOWN", "FLOW-PACKET"});
  int n = 0;
  for (const json& j : p.at("jobs")) {
    if (n++ >= max_rows) break;
    const json& f = j.at("flow");
    jt.Add({j.at("id").get<std::string>() + (j.at("bystander").get<bool>() ? " (bystander)" : ""),
            Us(j.at("baseline").at("comm_s")), Us(j.at("drained").at("comm_s")), Pct(j.at("slowdown_pct")),
            Us(f.at("baseline_comm_s")), Us(f.at("drained_comm_s")), Pct(f.at("slowdown_pct")),
            j.at("flow_minus_packet_pct").is_number()
                ? fmt::format("{:+.1f} pts", j.at("flow_minus_packet_pct").get<double>())
                : "-"});
  }
  out += jt.Render();
  Table lt({"LINK", "UTIL_BEFORE", "UTIL_AFTER", "MAX_QUEUE_PKTS", "ECN_MARKS", "DROPS"});
  n = 0;
  for (const json& l : p.at("links")) {
    if (n++ >= std::min(max_rows, 10)) break;
    auto cell = [&](const char* k) { return l.at(k).is_null() ? std::string("-") : l.at(k).dump(); };
    lt.Add({fmt::format("{} -> {}", l.at("from").get<std::string>(), l.at("to").get<std::string>()),
            fmt::format("{:.0f}%", l.at("baseline_utilisation").get<double>() * 100),
            l.at("drained_utilisation").is_number()
                ? fmt::format("{:.0f}%", l.at("drained_utilisation").get<double>() * 100)
                : "down",
            cell("drained_max_queue_packets"), cell("drained_ecn_marks"), cell("drained_drops")});
  }
  out += "\n" + lt.Render();
  for (const char* side : {"baseline", "drained"}) {
    const json& r = p.at("runs").at(side);
    out +=
        fmt::format("{}: {:.1f} us simulated in {:.2f} s, {} packets, {} ECN marks, {} drops\n", side,
                    r.at("simulated_s").get<double>() * 1e6, r.at("wall_s").get<double>(),
                    r.at("packets").get<uint64_t>(), r.at("ecn_marks").get<uint64_t>(), r.at("drops").get<uint64_t>());
  }
  return out;
}

}  // namespace drainwise::report
