// drainwise serve: the daemon.
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>

#include "app/commands.h"
#include "app/daemon_config.h"
#include "app/link_health_hooks.h"
#include "app/link_health_monitor.h"
#include "app/live_telemetry.h"
#include "app/sd_notify.h"
#include "app/store_follower.h"
#include "codec/json_reader.h"
#include "codec/native.h"
#include "config/config.h"
#include "connectors/source.h"
#include "engine/codec.h"
#include "engine/engine.h"
#include "fabric/generator.h"
#include "policies/policy.h"
#include "server/api.h"
#include "server/auth.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/state.h"
#include "sim/packet/packet_sim.h"
#include "store/prober.h"
#include "store/store.h"

namespace drainwise::app {

namespace {

struct ServeArgs {
  std::string config_path;
  std::string listen;
  std::string db;
  std::string log_level;
  std::string port_file;
  bool demo = false;
};

std::shared_ptr<spdlog::logger> Logger(const std::string& name) {
  if (auto l = spdlog::get(name)) return l;
  auto l = spdlog::stderr_color_mt(name);
  l->set_pattern("%Y-%m-%dT%H:%M:%S.%e%z %^%l%$ [%n] %v");
  return l;
}

// The embedded demo fabric: generated, not shipped as a file, so the binary
// alone is enough. Job times are relative to today (UTC midnight), so their
// expected ends lie ahead.
std::pair<nlohmann::json, nlohmann::json> DemoDocuments() {
  auto preset = *fabric::FindPreset("demo");
  auto now =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  preset.jobs.now = now - now % 86400;
  auto topo = fabric::GenerateFabric(preset.fabric);
  auto jobs = fabric::GenerateJobs(topo, preset.fabric, preset.jobs);
  return {codec::TopologySpecToJson(topo), codec::JobsSpecToJson(jobs)};
}

void DeclareMetrics(server::Metrics& m) {
  const std::vector<double> latency = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
  m.DeclareCounter("drainwise_http_requests_total", "HTTP requests by route, method and status.");
  m.DeclareHistogram("drainwise_http_request_duration_seconds", "HTTP request latency by route.", latency);
  m.DeclareCounter("drainwise_assessments_total", "Stored assessments by verdict.");
  m.DeclareCounter("drainwise_plans_total", "Stored drain plans by verdict.");
  m.DeclareHistogram("drainwise_simulation_duration_seconds", "Simulation time by kind (assessment, plan).", latency);
  m.DeclareGauge("drainwise_snapshot_version", "Version of the topology and jobs documents served.");
  m.DeclareGauge("drainwise_snapshot_age_seconds", "Seconds since the served snapshot was published.");
  m.DeclareGauge("drainwise_jobs", "Jobs in the served snapshot.");
  m.DeclareGauge("drainwise_active_drains", "Drains recorded as in progress.");
  m.DeclareGauge("drainwise_topology_drift",
                 "Differences between the merged topology sources, by kind (GET /v1/topology/drift).");
  m.DeclareGauge("drainwise_source_skipped_items", "Items a source's last good document left out (GET /v1/sources).");
  m.DeclareGauge("drainwise_source_warnings", "Warnings of a source's last good document (GET /v1/sources).");
  m.DeclareGauge("drainwise_simulations_queued", "Simulations waiting or running.");
  m.DeclareGauge("drainwise_store_stale",
                 "1 while a shared (PostgreSQL) store is unreachable or its change notifications are down: "
                 "the view served may miss other daemons' writes.");
  m.DeclareGauge("drainwise_source_poller", "1 when this daemon holds the sources lease (shared store).");
}

// Hands the connectors' combined documents to State. Updates can arrive
// from several polling threads at once and out of order; they are handled
// one at a time, always from the newest combined state, and a document is
// passed on only when the connectors' copy differs from the one last
// applied (the connectors keep the pointer of an unchanged document). So a
// refresh that did not change the jobs never overwrites a PUT /v1/jobs that
// landed since, and jobs that arrive before any topology are applied with
// the first one.
class ConnectorFeed {
 public:
  void Apply(const connectors::Update& u, server::State& state, LiveTelemetry& telemetry, spdlog::logger& log) {
    std::lock_guard lock(mu_);
    if (u.version > latest_.version) latest_ = u;
    jobs_from_sources_ = jobs_from_sources_ || u.jobs_changed;
    const auto& l = latest_;
    bool telemetry_new = l.telemetry && l.telemetry != applied_telemetry_;
    if (telemetry_new) {
      telemetry.Set(l.telemetry);  // first: a topology published below maps it at once
      applied_telemetry_ = l.telemetry;
    }
    bool want_topology = l.topology && l.topology != applied_topology_;
    bool want_jobs = jobs_from_sources_ && l.jobs && l.jobs != applied_jobs_;
    bool published = false;
    if ((want_topology || want_jobs) && (l.topology || state.snapshot())) {
      auto start = std::chrono::steady_clock::now();
      // What the merged topology's sources disagree on travels with it.
      std::optional<engine::TopologyDrift> drift;
      if (want_topology && l.merged) {
        drift = engine::TopologyDrift{-1, connectors::DriftByDevice(*l.merged), connectors::DriftToJson(*l.merged),
                                      connectors::DriftToText(*l.merged)};
      }
      auto put = state.PutSpecs(want_topology ? l.topology.get() : nullptr, want_jobs ? l.jobs.get() : nullptr,
                                "source:" + u.source, std::move(drift));
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      if (!put) {
        log.error("source {}: not applied: {}", u.source, put.error().message);
      } else {
        if (want_topology) applied_topology_ = l.topology;
        if (want_jobs) applied_jobs_ = l.jobs;
        if (put->created) {
          published = true;
          auto snap = state.snapshot();
          log.info("source {}: topology v{}, jobs v{} published ({} jobs, {} dropped) in {:.0f} ms", u.source,
                   snap->topology_version, snap->jobs_version, snap->jobs->size(), put->dropped_jobs.size(), ms);
          for (const auto& d : put->dropped_jobs) log.warn("job left out: {}", d);
        }
      }
    }
    if (telemetry_new && !published) state.RefreshLinkState();
  }

 private:
  std::mutex mu_;
  connectors::Update latest_;
  bool jobs_from_sources_ = false;  // some source has delivered jobs
  std::shared_ptr<const model::TopologySpec> applied_topology_;
  std::shared_ptr<const model::JobsSpec> applied_jobs_;
  std::shared_ptr<const std::vector<connectors::InterfaceTelemetry>> applied_telemetry_;
};

// Reloads on SIGHUP what the configuration can change without a restart:
// the policy file, the log level, the advisor and simulation sections (the
// calibrated transport parameters stay in force) and the telemetry
// thresholds. A file that no longer loads changes nothing. Returns what was
// reloaded, or the error.
Result<std::string> Reload(const std::string& config_path, const ConfigOverrides& overrides,
                           const DaemonConfig& running, server::State& state, LiveTelemetry& telemetry) {
  if (config_path.empty()) return std::string("nothing (no --config file)");
  auto next = LoadDaemonConfig(config_path, overrides);
  if (!next) return tl::unexpected(next.error());
  std::vector<std::string> done;
  if (next->policy) {
    done.push_back(fmt::format("policy '{}' from {} ({} job rules, {} fabric rules)", next->policy->name,
                               next->config.policy_file, next->policy->job_rules.size(),
                               next->policy->fabric_rules.size()));
    state.SetPolicy(std::move(*next->policy));
  }
  spdlog::set_level(spdlog::level::from_str(next->config.log_level));
  done.push_back("log level " + next->config.log_level);
  state.SetAdvisorOptions(next->advisor);
  done.push_back("advisor and simulation options");
  telemetry.SetThresholds(next->thresholds);
  state.RefreshLinkState();
  done.push_back("telemetry thresholds");
  std::vector<std::string> restart;
  const auto& a = running.config;
  const auto& b = next->config;
  if (config::ConfigToJson(a)["server"] != config::ConfigToJson(b)["server"] || a.server.listen != b.server.listen) {
    restart.push_back("listen/server");
  }
  if (a.db_path != b.db_path) restart.push_back("db");
  if (a.sources != b.sources || a.profiles != b.profiles) restart.push_back("sources/profiles");
  if (a.task != b.task) restart.push_back("task");
  std::string out;
  for (const auto& d : done) out += (out.empty() ? "" : "; ") + d;
  if (!restart.empty()) {
    std::string r;
    for (const auto& x : restart) r += (r.empty() ? "" : ", ") + x;
    out += fmt::format("; changed but needing a restart (kept as running): {}", r);
  }
  return out;
}

int RunServe(const ServeArgs& args) {
  auto log = Logger("main");
  // Signals first: from here on SIGHUP and SIGTERM are queued for the
  // handler below instead of ending the process (SIGHUP's default action).
  boost::asio::io_context signals_ctx;
  boost::asio::signal_set signals(signals_ctx, SIGINT, SIGTERM, SIGHUP);

  ConfigOverrides overrides{args.listen, args.db, args.log_level};
  auto loaded_config = LoadDaemonConfig(args.config_path, overrides);
  if (!loaded_config) {
    log->error("{}", loaded_config.error().message);
    return 1;
  }
  DaemonConfig daemon_config = std::move(*loaded_config);
  const config::Config& cfg = daemon_config.config;
  spdlog::set_level(spdlog::level::from_str(cfg.log_level));
  auto http_log = Logger("http");

  store::StoreOptions store_options;
  store_options.keep_versions = cfg.store.keep_versions;
  store_options.idempotency_ttl_s = cfg.store.idempotency_ttl_s;
  store_options.listen_address = cfg.server.listen;
  store_options.postgres = {cfg.store.password_file, cfg.store.password_env, cfg.store.sslmode,
                            cfg.store.sslrootcert,   cfg.store.sslcert,      cfg.store.sslkey,
                            cfg.store.connect_timeout_s};
  auto store = store::Store::Open(cfg.db_path, store_options);  // exits 1 when another daemon holds it
  if (!store) {
    log->error("{}", store.error().message);
    return 1;
  }
  log->info("database {} (schema v{}{})", (*store)->path(), (*store)->schema_version(),
            (*store)->shared() ? ", shared with other daemons" : "");
  // A background write probe: one log line per change, and /readyz's answer.
  store::ProberOptions probe_options;
  probe_options.on_change = [log](bool ok, const std::string& why) {
    if (ok)
      log->info("database writable again");
    else
      log->error("{}", why);
  };
  store::StoreProber store_prober(store->get(), probe_options);
  server::State state(store->get());
  auto loaded = state.LoadLatest();
  if (!loaded) {
    log->error("loading stored versions: {}", loaded.error().message);
    return 1;
  }
  if (args.demo || (!*loaded && daemon_config.connectors.sources.empty())) {
    auto start = std::chrono::steady_clock::now();
    auto [topo, jobs] = DemoDocuments();
    auto put = state.PutBoth(topo, jobs, "demo");
    if (!put) {
      log->error("loading the demo fabric: {}", put.error().message);
      return 1;
    }
    log->info("demo fabric loaded as topology v{} in {:.0f} ms", put->version,
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  if (auto snap = state.snapshot()) {
    log->info("serving topology v{} ({} switches, {} hosts, {} GPUs) and jobs v{} ({} jobs)", snap->topology_version,
              snap->topology->switches().size(), snap->topology->hosts().size(), snap->topology->total_gpus(),
              snap->jobs_version, snap->jobs->size());
    for (const auto& d : snap->dropped_jobs) log->warn("job left out of the snapshot: {}", d);
  } else {
    log->warn("no snapshot yet: waiting for sources or PUT /v1/topology");
  }

  // The policy: the config's file, else the last one stored by PUT
  // /v1/policy, else the built-in default.
  Result<policies::Policy> policy = policies::DefaultPolicy();
  std::string policy_source = "built-in default";
  if (daemon_config.policy) {
    policy = *daemon_config.policy;
    policy_source = cfg.policy_file;
  } else if (auto stored = (*store)->LatestDocument(store::DocKind::kPolicy); stored && *stored) {
    policy = policies::ParsePolicyText((*stored)->body);
    policy_source = fmt::format("stored v{}", (*stored)->info.version);
  }
  if (!policy) {
    log->error("policy ({}): {}", policy_source, policy.error().message);
    return 1;
  }
  log->info("policy '{}' from {} ({} job rules, {} fabric rules)", policy->name, policy_source,
            policy->job_rules.size(), policy->fabric_rules.size());
  state.SetPolicy(std::move(*policy));
  // The last fitted or operator-set calibration overrides the config's
  // transport parameters.
  engine::Calibration configured;
  configured.options = daemon_config.advisor;
  state.SetCalibration(std::move(configured));
  if (auto stored = (*store)->LatestDocument(store::DocKind::kCalibration); stored && *stored) {
    auto doc = codec::ParseJsonText((*stored)->body);
    auto c = doc ? engine::ParseCalibration(*doc, daemon_config.advisor)
                 : Result<engine::Calibration>(tl::unexpected(doc.error()));
    if (c) {
      state.SetCalibration(std::move(*c));
      log->info("calibration v{} in force: {}", (*stored)->info.version,
                engine::CalibrationJson(*state.view()->calibration).dump());
    } else {
      log->warn("stored calibration v{} ignored: {}", (*stored)->info.version, c.error().message);
    }
  }
  // Several daemons on one database: the others' writes reach this view
  // through the store's notifications (the guard stops them before `state`
  // and the follower go).
  std::unique_ptr<StoreFollower> follower;
  struct StopNotifications {
    store::Store* store;
    ~StopNotifications() { store->SetChangeListener(nullptr); }
  } stop_notifications{store->get()};
  if ((*store)->shared()) {
    follower = std::make_unique<StoreFollower>(&state, store->get(),
                                               FollowerOptions{daemon_config.policy.has_value(), daemon_config.advisor},
                                               Logger("store"));
    (*store)->SetChangeListener([f = follower.get()](const std::string& what) { f->OnChange(what); });
    // Serve once listening (bounded): a daemon that cannot hear the others
    // yet would answer /readyz "stale" for its first moments.
    for (int i = 0; i < 500 && !(*store)->Fresh(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  auto engine = engine::MakeEngine(Logger("engine"));
  server::Metrics metrics;
  DeclareMetrics(metrics);
  // Connectors: each source polls on its own thread; a refresh that
  // changes documents publishes a new view (stored first); telemetry feeds
  // the flow model's background load and the degraded-link views. Every
  // change goes through State, the views' single writer.
  LiveTelemetry telemetry(daemon_config.thresholds);
  state.SetLinkStateSource([&telemetry](const model::Snapshot& snap) { return telemetry.LinkStateFor(snap); });
  // Link health (docs/link-health.md): trends from Prometheus range queries
  // and from the connectors' telemetry, kept bounded in its own history file.
  // The service first: destroyed after the monitor, whose thread calls it.
  std::unique_ptr<LinkHealthService> link_health_service;
  std::unique_ptr<LinkHealthMonitor> link_health;
  {
    auto lh = ParseLinkHealthOptions(cfg.link_health, cfg.db_path);
    if (!lh) {
      log->error("config: {}", lh.error().message);
      return 1;
    }
    if (lh->enabled) {
      auto m = LinkHealthMonitor::Create(std::move(*lh), [&state] { return state.snapshot(); });
      if (!m) {
        log->error("link health: {}", m.error().message);
        return 1;
      }
      link_health = std::move(*m);
      log->info("link health on: {} ({} Prometheus queries), history {}",
                link_health->options().prometheus_url.empty() ? "connector telemetry only"
                                                               : link_health->options().prometheus_url,
                link_health->options().queries.size(), link_health->options().history.path);
    }
  }
  std::mutex recorded_mu;
  std::shared_ptr<const std::vector<connectors::InterfaceTelemetry>> recorded_telemetry;
  auto connectors_log = Logger("connectors");
  ConnectorFeed feed;
  std::unique_ptr<connectors::SourceManager> sources;
  std::atomic<bool> source_lease{false};  // this daemon holds the "sources" lease (shared stores)
  if (!daemon_config.connectors.sources.empty()) {
    connectors::SourceManagerOptions so;
    so.profiles = daemon_config.connectors.profiles;
    if ((*store)->shared()) {
      // One poller for all sources across the daemons: the holder of the
      // "sources" lease; the others serve what it stores (notifications).
      so.may_poll = [&store, &source_lease, log] {
        auto held = (*store)->HoldLease("sources");
        bool now = held && *held;
        if (now != source_lease.exchange(now)) {
          if (now)
            log->info("this daemon polls the sources (lease held)");
          else
            log->info("the sources are polled by another daemon{}", held ? "" : ": " + held.error().message);
        }
        return now;
      };
    }
    // Nothing is dropped silently: each skipped item and warning is logged
    // once, when a source's list changes (GET /v1/sources keeps them).
    so.on_diagnostics = [log = connectors_log](const connectors::SourceConfig& c, const connectors::Diagnostics& d) {
      constexpr size_t kMaxLines = 20;
      size_t n = 0;
      for (const auto& x : d.skipped) {
        if (n++ < kMaxLines) log->warn("source {}: skipped {}: {}", c.name, x.item, x.reason);
      }
      for (const auto& x : d.warnings) {
        if (n++ < kMaxLines) log->warn("source {}: {}: {}", c.name, x.item, x.reason);
      }
      if (n > kMaxLines)
        log->warn("source {}: {} more skipped items and warnings in GET /v1/sources", c.name, n - kMaxLines);
      if (n == 0) log->info("source {}: nothing skipped any more", c.name);
    };
    sources = std::make_unique<connectors::SourceManager>(
        daemon_config.connectors.sources, std::move(so),
        [&](const connectors::Update& u) {
          feed.Apply(u, state, telemetry, *connectors_log);
          if (link_health && u.telemetry) {
            std::lock_guard lock(recorded_mu);
            if (u.telemetry != recorded_telemetry) {
              recorded_telemetry = u.telemetry;
              link_health->RecordInterfaces(
                  *u.telemetry,
                  std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
            }
          }
        });
    log->info("{} data source(s) configured", daemon_config.connectors.sources.size());
  }

  server::ApiHooks hooks;
  hooks.metrics = [&metrics] { return metrics.Render(); };
  hooks.background_log = Logger("simulations");
  hooks.task_defaults = daemon_config.task;
  // This very binary (even when an upgrade has replaced its file since it started), so that a worker speaks the
  // daemon's wire format.
  if (sim::PacketLevelAvailable()) hooks.packet_worker_program = "/proc/self/exe";
  if ((*store)->shared()) {
    hooks.store_fresh = [&store_prober, &store](std::string* why) {
      return store_prober.Writable(why) && (*store)->Fresh(why);
    };
  } else {
    hooks.store_writable = [&store_prober](std::string* why) { return store_prober.Writable(why); };
  }
  if (sources) {
    hooks.sources = [&sources] {
      nlohmann::json list = nlohmann::json::array();
      for (const auto& s : sources->Statuses()) list.push_back(connectors::SourceStatusToJson(s));
      return nlohmann::json{{"sources", list}};
    };
    hooks.sources_ready = [&sources, &source_lease, shared = (*store)->shared()](std::string* why) {
      if (shared && !source_lease.load()) return true;  // another daemon polls; its versions are served here
      std::string stale;
      for (const auto& s : sources->Statuses()) {
        if (s.stale)
          stale += (stale.empty() ? "" : ", ") + s.name + (s.last_error.empty() ? "" : " (" + s.last_error + ")");
      }
      if (stale.empty()) return true;
      *why = "stale sources: " + stale;
      return false;
    };
    metrics.OnScrape([&sources](server::Metrics& m) {
      if (auto current = sources->Current(); current.merged) {
        std::map<std::string, int> counts = {
            {"cable_not_seen", 0}, {"cable_not_intended", 0}, {"speed_mismatch", 0}, {"device_only_in", 0}};
        for (const auto& d : current.merged->drift) ++counts[d.kind];
        for (const auto& [kind, n] : counts) m.Set("drainwise_topology_drift", {{"kind", kind}}, n);
      }
      for (const auto& s : sources->Statuses()) {
        m.Set("drainwise_source_skipped_items", {{"source", s.name}},
              static_cast<double>(s.diagnostics.skipped.size()));
        m.Set("drainwise_source_warnings", {{"source", s.name}}, static_cast<double>(s.diagnostics.warnings.size()));
        m.Set("drainwise_source_stale", {{"source", s.name}}, s.stale ? 1 : 0);
        m.Set("drainwise_source_failures_total", {{"source", s.name}}, static_cast<double>(s.failures));
        m.Set("drainwise_source_versions", {{"source", s.name}}, static_cast<double>(s.versions));
        if (s.last_success)
          m.Set("drainwise_source_last_success_timestamp_seconds", {{"source", s.name}},
                static_cast<double>(*s.last_success));
      }
    });
  }
  hooks.links = [&](const server::ApiRequest& req) -> Result<nlohmann::json> {
    auto view = state.view();  // one view for the whole answer
    if (!view->snapshot) return MakeError(ErrorCode::kUnavailable, "no snapshot loaded yet");
    const auto& topo = *view->snapshot->topology;
    bool degraded =
        req.target.find("degraded=true") != std::string::npos || req.target.find("degraded=1") != std::string::npos;
    auto out = telemetry.LinksJson(topo, degraded);
    if (degraded) {
      // What draining each degraded link would do, job level: the advisor's
      // proposal to take a degrading link out before it hurts more.
      engine::Call call{
          std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count(),
          req.stop};
      int n = 0;
      for (auto& l : out["links"]) {
        if (n++ >= 32) break;
        nlohmann::json request = {{"drain", {{"links", {{{"a", l["a"]}, {"b", l["b"]}, {"a_port", l["a_port"]}}}}}},
                                  {"modes", {"job"}},
                                  {"recommend", false}};
        auto typed = engine::ParseAssessRequest(request, topo);
        if (!typed) continue;
        auto a = engine->Assess(*view, *typed, call);
        if (a) {
          const auto& s = a->assessment.scenario;
          l["drain_impact"] = {{"verdict", std::string(policies::DecisionName(s.verdict.decision))},
                               {"jobs_affected", s.jobs_affected},
                               {"jobs_disconnected", s.jobs_disconnected},
                               {"request", request}};
        }
      }
    }
    return out;
  };
  if (link_health) {
    link_health_service = std::make_unique<LinkHealthService>(link_health.get(), &state, engine.get());
    link_health_service->Install(hooks);
    link_health_service->Declare(metrics);
    metrics.OnScrape([svc = link_health_service.get()](server::Metrics& m) { svc->Scrape(m); });
    link_health->OnReport([svc = link_health_service.get()](const auto&) { svc->Refresh(); });
    link_health->Start();
  }
  hooks.job_paths = [&](const std::string& id) -> Result<nlohmann::json> {
    auto snap = state.snapshot();
    if (!snap) return MakeError(ErrorCode::kUnavailable, "no snapshot loaded yet");
    auto paths = telemetry.JobPaths(*snap, id);
    if (paths && link_health_service) link_health_service->AnnotatePaths(snap, *paths);
    return paths;
  };
  hooks.on_result = [&metrics](const std::string& kind, const std::string& verdict, double seconds) {
    metrics.Add(kind == "plan" ? "drainwise_plans_total" : "drainwise_assessments_total",
                {{"verdict", verdict.empty() ? "none" : verdict}});
    metrics.Observe("drainwise_simulation_duration_seconds", {{"kind", kind}}, seconds);
  };
  if (follower) hooks.catch_up = [f = follower.get()] { f->CatchUp(); };
  server::Api api(&state, engine.get(), hooks);
  if (daemon_config.tokens) {
    log->info("authentication on: {} tokens from {}", daemon_config.tokens->size(), cfg.server.tokens_file);
    api.RequireTokens(daemon_config.tokens);
  }
  server::HttpServer http(&api, cfg.server, http_log);
  http.OnRequest([&metrics](const server::RequestStats& s) {
    // Bounded labels: a route of the table or "unmatched", a known method or "other".
    metrics.Add("drainwise_http_requests_total", {{"route", s.route},
                                                  {"method", std::string(server::MethodLabel(s.method))},
                                                  {"status", std::to_string(s.status)}});
    metrics.Observe("drainwise_http_request_duration_seconds", {{"route", s.route}}, s.seconds);
  });
  metrics.OnScrape([&state, &http, &store, &store_prober, &source_lease](server::Metrics& m) {
    auto view = state.view();
    if (const auto& snap = view->snapshot) {
      m.Set("drainwise_snapshot_version", {{"kind", "topology"}}, static_cast<double>(snap->topology_version));
      m.Set("drainwise_snapshot_version", {{"kind", "jobs"}}, static_cast<double>(snap->jobs_version));
      auto now =
          std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
      m.Set("drainwise_snapshot_age_seconds", {}, static_cast<double>(now - view->published_at));
      m.Set("drainwise_jobs", {}, static_cast<double>(snap->jobs->size()));
    }
    m.Set("drainwise_active_drains", {}, static_cast<double>(view->drains.size()));
    m.Set("drainwise_simulations_queued", {}, static_cast<double>(http.queued()));
    if ((*store)->shared()) {
      std::string why;
      m.Set("drainwise_store_stale", {}, store_prober.Writable(&why) && (*store)->Fresh(&why) ? 0 : 1);
      m.Set("drainwise_source_poller", {}, source_lease.load() ? 1 : 0);
    }
  });
  if (auto st = http.Start(); !st) {
    log->error("{}", st.error().message);
    return 1;
  }
  log->info("listening on {} (port {})", cfg.server.listen, http.port());
  std::string bound = cfg.server.listen.substr(0, cfg.server.listen.rfind(':') + 1) + std::to_string(http.port());
  if (auto st = (*store)->SetListenAddress(bound); !st) log->warn("{}", st.error().message);
  if (!args.port_file.empty()) {
    // Written after the socket is bound: tests and supervisors using port 0
    // learn the real port here.
    std::string tmp = args.port_file + ".tmp";
    if (FILE* f = std::fopen(tmp.c_str(), "w")) {
      std::fprintf(f, "%u\n", http.port());
      std::fclose(f);
      std::rename(tmp.c_str(), args.port_file.c_str());
    } else {
      log->error("cannot write port file {}", args.port_file);
    }
  }
  // systemd Type=notify: ready once the socket is bound (and the port file
  // written); a no-op outside systemd.
  std::string notify_error;
  if (!SdNotify(fmt::format("READY=1\nSTATUS=listening on {} (port {})", cfg.server.listen, http.port()),
                &notify_error)) {
    log->warn("{}", notify_error);
  }
  SdWatchdog watchdog;
  if (watchdog.active()) log->info("systemd watchdog on ({} ms)", SdWatchdogInterval().count() / 1000);

  // SIGTERM / SIGINT: stop accepting, cancel every running simulation
  // (HttpServer::Stop fires their stop tokens) and exit 0. The exit is
  // bounded: a daemon still not gone kShutdownLimit later (a simulation
  // that does not look at its stop token, a worker pool being joined) logs
  // it and exits 1 at once, within the 10 s we promise (systemd's
  // TimeoutStopSec is 30 s). SIGHUP: reload, never exit.
  constexpr auto kShutdownLimit = std::chrono::seconds(8);
  std::function<void(const boost::system::error_code&, int)> on_signal = [&](const boost::system::error_code& ec,
                                                                             int sig) {
    if (ec) return;
    if (sig == SIGHUP) {
      auto r = Reload(args.config_path, overrides, daemon_config, state, telemetry);
      if (r) {
        log->info("SIGHUP: reloaded {}", *r);
      } else {
        log->error("SIGHUP: configuration not reloaded, the running one stays: {}", r.error().message);
      }
      signals.async_wait(on_signal);
      return;
    }
    log->info("signal {}: shutting down (cancelling {} queued or running simulations)", sig, http.queued());
    SdNotify("STOPPING=1");
    // The guard outlives RunServe (the worker pool is joined by
    // destructors after it returns), so it holds nothing of this frame.
    std::thread([guard_log = log, limit = kShutdownLimit] {
      std::this_thread::sleep_for(limit);
      guard_log->error("still shutting down {} s after the signal: exiting now", limit.count());
      guard_log->flush();
      std::_Exit(1);
    }).detach();
    http.Stop();
  };
  signals.async_wait(on_signal);
  std::thread signal_thread([&] { signals_ctx.run(); });
  if (sources) sources->Start();
  http.Wait();
  if (sources) sources->Stop();
  signals_ctx.stop();
  signal_thread.join();
  log->info("stopped");
  return 0;
}

}  // namespace

void RegisterServe(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<ServeArgs>();
  auto* cmd = app.add_subcommand("serve", "Run the daemon");
  cmd->add_option("--config", args->config_path, "JSON configuration file");
  cmd->add_option("--listen", args->listen, "HOST:PORT to listen on (default 127.0.0.1:8080)");
  cmd->add_option("--db", args->db, "SQLite database path (default drainwise.db) or postgresql://… URL");
  cmd->add_option("--log-level", args->log_level, "trace, debug, info, warn, error");
  cmd->add_option("--port-file", args->port_file, "Write the bound port here once listening (for --listen HOST:0)");
  cmd->add_flag("--demo", args->demo, "Load the embedded demo fabric as a new version");
  cmd->callback([args, exit_code] { *exit_code = RunServe(*args); });
}

}  // namespace drainwise::app
