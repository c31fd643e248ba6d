#include "app/link_health_hooks.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "codec/json_reader.h"
#include "engine/codec.h"
#include "policies/evaluate.h"

namespace drainwise::app {

using advisor::Severity;
using nlohmann::json;

namespace {

constexpr size_t kMaxWhatIfLinks = 16;  // degrading links given a what-if per request (3 job-level runs each)

int64_t Now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

Result<Severity> SeverityParam(const server::RoutedRequest& rr, const char* key, Severity fallback) {
  const std::string& v = rr.Query(key);
  if (v.empty()) return fallback;
  for (auto s : {Severity::kNone, Severity::kInfo, Severity::kWarning, Severity::kCritical}) {
    if (advisor::SeverityName(s) == v) return s;
  }
  return InvalidArgument(fmt::format("{}: expected none, info, warning or critical, got '{}'", key, v));
}

std::optional<model::LinkId> FindLink(const model::Topology& t, std::string_view name) {
  for (size_t i = 0; i < t.link_count(); ++i) {
    if (t.LinkName(model::LinkId(i)) == name) return model::LinkId(i);
  }
  return std::nullopt;
}

json HealthOptionsJson(const advisor::TrendOptions& o) {
  return {{"in_errors_per_s", o.in_errors_per_s},
          {"fec_corrected_per_s", o.fec_corrected_per_s},
          {"fec_uncorrectable_per_s", o.fec_uncorrectable_per_s},
          {"rx_power_min_dbm", o.rx_power_min_dbm},
          {"rx_power_margin_db", o.rx_power_margin_db},
          {"flaps_per_day_warning", o.flaps_per_day_warning},
          {"flaps_per_day_critical", o.flaps_per_day_critical},
          {"congestion_max_utilisation", o.congestion_max_utilisation},
          {"critical_horizon_s", o.critical_horizon_s},
          {"warning_horizon_s", o.warning_horizon_s}};
}

json ImpactJson(const engine::AssessOutcome& a, model::JobId job, const json& request) {
  const auto& s = a.assessment.scenario;
  json o = {{"verdict", std::string(policies::DecisionName(s.verdict.decision))},
            {"jobs_affected", s.jobs_affected},
            {"jobs_disconnected", s.jobs_disconnected},
            {"request", request}};
  if (job.value < s.job.jobs.size()) {
    const auto& j = s.job.jobs[job.value];
    o["job"] = {
        {"connected", j.connected}, {"path_fraction", j.path_fraction}, {"bandwidth_fraction", j.bandwidth_fraction}};
  }
  return o;
}

}  // namespace

void LinkHealthService::Install(server::ApiHooks& hooks) {
  hooks.links_health = [this](const server::RoutedRequest& rr) { return LinksHealth(rr); };
  hooks.jobs_at_risk = [this](const server::RoutedRequest& rr) { return JobsAtRisk(rr); };
  hooks.job_network = [this](const server::RoutedRequest& rr) { return JobNetwork(rr); };
}

void LinkHealthService::Declare(server::Metrics& m) {
  m.DeclareGauge("drainwise_link_health_score",
                 "Risk score (0-100) of a link's health trends; the 50 riskiest links with a finding");
  m.DeclareGauge("drainwise_links_degrading", "Links by the severity of their worst health finding");
  m.DeclareGauge("drainwise_jobs_at_risk",
                 "Jobs whose paths cross a link with a warning or critical health finding (-1 until computed)");
}

void LinkHealthService::Scrape(server::Metrics& m) {
  std::shared_ptr<const LinkHealthReport> report;
  int64_t at_risk;
  {
    std::lock_guard lock(mu_);
    report = scraped_;
    at_risk = at_risk_jobs_;
  }
  m.Set("drainwise_jobs_at_risk", {}, static_cast<double>(at_risk));
  std::map<std::string, int> counts = {{"info", 0}, {"warning", 0}, {"critical", 0}};
  auto snap = state_->snapshot();
  if (report && snap && snap->topology_version == report->topology_version) {
    int n = 0;
    for (const auto& l : report->links) {
      if (l.health.severity == Severity::kNone) continue;
      ++counts[std::string(advisor::SeverityName(l.health.severity))];
      if (n++ < 50) m.Set("drainwise_link_health_score", {{"link", snap->topology->LinkName(l.link)}}, l.health.score);
    }
  }
  for (const auto& [sev, n] : counts) m.Set("drainwise_links_degrading", {{"severity", sev}}, n);
}

void LinkHealthService::Refresh() {
  auto view = state_->view();
  if (!view->snapshot) return;
  auto report = monitor_->Report(view->snapshot);
  if (!report) return;
  auto r = AtRisk(*view, *report, Severity::kWarning, {});
  std::lock_guard lock(mu_);
  scraped_ = report;
  if (r) at_risk_jobs_ = static_cast<int64_t>((*r)["jobs"].size());
}

void LinkHealthService::AnnotatePaths(const model::SnapshotPtr& snapshot, json& paths) {
  auto report = monitor_->Report(snapshot);
  if (!report || !paths.contains("links")) return;
  const auto& topo = *snapshot->topology;
  std::map<std::string, const LinkHealthItem*> by_name;
  for (const auto& l : report->links) by_name[topo.LinkName(l.link)] = &l;
  int degrading = 0;
  for (auto& l : paths["links"]) {
    auto it = by_name.find(l.value("link", ""));
    if (it == by_name.end()) continue;
    l["health"] = LinkHealthSummaryJson(*it->second);
    degrading += it->second->health.severity >= Severity::kWarning;
  }
  paths["degrading_links"] = degrading;
}

Result<server::HookAnswer> LinkHealthService::LinksHealth(const server::RoutedRequest& rr) {
  auto view = state_->view();
  if (!view->snapshot) return MakeError(ErrorCode::kUnavailable, "no snapshot loaded yet");
  const auto& topo = *view->snapshot->topology;
  auto min = SeverityParam(rr, "min_severity", Severity::kNone);
  if (!min) return tl::unexpected(min.error());
  auto report = monitor_->Report(view->snapshot);
  json links = json::array();
  std::string text;
  std::map<std::string, int> counts = {{"none", 0}, {"info", 0}, {"warning", 0}, {"critical", 0}};
  const std::string& one = rr.Query("link");
  std::optional<model::LinkId> only;
  if (!one.empty()) {
    only = FindLink(topo, one);
    if (!only) return NotFound(fmt::format("link: unknown link '{}'", one));
  }
  for (const auto& l : report->links) {
    ++counts[std::string(advisor::SeverityName(l.health.severity))];
    if (only && l.link != *only) continue;
    if (l.health.severity < *min) continue;
    json o = LinkHealthJson(topo, l);
    links.push_back(o);
    std::string why = l.health.findings.empty() ? "no finding" : l.health.findings.front().explanation;
    text += fmt::format("{:5.1f}  {:<8}  {}  ({})\n        {}\n", l.health.score,
                        advisor::SeverityName(l.health.severity), topo.LinkName(l.link), l.end, why);
  }
  json out = {{"links", links},
              {"counts", counts},
              {"window_s", report->window_s},
              {"computed_at_s", report->computed_at_s},
              {"source", report->source},
              {"topology_version", report->topology_version},
              {"unmatched_interfaces", report->unmatched},
              {"trends", HealthOptionsJson(monitor_->options().trends)}};
  if (!report->last_error.empty()) out["last_error"] = report->last_error;
  if (only) {
    json history = json::object();
    for (const auto& [end, signals] : monitor_->History(topo, *only)) {
      json e = json::object();
      for (const auto& [signal, pts] : signals) {
        json p = json::array();
        for (const auto& x : pts) p.push_back({x.t_s, x.value});
        e[signal] = p;
      }
      history[end] = e;
    }
    out["history"] = history;
    if (links.empty()) {
      out["links"] = json::array();
      text = fmt::format("{}: no health data\n", one);
    }
  }
  if (text.empty()) text = "no link with health data\n";
  text = fmt::format("link health over {:.1f} days ({}), riskiest first\n", report->window_s / 86400, report->source) +
         text;
  return server::HookAnswer{out, text};
}

Result<json> LinkHealthService::AtRisk(const engine::View& view, const LinkHealthReport& report, Severity min,
                                       std::stop_token stop) {
  const auto& snap = *view.snapshot;
  const auto& topo = *snap.topology;
  engine::Call call{Now(), stop};
  struct LinkWhatIf {
    const LinkHealthItem* item;
    std::optional<engine::AssessOutcome> link;
    json link_request;
    std::vector<std::pair<std::string, std::pair<engine::AssessOutcome, json>>> switches;
  };
  std::vector<LinkWhatIf> whatifs;
  for (const auto& l : report.links) {
    if (l.health.severity < min || l.health.severity == Severity::kNone) continue;
    if (whatifs.size() >= kMaxWhatIfLinks) break;
    const auto& L = topo.link(l.link);
    LinkWhatIf w{&l, std::nullopt, json(), {}};
    json spec = {{"a", topo.node(L.a).name}, {"b", topo.node(L.b).name}};
    if (!L.a_port.empty()) spec["a_port"] = L.a_port;
    w.link_request = {{"drain", {{"links", json::array({spec})}}}, {"modes", {"job"}}, {"recommend", false}};
    auto typed = engine::ParseAssessRequest(w.link_request, topo);
    if (!typed) return tl::unexpected(typed.error());
    auto a = engine_->Assess(view, *typed, call);
    if (!a) return tl::unexpected(a.error());
    w.link = std::move(*a);
    for (auto n : {L.a, L.b}) {
      if (!topo.node(n).is_switch()) continue;
      json req = {{"drain", {{"switches", {topo.node(n).name}}}}, {"modes", {"job"}}, {"recommend", false}};
      auto t = engine::ParseAssessRequest(req, topo);
      if (!t) return tl::unexpected(t.error());
      auto s = engine_->Assess(view, *t, call);
      if (!s) return tl::unexpected(s.error());
      w.switches.push_back({topo.node(n).name, {std::move(*s), req}});
    }
    whatifs.push_back(std::move(w));
  }
  struct JobRisk {
    std::string id;
    double score = 0;
    json links = json::array();
  };
  std::vector<JobRisk> jobs;
  for (size_t j = 0; j < snap.jobs->size(); ++j) {
    model::JobId id(j);
    JobRisk r;
    r.id = snap.jobs->job(id).id;
    for (const auto& w : whatifs) {
      const auto& impacts = w.link->assessment.scenario.job.jobs;
      if (j >= impacts.size() || !impacts[j].affected) continue;
      json sw = json::array();
      for (const auto& [name, s] : w.switches) {
        json o = ImpactJson(s.first, id, s.second);
        o["switch"] = name;
        sw.push_back(o);
      }
      json link = {{"link", topo.LinkName(w.item->link)},
                   {"health", LinkHealthSummaryJson(*w.item)},
                   {"drain_link", ImpactJson(*w.link, id, w.link_request)},
                   {"drain_switch", sw}};
      r.score = std::max(r.score, w.item->health.score);
      r.links.push_back(std::move(link));
    }
    if (!r.links.empty()) jobs.push_back(std::move(r));
  }
  std::sort(jobs.begin(), jobs.end(), [](const JobRisk& a, const JobRisk& b) {
    if (a.score != b.score) return a.score > b.score;
    if (a.links.size() != b.links.size()) return a.links.size() > b.links.size();
    return a.id < b.id;
  });
  json list = json::array();
  for (auto& r : jobs) list.push_back({{"job", r.id}, {"risk_score", r.score}, {"links", std::move(r.links)}});
  return json{{"jobs", list},
              {"links_considered", whatifs.size()},
              {"min_severity", std::string(advisor::SeverityName(min))},
              {"topology_version", report.topology_version}};
}

Result<server::HookAnswer> LinkHealthService::JobsAtRisk(const server::RoutedRequest& rr) {
  auto view = state_->view();
  if (!view->snapshot) return MakeError(ErrorCode::kUnavailable, "no snapshot loaded yet");
  auto min = SeverityParam(rr, "min_severity", Severity::kWarning);
  if (!min) return tl::unexpected(min.error());
  if (*min == Severity::kNone) return InvalidArgument("min_severity: must be info, warning or critical");
  auto report = monitor_->Report(view->snapshot);
  auto out = AtRisk(*view, *report, *min, rr.request.stop);
  if (!out) return tl::unexpected(out.error());
  if (*min == Severity::kWarning) {
    std::lock_guard lock(mu_);
    scraped_ = report;
    at_risk_jobs_ = static_cast<int64_t>((*out)["jobs"].size());
  }
  std::string text = fmt::format("{} job(s) cross degrading links ({} or worse), worst first\n", (*out)["jobs"].size(),
                                 advisor::SeverityName(*min));
  for (const auto& j : (*out)["jobs"]) {
    text += fmt::format("{}  risk {:.1f}\n", j["job"].get<std::string>(), j["risk_score"].get<double>());
    for (const auto& l : j["links"]) {
      const auto& d = l["drain_link"];
      text += fmt::format("  {}  {} {:.1f}: {}\n    drain the link now: {}, this job keeps {:.0f}% of its bandwidth\n",
                          l["link"].get<std::string>(), l["health"]["severity"].get<std::string>(),
                          l["health"]["score"].get<double>(), l["health"].value("explanation", ""),
                          d["verdict"].get<std::string>(), d["job"].value("bandwidth_fraction", 1.0) * 100);
    }
  }
  return server::HookAnswer{*out, text};
}

Result<server::HookAnswer> LinkHealthService::JobNetwork(const server::RoutedRequest& rr) {
  auto view = state_->view();
  if (!view->snapshot) return MakeError(ErrorCode::kUnavailable, "no snapshot loaded yet");
  const auto& snap = view->snapshot;
  const auto& topo = *snap->topology;
  const std::string& id = rr.Param("id");
  auto job = snap->jobs->FindJob(id);
  if (!job) return NotFound(fmt::format("unknown job '{}'", id));
  auto report = monitor_->Report(snap);
  // The fabric as it is: a link running below its capacity loses the
  // difference, in both directions (as background load the flow model
  // subtracts; it never leaves less than 1% of a link).
  std::vector<double> background(2 * topo.link_count(), 0.0);
  std::vector<std::pair<model::LinkId, double>> degraded;  // link, speed
  for (const auto& l : report->links) {
    double cap = topo.link(l.link).capacity_bps;
    if (!l.speed_bps || *l.speed_bps >= cap * 0.999) continue;
    double deficit = cap - *l.speed_bps;
    background[2 * l.link.value] = deficit;
    background[2 * l.link.value + 1] = deficit;
    degraded.emplace_back(l.link, *l.speed_bps);
  }
  const auto& adv = *view->advisor;
  auto ctx = view->AdvisorContext(Now());
  auto nominal_sim = adv.FlowSim(ctx, adv.options().flow, rr.request.stop);
  if (!nominal_sim) return tl::unexpected(nominal_sim.error());
  auto nominal = (*nominal_sim)->Simulate(view->active, rr.request.stop, adv.flow_runner());
  if (!nominal) return tl::unexpected(nominal.error());
  sim::FlowOptions as_is = adv.options().flow;
  as_is.background_bps = background;
  auto degraded_sim = adv.FlowSim(ctx, as_is, rr.request.stop);
  if (!degraded_sim) return tl::unexpected(degraded_sim.error());
  auto now = (*degraded_sim)->Simulate(view->active, rr.request.stop, adv.flow_runner());
  if (!now) return tl::unexpected(now.error());
  const auto& n = nominal->jobs[job->value].drained;
  const auto& d = now->jobs[job->value].drained;
  json out = {{"job", id},
              {"predicted_nominal_s", n.connected ? json(n.iteration_s) : json()},
              {"predicted_degraded_s", d.connected ? json(d.iteration_s) : json()},
              {"degraded_links_in_fabric", degraded.size()}};
  // The links that limit the job on the fabric as it is and are degraded.
  std::set<uint32_t> degraded_ids;
  for (const auto& [l, _] : degraded) degraded_ids.insert(l.value);
  json links = json::array();
  std::set<uint32_t> named;
  for (const auto& b : now->jobs[job->value].bottlenecks) {
    uint32_t l = b.directed_link / 2;
    if (!degraded_ids.count(l) || !named.insert(l).second) continue;
    const auto* item = report->Find(model::LinkId(l));
    links.push_back({{"link", topo.LinkName(model::LinkId(l))},
                     {"capacity_gbps", topo.link(model::LinkId(l)).capacity_bps / 1e9},
                     {"speed_gbps", item && item->speed_bps ? json(*item->speed_bps / 1e9) : json()},
                     {"utilisation", b.utilisation}});
  }
  out["links"] = links;
  auto obs = state_->store().ListObservations(id, 1);
  if (!obs) return tl::unexpected(obs.error());
  std::string text;
  if (obs->empty() || !n.connected || !d.connected) {
    out["verdict"] = obs->empty() ? "no_observation" : "disconnected";
    out["explanation"] = obs->empty() ? "no observed iteration time for this job (POST /v1/observations)"
                                      : "the job has no path on the fabric: nothing to compare";
    text = fmt::format("{}: {}\n", id, out["explanation"].get<std::string>());
    return server::HookAnswer{out, text};
  }
  const double observed = obs->front().iteration_s;
  const double slowdown = observed - n.iteration_s;
  const double network = std::max(0.0, d.iteration_s - n.iteration_s);
  out["observed_s"] = observed;
  out["observed_at"] = codec::FormatRfc3339(obs->front().observed_at);
  out["slowdown_s"] = slowdown;
  out["network_slowdown_s"] = network;
  // Within 2% of the nominal prediction the job is not slowed at all.
  const double tolerance = 0.02 * n.iteration_s;
  if (slowdown <= tolerance) {
    out["explained_fraction"] = json();
    out["verdict"] = "not_slowed";
    out["explanation"] =
        fmt::format("observed {:.4g} s is within 2% of the nominal prediction {:.4g} s", observed, n.iteration_s);
  } else {
    double explained = std::clamp(network / slowdown, 0.0, 1.0);
    out["explained_fraction"] = explained;
    std::string names;
    for (const auto& l : links) names += (names.empty() ? "" : ", ") + l["link"].get<std::string>();
    if (explained >= 0.5) {
      out["verdict"] = "network";
      out["explanation"] = fmt::format(
          "the degraded fabric explains {:.0f}% of the {:.4g} s slowdown (predicted {:.4g} s as it is vs "
          "{:.4g} s nominal, observed {:.4g} s), along {}",
          explained * 100, slowdown, d.iteration_s, n.iteration_s, observed, names.empty() ? "?" : names);
    } else if (explained <= 0.2) {
      out["verdict"] = "not_network";
      out["explanation"] = fmt::format(
          "the network explains {:.0f}% of the {:.4g} s slowdown (predicted {:.4g} s as it is, {:.4g} s nominal, "
          "observed {:.4g} s): look at the GPUs, hosts or the workload",
          explained * 100, slowdown, d.iteration_s, n.iteration_s, observed);
    } else {
      out["verdict"] = "mixed";
      out["explanation"] = fmt::format(
          "the degraded fabric explains {:.0f}% of the {:.4g} s slowdown (along {}); the rest is not the "
          "network",
          explained * 100, slowdown, names.empty() ? "?" : names);
    }
  }
  text = fmt::format("{}: {}\n", id, out["explanation"].get<std::string>());
  return server::HookAnswer{out, text};
}

}  // namespace drainwise::app
