#include "app/engine_impl.h"

#include <chrono>
#include <mutex>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "codec/json_reader.h"
#include "codec/native.h"
#include "advisor/calibration.h"
#include "report/advisor_report.h"
#include "report/job_report.h"

namespace drainwise::app {

using nlohmann::json;

Result<sim::FlowOptions> ParseFlowOptions(const json& simulation) {
  sim::FlowOptions o;
  try {
    codec::ObjectReader r(simulation, "simulation");
    r.RejectUnknown({"routing", "hash_seeds", "seed", "goodput", "per_hop_latency_us", "per_message_overhead_us",
                     "overload_threshold", "overload_penalty", "hot_links"});
    if (r.Has("routing")) {
      auto m = sim::ParseFlowRouting(r.String("routing"));
      if (!m) throw codec::FieldError(r.Child("routing"), "expected spray, spray-path, hash, hash-resilient or hash-rehash");
      o.routing = *m;
    }
    o.hash_seeds = static_cast<int>(r.IntOr("hash_seeds", o.hash_seeds));
    o.seed = static_cast<uint64_t>(r.IntOr("seed", static_cast<int64_t>(o.seed)));
    o.goodput = r.NumberOr("goodput", o.goodput);
    o.per_hop_latency_s = r.NumberOr("per_hop_latency_us", o.per_hop_latency_s * 1e6) / 1e6;
    o.per_message_overhead_s = r.NumberOr("per_message_overhead_us", o.per_message_overhead_s * 1e6) / 1e6;
    o.overload_threshold = r.NumberOr("overload_threshold", o.overload_threshold);
    o.overload_penalty = r.NumberOr("overload_penalty", o.overload_penalty);
    o.hot_links = static_cast<int>(r.IntOr("hot_links", o.hot_links));
    if (!(o.goodput > 0 && o.goodput <= 1)) throw codec::FieldError(r.Child("goodput"), "must be within (0, 1]");
    if (o.hash_seeds < 1 || o.hash_seeds > 1024) throw codec::FieldError(r.Child("hash_seeds"), "must be 1..1024");
    if (o.per_hop_latency_s < 0) throw codec::FieldError(r.Child("per_hop_latency_us"), "must be >= 0");
    if (o.per_message_overhead_s < 0) throw codec::FieldError(r.Child("per_message_overhead_us"), "must be >= 0");
    if (o.overload_penalty < 0 || o.overload_penalty >= 1) {
      throw codec::FieldError(r.Child("overload_penalty"), "must be within [0, 1)");
    }
  } catch (const codec::FieldError& e) {
    return InvalidArgument(e.what());
  }
  return o;
}

Result<advisor::AdvisorOptions> ParseAdvisorOptions(const json& advisor_json, const json& simulation) {
  advisor::AdvisorOptions o;
  auto flow = ParseFlowOptions(simulation);
  if (!flow) return tl::unexpected(flow.error());
  o.flow = *flow;
  try {
    codec::ObjectReader r(advisor_json, "advisor");
    r.RejectUnknown({"default_restart_cost_s", "default_checkpoint_interval_s", "max_migrations",
                     "worse_tolerance_pct", "max_alternatives"});
    o.default_restart_cost_s = r.NumberOr("default_restart_cost_s", o.default_restart_cost_s);
    o.default_checkpoint_interval_s = r.NumberOr("default_checkpoint_interval_s", o.default_checkpoint_interval_s);
    o.max_migrations = static_cast<int>(r.IntOr("max_migrations", o.max_migrations));
    o.worse_tolerance_pct = r.NumberOr("worse_tolerance_pct", o.worse_tolerance_pct);
    o.max_alternatives = static_cast<int>(r.IntOr("max_alternatives", o.max_alternatives));
    if (o.default_restart_cost_s < 0) throw codec::FieldError("advisor.default_restart_cost_s", "must be >= 0");
    if (o.default_checkpoint_interval_s <= 0) {
      throw codec::FieldError("advisor.default_checkpoint_interval_s", "must be > 0");
    }
    if (o.max_migrations < 0) throw codec::FieldError("advisor.max_migrations", "must be >= 0");
  } catch (const codec::FieldError& e) {
    return InvalidArgument(e.what());
  }
  return o;
}

Result<advisor::Request> ParseAssessRequest(const json& body, const model::Topology& topology) {
  advisor::Request req;
  try {
    codec::ObjectReader r(body, "");
    r.RejectUnknown({"drain", "any_of", "modes", "routing", "ticket", "requested_by", "recommend"});
    if (r.Has("drain")) {
      auto spec = codec::ParseDrain(r.Raw("drain"));
      if (!spec) return tl::unexpected(spec.error());
      auto d = model::ResolveDrain(*spec, topology);
      if (!d) return tl::unexpected(d.error().Wrap("drain"));
      req.drain = std::move(*d);
    }
    if (r.Has("any_of")) {
      const json& any = r.Array("any_of");
      for (size_t i = 0; i < any.size(); ++i) {
        model::DrainSpec spec;
        std::string where = fmt::format("any_of[{}]", i);
        if (any[i].is_string()) {
          spec.switches.push_back(any[i].get<std::string>());
        } else {
          auto s = codec::ParseDrain(any[i]);
          if (!s) return tl::unexpected(s.error().Wrap(where));
          spec = std::move(*s);
        }
        auto d = model::ResolveDrain(spec, topology);
        if (!d) return tl::unexpected(d.error().Wrap(where));
        req.any_of.push_back(std::move(*d));
      }
    }
    if (req.drain.empty() && req.any_of.empty()) {
      throw codec::FieldError("drain", "required (a drain naming switches or links, or any_of)");
    }
    for (const auto& m : r.StringList("modes")) {
      if (m == "flow") req.flow = true;
      else if (m != "job") throw codec::FieldError("modes", fmt::format("unknown mode '{}' (job, flow)", m));
    }
    if (r.Has("routing")) {
      auto m = sim::ParseFlowRouting(r.String("routing"));
      if (!m) throw codec::FieldError("routing", "expected spray, spray-path, hash, hash-resilient or hash-rehash");
      req.routing = *m;
    }
    req.recommend = r.BoolOr("recommend", true);
  } catch (const codec::FieldError& e) {
    return InvalidArgument(e.what());
  }
  return req;
}

namespace {

class AdvisorEngine : public DaemonEngine {
 public:
  AdvisorEngine(advisor::AdvisorOptions options, policies::Policy policy, std::shared_ptr<spdlog::logger> log)
      : options_(options), advisor_(std::make_shared<const advisor::Advisor>(std::move(options))),
        policy_(std::make_shared<const policies::Policy>(std::move(policy))), log_(std::move(log)) {
    calibration_ = {{"source", "configuration"}};
  }

  Result<server::EngineResult> Assess(const server::EngineContext& ctx, const json& body) override {
    auto start = std::chrono::steady_clock::now();
    auto req = ParseAssessRequest(body, *ctx.snapshot->topology);
    if (!req) return tl::unexpected(req.error());
    auto policy = Policy();
    auto a = Advisor(ctx.snapshot.get())->Assess(Context(ctx), *req, *policy, ctx.stop);
    if (!a) return tl::unexpected(a.error());
    report::AssessmentJsonOptions jo;
    jo.flow = req->flow;
    json out = report::AssessmentToJson(*a, *ctx.snapshot, jo);
    if (out.contains("model")) {
      out["model"]["calibration"] = CalibrationJson();
      out["model"]["background_from_telemetry"] = Advisor(ctx.snapshot.get()) != Advisor();
    }
    FlagDegradedLinks(*ctx.snapshot, *a, out);
    std::string verdict = out["verdict"];
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    out["timings_ms"]["total"] = std::round(ms * 100) / 100;
    log_->info("assessment drain={} modes={} verdict={} jobs_affected={} disconnected={} recommendations={} {:.1f}ms",
               out["drain"].dump(), out["modes"].dump(), verdict, a->scenario.jobs_affected,
               a->scenario.jobs_disconnected, a->recommendations.size(), ms);
    return server::EngineResult{std::move(out), verdict};
  }

  Result<json> DrainCandidates(const server::EngineContext& ctx, const std::string& tier,
                               const std::vector<std::string>& switches) override {
    auto start = std::chrono::steady_clock::now();
    const auto& topo = *ctx.snapshot->topology;
    std::vector<model::NodeId> ids;
    if (!switches.empty()) {
      model::DrainSpec spec;
      spec.switches = switches;
      auto d = model::ResolveDrain(spec, topo);
      if (!d) return tl::unexpected(d.error().Wrap("switches"));
      ids = d->switches;
    } else {
      ids = sim::SwitchesOfTier(topo, tier);
      if (ids.empty()) {
        std::string tiers;
        for (const auto& [level, name] : topo.tiers()) tiers += (tiers.empty() ? "" : ", ") + name;
        return InvalidArgument(fmt::format("tier: no switch of tier '{}' (this fabric has {})", tier, tiers));
      }
    }
    auto c = Advisor()->Candidates(Context(ctx), ids, ctx.stop);
    if (!c) return tl::unexpected(c.error());
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    log_->info("drain-candidates tier={} switches={} {:.1f}ms", tier, ids.size(), ms);
    auto out = report::DrainCandidatesToJson(*c, *ctx.snapshot, 10);
    out["tier"] = switches.empty() ? tier : "";
    out["timings_ms"] = {{"total", std::round(ms * 100) / 100}};
    return out;
  }

  Result<server::EngineResult> Plan(const server::EngineContext& ctx, const json& body) override {
    auto start = std::chrono::steady_clock::now();
    std::vector<model::NodeId> ids;
    bool flow = false;
    try {
      codec::ObjectReader r(body, "");
      r.RejectUnknown({"switches", "modes", "ticket", "requested_by"});
      model::DrainSpec spec;
      spec.switches = r.StringList("switches");
      if (spec.switches.empty()) throw codec::FieldError("switches", "required: the switches that must all be drained");
      auto d = model::ResolveDrain(spec, *ctx.snapshot->topology);
      if (!d) return tl::unexpected(d.error());
      ids = d->switches;
      for (const auto& m : r.StringList("modes")) {
        if (m == "flow") flow = true;
        else if (m != "job") throw codec::FieldError("modes", fmt::format("unknown mode '{}' (job, flow)", m));
      }
    } catch (const codec::FieldError& e) {
      return InvalidArgument(e.what());
    }
    auto policy = Policy();
    auto plan = Advisor()->PlanDrains(Context(ctx), ids, flow, *policy, ctx.stop);
    if (!plan) return tl::unexpected(plan.error());
    json out = report::PlanToJson(*plan, *ctx.snapshot);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    out["timings_ms"] = {{"total", std::round(ms * 100) / 100}};
    log_->info("plan switches={} batches={} all_allowed={} {:.1f}ms", ids.size(), plan->batches.size(),
               plan->all_allowed, ms);
    std::string verdict = out["verdict"];
    return server::EngineResult{std::move(out), verdict};
  }

  json PolicyJson() const override { return policies::PolicyToJson(*Policy()); }

  Status SetPolicy(const json& doc) override {
    auto p = policies::ParsePolicy(doc);
    if (!p) return tl::unexpected(p.error());
    std::lock_guard lock(mu_);
    policy_ = std::make_shared<const policies::Policy>(std::move(*p));
    log_->info("policy '{}' in force ({} job rules, {} fabric rules)", policy_->name, policy_->job_rules.size(),
               policy_->fabric_rules.size());
    return {};
  }

  Result<double> PredictIteration(const server::EngineContext& ctx, const std::string& job,
                                  const model::Drain& drain) override {
    auto j = ctx.snapshot->jobs->FindJob(job);
    if (!j) return NotFound(fmt::format("job: unknown job '{}'", job));
    auto adv = Advisor();
    auto fsim = adv->FlowSim(ctx.snapshot, adv->options().flow, ctx.stop);
    if (!fsim) return tl::unexpected(fsim.error());
    auto rep = (*fsim)->Simulate(drain, ctx.stop);
    if (!rep) return tl::unexpected(rep.error());
    const auto& side = rep->jobs[j->value].drained;
    if (!side.connected) return 0.0;  // no prediction for a cut-off job
    return side.iteration_s;
  }

  json CalibrationJson() const override {
    std::lock_guard lock(mu_);
    json out = calibration_;
    out["goodput"] = options_.flow.goodput;
    out["per_hop_latency_us"] = options_.flow.per_hop_latency_s * 1e6;
    out["per_message_overhead_us"] = options_.flow.per_message_overhead_s * 1e6;
    return out;
  }

  Result<json> Calibrate(const server::EngineContext& ctx, const std::vector<store::ObservationRecord>& records,
                         bool apply) override {
    auto start = std::chrono::steady_clock::now();
    const auto& topo = *ctx.snapshot->topology;
    std::vector<advisor::Observation> obs;
    std::vector<double> observed;
    int skipped = 0;
    for (const auto& r : records) {
      auto j = ctx.snapshot->jobs->FindJob(r.job_id);
      model::Drain drain;
      bool ok = j.has_value();
      if (ok && !r.drain_key.empty()) {
        auto spec_json = codec::ParseJsonText(r.drain_key);
        auto spec = spec_json ? codec::ParseDrain(*spec_json) : tl::unexpected(spec_json.error());
        auto d = spec ? model::ResolveDrain(*spec, topo) : tl::unexpected(spec.error());
        ok = d.has_value();
        if (ok) drain = *d;
      }
      if (!ok) {
        ++skipped;  // the job or an element is gone from the current snapshot
        continue;
      }
      obs.push_back({*j, drain, r.iteration_s});
      observed.push_back(r.iteration_s);
    }
    auto adv = Advisor();
    auto terms = advisor::ComputeTerms(ctx.snapshot, obs, adv->options().flow, ctx.stop);
    if (!terms) return tl::unexpected(terms.error());
    const auto& f = adv->options().flow;
    advisor::CalibrationParams current{f.goodput, f.per_hop_latency_s, f.per_message_overhead_s};
    auto fit = advisor::FitCalibration(*terms, observed, current);
    if (!fit) return tl::unexpected(fit.error());
    json calibration = {{"format", "drainwise.calibration/v1"},
                        {"goodput", fit->params.goodput},
                        {"per_hop_latency_us", fit->params.per_hop_latency_s * 1e6},
                        {"per_message_overhead_us", fit->params.per_message_overhead_s * 1e6},
                        {"fitted_at", codec::FormatRfc3339(ctx.now)},
                        {"observations", fit->observations},
                        {"rmse_s", fit->rmse_s},
                        {"median_rel_error", fit->median_rel_error},
                        {"p90_rel_error", fit->p90_rel_error}};
    json out = {{"calibration", calibration},
                {"before", {{"goodput", current.goodput},
                            {"per_hop_latency_us", current.per_hop_latency_s * 1e6},
                            {"per_message_overhead_us", current.per_message_overhead_s * 1e6},
                            {"rmse_s", fit->rmse_before_s}}},
                {"holdout", {{"folds", fit->folds},
                             {"rmse_s", fit->holdout_rmse_s},
                             {"rmse_before_s", fit->holdout_rmse_before_s}}},
                {"applicable", fit->applicable},
                {"skipped", skipped},
                {"applied", apply && fit->applicable}};
    if (!fit->applicable) out["not_applicable"] = fit->not_applicable;
    if (apply && fit->applicable) {
      if (auto st = SetCalibration(calibration); !st) return tl::unexpected(st.error());
    }
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    log_->info("calibration fit on {} observations: goodput {:.3f}, {:.2f} us/hop, {:.2f} us/message, rmse {:.4f} s "
               "(was {:.4f} s){} {:.1f}ms",
               fit->observations, fit->params.goodput, fit->params.per_hop_latency_s * 1e6,
               fit->params.per_message_overhead_s * 1e6, fit->rmse_s, fit->rmse_before_s,
               apply && fit->applicable ? ", applied" : (fit->applicable ? "" : ", not applicable"), ms);
    return out;
  }

  Status SetCalibration(const json& doc) override {
    advisor::AdvisorOptions next;
    json info;
    try {
      codec::ObjectReader r(doc, "");
      r.RejectUnknown({"format", "goodput", "per_hop_latency_us", "per_message_overhead_us", "fitted_at",
                       "observations", "rmse_s", "median_rel_error", "p90_rel_error"});
      if (r.String("format") != "drainwise.calibration/v1") {
        throw codec::FieldError("format", "expected 'drainwise.calibration/v1'");
      }
      std::lock_guard lock(mu_);
      next = options_;
      next.flow.goodput = r.Number("goodput");
      next.flow.per_hop_latency_s = r.Number("per_hop_latency_us") / 1e6;
      next.flow.per_message_overhead_s = r.Number("per_message_overhead_us") / 1e6;
      if (!(next.flow.goodput > 0 && next.flow.goodput <= 1)) throw codec::FieldError("goodput", "must be within (0, 1]");
      if (next.flow.per_hop_latency_s < 0) throw codec::FieldError("per_hop_latency_us", "must be >= 0");
      if (next.flow.per_message_overhead_s < 0) throw codec::FieldError("per_message_overhead_us", "must be >= 0");
      info = doc;
      info.erase("format");
      info["source"] = doc.contains("fitted_at") ? "fit" : "operator";
    } catch (const codec::FieldError& e) {
      return InvalidArgument(e.what());
    }
    std::lock_guard lock(mu_);
    options_ = next;
    calibration_ = info;
    RebuildAdvisorsLocked();
    return {};
  }

  void SetLinkState(int64_t topology_version, std::vector<double> background_bps,
                    std::vector<std::pair<model::LinkId, std::vector<std::string>>> degraded) override {
    std::lock_guard lock(mu_);
    link_state_version_ = topology_version;
    background_ = std::move(background_bps);
    degraded_ = std::move(degraded);
    RebuildAdvisorsLocked();
  }

  std::string RenderText(std::string_view kind, const json& body) const override {
    if (kind == "plan") return report::PlanText(body);
    if (kind == "candidates") return report::CandidatesText(body);
    return report::AssessmentText(body);
  }

 private:
  std::shared_ptr<const policies::Policy> Policy() const {
    std::lock_guard lock(mu_);
    return policy_;
  }
  // The advisor of the calibration in force; replaced whole when it changes.
  // With telemetry for the snapshot's topology, the one that subtracts the
  // measured background load.
  std::shared_ptr<const advisor::Advisor> Advisor(const model::Snapshot* snapshot = nullptr) const {
    std::lock_guard lock(mu_);
    if (snapshot && advisor_bg_ && snapshot->topology_version == link_state_version_) return advisor_bg_;
    return advisor_;
  }
  // A drain that pushes more traffic onto a link the telemetry calls
  // degraded is flagged, with the link's reasons and loads.
  void FlagDegradedLinks(const model::Snapshot& snap, const advisor::Assessment& a, json& out) const {
    std::vector<std::pair<model::LinkId, std::vector<std::string>>> degraded;
    {
      std::lock_guard lock(mu_);
      if (snap.topology_version != link_state_version_) return;
      degraded = degraded_;
    }
    if (degraded.empty() || !a.scenario.flow) return;
    const auto& f = *a.scenario.flow;
    json flagged = json::array();
    for (const auto& [link, reasons] : degraded) {
      for (uint32_t dir = 0; dir < 2; ++dir) {
        uint32_t d = 2 * link.value + dir;
        if (d >= f.drained_load_bps.size()) continue;
        double before = f.baseline_load_bps[d], after = f.drained_load_bps[d];
        if (after > before * 1.01 + 1e6) {
          const auto& L = snap.topology->link(link);
          flagged.push_back({{"link", fmt::format("{} -> {}", snap.topology->node(dir ? L.b : L.a).name,
                                                  snap.topology->node(dir ? L.a : L.b).name)},
                             {"reasons", reasons},
                             {"load_gbps_before", before / 1e9},
                             {"load_gbps_after", after / 1e9}});
        }
      }
    }
    if (flagged.empty()) return;
    out["degraded_links_loaded"] = flagged;
    out["notes"].push_back(fmt::format("the drain pushes more traffic onto {} degraded link direction(s)", flagged.size()));
  }

  void RebuildAdvisorsLocked() {
    advisor_ = std::make_shared<const advisor::Advisor>(options_);
    advisor_bg_.reset();
    if (!background_.empty()) {
      auto with_bg = options_;
      with_bg.flow.background_bps = background_;
      advisor_bg_ = std::make_shared<const advisor::Advisor>(with_bg);
    }
  }
  static advisor::Context Context(const server::EngineContext& ctx) {
    return advisor::Context{ctx.snapshot, ctx.active, ctx.now};
  }

  mutable std::mutex mu_;
  advisor::AdvisorOptions options_;
  std::shared_ptr<const advisor::Advisor> advisor_;
  std::shared_ptr<const advisor::Advisor> advisor_bg_;  // with background_ subtracted
  int64_t link_state_version_ = -1;
  std::vector<double> background_;
  std::vector<std::pair<model::LinkId, std::vector<std::string>>> degraded_;
  json calibration_;
  std::shared_ptr<const policies::Policy> policy_;
  std::shared_ptr<spdlog::logger> log_;
};

}  // namespace

std::unique_ptr<DaemonEngine> MakeEngine(advisor::AdvisorOptions options, policies::Policy policy,
                                         std::shared_ptr<spdlog::logger> log) {
  return std::make_unique<AdvisorEngine>(std::move(options), std::move(policy), std::move(log));
}

}  // namespace drainwise::app
