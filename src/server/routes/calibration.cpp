// Observations and calibration: measured iteration times, the model's error
// against them, and fitting the transport parameters.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "advisor/calibration.h"
#include "codec/json_reader.h"
#include "codec/native.h"
#include "engine/codec.h"
#include "server/api.h"
#include "server/problem.h"
#include "server/routes/common.h"

namespace drainwise::server {

using nlohmann::json;

namespace {
// A drain's canonical key: the same drain always gives the same text.
std::string DrainKey(const model::Drain& d, const model::Topology& t) {
  if (d.empty()) return "";
  return codec::DrainSpecToJson(model::DescribeDrain(d, t)).dump();
}
}  // namespace

ApiResponse Api::PostObservations(const RoutedRequest& rr) {
  auto body = routing::ParseBody(rr.request);
  if (!body) return ErrorResponse(body.error(), rr.path);
  auto view = state_->view();  // one view: predictions and drain keys agree
  if (!view->snapshot) return ErrorResponse(Error{ErrorCode::kUnavailable, "no snapshot loaded yet"}, rr.path);
  const auto& snap = view->snapshot;
  json items = body->is_object() && body->contains("observations") ? (*body)["observations"] : *body;
  if (items.is_object()) items = json::array({items});
  if (!items.is_array() || items.empty()) {
    return ErrorResponse(Error{ErrorCode::kInvalidArgument, "observations: expected a non-empty array"}, rr.path);
  }
  const engine::Call call = Call(rr.request);
  // Validate everything before storing anything.
  std::vector<store::ObservationRecord> records;
  for (size_t i = 0; i < items.size(); ++i) {
    std::string at = fmt::format("observations[{}]", i);
    store::ObservationRecord rec;
    model::Drain drain = view->active;
    try {
      codec::ObjectReader r(items[i], at);
      r.RejectUnknown({"job", "iteration_s", "observed_at", "drain"});
      rec.job_id = r.String("job");
      rec.iteration_s = r.Number("iteration_s");
      if (auto ok = advisor::CheckObservedIteration(rec.iteration_s, r.Child("iteration_s")); !ok) {
        return ErrorResponse(ok.error(), rr.path);
      }
      if (r.Has("observed_at")) {
        auto t = codec::ParseRfc3339(r.String("observed_at"));
        if (!t) throw codec::FieldError(r.Child("observed_at"), "not an RFC 3339 time");
        rec.observed_at = *t;
      }
      if (r.Has("drain")) {
        auto spec = codec::ParseDrain(r.Raw("drain"));
        if (!spec) return ErrorResponse(spec.error().Wrap(at), rr.path);
        auto d = model::ResolveDrain(*spec, *snap->topology);
        if (!d) return ErrorResponse(d.error().Wrap(at + ".drain"), rr.path);
        drain = std::move(*d);
      }
    } catch (const codec::FieldError& e) {
      return ErrorResponse(Error{ErrorCode::kInvalidArgument, e.what()}, rr.path);
    }
    auto job = snap->jobs->FindJob(rec.job_id);
    if (!job) {
      return ErrorResponse(Error{ErrorCode::kNotFound, fmt::format("{}: job: unknown job '{}'", at, rec.job_id)},
                           rr.path);
    }
    auto predicted = engine_->PredictIteration(*view, *job, drain, call);
    if (!predicted) return ErrorResponse(predicted.error().Wrap(at), rr.path);
    rec.predicted_s = *predicted;
    rec.drain_key = DrainKey(drain, *snap->topology);
    rec.body = items[i].dump();
    records.push_back(std::move(rec));
  }
  json stored = json::array();
  for (auto& rec : records) {
    auto id = state_->store().PutObservation(rec);
    if (!id) return ErrorResponse(id.error(), rr.path);
    stored.push_back({{"id", *id},
                      {"job", rec.job_id},
                      {"observed_s", rec.iteration_s},
                      {"predicted_s", rec.predicted_s},
                      {"error_pct", (rec.predicted_s / rec.iteration_s - 1) * 100}});
  }
  return JsonResponse(201, {{"stored", stored}});
}

ApiResponse Api::ListObservations(const RoutedRequest& rr) {
  int limit = 100;
  if (auto it = rr.query.find("limit"); it != rr.query.end()) {
    limit = std::clamp(std::atoi(it->second.c_str()), 1, 100000);
  }
  auto recs = state_->store().ListObservations(rr.Query("job"), limit);
  if (!recs) return ErrorResponse(recs.error(), rr.path);
  json list = json::array();
  for (const auto& r : *recs) {
    json drain = r.drain_key.empty() ? json() : json::parse(r.drain_key, nullptr, false);
    list.push_back({{"id", r.id},
                    {"job", r.job_id},
                    {"observed_at", codec::FormatRfc3339(r.observed_at)},
                    {"observed_s", r.iteration_s},
                    {"predicted_s", r.predicted_s},
                    {"drain", drain}});
  }
  return JsonResponse(200, {{"observations", list}});
}

ApiResponse Api::GetCalibration(const RoutedRequest& rr) {
  json out = engine::CalibrationJson(*state_->view()->calibration);
  auto recs = state_->store().ListObservations("", 100000);
  if (!recs) return ErrorResponse(recs.error(), rr.path);
  // Error of iteration-time predictions, and of predicted slowdowns: the
  // latest undrained and drained observations of each job, per drain.
  std::vector<double> rel;
  std::map<std::string, const store::ObservationRecord*> base;
  std::map<std::pair<std::string, std::string>, const store::ObservationRecord*> drained;
  for (const auto& r : *recs) {  // newest first
    if (r.predicted_s > 0) rel.push_back(std::fabs(r.predicted_s - r.iteration_s) / r.iteration_s * 100);
    if (r.drain_key.empty())
      base.emplace(r.job_id, &r);
    else
      drained.emplace(std::make_pair(r.job_id, r.drain_key), &r);
  }
  std::vector<double> sd_err;
  for (const auto& [key, d] : drained) {
    auto b = base.find(key.first);
    if (b == base.end() || b->second->predicted_s <= 0 || d->predicted_s <= 0) continue;
    double observed = (d->iteration_s / b->second->iteration_s - 1) * 100;
    double predicted = (d->predicted_s / b->second->predicted_s - 1) * 100;
    sd_err.push_back(std::fabs(predicted - observed));
  }
  auto q = [](std::vector<double> v, double p) {
    if (v.empty()) return json();
    std::sort(v.begin(), v.end());
    double pos = p * static_cast<double>(v.size() - 1);
    size_t lo = static_cast<size_t>(pos);
    size_t hi = std::min(lo + 1, v.size() - 1);
    return json(v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo)));
  };
  out["observations"] = recs->size();
  out["iteration_error_pct"] = {{"median", q(rel, 0.5)}, {"p90", q(rel, 0.9)}};
  out["slowdown_error_pct_points"] = {{"pairs", sd_err.size()}, {"median", q(sd_err, 0.5)}, {"p90", q(sd_err, 0.9)}};
  return JsonResponse(200, out);
}

ApiResponse Api::PostCalibration(const RoutedRequest& rr) {
  bool apply = false;
  if (!rr.request.body.empty()) {
    auto body = routing::ParseBody(rr.request);
    if (!body) return ErrorResponse(body.error(), rr.path);
    try {
      codec::ObjectReader r(*body, "");
      r.RejectUnknown({"apply"});
      apply = r.BoolOr("apply", false);
    } catch (const codec::FieldError& e) {
      return ErrorResponse(Error{ErrorCode::kInvalidArgument, e.what()}, rr.path);
    }
  }
  auto view = state_->view();
  if (!view->snapshot) return ErrorResponse(Error{ErrorCode::kUnavailable, "no snapshot loaded yet"}, rr.path);
  auto recs = state_->store().ListObservations("", 100000);
  if (!recs) return ErrorResponse(recs.error(), rr.path);
  std::vector<engine::StoredObservation> observations;
  observations.reserve(recs->size());
  for (const auto& r : *recs) observations.push_back({r.job_id, r.drain_key, r.iteration_s});
  auto fit = engine_->Calibrate(*view, observations, Call(rr.request));
  if (!fit) return ErrorResponse(fit.error(), rr.path);
  if (apply && !fit->fit.applicable) {
    // Refused, not quietly skipped: a problem whose detail names the fit's
    // and the parameters in force's held-out errors, with the whole fit as
    // an extension member ("fit") for the caller to show.
    Error refused{ErrorCode::kConflict, "calibration not applied: " + fit->fit.not_applicable};
    json problem = ProblemJson(refused, rr.path);
    problem["fit"] = engine::FitJson(*fit, false);
    ApiResponse res = ErrorResponse(refused, rr.path);
    res.body = problem.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
    return res;
  }
  const bool applied = apply;  // and applicable (above)
  json out = engine::FitJson(*fit, applied);
  if (applied) {
    // Stored before it is served, like every document.
    store::DocumentInfo info;
    info.kind = store::DocKind::kCalibration;
    info.source = "fit";
    info.principal = rr.principal;
    auto put = state_->store().PutDocument(info, out["calibration"].dump());
    if (!put) return ErrorResponse(put.error(), rr.path);
    state_->SetCalibration(fit->fitted);
    out["version"] = put->version;
  }
  return JsonResponse(200, out);
}

ApiResponse Api::PutCalibration(const RoutedRequest& rr) {
  auto body = routing::ParseBody(rr.request);
  if (!body) return ErrorResponse(body.error(), rr.path);
  auto calibration = engine::ParseCalibration(*body, state_->view()->calibration->options);
  if (!calibration) return ErrorResponse(calibration.error(), rr.path);
  store::DocumentInfo info;
  info.kind = store::DocKind::kCalibration;
  info.source = routing::ApiSource(rr.request);
  info.principal = rr.principal;
  auto put = state_->store().PutDocument(info, body->dump());
  if (!put) return ErrorResponse(put.error(), rr.path);
  state_->SetCalibration(std::move(*calibration));
  return JsonResponse(put->created ? 201 : 200, {{"version", put->version}, {"created", put->created}});
}

}  // namespace drainwise::server
