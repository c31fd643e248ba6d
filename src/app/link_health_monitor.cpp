#include "app/link_health_monitor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "codec/json_reader.h"
#include "connectors/fetch.h"

namespace drainwise::app {

using advisor::HealthSignal;
using advisor::TimePoint;
using nlohmann::json;

namespace {

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string UrlEncode(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

std::string Replace(std::string s, std::string_view from, std::string_view to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}

std::string StripPort(std::string_view s) {
  if (!s.empty() && s.front() == '[') {
    auto close = s.find(']');
    return std::string(close == std::string_view::npos ? s.substr(1) : s.substr(1, close - 1));
  }
  auto colon = s.rfind(':');
  if (colon != std::string_view::npos && s.find(':') == colon) return std::string(s.substr(0, colon));
  return std::string(s);
}

// Averages consecutive points so at most `max_points` remain.
std::vector<TimePoint> Downsample(const std::vector<TimePoint>& in, int max_points) {
  if (max_points < 2 || static_cast<int>(in.size()) <= max_points) return in;
  size_t group = (in.size() + static_cast<size_t>(max_points) - 1) / static_cast<size_t>(max_points);
  std::vector<TimePoint> out;
  for (size_t i = 0; i < in.size(); i += group) {
    size_t end = std::min(in.size(), i + group);
    double t = 0, v = 0;
    for (size_t k = i; k < end; ++k) {
      t += in[k].t_s;
      v += in[k].value;
    }
    double n = static_cast<double>(end - i);
    out.push_back({t / n, v / n});
  }
  return out;
}

}  // namespace

std::vector<PrometheusHealthQuery> DefaultPrometheusQueries() {
  // Both exporters' counters in one query per signal: a series carries its
  // own labels, so node_exporter's (instance, device) and snmp_exporter's
  // (instance, ifName) are told apart when they are mapped.
  return {
      {"in_errors", "rate(node_network_receive_errs_total[$step]) or rate(ifInErrors[$step])"},
      {"out_errors", "rate(node_network_transmit_errs_total[$step]) or rate(ifOutErrors[$step])"},
      {"in_discards", "rate(node_network_receive_drop_total[$step]) or rate(ifInDiscards[$step])"},
      {"out_discards", "rate(node_network_transmit_drop_total[$step]) or rate(ifOutDiscards[$step])"},
      {"carrier_transitions", "rate(node_network_carrier_changes_total[$step])"},
      {"fec_corrected", "rate(node_ethtool_rx_corrected_bits_phy[$step])"},
      {"pfc_pause", "sum without (__name__) (rate({__name__=~\"node_ethtool_rx_prio[0-7]_pause\"}[$step]))"},
      {"ecn_marked", "rate(node_ethtool_rx_ecn_mark[$step])"},
      {"rx_bps", "8 * rate(node_network_receive_bytes_total[$step]) or 8 * rate(ifHCInOctets[$step])"},
      {"tx_bps", "8 * rate(node_network_transmit_bytes_total[$step]) or 8 * rate(ifHCOutOctets[$step])"},
      {"speed_bps", "8 * node_network_speed_bytes > 0 or 1e6 * ifHighSpeed"},
  };
}

Result<LinkHealthOptions> ParseLinkHealthOptions(const json& section, const std::string& db_path) {
  LinkHealthOptions o;
  o.history.path = db_path == ":memory:" ? ":memory:" : db_path + ".link-history";
  if (section.is_null()) return o;
  try {
    codec::ObjectReader r(section, "link_health");
    r.RejectUnknown({"prometheus", "history", "trends", "names", "max_points", "gnmic_files", "comment"});
    o.gnmic_files = r.StringList("gnmic_files");
    o.enabled = true;
    o.max_points = static_cast<int>(r.IntOr("max_points", o.max_points));
    if (o.max_points < 8) throw codec::FieldError(r.Child("max_points"), "must be >= 8");
    if (r.Has("prometheus")) {
      codec::ObjectReader p(r.Raw("prometheus"), r.Child("prometheus"));
      p.RejectUnknown({"url", "window_s", "step_s", "refresh_s", "timeout_s", "token_file", "device_label",
                       "interface_labels", "queries"});
      o.prometheus_url = p.String("url");
      if (auto u = connectors::ParseUrl(o.prometheus_url); !u)
        throw codec::FieldError(p.Child("url"), u.error().message);
      o.window_s = p.NumberOr("window_s", o.window_s);
      o.step_s = p.NumberOr("step_s", o.step_s);
      o.refresh_s = p.NumberOr("refresh_s", o.refresh_s);
      o.timeout_s = p.NumberOr("timeout_s", o.timeout_s);
      o.token_file = p.StringOr("token_file", "");
      o.device_label = p.StringOr("device_label", o.device_label);
      if (p.Has("interface_labels")) o.interface_labels = p.StringList("interface_labels");
      if (!(o.step_s >= 1)) throw codec::FieldError(p.Child("step_s"), "must be >= 1 second");
      if (!(o.window_s >= 4 * o.step_s))
        throw codec::FieldError(p.Child("window_s"), "must hold at least 4 steps (>= 4 x step_s)");
      // Prometheus refuses more than 11,000 points per series.
      if (o.window_s / o.step_s > 11000)
        throw codec::FieldError(p.Child("window_s"), "window_s / step_s must be <= 11000 (Prometheus' limit)");
      if (!(o.refresh_s >= 0.1)) throw codec::FieldError(p.Child("refresh_s"), "must be >= 0.1");
      if (!(o.timeout_s > 0)) throw codec::FieldError(p.Child("timeout_s"), "must be > 0");
      if (p.Has("queries")) {
        for (const auto& q : p.Objects("queries")) {
          q.RejectUnknown({"signal", "query"});
          std::string signal = q.String("signal");
          if (!advisor::HealthSignalFromName(signal)) {
            throw codec::FieldError(q.Child("signal"), fmt::format("unknown signal '{}'", signal));
          }
          o.queries.push_back({signal, q.String("query")});
        }
      } else {
        o.queries = DefaultPrometheusQueries();
      }
    }
    if (r.Has("history")) {
      codec::ObjectReader h(r.Raw("history"), r.Child("history"));
      h.RejectUnknown({"path", "bucket_s", "retention_s", "max_buckets_per_series", "max_series"});
      o.history.path = h.StringOr("path", o.history.path);
      o.history.bucket_s = h.NumberOr("bucket_s", o.history.bucket_s);
      o.history.retention_s = h.NumberOr("retention_s", o.history.retention_s);
      o.history.max_buckets_per_series = h.IntOr("max_buckets_per_series", o.history.max_buckets_per_series);
      o.history.max_series = h.IntOr("max_series", o.history.max_series);
    }
    if (r.Has("trends")) {
      codec::ObjectReader t(r.Raw("trends"), r.Child("trends"));
      t.RejectUnknown({"in_errors_per_s", "fec_corrected_per_s", "fec_uncorrectable_per_s", "rx_power_min_dbm",
                       "rx_power_margin_db", "flaps_per_day_warning", "flaps_per_day_critical",
                       "congestion_max_utilisation", "discards_per_s", "pfc_pause_per_s", "ecn_marked_per_s",
                       "critical_horizon_s", "warning_horizon_s", "min_points"});
      auto& x = o.trends;
      auto positive = [&](std::string_view key, double& field) {
        field = t.NumberOr(key, field);
        if (!(field > 0)) throw codec::FieldError(t.Child(key), "must be > 0");
      };
      positive("in_errors_per_s", x.in_errors_per_s);
      positive("fec_corrected_per_s", x.fec_corrected_per_s);
      positive("fec_uncorrectable_per_s", x.fec_uncorrectable_per_s);
      x.rx_power_min_dbm = t.NumberOr("rx_power_min_dbm", x.rx_power_min_dbm);
      positive("rx_power_margin_db", x.rx_power_margin_db);
      positive("flaps_per_day_warning", x.flaps_per_day_warning);
      positive("flaps_per_day_critical", x.flaps_per_day_critical);
      positive("congestion_max_utilisation", x.congestion_max_utilisation);
      positive("discards_per_s", x.discards_per_s);
      positive("pfc_pause_per_s", x.pfc_pause_per_s);
      positive("ecn_marked_per_s", x.ecn_marked_per_s);
      positive("critical_horizon_s", x.critical_horizon_s);
      positive("warning_horizon_s", x.warning_horizon_s);
      x.min_points = static_cast<int>(t.IntOr("min_points", x.min_points));
      if (x.min_points < 2) throw codec::FieldError(t.Child("min_points"), "must be >= 2");
    }
    if (r.Has("names")) {
      codec::ObjectReader n(r.Raw("names"), r.Child("names"));
      n.RejectUnknown({"aliases", "strip_domain"});
      o.names.aliases = n.StringMap("aliases");
      o.names.strip_domain = n.BoolOr("strip_domain", false);
    }
  } catch (const codec::FieldError& e) {
    return InvalidArgument(e.what());
  } catch (const json::exception& e) {
    return InvalidArgument(std::string("link_health: ") + e.what());
  }
  return o;
}

const LinkHealthItem* LinkHealthReport::Find(model::LinkId link) const {
  for (const auto& l : links) {
    if (l.link == link) return &l;
  }
  return nullptr;
}

Result<std::unique_ptr<LinkHealthMonitor>> LinkHealthMonitor::Create(LinkHealthOptions options,
                                                                     std::function<model::SnapshotPtr()> snapshot) {
  auto history = store::LinkHistory::Open(options.history);
  if (!history) return tl::unexpected(history.error());
  std::unique_ptr<LinkHealthMonitor> m(new LinkHealthMonitor(std::move(options), std::move(snapshot)));
  m->history_ = std::move(*history);
  return m;
}

LinkHealthMonitor::~LinkHealthMonitor() {
  if (thread_.joinable()) {
    thread_.request_stop();
    wake_.notify_all();
    thread_.join();
  }
}

void LinkHealthMonitor::Start() {
  std::lock_guard lock(mu_);
  if (thread_.joinable()) return;
  thread_ = std::jthread([this](std::stop_token stop) { Run(stop); });
}

void LinkHealthMonitor::OnReport(std::function<void(const std::shared_ptr<const LinkHealthReport>&)> fn) {
  std::lock_guard lock(mu_);
  on_report_ = std::move(fn);
}

void LinkHealthMonitor::Run(std::stop_token stop) {
  double next_poll = 0;
  while (!stop.stop_requested()) {
    double now = NowSeconds();
    bool polled = false;
    if ((!options_.prometheus_url.empty() || !options_.gnmic_files.empty()) && now >= next_poll) {
      auto st = options_.prometheus_url.empty() ? Status{} : PollPrometheus();
      auto files = ReadGnmicFiles();
      std::lock_guard lock(mu_);
      last_error_ = !st ? st.error().message : !files ? files.error().message : "";
      next_poll = now + options_.refresh_s;
      polled = true;
    }
    bool dirty;
    {
      std::lock_guard lock(mu_);
      dirty = dirty_ || polled;
      dirty_ = false;
    }
    if (dirty) {
      if (auto snap = snapshot_ ? snapshot_() : nullptr) {
        auto report = Evaluate(snap);
        std::function<void(const std::shared_ptr<const LinkHealthReport>&)> fn;
        {
          std::lock_guard lock(mu_);
          fn = on_report_;
        }
        if (fn) fn(report);
      } else {
        std::lock_guard lock(mu_);
        dirty_ = true;  // try again once there is a topology
      }
    }
    std::unique_lock lock(mu_);
    double wait = std::clamp(next_poll - NowSeconds(), 0.05, 1.0);
    wake_.wait_for(lock, stop, std::chrono::duration<double>(wait), [&] { return dirty_; });
  }
}

Status LinkHealthMonitor::ReadGnmicFiles() {
  for (const auto& path : options_.gnmic_files) {
    auto text = connectors::ReadFileLimited(path, 64 << 20);
    if (!text) return tl::unexpected(text.error().Wrap("link_health.gnmic_files " + path));
    auto samples = connectors::HealthSamplesFromGnmicEvents(*text, "", NowSeconds());
    if (!samples) return tl::unexpected(samples.error().Wrap(path));
    RecordSamples(*samples);
  }
  return {};
}

void LinkHealthMonitor::RefreshNow() {
  if (!options_.prometheus_url.empty() || !options_.gnmic_files.empty()) {
    auto st = options_.prometheus_url.empty() ? Status{} : PollPrometheus();
    auto files = ReadGnmicFiles();
    std::lock_guard lock(mu_);
    last_error_ = !st ? st.error().message : !files ? files.error().message : "";
  }
  if (auto snap = snapshot_ ? snapshot_() : nullptr) Evaluate(snap);
}

Status LinkHealthMonitor::PollPrometheus() {
  std::vector<connectors::HttpHeader> headers;
  if (!options_.token_file.empty()) {
    auto token = connectors::ReadFileLimited(options_.token_file, 64 << 10);
    if (!token) return tl::unexpected(token.error().Wrap("link_health.prometheus.token_file"));
    std::string t = *token;
    while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
    headers.push_back({"Authorization", "Bearer " + t});
  }
  connectors::FetchLimits limits;
  limits.timeout_s = options_.timeout_s;
  const double end = std::floor(NowSeconds() / options_.step_s) * options_.step_s;
  const double start = end - options_.window_s;
  const std::string step = fmt::format("{:.0f}s", options_.step_s);
  std::string base = options_.prometheus_url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  EndSeries fresh;
  for (const auto& q : options_.queries) {
    auto signal = *advisor::HealthSignalFromName(q.signal);
    std::string promql = Replace(q.query, "$step", step);
    std::string url = fmt::format("{}/api/v1/query_range?query={}&start={:.0f}&end={:.0f}&step={}", base,
                                  UrlEncode(promql), start, end, step);
    auto body = connectors::HttpGet(url, headers, limits);
    if (!body) return tl::unexpected(body.error().Wrap(fmt::format("prometheus {}", q.signal)));
    auto doc = codec::ParseJsonText(*body);
    if (!doc) return tl::unexpected(doc.error().Wrap(fmt::format("prometheus {}", q.signal)));
    auto series = connectors::ParsePrometheusRange(*doc);
    if (!series) return tl::unexpected(series.error().Wrap(fmt::format("prometheus {}", q.signal)));
    for (const auto& s : *series) {
      auto d = s.labels.find(options_.device_label);
      if (d == s.labels.end()) continue;
      std::string iface;
      for (const auto& l : options_.interface_labels) {
        if (l == options_.device_label) continue;
        if (auto it = s.labels.find(l); it != s.labels.end()) {
          iface = it->second;
          break;
        }
      }
      if (iface.empty()) continue;
      auto& pts = fresh[{StripPort(d->second), iface}][signal];
      for (const auto& [t, v] : s.points) pts.push_back({t, v});
    }
  }
  std::lock_guard lock(mu_);
  prometheus_ = std::move(fresh);
  dirty_ = true;
  return {};
}

void LinkHealthMonitor::RecordInterfaces(const std::vector<connectors::InterfaceTelemetry>& interfaces, double now_s) {
  std::vector<store::HistoryReading> readings;
  for (const auto& t : interfaces) {
    if (t.has_rates) {
      readings.push_back({t.device, t.interface, "in_errors", now_s, t.rx_errors_per_s});
      readings.push_back({t.device, t.interface, "out_errors", now_s, t.tx_errors_per_s});
      readings.push_back({t.device, t.interface, "in_discards", now_s, t.rx_discards_per_s});
      readings.push_back({t.device, t.interface, "out_discards", now_s, t.tx_discards_per_s});
      readings.push_back({t.device, t.interface, "rx_bps", now_s, t.rx_bps});
      readings.push_back({t.device, t.interface, "tx_bps", now_s, t.tx_bps});
    }
    if (t.speed_bps && *t.speed_bps > 0) readings.push_back({t.device, t.interface, "speed_bps", now_s, *t.speed_bps});
  }
  if (readings.empty()) return;
  (void)history_->Record(readings);  // a failed write loses one poll's readings; the next poll writes again
  std::lock_guard lock(mu_);
  dirty_ = true;
  wake_.notify_all();
}

void LinkHealthMonitor::RecordSamples(const std::vector<connectors::HealthSample>& samples) {
  std::vector<store::HistoryReading> readings;
  {
    std::lock_guard lock(mu_);
    for (const auto& s : samples) {
      auto key = std::make_pair(EndKey{s.device, s.interface}, s.signal);
      auto it = last_counter_.find(key);
      if (!s.cumulative) {
        // A file read again holds the readings already recorded: only newer ones count.
        if (it != last_counter_.end() && s.time_s <= it->second.first) continue;
        readings.push_back({s.device, s.interface, s.signal, s.time_s, s.value});
        last_counter_[key] = {s.time_s, s.value};
        continue;
      }
      if (it != last_counter_.end() && s.time_s > it->second.first) {
        double delta = s.value - it->second.second;
        if (delta < 0) delta = s.value;  // reset: counted from zero again
        readings.push_back({s.device, s.interface, s.signal, s.time_s, delta / (s.time_s - it->second.first)});
      }
      if (it == last_counter_.end() || s.time_s > it->second.first) last_counter_[key] = {s.time_s, s.value};
    }
  }
  if (readings.empty()) return;
  (void)history_->Record(readings);
  std::lock_guard lock(mu_);
  dirty_ = true;
  wake_.notify_all();
}

LinkHealthMonitor::EndSeries LinkHealthMonitor::Collect() const {
  EndSeries all;
  {
    std::lock_guard lock(mu_);
    all = prometheus_;
  }
  if (auto hist = history_->Read(); hist) {
    for (const auto& s : *hist) {
      auto signal = advisor::HealthSignalFromName(s.signal);
      if (!signal) continue;
      auto& pts = all[{s.device, s.interface}][*signal];
      if (!pts.empty()) continue;  // Prometheus has this series: its history wins
      for (const auto& b : s.buckets) pts.push_back({b.start_s + options_.history.bucket_s / 2, b.mean});
    }
  }
  for (auto& [_, signals] : all) {
    for (auto& [__, pts] : signals) {
      std::sort(pts.begin(), pts.end(), [](const TimePoint& a, const TimePoint& b) { return a.t_s < b.t_s; });
      pts.erase(std::remove_if(pts.begin(), pts.end(), [](const TimePoint& p) { return !std::isfinite(p.value); }),
                pts.end());
      pts = Downsample(pts, options_.max_points);
    }
  }
  return all;
}

std::shared_ptr<const LinkHealthReport> LinkHealthMonitor::Evaluate(const model::SnapshotPtr& snapshot) {
  const auto& topo = *snapshot->topology;
  auto all = Collect();
  auto report = std::make_shared<LinkHealthReport>();
  report->topology_version = snapshot->topology_version;
  report->computed_at_s = NowSeconds();
  report->window_s = options_.prometheus_url.empty() ? options_.history.retention_s : options_.window_s;
  {
    std::lock_guard lock(mu_);
    report->last_error = last_error_;
    report->source = options_.prometheus_url.empty() ? "history" : "prometheus+history";
  }
  connectors::LinkEndIndex index(topo, options_.names);
  std::map<uint32_t, LinkHealthItem> by_link;
  std::set<std::string> unmatched;
  for (const auto& [key, signals] : all) {
    std::string name = key.first + ":" + key.second;
    auto end = index.Find(key.first, key.second);
    if (!end) {
      unmatched.insert(name);
      continue;
    }
    std::vector<advisor::SignalSeries> series;
    for (const auto& [signal, pts] : signals) series.push_back({signal, pts});
    auto health = advisor::EvaluateLinkEnd(series, topo.link(end->link).capacity_bps, options_.trends);
    auto& item = by_link[end->link.value];
    item.link = end->link;
    if (auto sp = signals.find(HealthSignal::kSpeedBps); sp != signals.end() && !sp->second.empty()) {
      double latest = sp->second.back().value;
      if (latest > 0) item.speed_bps = item.speed_bps ? std::min(*item.speed_bps, latest) : latest;
    }
    if (item.ends.empty() || health.score > item.health.score) {
      item.health = health;
      item.end = name;
    }
    item.ends.emplace_back(name, std::move(health));
  }
  for (auto& [_, item] : by_link) report->links.push_back(std::move(item));
  std::stable_sort(report->links.begin(), report->links.end(),
                   [](const LinkHealthItem& a, const LinkHealthItem& b) { return a.health.score > b.health.score; });
  report->unmatched.assign(unmatched.begin(), unmatched.end());
  std::lock_guard lock(mu_);
  report_ = report;
  return report;
}

std::shared_ptr<const LinkHealthReport> LinkHealthMonitor::Report(const model::SnapshotPtr& snapshot) {
  if (!snapshot) return nullptr;
  {
    std::lock_guard lock(mu_);
    if (report_ && report_->topology_version == snapshot->topology_version) return report_;
  }
  return Evaluate(snapshot);
}

std::map<std::string, std::map<std::string, std::vector<TimePoint>>> LinkHealthMonitor::History(
    const model::Topology& topology, model::LinkId link) const {
  std::map<std::string, std::map<std::string, std::vector<TimePoint>>> out;
  connectors::LinkEndIndex index(topology, options_.names);
  for (const auto& [key, signals] : Collect()) {
    auto end = index.Find(key.first, key.second);
    if (!end || end->link != link) continue;
    auto& o = out[key.first + ":" + key.second];
    for (const auto& [signal, pts] : signals) o[std::string(advisor::HealthSignalName(signal))] = pts;
  }
  return out;
}

namespace {
json FindingJson(const advisor::Finding& f) {
  const auto& e = f.evidence;
  json ev = {{"window_start_s", e.window_start_s}, {"window_end_s", e.window_end_s}, {"points", e.points}};
  auto put = [&](const char* k, const std::optional<double>& v) {
    if (v) ev[k] = *v;
  };
  put("level", e.level);
  put("slope_per_day", e.slope_per_day);
  put("doubling_time_s", e.doubling_time_s);
  put("threshold", e.threshold);
  put("time_to_threshold_s", e.time_to_threshold_s);
  put("count", e.count);
  put("per_day", e.per_day);
  put("mean_utilisation", e.mean_utilisation);
  put("mean_rate", e.mean_rate);
  if (e.time_to_threshold_s) ev["time_to_threshold_days"] = *e.time_to_threshold_s / 86400;
  if (e.doubling_time_s) ev["doubling_time_days"] = *e.doubling_time_s / 86400;
  return {{"kind", f.kind},
          {"signal", std::string(advisor::HealthSignalName(f.signal))},
          {"severity", std::string(advisor::SeverityName(f.severity))},
          {"score", f.score},
          {"evidence", ev},
          {"explanation", f.explanation}};
}
}  // namespace

json LinkHealthJson(const model::Topology& t, const LinkHealthItem& item) {
  const auto& L = t.link(item.link);
  json findings = json::array();
  for (const auto& f : item.health.findings) findings.push_back(FindingJson(f));
  json ends = json::array();
  for (const auto& [name, h] : item.ends) {
    ends.push_back({{"end", name},
                    {"score", h.score},
                    {"severity", std::string(advisor::SeverityName(h.severity))},
                    {"findings", h.findings.size()}});
  }
  json o = {{"link", t.LinkName(item.link)},
            {"a", t.node(L.a).name},
            {"b", t.node(L.b).name},
            {"a_port", L.a_port},
            {"b_port", L.b_port},
            {"capacity_gbps", L.capacity_bps / 1e9},
            {"score", item.health.score},
            {"severity", std::string(advisor::SeverityName(item.health.severity))},
            {"worst_end", item.end},
            {"findings", findings},
            {"ends", ends},
            {"speed_gbps", item.speed_bps ? json(*item.speed_bps / 1e9) : json()}};
  return o;
}

json LinkHealthSummaryJson(const LinkHealthItem& item) {
  json o = {{"score", item.health.score}, {"severity", std::string(advisor::SeverityName(item.health.severity))}};
  if (!item.health.findings.empty()) {
    o["finding"] = item.health.findings.front().kind;
    o["explanation"] = item.health.findings.front().explanation;
  }
  return o;
}

}  // namespace drainwise::app
