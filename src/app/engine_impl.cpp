#include "app/engine_impl.h"

#include "engine/codec.h"
#include "policies/policy.h"

namespace drainwise::app {

using nlohmann::json;

namespace {

class ViewEngine : public server::Engine {
 public:
  ViewEngine(server::State* state, engine::Engine* engine) : state_(state), engine_(engine) {}

  Result<server::EngineResult> Assess(const server::EngineContext& ctx, const json& body) override {
    auto view = state_->view();
    if (!view->snapshot) return MakeError(ErrorCode::kUnavailable, "no snapshot loaded yet");
    auto req = engine::ParseAssessRequest(body, *view->snapshot->topology);
    if (!req) return tl::unexpected(req.error());
    auto out = engine_->Assess(*view, *req, {ctx.now, ctx.stop});
    if (!out) return tl::unexpected(out.error());
    json doc = engine::AssessmentJson(*out, *view);
    std::string verdict = engine::VerdictOf(doc);
    return server::EngineResult{std::move(doc), verdict};
  }

  Result<json> DrainCandidates(const server::EngineContext& ctx, const std::string& tier,
                               const std::vector<std::string>& switches) override {
    auto view = state_->view();
    if (!view->snapshot) return MakeError(ErrorCode::kUnavailable, "no snapshot loaded yet");
    auto req = engine::ResolveCandidates(tier, switches, *view->snapshot->topology);
    if (!req) return tl::unexpected(req.error());
    auto out = engine_->DrainCandidates(*view, *req, {ctx.now, ctx.stop});
    if (!out) return tl::unexpected(out.error());
    return engine::CandidatesJson(*out, *view);
  }

  Result<server::EngineResult> Plan(const server::EngineContext& ctx, const json& body) override {
    auto view = state_->view();
    if (!view->snapshot) return MakeError(ErrorCode::kUnavailable, "no snapshot loaded yet");
    auto req = engine::ParsePlanRequest(body, *view->snapshot->topology);
    if (!req) return tl::unexpected(req.error());
    auto out = engine_->Plan(*view, *req, {ctx.now, ctx.stop});
    if (!out) return tl::unexpected(out.error());
    json doc = engine::PlanJson(*out, *view);
    std::string verdict = engine::VerdictOf(doc);
    return server::EngineResult{std::move(doc), verdict};
  }

  json PolicyJson() const override { return policies::PolicyToJson(*state_->view()->policy); }

  Status SetPolicy(const json& doc) override {
    auto p = policies::ParsePolicy(doc);
    if (!p) return tl::unexpected(p.error());
    state_->SetPolicy(std::move(*p));
    return {};
  }

  Result<double> PredictIteration(const server::EngineContext& ctx, const std::string& job,
                                  const model::Drain& drain) override {
    auto view = state_->view();
    if (!view->snapshot) return MakeError(ErrorCode::kUnavailable, "no snapshot loaded yet");
    auto j = view->snapshot->jobs->FindJob(job);
    if (!j) return NotFound("job: unknown job '" + job + "'");
    return engine_->PredictIteration(*view, *j, drain, {ctx.now, ctx.stop});
  }

  json CalibrationJson() const override { return engine::CalibrationJson(*state_->view()->calibration); }

  Result<json> Calibrate(const server::EngineContext& ctx, const std::vector<store::ObservationRecord>& records,
                         bool apply) override {
    auto view = state_->view();
    if (!view->snapshot) return MakeError(ErrorCode::kUnavailable, "no snapshot loaded yet");
    std::vector<engine::StoredObservation> obs;
    obs.reserve(records.size());
    for (const auto& r : records) obs.push_back({r.job_id, r.drain_key, r.iteration_s});
    auto fit = engine_->Calibrate(*view, obs, {ctx.now, ctx.stop});
    if (!fit) return tl::unexpected(fit.error());
    if (apply) state_->SetCalibration(fit->fitted);
    return engine::FitJson(*fit, apply);
  }

  Status SetCalibration(const json& doc) override {
    auto c = engine::ParseCalibration(doc, state_->view()->calibration->options);
    if (!c) return tl::unexpected(c.error());
    state_->SetCalibration(std::move(*c));
    return {};
  }

  std::string RenderText(std::string_view kind, const json& body) const override {
    return engine::RenderText(kind, body);
  }

 private:
  server::State* state_;
  engine::Engine* engine_;
};

}  // namespace

std::unique_ptr<server::Engine> MakeViewEngine(server::State* state, engine::Engine* engine) {
  return std::make_unique<ViewEngine>(state, engine);
}

}  // namespace drainwise::app
