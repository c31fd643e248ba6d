#include "report/advisor_report.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "codec/json_reader.h"
#include "codec/native.h"
#include "policies/verdict_json.h"
#include "report/job_report.h"
#include "report/table.h"

namespace drainwise::report {

using nlohmann::json;

namespace {

json Names(const model::Topology& t, const std::vector<model::NodeId>& ids) {
  json a = json::array();
  for (auto id : ids) a.push_back(t.node(id).name);
  return a;
}

double Round(double v, double unit) { return std::round(v / unit) * unit; }

}  // namespace

json PredictionToJson(const advisor::Prediction& p) {
  return {{"verdict", policies::DecisionName(p.decision)},
          {"reasons", p.reasons},
          {"jobs_affected", p.jobs_affected},
          {"jobs_disconnected", p.jobs_disconnected},
          {"max_slowdown_pct", Round(p.max_slowdown_pct, 0.01)}};
}

json RecommendationToJson(const advisor::Recommendation& r, const model::Snapshot& snapshot) {
  const auto& t = *snapshot.topology;
  json o = {{"kind", advisor::RecommendationKindName(r.kind)}, {"predicted", PredictionToJson(r.predicted)}};
  switch (r.kind) {
    case advisor::RecommendationKind::kMigrate: {
      const auto& job = snapshot.jobs->job(r.job);
      o["job"] = job.id;
      o["priority"] = job.priority;
      o["from_hosts"] = Names(t, r.from_hosts);
      o["to_hosts"] = Names(t, r.to_hosts);
      o["cost_s"] = Round(r.cost_s, 1);
      o["cost_gpu_hours"] = Round(r.cost_gpu_hours, 0.01);
      o["rules_fixed"] = r.rules_fixed;
      break;
    }
    case advisor::RecommendationKind::kWait: {
      o["until"] = codec::FormatRfc3339(r.wait_until);
      json jobs = json::array();
      for (auto j : r.waiting_for) jobs.push_back(snapshot.jobs->job(j).id);
      o["waiting_for"] = jobs;
      o["cost_gpu_hours"] = Round(r.cost_gpu_hours, 0.01);
      o["within_window"] = r.within_window;
      break;
    }
    case advisor::RecommendationKind::kAlternative:
      o["rank"] = r.rank;
      o["drain"] = codec::DrainSpecToJson(model::DescribeDrain(r.alternative, t));
      o["cost_gpu_hours"] = Round(r.cost_gpu_hours, 0.01);
      break;
  }
  if (!r.summary.empty()) o["summary"] = r.summary;
  return o;
}

namespace {

json JobJson(const model::Snapshot& snap, const advisor::Scenario& sc, model::JobId id) {
  const auto& t = *snap.topology;
  const auto& job = snap.jobs->job(id);
  const auto& ji = sc.job.jobs[id.value];
  json o = {{"id", job.id},
            {"name", job.name},
            {"tenant", job.tenant},
            {"priority", job.priority},
            {"hosts", job.hosts.size()},
            {"gpus", ji.gpus},
            {"profile_source", job.profile_source},
            {"connected", ji.connected},
            {"path_fraction", Round(ji.path_fraction, 1e-4)},
            {"min_paths_after", ji.min_paths_after ? json(*ji.min_paths_after) : json()},
            {"bandwidth_fraction", Round(ji.bandwidth_fraction, 1e-4)},
            {"crossing_share", Round(ji.crossing_share, 1e-4)},
            {"host_pairs_cut", ji.host_pairs_cut}};
  json crossing = {{"switches", Names(t, ji.crossed_switches)}, {"links", json::array()}};
  for (auto l : ji.crossed_links) crossing["links"].push_back(t.LinkName(l));
  o["crossing"] = crossing;
  if (sc.flow) {
    const auto& fr = sc.flow->jobs[id.value];
    auto side = [](const sim::FlowJobSide& s) {
      json j = {{"connected", s.connected}};
      if (s.connected) {
        j["comm_s"] = s.comm_s;
        j["bandwidth_s"] = s.bandwidth_s;
        j["latency_s"] = s.latency_s;
        j["iteration_s"] = s.iteration_s;
        if (std::fabs(s.comm_s_worst - s.comm_s) > 1e-12) j["comm_s_worst"] = s.comm_s_worst;
      }
      return j;
    };
    o["baseline"] = side(fr.baseline);
    o["drained"] = side(fr.drained);
    o["slowdown_pct"] = fr.slowdown_pct ? json(Round(*fr.slowdown_pct, 0.01)) : json();
    if (fr.slowdown_pct_worst && fr.slowdown_pct && std::fabs(*fr.slowdown_pct_worst - *fr.slowdown_pct) > 1e-9) {
      o["slowdown_pct_worst"] = Round(*fr.slowdown_pct_worst, 0.01);
    }
    if (!fr.drained.connected) o["connected"] = false;
    json bottlenecks = json::array();
    for (const auto& b : fr.bottlenecks) {
      json shared = json::array();
      for (auto other : b.jobs) {
        if (other != id) shared.push_back(snap.jobs->job(other).id);
      }
      auto link = sim::LinkOfDirected(b.directed_link);
      const auto& L = t.link(link);
      bool a_to_b = b.directed_link % 2 == 0;
      bottlenecks.push_back(
          {{"link", fmt::format("{} -> {}", t.node(a_to_b ? L.a : L.b).name, t.node(a_to_b ? L.b : L.a).name)},
           {"utilisation", Round(b.utilisation, 1e-3)},
           {"shared_with", shared},
           {"jobs_on_link", b.job_count}});
    }
    o["bottlenecks"] = bottlenecks;
  }
  return o;
}

json FabricJson(const model::Snapshot& snap, const sim::FabricImpact& f) {
  const auto& t = *snap.topology;
  json capacity = json::array();
  for (const auto& c : f.capacity) {
    capacity.push_back({{"tier", c.tier},
                        {"pod", c.pod},
                        {"removed_gbps", Round(c.removed_bps / 1e9, 0.01)},
                        {"total_gbps", Round(c.total_bps / 1e9, 0.01)},
                        {"removed_pct", c.total_bps > 0 ? Round(100 * c.removed_bps / c.total_bps, 0.01) : 0.0}});
  }
  json leaves = json::array();
  for (const auto& l : f.single_uplink_leaves) {
    leaves.push_back(
        {{"leaf", t.node(l.leaf).name}, {"uplinks_before", l.uplinks_before}, {"uplinks_after", l.uplinks_after}});
  }
  json domains = json::array();
  for (const auto& d : f.domains) {
    domains.push_back({{"kind", d.key}, {"value", d.value}, {"switches", Names(t, d.switches)}});
  }
  return {{"switches_drained", f.switches_drained},
          {"links_down", f.links_down},
          {"capacity", capacity},
          {"single_uplink_leaves", leaves},
          {"hosts_cut_off", Names(t, f.hosts_cut_off)},
          {"hosts_degraded", Names(t, f.hosts_degraded)},
          {"domains", domains}};
}

json HotLinksJson(const model::Snapshot& snap, const sim::FlowReport& r) {
  const auto& t = *snap.topology;
  json out = json::array();
  for (const auto& h : r.hot_links) {
    auto link = sim::LinkOfDirected(h.directed_link);
    const auto& L = t.link(link);
    bool a_to_b = h.directed_link % 2 == 0;
    double cap = r.capacity_bps[h.directed_link];
    json jobs = json::array();
    for (auto j : h.jobs) jobs.push_back(snap.jobs->job(j).id);
    out.push_back({{"link", fmt::format("{} -> {}", t.node(a_to_b ? L.a : L.b).name, t.node(a_to_b ? L.b : L.a).name)},
                   {"utilisation_before", cap > 0 ? Round(r.baseline_load_bps[h.directed_link] / cap, 1e-3) : 0.0},
                   {"utilisation_after", Round(h.utilisation, 1e-3)},
                   {"load_gbps_after", Round(h.load_bps / 1e9, 0.01)},
                   {"job_count", h.job_count},
                   {"jobs", jobs}});
  }
  return out;
}

json ModelJson(const sim::FlowModelInfo& m) {
  return {{"routing", sim::FlowRoutingName(m.routing)},
          {"routing_source", m.routing_source},
          {"seeds", m.seeds},
          {"goodput", m.goodput},
          {"per_hop_latency_s", m.per_hop_latency_s},
          {"per_message_overhead_s", m.per_message_overhead_s},
          {"overload_threshold", m.overload_threshold},
          {"overload_penalty", m.overload_penalty},
          {"background", m.background},
          {"flows", m.flows},
          {"aggregates", m.aggregates},
          {"route_classes", m.route_classes},
          {"events", m.events},
          {"simulated_s", m.simulated_s},
          {"start", "all flows of all jobs start together at t = 0 (conservative)"}};
}

}  // namespace

json AssessmentToJson(const advisor::Assessment& a, const model::Snapshot& snap, const AssessmentJsonOptions& options) {
  const auto& sc = a.scenario;
  const auto& t = *snap.topology;
  json out;
  out["drain"] = codec::DrainSpecToJson(model::DescribeDrain(sc.drain, t));
  model::Drain active;
  // Active drains are what the combined drain adds over the proposal.
  for (auto s : sc.combined.switches) {
    if (!std::binary_search(sc.drain.switches.begin(), sc.drain.switches.end(), s)) active.switches.push_back(s);
  }
  for (auto l : sc.combined.links) {
    if (!std::binary_search(sc.drain.links.begin(), sc.drain.links.end(), l)) active.links.push_back(l);
  }
  out["active_drains"] = codec::DrainSpecToJson(model::DescribeDrain(active, t));
  out["modes"] = sc.flow ? json{"job", "flow"} : json{"job"};
  auto v = policies::VerdictToJson(sc.verdict);
  out["verdict"] = v["decision"];
  out["policy"] = v.value("policy", json());
  out["reasons"] = v["reasons"];
  out["unchecked"] = v.value("unchecked", json::array());

  // Affected jobs, worst first: rule breakers, disconnected, slowest, least bandwidth.
  std::vector<model::JobId> ids;
  for (const auto& pi : sc.impacts) ids.push_back(pi.job);
  std::stable_sort(ids.begin(), ids.end(), [&](model::JobId x, model::JobId y) {
    const auto& jx = sc.job.jobs[x.value];
    const auto& jy = sc.job.jobs[y.value];
    bool cx = jx.connected && (!sc.flow || sc.flow->jobs[x.value].drained.connected);
    bool cy = jy.connected && (!sc.flow || sc.flow->jobs[y.value].drained.connected);
    if (cx != cy) return !cx;
    if (sc.flow) {
      double sx = sc.flow->jobs[x.value].slowdown_pct.value_or(0), sy = sc.flow->jobs[y.value].slowdown_pct.value_or(0);
      if (std::fabs(sx - sy) > 1e-9) return sx > sy;
    }
    if (jx.bandwidth_fraction != jy.bandwidth_fraction) return jx.bandwidth_fraction < jy.bandwidth_fraction;
    return jx.path_fraction < jy.path_fraction;
  });
  json jobs = json::array();
  int gpus = 0;
  for (auto id : ids) gpus += sc.job.jobs[id.value].gpus;
  for (size_t i = 0; i < ids.size() && static_cast<int>(i) < options.max_jobs; ++i)
    jobs.push_back(JobJson(snap, sc, ids[i]));
  out["summary"] = {{"jobs_total", snap.jobs->size()},
                    {"jobs_affected", sc.jobs_affected},
                    {"jobs_disconnected", sc.jobs_disconnected},
                    {"gpus_affected", gpus},
                    {"max_slowdown_pct", sc.flow ? json(Round(sc.max_slowdown_pct, 0.01)) : json()}};
  out["jobs"] = jobs;
  out["fabric"] = FabricJson(snap, sc.job.fabric);
  if (sc.flow) {
    out["links"] = HotLinksJson(snap, *sc.flow);
    out["model"] = ModelJson(sc.flow->model);
  }
  json recs = json::array();
  for (const auto& r : a.recommendations) recs.push_back(RecommendationToJson(r, snap));
  out["recommendations"] = recs;
  out["allow_after"] = a.allow_after;
  if (a.allow_after_predicted) out["allow_after_predicted"] = PredictionToJson(*a.allow_after_predicted);
  if (!a.allow_after.empty()) out["allow_after_cost_gpu_hours"] = Round(a.allow_after_cost_gpu_hours, 0.01);
  out["notes"] = a.notes;
  out["timings_ms"] = {{"simulation", Round(a.job_ms, 0.01)}, {"recommendations", Round(a.recommend_ms, 0.01)}};
  return out;
}

json PlanToJson(const advisor::Plan& plan, const model::Snapshot& snapshot) {
  json batches = json::array();
  for (const auto& b : plan.batches) {
    json migrations = json::array();
    for (const auto& m : b.migrations) migrations.push_back(RecommendationToJson(m, snapshot));
    batches.push_back({{"switches", Names(*snapshot.topology, b.switches)},
                       {"migrations", migrations},
                       {"verdict", policies::DecisionName(b.predicted.decision)},
                       {"predicted", PredictionToJson(b.predicted)},
                       {"reasons_without_migrations", policies::VerdictToJson(b.verdict)["reasons"]}});
  }
  return {{"batches", batches},
          {"all_allowed", plan.all_allowed},
          {"notes", plan.notes},
          {"verdict", plan.all_allowed ? "allow" : "deny"}};
}

namespace {
std::string Fixed(const json& v, int digits) {
  if (v.is_number()) return fmt::format("{:.{}f}", v.get<double>(), digits);
  if (v.is_null()) return "-";
  return v.is_string() ? v.get<std::string>() : v.dump();
}
std::string Str(const json& o, const char* key, std::string fallback = "-") {
  auto it = o.find(key);
  if (it == o.end() || it->is_null()) return fallback;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_boolean()) return it->get<bool>() ? "yes" : "no";
  return it->dump();
}
std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}
}  // namespace

std::string AssessmentText(const json& a) {
  std::string out;
  std::string drain;
  if (a.contains("drain")) {
    for (const auto& s : a["drain"].value("switches", json::array()))
      drain += (drain.empty() ? "" : ", ") + s.get<std::string>();
    for (const auto& l : a["drain"].value("links", json::array())) {
      drain += (drain.empty() ? "" : ", ") + l.value("a", "") + "--" + l.value("b", "");
    }
  }
  out += fmt::format("{}  drain [{}]", Upper(Str(a, "verdict", "no verdict")), drain);
  if (a.contains("id")) out += fmt::format("  assessment {}", a["id"].get<std::string>());
  if (a.contains("ticket") && !a["ticket"].get<std::string>().empty())
    out += "  ticket " + a["ticket"].get<std::string>();
  out += "\n";
  if (a.contains("summary")) {
    const auto& s = a["summary"];
    out += fmt::format("jobs affected {}  disconnected {}  GPUs affected {}  max slowdown {}\n",
                       Str(s, "jobs_affected"), Str(s, "jobs_disconnected"), Str(s, "gpus_affected"),
                       s.contains("max_slowdown_pct") ? Fixed(s["max_slowdown_pct"], 1) + "%" : "-");
  }
  if (a.contains("reasons") && !a["reasons"].empty()) {
    out += "\nREASONS\n";
    Table t({"ACTION", "RULE", "SUBJECT", "MEASURED", "LIMIT"});
    for (const auto& r : a["reasons"]) {
      t.Add({Str(r, "action"), Str(r, "rule"), Str(r, "subject"), Str(r, "measured"), Str(r, "limit")});
    }
    out += t.Render();
  }
  if (a.contains("jobs") && !a["jobs"].empty()) {
    out += "\nJOBS (affected, worst first)\n";
    Table t({"JOB", "PRIO", "CONNECTED", "PATHS", "BANDWIDTH", "MIN_PATHS", "SLOWDOWN", "ITER_BEFORE", "ITER_AFTER"});
    for (const auto& j : a["jobs"]) {
      json before = j.contains("baseline") ? j["baseline"].value("iteration_s", json()) : json();
      json after = j.contains("drained") ? j["drained"].value("iteration_s", json()) : json();
      t.Add({Str(j, "id"), Str(j, "priority"), Str(j, "connected"), Fixed(j.value("path_fraction", json()), 3),
             Fixed(j.value("bandwidth_fraction", json()), 3), Str(j, "min_paths_after"),
             j.contains("slowdown_pct") && !j["slowdown_pct"].is_null() ? Fixed(j["slowdown_pct"], 1) + "%" : "-",
             before.is_null() ? "-" : Fixed(before, 3) + "s", after.is_null() ? "-" : Fixed(after, 3) + "s"});
    }
    out += t.Render();
  }
  if (a.contains("links") && !a["links"].empty()) {
    out += "\nHOT LINKS (drained)\n";
    Table t({"LINK", "UTIL_BEFORE", "UTIL_AFTER", "JOBS"});
    for (const auto& l : a["links"]) {
      t.Add({Str(l, "link"), Fixed(l.value("utilisation_before", json()), 2),
             Fixed(l.value("utilisation_after", json()), 2), Str(l, "job_count")});
    }
    out += t.Render();
  }
  if (a.contains("recommendations") && !a["recommendations"].empty()) {
    out += "\nRECOMMENDATIONS\n";
    Table t({"#", "KIND", "WHAT", "COST", "PREDICTED"});
    int i = 0;
    for (const auto& r : a["recommendations"]) {
      std::string what, cost = "-";
      std::string kind = r.value("kind", "");
      if (kind == "migrate") {
        what = fmt::format("move {} to {}", Str(r, "job"),
                           r["to_hosts"].empty() ? "-" : r["to_hosts"][0].get<std::string>());
        if (r["to_hosts"].size() > 1) what += fmt::format(" +{}", r["to_hosts"].size() - 1);
        cost = Fixed(r["cost_gpu_hours"], 1) + " GPU-h";
      } else if (kind == "wait") {
        what = "wait until " + Str(r, "until");
        if (r.contains("cost_gpu_hours")) cost = Fixed(r["cost_gpu_hours"], 1) + " GPU-h";
      } else {
        std::string sw;
        for (const auto& s : r["drain"].value("switches", json::array()))
          sw += (sw.empty() ? "" : ",") + s.get<std::string>();
        what = "drain " + sw + " instead";
      }
      t.Add({std::to_string(i++), kind, what, cost, Str(r["predicted"], "verdict")});
    }
    out += t.Render();
    if (a.contains("allow_after") && !a["allow_after"].empty()) {
      std::string idx;
      for (const auto& k : a["allow_after"]) idx += (idx.empty() ? "" : ", ") + k.dump();
      out += fmt::format("allow after: recommendations {}\n", idx);
    }
  }
  if (a.contains("notes")) {
    for (const auto& n : a["notes"]) out += "note: " + n.get<std::string>() + "\n";
  }
  return out;
}

std::string PlanText(const json& p) {
  std::string out = fmt::format("{}  {} batch(es)\n", p.value("all_allowed", false) ? "ALLOW" : "DENY",
                                p.value("batches", json::array()).size());
  Table t({"BATCH", "SWITCHES", "MIGRATIONS", "VERDICT"});
  int i = 0;
  for (const auto& b : p.value("batches", json::array())) {
    std::string sw, mig;
    for (const auto& s : b["switches"]) sw += (sw.empty() ? "" : ",") + s.get<std::string>();
    for (const auto& m : b["migrations"]) mig += (mig.empty() ? "" : ",") + m.value("job", "");
    t.Add({std::to_string(++i), sw, mig.empty() ? "-" : mig, Str(b, "verdict")});
  }
  out += t.Render();
  for (const auto& n : p.value("notes", json::array())) out += "note: " + n.get<std::string>() + "\n";
  return out;
}

std::string CandidatesText(const json& c) {
  // From the JSON of report::DrainCandidatesToJson, so any stored or relayed
  // document renders the same way.
  Table t({"RANK", "SWITCH", "POD", "JOBS", "DISCONNECTED", "GPUS", "WORST_BW", "WORST_PATHS", "MIN_PATHS"});
  for (const auto& x : c.value("candidates", json::array())) {
    t.Add({Str(x, "rank"), Str(x, "switch"), Str(x, "pod"), Str(x, "jobs_affected"), Str(x, "jobs_disconnected"),
           Str(x, "gpus_affected"), Fixed(x["worst_bandwidth_fraction"], 3), Fixed(x["worst_path_fraction"], 3),
           Str(x, "min_paths_after")});
  }
  return fmt::format("drain candidates ({}), safest first\n", Str(c, "tier", "switches")) + t.Render();
}

}  // namespace drainwise::report
