#include "engine/codec.h"

#include <cmath>

#include <fmt/format.h>

#include "codec/json_reader.h"
#include "engine/campaign.h"
#include "codec/native.h"
#include "report/advisor_report.h"
#include "report/job_report.h"
#include "report/packet_report.h"

namespace drainwise::engine {

using nlohmann::json;

namespace {
double Round2(double ms) { return std::round(ms * 100) / 100; }

bool ParseModes(const codec::ObjectReader& r) {
  bool flow = false;
  for (const auto& m : r.StringList("modes")) {
    if (m == "flow")
      flow = true;
    else if (m != "job")
      throw codec::FieldError("modes", fmt::format("unknown mode '{}' (job, flow)", m));
  }
  return flow;
}
}  // namespace

Result<AssessRequest> ParseAssessRequest(const json& body, const model::Topology& topology) {
  advisor::Request req;
  try {
    codec::ObjectReader r(body, "");
    r.RejectUnknown(
        {"drain", "any_of", "modes", "routing", "ticket", "requested_by", "recommend", "window", "duration_s"});
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
    req.flow = ParseModes(r);
    if (r.Has("routing")) {
      auto m = sim::ParseFlowRouting(r.String("routing"));
      if (!m)
        throw codec::FieldError("routing", "expected spray, spray-path, hash, hash-resilient, hash-rehash or adaptive");
      req.routing = *m;
    }
    req.recommend = r.BoolOr("recommend", true);
    if (r.Has("window")) {
      auto w = ParseTimeWindow(r.Raw("window"), "window");
      if (!w) return tl::unexpected(w.error());
      req.window = *w;
    }
    if (r.Has("duration_s")) {
      req.duration_s = r.Number("duration_s");
      if (!(req.duration_s > 0)) throw codec::FieldError("duration_s", "must be > 0");
    }
  } catch (const codec::FieldError& e) {
    return InvalidArgument(e.what());
  }
  return req;
}

Result<PlanRequest> ParsePlanRequest(const json& body, const model::Topology& topology) {
  PlanRequest req;
  try {
    codec::ObjectReader r(body, "");
    r.RejectUnknown({"switches", "modes", "ticket", "requested_by"});
    model::DrainSpec spec;
    spec.switches = r.StringList("switches");
    if (spec.switches.empty()) throw codec::FieldError("switches", "required: the switches that must all be drained");
    auto d = model::ResolveDrain(spec, topology);
    if (!d) return tl::unexpected(d.error());
    req.switches = d->switches;
    req.flow = ParseModes(r);
  } catch (const codec::FieldError& e) {
    return InvalidArgument(e.what());
  }
  return req;
}

Result<CandidatesRequest> ResolveCandidates(const std::string& tier, const std::vector<std::string>& switches,
                                            const model::Topology& topo) {
  CandidatesRequest req;
  if (!switches.empty()) {
    model::DrainSpec spec;
    spec.switches = switches;
    auto d = model::ResolveDrain(spec, topo);
    if (!d) return tl::unexpected(d.error().Wrap("switches"));
    req.switches = d->switches;
    return req;
  }
  req.tier = tier;
  req.switches = sim::SwitchesOfTier(topo, tier);
  if (req.switches.empty()) {
    std::string tiers;
    for (const auto& [level, name] : topo.tiers()) tiers += (tiers.empty() ? "" : ", ") + name;
    return InvalidArgument(fmt::format("tier: no switch of tier '{}' (this fabric has {})", tier, tiers));
  }
  return req;
}

Result<Calibration> ParseCalibration(const json& doc, const advisor::AdvisorOptions& base) {
  Calibration c;
  c.options = base;
  try {
    codec::ObjectReader r(doc, "");
    r.RejectUnknown({"format", "goodput", "per_hop_latency_us", "per_message_overhead_us", "fitted_at", "observations",
                     "rmse_s", "median_rel_error", "p90_rel_error"});
    if (r.String("format") != "drainwise.calibration/v1") {
      throw codec::FieldError("format", "expected 'drainwise.calibration/v1'");
    }
    auto& f = c.options.flow;
    f.goodput = r.Number("goodput");
    f.per_hop_latency_s = r.Number("per_hop_latency_us") / 1e6;
    f.per_message_overhead_s = r.Number("per_message_overhead_us") / 1e6;
    if (!(f.goodput > 0 && f.goodput <= 1)) throw codec::FieldError("goodput", "must be within (0, 1]");
    if (!(f.per_hop_latency_s >= 0 && std::isfinite(f.per_hop_latency_s))) {
      throw codec::FieldError("per_hop_latency_us", "must be a finite number >= 0");
    }
    if (!(f.per_message_overhead_s >= 0 && std::isfinite(f.per_message_overhead_s))) {
      throw codec::FieldError("per_message_overhead_us", "must be a finite number >= 0");
    }
    c.source = "operator";
    if (r.Has("fitted_at")) {
      auto t = codec::ParseRfc3339(r.String("fitted_at"));
      if (!t) throw codec::FieldError("fitted_at", "not an RFC 3339 time");
      c.source = "fit";
      c.fitted_at = *t;
    }
    if (r.Has("observations")) c.observations = r.Int("observations");
    if (r.Has("rmse_s")) c.rmse_s = r.Number("rmse_s");
    if (r.Has("median_rel_error")) c.median_rel_error = r.Number("median_rel_error");
    if (r.Has("p90_rel_error")) c.p90_rel_error = r.Number("p90_rel_error");
  } catch (const codec::FieldError& e) {
    return InvalidArgument(e.what());
  }
  return c;
}

namespace {
void FitFields(const Calibration& c, json& out) {
  if (c.fitted_at) out["fitted_at"] = codec::FormatRfc3339(*c.fitted_at);
  if (c.observations) out["observations"] = *c.observations;
  if (c.rmse_s) out["rmse_s"] = *c.rmse_s;
  if (c.median_rel_error) out["median_rel_error"] = *c.median_rel_error;
  if (c.p90_rel_error) out["p90_rel_error"] = *c.p90_rel_error;
}
}  // namespace

json CalibrationJson(const Calibration& c) {
  const auto& f = c.options.flow;
  json out = {{"source", c.source},
              {"goodput", f.goodput},
              {"per_hop_latency_us", f.per_hop_latency_s * 1e6},
              {"per_message_overhead_us", f.per_message_overhead_s * 1e6}};
  FitFields(c, out);
  return out;
}

json CalibrationDocument(const Calibration& c) {
  const auto& f = c.options.flow;
  json out = {{"format", "drainwise.calibration/v1"},
              {"goodput", f.goodput},
              {"per_hop_latency_us", f.per_hop_latency_s * 1e6},
              {"per_message_overhead_us", f.per_message_overhead_s * 1e6}};
  FitFields(c, out);
  return out;
}

json AssessmentJson(const AssessOutcome& o, const View& view) {
  const auto& snap = *view.snapshot;
  report::AssessmentJsonOptions jo;
  jo.flow = o.flow;
  json out = report::AssessmentToJson(o.assessment, snap, jo);
  if (out.contains("model")) {
    out["model"]["calibration"] = CalibrationJson(*view.calibration);
    out["model"]["background_from_telemetry"] = o.background_from_telemetry;
  }
  if (!o.degraded_loaded.empty()) {
    json flagged = json::array();
    for (const auto& d : o.degraded_loaded) {
      const auto& L = snap.topology->link(d.link);
      flagged.push_back({{"link", fmt::format("{} -> {}", snap.topology->node(d.direction ? L.b : L.a).name,
                                              snap.topology->node(d.direction ? L.a : L.b).name)},
                         {"reasons", d.reasons},
                         {"load_gbps_before", d.before_bps / 1e9},
                         {"load_gbps_after", d.after_bps / 1e9}});
    }
    out["degraded_links_loaded"] = flagged;
    out["notes"].push_back(
        fmt::format("the drain pushes more traffic onto {} degraded link direction(s)", flagged.size()));
  }
  out["timings_ms"]["total"] = Round2(o.total_ms);
  return out;
}

json CandidatesJson(const CandidatesOutcome& o, const View& view) {
  auto out = report::DrainCandidatesToJson(o.candidates, *view.snapshot, 10);
  out["tier"] = o.tier;
  out["timings_ms"] = {{"total", Round2(o.total_ms)}};
  out["topology_version"] = view.snapshot->topology_version;
  out["jobs_version"] = view.snapshot->jobs_version;
  return out;
}

json PlanJson(const PlanOutcome& o, const View& view) {
  json out = report::PlanToJson(o.plan, *view.snapshot);
  out["timings_ms"] = {{"total", Round2(o.total_ms)}};
  return out;
}

namespace {
// One parameter's identifiability; `scale` converts seconds to microseconds.
json ParamJson(const advisor::ParamReport& p, double scale) {
  auto num = [](double v) { return std::isfinite(v) ? json(v) : json(); };
  return {{"value", p.value * scale},
          {"default", p.default_value * scale},
          {"identified", p.identified},
          {"data_share", p.data_share},
          {"interval95", p.identified ? json::array({num(p.lo * scale), num(p.hi * scale)}) : json()}};
}
}  // namespace

json FitJson(const FitOutcome& o, bool applied) {
  json unidentified = json::array();
  if (!o.fit.goodput.identified) unidentified.push_back("goodput");
  if (!o.fit.per_hop_latency.identified) unidentified.push_back("per_hop_latency_us");
  if (!o.fit.per_message_overhead.identified) unidentified.push_back("per_message_overhead_us");
  const auto& prior = o.prior;
  json out = {{"calibration", CalibrationDocument(o.fitted)},
              {"before",
               {{"goodput", o.before.goodput},
                {"per_hop_latency_us", o.before.per_hop_latency_s * 1e6},
                {"per_message_overhead_us", o.before.per_message_overhead_s * 1e6},
                {"rmse_s", o.fit.rmse_before_s}}},
              {"holdout",
               {{"method", "leave-one-out"},
                {"folds", o.fit.folds},
                {"rmse_s", o.fit.holdout_rmse_s},
                {"rmse_before_s", o.fit.holdout_rmse_before_s},
                {"rel_rms_error", o.fit.holdout_rel_rms},
                {"rel_rms_error_before", o.fit.holdout_rel_rms_before}}},
              {"parameters",
               {{"goodput", ParamJson(o.fit.goodput, 1)},
                {"per_hop_latency_us", ParamJson(o.fit.per_hop_latency, 1e6)},
                {"per_message_overhead_us", ParamJson(o.fit.per_message_overhead, 1e6)}}},
              {"unidentified", unidentified},
              {"prior",
               {{"goodput_sd", prior.goodput},
                {"per_hop_latency_sd_us", prior.per_hop_latency_s * 1e6},
                {"per_message_overhead_sd_us", prior.per_message_overhead_s * 1e6},
                {"noise", prior.noise},
                {"noise_used", o.fit.noise}}},
              {"applicable", o.fit.applicable},
              {"skipped", o.skipped},
              {"applied", applied}};
  if (!o.fit.applicable) out["not_applicable"] = o.fit.not_applicable;
  return out;
}

std::string VerdictOf(const json& document) {
  auto it = document.find("verdict");
  return it != document.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string RenderText(std::string_view kind, const json& body) {
  if (kind == "plan") return report::PlanText(body);
  if (kind == "candidates") return report::CandidatesText(body);
  if (kind == "packet") return report::PacketReportText(body);  // stored by a packet background run
  if (kind == "campaign") return CampaignText(body);
  return report::AssessmentText(body);
}

}  // namespace drainwise::engine
