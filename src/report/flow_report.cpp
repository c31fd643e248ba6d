#include "report/flow_report.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "report/table.h"
#include "sim/routing.h"

namespace drainwise::report {

using nlohmann::json;

namespace {

// Fixed rounding keeps the document byte-stable across platforms and runs.
double Round(double v, double unit) { return std::round(v / unit) * unit; }
double Seconds(double s) { return Round(s, 1e-9); }

struct Ends {
  std::string from, to, link;
};

// "from:port -> to:port" in the direction of travel.
Ends EndsOf(const model::Topology& t, uint32_t directed) {
  const model::Link& l = t.link(sim::LinkOfDirected(directed));
  const bool a_to_b = directed % 2 == 0;
  const std::string& from = t.node(a_to_b ? l.a : l.b).name;
  const std::string& to = t.node(a_to_b ? l.b : l.a).name;
  const std::string& from_port = a_to_b ? l.a_port : l.b_port;
  const std::string& to_port = a_to_b ? l.b_port : l.a_port;
  auto end = [](const std::string& n, const std::string& p) { return p.empty() ? n : n + ":" + p; };
  return {from, to, end(from, from_port) + " -> " + end(to, to_port)};
}

double Utilisation(const sim::FlowReport& r, uint32_t l, double load) {
  const double bg = r.background_bps.empty() ? 0.0 : r.background_bps[l];
  return r.capacity_bps[l] > 0 ? (load + bg) / r.capacity_bps[l] : 0.0;
}

json SideJson(const sim::FlowJobSide& s, bool hash) {
  json j = {{"connected", s.connected}};
  if (!s.connected) {
    j["comm_s"] = nullptr;
    j["iteration_s"] = nullptr;
    return j;
  }
  j["comm_s"] = Seconds(s.comm_s);
  j["bandwidth_s"] = Seconds(s.bandwidth_s);
  j["latency_s"] = Seconds(s.latency_s);
  j["iteration_s"] = Seconds(s.iteration_s);
  j["max_hops"] = s.max_hops;
  if (hash) {
    j["comm_s_worst"] = Seconds(s.comm_s_worst);
    j["iteration_s_worst"] = Seconds(s.iteration_s_worst);
  }
  return j;
}

json JobIds(const model::Snapshot& snap, const std::vector<model::JobId>& ids, model::JobId except) {
  json out = json::array();
  for (model::JobId j : ids) {
    if (j != except) out.push_back(snap.jobs->job(j).id);
  }
  return out;
}

}  // namespace

json FlowReportToJson(const sim::FlowReport& r, const model::Snapshot& snap, const FlowJsonOptions& options) {
  const model::Topology& t = *snap.topology;
  const bool hash =
      r.model.routing == sim::FlowRouting::kHashResilient || r.model.routing == sim::FlowRouting::kHashRehash;

  // Jobs: all, or the most affected first (cut off, then by slowdown).
  std::vector<size_t> order(r.jobs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (options.max_jobs > 0) {
    auto key = [&](size_t i) {
      const auto& j = r.jobs[i];
      return std::pair<int, double>(j.drained.connected ? 0 : 1, j.slowdown_pct.value_or(0));
    };
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return key(a) > key(b); });
    order.resize(std::min<size_t>(order.size(), static_cast<size_t>(options.max_jobs)));
  }
  json jobs = json::array();
  int slowed = 0, cut = 0;
  double max_slowdown = 0;
  for (const auto& j : r.jobs) {
    if (!j.drained.connected && j.baseline.connected) ++cut;
    if (j.slowdown_pct && *j.slowdown_pct > 0.01) ++slowed;
    if (j.slowdown_pct) max_slowdown = std::max(max_slowdown, *j.slowdown_pct);
  }
  for (size_t i : order) {
    const sim::FlowJobResult& j = r.jobs[i];
    const model::Job& job = snap.jobs->job(j.job);
    json o = {{"id", job.id}, {"name", job.name}, {"flows", j.flows}};
    o["baseline"] = SideJson(j.baseline, hash);
    o["drained"] = SideJson(j.drained, hash);
    o["slowdown_pct"] = j.slowdown_pct ? json(Round(*j.slowdown_pct, 1e-4)) : json(nullptr);
    if (hash) o["slowdown_pct_worst"] = j.slowdown_pct_worst ? json(Round(*j.slowdown_pct_worst, 1e-4)) : json(nullptr);
    json bottlenecks = json::array();
    for (const sim::FlowLinkUse& b : j.bottlenecks) {
      Ends e = EndsOf(t, b.directed_link);
      // The job crosses its own bottleneck: job_count includes it.
      bottlenecks.push_back({{"from", e.from},
                             {"to", e.to},
                             {"link", e.link},
                             {"utilisation", Round(b.utilisation, 1e-4)},
                             {"shared_with", JobIds(snap, b.jobs, j.job)},
                             {"shared_with_count", b.job_count > 0 ? b.job_count - 1 : 0}});
    }
    o["bottlenecks"] = bottlenecks;
    jobs.push_back(std::move(o));
  }

  // Links whose utilisation changed, largest change first.
  struct Changed {
    uint32_t link;
    double before, after;
  };
  std::vector<Changed> changed;
  for (uint32_t l = 0; l < r.drained_load_bps.size(); ++l) {
    const double before = Utilisation(r, l, r.baseline_load_bps[l]);
    const double after = r.link_down[l] ? 0.0 : Utilisation(r, l, r.drained_load_bps[l]);
    if (std::abs(after - before) >= options.min_change || (r.link_down[l] && before > 0))
      changed.push_back({l, before, after});
  }
  const size_t links_changed = changed.size();
  std::stable_sort(changed.begin(), changed.end(), [](const Changed& a, const Changed& b) {
    double da = std::abs(a.after - a.before), db = std::abs(b.after - b.before);
    return da != db ? da > db : a.link < b.link;
  });
  if (options.max_links >= 0 && changed.size() > static_cast<size_t>(options.max_links))
    changed.resize(options.max_links);
  json links = json::array();
  for (const Changed& c : changed) {
    Ends e = EndsOf(t, c.link);
    links.push_back({{"from", e.from},
                     {"to", e.to},
                     {"link", e.link},
                     {"capacity_gbps", Round(r.capacity_bps[c.link] / 1e9, 1e-6)},
                     {"baseline_utilisation", Round(c.before, 1e-4)},
                     {"drained_utilisation", Round(c.after, 1e-4)},
                     {"down", r.link_down[c.link] != 0}});
  }

  json hot = json::array();
  for (const sim::FlowLinkUse& h : r.hot_links) {
    Ends e = EndsOf(t, h.directed_link);
    hot.push_back(
        {{"from", e.from},
         {"to", e.to},
         {"link", e.link},
         {"utilisation", Round(h.utilisation, 1e-4)},
         {"baseline_utilisation", Round(Utilisation(r, h.directed_link, r.baseline_load_bps[h.directed_link]), 1e-4)},
         {"load_gbps", Round(h.load_bps / 1e9, 1e-6)},
         {"jobs", JobIds(snap, h.jobs, model::JobId())},
         {"job_count", h.job_count}});
  }

  const sim::FlowModelInfo& m = r.model;
  json model = {{"routing", sim::FlowRoutingName(m.routing)},
                {"routing_source", m.routing_source},
                {"seeds", m.seeds},
                {"start", "all flows of all jobs start together at t = 0 (conservative)"},
                {"sharing", "max-min fair with fixed split fractions, recomputed at every completion"},
                {"goodput", m.goodput},
                {"per_hop_latency_s", m.per_hop_latency_s},
                {"per_message_overhead_s", m.per_message_overhead_s},
                {"overload_threshold", m.overload_threshold},
                {"overload_penalty", m.overload_penalty},
                {"links_penalised", m.links_penalised},
                {"background", m.background},
                {"flows", m.flows},
                {"demands", m.demands},
                {"aggregates", m.aggregates},
                {"route_classes", m.route_classes},
                {"tight_links", m.tight_links},
                {"redundant_links", m.redundant_links},
                {"components_solved", m.components_solved},
                {"components_reused", m.components_reused},
                {"aggregates_routed", m.aggregates_routed},
                {"classes_adapted", m.classes_adapted},
                {"events", m.events},
                {"simulated_s", Seconds(m.simulated_s)}};
  // Only when on, so documents of the default model are unchanged.
  if (m.ring_phase_overlap > 0) model["ring_phase_overlap"] = m.ring_phase_overlap;

  return {{"jobs", jobs},
          {"links", links},
          {"links_changed", links_changed},
          {"hot_links", hot},
          {"summary",
           {{"jobs", r.jobs.size()},
            {"jobs_slowed", slowed},
            {"jobs_cut_off", cut},
            {"max_slowdown_pct", Round(max_slowdown, 1e-4)}}},
          {"model", model}};
}

namespace {

std::string Ms(const json& side, const char* key) {
  if (!side.contains(key) || side[key].is_null()) return "-";
  return fmt::format("{:.3f}", side[key].get<double>() * 1e3);
}

std::string Pct(const json& v) { return v.is_null() ? "cut off" : fmt::format("{:+.2f}%", v.get<double>()); }

}  // namespace

std::string FlowReportText(const json& flow, int max_rows) {
  std::string out;
  const json& s = flow.at("summary");
  const json& m = flow.at("model");
  out += fmt::format("flow-level: {} jobs, {} slowed, {} cut off, max slowdown {:.2f}%\n", s.at("jobs").get<size_t>(),
                     s.at("jobs_slowed").get<int>(), s.at("jobs_cut_off").get<int>(),
                     s.at("max_slowdown_pct").get<double>());
  out += fmt::format(
      "model: routing {} (seeds {}), goodput {}, latency {} us/hop + {} us/step, {} flows as {} aggregates\n\n",
      m.at("routing").get<std::string>(), m.at("seeds").get<int>(), m.at("goodput").get<double>(),
      m.at("per_hop_latency_s").get<double>() * 1e6, m.at("per_message_overhead_s").get<double>() * 1e6,
      m.at("flows").get<uint64_t>(), m.at("aggregates").get<size_t>());

  std::vector<const json*> jobs;
  for (const json& j : flow.at("jobs")) jobs.push_back(&j);
  std::stable_sort(jobs.begin(), jobs.end(), [](const json* a, const json* b) {
    auto key = [](const json* j) {
      const json& sd = j->at("slowdown_pct");
      return sd.is_null() ? 1e300 : sd.get<double>();
    };
    return key(a) > key(b);
  });
  Table jt({"JOB", "SLOWDOWN", "COMM_MS_BEFORE", "COMM_MS_AFTER", "ITER_MS_BEFORE", "ITER_MS_AFTER", "BOTTLENECK",
            "SHARED_WITH"});
  for (size_t i = 0; i < jobs.size() && static_cast<int>(i) < max_rows; ++i) {
    const json& j = *jobs[i];
    std::string bottleneck = "-", shared = "-";
    if (!j.at("bottlenecks").empty()) {
      const json& b = j.at("bottlenecks")[0];
      bottleneck = fmt::format("{} -> {} ({:.0f}%)", b.at("from").get<std::string>(), b.at("to").get<std::string>(),
                               b.at("utilisation").get<double>() * 100);
      std::vector<std::string> names;
      for (const json& x : b.at("shared_with")) {
        if (names.size() == 3) break;
        names.push_back(x.get<std::string>());
      }
      size_t n = b.at("shared_with_count").get<size_t>();
      shared = names.empty() ? "-" : fmt::format("{}", fmt::join(names, ","));
      if (n > names.size()) shared += fmt::format(" +{}", n - names.size());
    }
    jt.Add({j.at("id").get<std::string>(), Pct(j.at("slowdown_pct")), Ms(j.at("baseline"), "comm_s"),
            Ms(j.at("drained"), "comm_s"), Ms(j.at("baseline"), "iteration_s"), Ms(j.at("drained"), "iteration_s"),
            bottleneck, shared});
  }
  out += jt.Render();

  Table ht({"HOT_LINK", "UTIL_BEFORE", "UTIL_AFTER", "LOAD_GBPS", "JOBS"});
  for (const json& h : flow.at("hot_links")) {
    ht.Add({fmt::format("{} -> {}", h.at("from").get<std::string>(), h.at("to").get<std::string>()),
            fmt::format("{:.1f}%", h.at("baseline_utilisation").get<double>() * 100),
            fmt::format("{:.1f}%", h.at("utilisation").get<double>() * 100),
            fmt::format("{:.1f}", h.at("load_gbps").get<double>()), std::to_string(h.at("job_count").get<size_t>())});
  }
  out += "\n" + ht.Render();
  return out;
}

}  // namespace drainwise::report
