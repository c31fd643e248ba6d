// The SourceManager: polls every source on its own thread and timer, keeps
// each source's last good data and status, and publishes the combined
// topology, jobs and telemetry only when their content changed.
#include "connectors/source.h"

#include <algorithm>
#include <chrono>
#include <set>

#include <fmt/format.h>

#include "codec/native.h"
#include "connectors/util.h"

namespace drainwise::connectors {
namespace {

using internal::json;

uint64_t HashDouble(uint64_t h, double v) { return internal::Fnv1a64(fmt::format("{:.17g};", v), h); }
uint64_t HashOpt(uint64_t h, const std::optional<double>& v) {
  return v ? HashDouble(h, *v) : internal::Fnv1a64("-;", h);
}

uint64_t HashData(const SourceData& d) {
  uint64_t h = internal::Fnv1a64("source");
  if (d.topology) h = internal::Fnv1a64(codec::TopologySpecToJson(*d.topology).dump(), h);
  if (d.jobs) h = internal::Fnv1a64(codec::JobsSpecToJson(*d.jobs).dump(), h);
  if (d.counters) {
    // Values only: an unchanged scrape is no news, whatever its time.
    for (const auto& c : d.counters->interfaces) {
      h = internal::Fnv1a64(c.device + ":" + c.interface + ";", h);
      for (const auto* v :
           {&c.rx_bytes, &c.tx_bytes, &c.rx_errors, &c.tx_errors, &c.rx_discards, &c.tx_discards, &c.speed_bps}) {
        h = HashOpt(h, *v);
      }
      h = internal::Fnv1a64(c.oper_up ? (*c.oper_up ? "up" : "down") : "?", h);
    }
  }
  if (d.chakra) {
    model::JobsSpec wrap;
    model::JobSpec j;
    j.id = "chakra";
    j.iteration.collectives = d.chakra->collectives;
    j.iteration.compute_s = d.chakra->compute_s;
    wrap.jobs.push_back(std::move(j));
    h = internal::Fnv1a64(codec::JobsSpecToJson(wrap).dump(), h);
  }
  return h;
}

uint64_t HashTelemetry(const std::vector<InterfaceTelemetry>& t) {
  uint64_t h = internal::Fnv1a64("telemetry");
  for (const auto& i : t) {
    h = internal::Fnv1a64(i.device + ":" + i.interface + (i.has_rates ? "+" : "-"), h);
    for (double v :
         {i.rx_bps, i.tx_bps, i.rx_errors_per_s, i.tx_errors_per_s, i.rx_discards_per_s, i.tx_discards_per_s}) {
      h = HashDouble(h, v);
    }
    h = HashOpt(h, i.speed_bps);
    h = internal::Fnv1a64(i.oper_up ? (*i.oper_up ? "up" : "down") : "?", h);
  }
  return h;
}

double SystemNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

// {"count", "first": [{"item", "reason"}]}: the first ten, and how many in all.
static json DiagnosticsJson(const std::vector<DiagnosticItem>& items) {
  json first = json::array();
  for (size_t i = 0; i < items.size() && i < 10; ++i) {
    first.push_back({{"item", items[i].item}, {"reason", items[i].reason}});
  }
  return {{"count", items.size()}, {"first", std::move(first)}};
}

json SourceStatusToJson(const SourceStatus& s) {
  auto time = [](const std::optional<int64_t>& t) { return t ? json(codec::FormatRfc3339(*t)) : json(); };
  return json{{"name", s.name},
              {"kind", s.kind},
              {"location", s.location},
              {"stale", s.stale},
              {"has_data", s.has_data},
              {"last_error", s.last_error.empty() ? json() : json(s.last_error)},
              {"last_attempt", time(s.last_attempt)},
              {"last_success", time(s.last_success)},
              {"last_change", time(s.last_change)},
              {"versions", s.versions},
              {"attempts", s.attempts},
              {"failures", s.failures},
              {"content_hash", s.content_hash},
              {"skipped", DiagnosticsJson(s.diagnostics.skipped)},
              {"warnings", DiagnosticsJson(s.diagnostics.warnings)}};
}

struct SourceManager::State {
  SourceStatus status;
  std::optional<SourceData> data;  // last good
  uint64_t hash = 0;
  std::shared_ptr<const std::vector<InterfaceTelemetry>> rates;  // telemetry kinds
};

SourceManager::SourceManager(std::vector<SourceConfig> sources, SourceManagerOptions options, UpdateCallback on_update)
    : configs_(std::move(sources)), options_(std::move(options)), on_update_(std::move(on_update)) {
  if (!options_.loader) options_.loader = LoadSource;
  if (!options_.clock) options_.clock = SystemNow;
  for (const auto& c : configs_) {
    auto s = std::make_unique<State>();
    s->status.name = c.name;
    s->status.kind = c.kind;
    s->status.location = c.Location();
    s->status.last_error = "not fetched yet";
    states_.push_back(std::move(s));
  }
}

SourceManager::~SourceManager() { Stop(); }

void SourceManager::Start() {
  std::lock_guard lock(run_mutex_);
  if (!threads_.empty()) return;
  for (size_t i = 0; i < configs_.size(); ++i) {
    threads_.emplace_back([this, i](std::stop_token stop) { Run(stop, i); });
  }
}

void SourceManager::Stop() {
  std::vector<std::jthread> threads;
  {
    std::lock_guard lock(run_mutex_);
    threads.swap(threads_);
    for (auto& t : threads) t.request_stop();
  }
  wake_.notify_all();
  threads.clear();  // joins
}

void SourceManager::Run(std::stop_token stop, size_t index) {
  auto period = std::chrono::duration<double>(configs_[index].refresh_s);
  auto retry = std::chrono::duration<double>(std::min<double>(configs_[index].refresh_s, options_.may_poll_retry_s));
  while (!stop.stop_requested()) {
    if (options_.may_poll && !options_.may_poll()) {
      std::unique_lock lock(run_mutex_);
      wake_.wait_for(lock, stop, std::chrono::duration_cast<std::chrono::steady_clock::duration>(retry),
                     [] { return false; });
      continue;
    }
    (void)Poll(index);
    std::unique_lock lock(run_mutex_);
    wake_.wait_for(lock, stop, std::chrono::duration_cast<std::chrono::steady_clock::duration>(period),
                   [] { return false; });
  }
}

Status SourceManager::RefreshNow(const std::string& name) {
  for (size_t i = 0; i < configs_.size(); ++i) {
    if (configs_[i].name == name) return Poll(i);
  }
  return NotFound(fmt::format("source '{}' not configured", name));
}

int SourceManager::RefreshAll() {
  int failed = 0;
  for (size_t i = 0; i < configs_.size(); ++i) failed += Poll(i) ? 0 : 1;
  return failed;
}

Status SourceManager::Poll(size_t index) {
  const SourceConfig& config = configs_[index];
  double now = options_.clock();
  Result<SourceData> result = [&]() -> Result<SourceData> {
    try {
      return options_.loader(config, now);
    } catch (const std::exception& e) {  // a loader must not take the thread down
      return MakeError(ErrorCode::kInternal, fmt::format("source {}: {}", config.name, e.what()));
    }
  }();
  std::lock_guard publish(publish_mutex_);
  std::optional<Update> update;
  std::optional<Diagnostics> changed_diagnostics;
  {
    std::lock_guard lock(state_mutex_);
    State& s = *states_[index];
    auto t = static_cast<int64_t>(now);
    s.status.attempts++;
    s.status.last_attempt = t;
    if (!result) {
      // Keep the last good data; say why it is stale.
      s.status.failures++;
      s.status.stale = true;
      s.status.last_error = result.error().message;
      return tl::unexpected(result.error());
    }
    s.status.last_success = t;
    s.status.stale = false;
    s.status.last_error.clear();
    auto same = [](const std::vector<DiagnosticItem>& a, const std::vector<DiagnosticItem>& b) {
      return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](const auto& x, const auto& y) {
               return x.item == y.item && x.reason == y.reason;
             });
    };
    if (!same(s.status.diagnostics.skipped, result->diagnostics.skipped) ||
        !same(s.status.diagnostics.warnings, result->diagnostics.warnings)) {
      changed_diagnostics = result->diagnostics;
    }
    s.status.diagnostics = result->diagnostics;
    uint64_t h = HashData(*result);
    bool unchanged = s.data && h == s.hash;  // nothing new: no version, no publish
    if (!unchanged) {
      if (result->counters) {
        auto rates = s.data && s.data->counters ? ComputeRates(*s.data->counters, *result->counters)
                                                : ComputeRates(CounterSample{}, *result->counters);
        // The exporter's device keys (addresses, FQDNs) as the topology names them.
        for (auto& r : rates) r.device = NormaliseDeviceName(r.device, config.telemetry_names);
        s.rates = std::make_shared<const std::vector<InterfaceTelemetry>>(std::move(rates));
      }
      s.data = std::move(*result);
      s.hash = h;
      s.status.has_data = true;
      s.status.versions++;
      s.status.last_change = t;
      s.status.content_hash = fmt::format("{:016x}", h);
      update = Combine(config.name);
    }
  }
  if (changed_diagnostics && options_.on_diagnostics) {
    try {
      options_.on_diagnostics(config, *changed_diagnostics);
    } catch (...) {
    }
  }
  if (update && on_update_) {
    // The callback belongs to the server; an exception from it must not take
    // a polling thread (and with it the process) down.
    try {
      on_update_(*update);
    } catch (...) {
    }
  }
  return {};
}

// REQUIRES: state_mutex_ held. Returns the update when a combined document changed.
std::optional<Update> SourceManager::Combine(const std::string& source) {
  std::shared_ptr<const model::TopologySpec> topology;
  std::shared_ptr<const MergedTopology> merged;
  std::vector<TopologyContribution> contributions;
  model::JobsSpec jobs;
  std::set<std::string> job_ids;
  ChakraProfiles chakra;
  auto telemetry = std::make_shared<std::vector<InterfaceTelemetry>>();
  for (size_t i = 0; i < configs_.size(); ++i) {
    const State& s = *states_[i];
    if (!s.data) continue;
    if (s.data->topology) {
      contributions.push_back({configs_[i].name, configs_[i].authority, *s.data->topology, s.data->observed_systems,
                               configs_[i].kind != "lldp"});
    }
    if (s.data->jobs) {
      for (const auto& j : s.data->jobs->jobs) {
        if (job_ids.insert(j.id).second) jobs.jobs.push_back(j);
      }
    }
    if (s.data->chakra) chakra.emplace(configs_[i].chakra_profile, *s.data->chakra);
    if (s.rates) telemetry->insert(telemetry->end(), s.rates->begin(), s.rates->end());
  }
  ApplyProfiles(jobs, options_.profiles, chakra);
  if (!contributions.empty()) {
    // Each source passed BuildTopology alone; the merge can still fail to
    // build (two sources disagreeing on a tier): then the sources are
    // published unmerged, first source first, and the failure is logged in
    // the first source's warnings rather than freezing every update.
    auto m = MergeTopologies(contributions);
    if (m && model::BuildTopology(m->spec)) {
      merged = std::make_shared<const MergedTopology>(std::move(*m));
      topology = std::shared_ptr<const model::TopologySpec>(merged, &merged->spec);
    } else {
      topology = std::make_shared<const model::TopologySpec>(contributions.front().spec);
      std::string why = m ? model::BuildTopology(m->spec).error().message : m.error().message;
      for (size_t i = 0; i < configs_.size(); ++i) {
        if (configs_[i].name == contributions.front().source) {
          states_[i]->status.diagnostics.Warn("merged topology",
                                              "does not build (" + why + "); serving this source's topology alone");
        }
      }
    }
  }

  uint64_t th = topology ? internal::Fnv1a64(codec::TopologySpecToJson(*topology).dump()) : 0;
  uint64_t jh = internal::Fnv1a64(codec::JobsSpecToJson(jobs).dump());
  uint64_t eh = HashTelemetry(*telemetry);
  Update u;
  u.source = source;
  u.topology_changed = !published_hashes_.count("topology") || published_hashes_["topology"] != th;
  u.jobs_changed = !published_hashes_.count("jobs") || published_hashes_["jobs"] != jh;
  u.telemetry_changed = !published_hashes_.count("telemetry") || published_hashes_["telemetry"] != eh;
  // Nothing to report before any document of that kind exists.
  if (!topology) u.topology_changed = false;
  bool any_jobs_source = false, any_telemetry_source = false;
  for (size_t i = 0; i < configs_.size(); ++i) {
    if (!states_[i]->data) continue;
    any_jobs_source = any_jobs_source || states_[i]->data->jobs || states_[i]->data->chakra;
    any_telemetry_source = any_telemetry_source || states_[i]->data->counters;
  }
  if (!any_jobs_source) u.jobs_changed = false;
  if (!any_telemetry_source) u.telemetry_changed = false;
  if (!u.topology_changed && !u.jobs_changed && !u.telemetry_changed) return std::nullopt;
  published_hashes_["topology"] = th;
  published_hashes_["jobs"] = jh;
  published_hashes_["telemetry"] = eh;
  // Unchanged documents keep their pointer, so a consumer can compare them.
  u.topology = u.topology_changed || !current_.topology ? topology : current_.topology;
  u.merged = u.topology_changed || !current_.topology ? merged : current_.merged;
  u.jobs = u.jobs_changed || !current_.jobs ? std::make_shared<const model::JobsSpec>(std::move(jobs)) : current_.jobs;
  u.telemetry = u.telemetry_changed || !current_.telemetry ? std::move(telemetry) : current_.telemetry;
  u.version = current_.version + 1;
  current_ = u;
  return u;
}

std::vector<SourceStatus> SourceManager::Statuses() const {
  std::lock_guard lock(state_mutex_);
  std::vector<SourceStatus> out;
  for (const auto& s : states_) out.push_back(s->status);
  return out;
}

bool SourceManager::Ready() const {
  std::lock_guard lock(state_mutex_);
  for (const auto& s : states_) {
    if (!s->status.has_data) return false;
  }
  return true;
}

Update SourceManager::Current() const {
  std::lock_guard lock(state_mutex_);
  return current_;
}

}  // namespace drainwise::connectors
