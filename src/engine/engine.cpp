#include "engine/engine.h"

#include <chrono>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "codec/json_reader.h"
#include "codec/native.h"
#include "engine/campaign.h"

namespace drainwise::engine {

namespace {

double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// A drain that pushes more traffic onto a link the telemetry calls degraded
// is flagged, with the link's reasons and loads.
std::vector<DegradedLinkLoad> DegradedLoaded(const View& view, const advisor::Assessment& a) {
  std::vector<DegradedLinkLoad> out;
  if (!view.link_state || view.link_state->degraded.empty() || !a.scenario.flow) return out;
  const auto& f = *a.scenario.flow;
  for (const auto& [link, reasons] : view.link_state->degraded) {
    for (uint32_t dir = 0; dir < 2; ++dir) {
      uint32_t d = 2 * link.value + dir;
      if (d >= f.drained_load_bps.size()) continue;
      double before = f.baseline_load_bps[d], after = f.drained_load_bps[d];
      if (after > before * 1.01 + 1e6) out.push_back({link, dir, reasons, before, after});
    }
  }
  return out;
}

class AdvisorEngine final : public Engine {
 public:
  explicit AdvisorEngine(std::shared_ptr<spdlog::logger> log) : log_(std::move(log)) {}

  Result<AssessOutcome> Assess(const View& view, const AssessRequest& request, const Call& call) override {
    auto start = std::chrono::steady_clock::now();
    const auto& adv = view.AssessingAdvisor();
    auto a = adv.Assess(view.AdvisorContext(call.now), request, *view.policy, call.stop);
    if (!a) return tl::unexpected(a.error());
    AssessOutcome out;
    out.flow = request.flow;
    out.background_from_telemetry = view.advisor_background != nullptr;
    out.degraded_loaded = DegradedLoaded(view, *a);
    out.assessment = std::move(*a);
    out.total_ms = MsSince(start);
    const auto& s = out.assessment.scenario;
    log_->info(
        "assessment topology=v{} jobs=v{} view={} switches={} links={} flow={} verdict={} jobs_affected={} "
        "disconnected={} recommendations={} {:.1f}ms",
        view.snapshot->topology_version, view.snapshot->jobs_version, view.version, s.drain.switches.size(),
        s.drain.links.size(), request.flow, policies::DecisionName(s.verdict.decision), s.jobs_affected,
        s.jobs_disconnected, out.assessment.recommendations.size(), out.total_ms);
    return out;
  }

  Result<CandidatesOutcome> DrainCandidates(const View& view, const CandidatesRequest& request,
                                            const Call& call) override {
    auto start = std::chrono::steady_clock::now();
    auto c = view.advisor->Candidates(view.AdvisorContext(call.now), request.switches, call.stop);
    if (!c) return tl::unexpected(c.error());
    CandidatesOutcome out{std::move(*c), request.tier, MsSince(start)};
    log_->info("drain-candidates tier={} switches={} {:.1f}ms", request.tier, request.switches.size(), out.total_ms);
    return out;
  }

  Result<CampaignOutcome> Campaign(const View& view, const CampaignRequest& request, const Call& call) override {
    auto out = Engine::Campaign(view, request, call);
    if (!out) return out;
    const auto& s = out->campaign.chosen;
    log_->info("campaign items={} batches={} unscheduled={} strategy={} gpu_hours={:.2f} flow={} {:.1f}ms",
               request.items.size(), s.batches.size(), s.unscheduled.size(), s.strategy, s.gpu_hours(), request.flow,
               out->total_ms);
    return out;
  }

  Result<PlanOutcome> Plan(const View& view, const PlanRequest& request, const Call& call) override {
    auto start = std::chrono::steady_clock::now();
    auto plan = view.advisor->PlanDrains(view.AdvisorContext(call.now), request.switches, request.flow, *view.policy,
                                         call.stop);
    if (!plan) return tl::unexpected(plan.error());
    PlanOutcome out{std::move(*plan), MsSince(start)};
    log_->info("plan switches={} batches={} all_allowed={} {:.1f}ms", request.switches.size(), out.plan.batches.size(),
               out.plan.all_allowed, out.total_ms);
    return out;
  }

  Result<double> PredictIteration(const View& view, model::JobId job, const model::Drain& drain,
                                  const Call& call) override {
    const auto& adv = *view.advisor;
    auto fsim = adv.FlowSim(view.AdvisorContext(call.now), adv.options().flow, call.stop);
    if (!fsim) return tl::unexpected(fsim.error());
    auto rep = (*fsim)->Simulate(drain, call.stop, adv.flow_runner());
    if (!rep) return tl::unexpected(rep.error());
    const auto& side = rep->jobs[job.value].drained;
    if (!side.connected) return 0.0;  // no prediction for a cut-off job
    return side.iteration_s;
  }

  Result<FitOutcome> Calibrate(const View& view, const std::vector<StoredObservation>& records,
                               const Call& call) override {
    auto start = std::chrono::steady_clock::now();
    const auto& topo = *view.snapshot->topology;
    std::vector<advisor::Observation> obs;
    std::vector<double> observed;
    FitOutcome out;
    for (const auto& r : records) {
      auto j = view.snapshot->jobs->FindJob(r.job_id);
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
        ++out.skipped;  // the job or an element is gone from the current snapshot
        continue;
      }
      obs.push_back({*j, drain, r.iteration_s});
      observed.push_back(r.iteration_s);
    }
    const auto& f = view.advisor->options().flow;
    auto terms = advisor::ComputeTerms(view.snapshot, obs, f, call.stop);
    if (!terms) return tl::unexpected(terms.error());
    out.before = {f.goodput, f.per_hop_latency_s, f.per_message_overhead_s};
    advisor::FitSettings settings;
    settings.defaults = ConfiguredParams(*view.calibration);  // regularised towards the configuration's
    out.defaults = settings.defaults;
    out.prior = settings.prior;
    auto fit = advisor::FitCalibration(*terms, observed, out.before, settings);
    if (!fit) return tl::unexpected(fit.error());
    out.fit = *fit;
    out.fitted = *view.calibration;
    out.fitted.options.flow.goodput = fit->params.goodput;
    out.fitted.options.flow.per_hop_latency_s = fit->params.per_hop_latency_s;
    out.fitted.options.flow.per_message_overhead_s = fit->params.per_message_overhead_s;
    out.fitted.source = "fit";
    out.fitted.fitted_at = call.now;
    out.fitted.observations = fit->observations;
    out.fitted.rmse_s = fit->rmse_s;
    out.fitted.median_rel_error = fit->median_rel_error;
    out.fitted.p90_rel_error = fit->p90_rel_error;
    out.total_ms = MsSince(start);
    log_->info(
        "calibration fit on {} observations: goodput {:.3f}, {:.2f} us/hop, {:.2f} us/message, rmse {:.4f} s "
        "(was {:.4f} s){} {:.1f}ms",
        fit->observations, fit->params.goodput, fit->params.per_hop_latency_s * 1e6,
        fit->params.per_message_overhead_s * 1e6, fit->rmse_s, fit->rmse_before_s,
        fit->applicable ? "" : ", not applicable", out.total_ms);
    return out;
  }

 private:
  std::shared_ptr<spdlog::logger> log_;
};

}  // namespace

std::unique_ptr<Engine> MakeEngine(std::shared_ptr<spdlog::logger> log) {
  return std::make_unique<AdvisorEngine>(std::move(log));
}

}  // namespace drainwise::engine
