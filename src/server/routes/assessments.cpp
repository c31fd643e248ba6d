// Assessments, plans and drain candidates: the routes that run simulations
// (kSimulation) and the stored results (kRead).
#include <algorithm>

#include <fmt/format.h>

#include "codec/json_reader.h"
#include "codec/native.h"
#include "report/table.h"
#include "server/api.h"
#include "server/routes/common.h"

namespace drainwise::server {

using nlohmann::json;
using routing::Cell;

namespace {
json RecordJson(const store::AssessmentRecord& r) {
  json body = json::parse(r.result, nullptr, false);
  if (body.is_discarded() || !body.is_object()) body = json::object();
  json out = {{"id", r.id},
              {"kind", r.kind},
              {"created_at", codec::FormatRfc3339(r.created_at)},
              {"ticket", r.ticket},
              {"requested_by", r.requested_by},
              {"topology_version", r.topology_version},
              {"jobs_version", r.jobs_version}};
  json request = json::parse(r.request, nullptr, false);
  if (!request.is_discarded()) out["request"] = request;
  if (!r.verdict.empty()) out["verdict"] = r.verdict;
  for (auto it = body.begin(); it != body.end(); ++it) {
    if (!out.contains(it.key())) out[it.key()] = it.value();
  }
  return out;
}
}  // namespace

ApiResponse Api::PostAssessment(const RoutedRequest& rr) {
  const ApiRequest& req = rr.request;
  auto body = routing::ParseBody(req);
  if (!body) return ErrorResponse(body.error(), rr.path);
  if (!body->is_object()) {
    return ErrorResponse(Error{ErrorCode::kInvalidArgument, "request body: expected an object"}, rr.path);
  }
  std::string key = req.Header("idempotency-key");
  if (!key.empty()) {
    auto prior = state_->store().FindByIdempotencyKey(key);
    if (!prior) return ErrorResponse(prior.error(), rr.path);
    if (*prior) {
      auto r = WantsText(req, rr.query) ? TextResponse(200, engine_->RenderText("assessment", RecordJson(**prior)))
                                        : JsonResponse(200, RecordJson(**prior));
      r.headers.emplace_back("Location", "/v1/assessments/" + (*prior)->id);
      r.headers.emplace_back("Idempotent-Replayed", "true");
      return r;
    }
  }
  auto snap = state_->snapshot();
  if (!snap) return ErrorResponse(Error{ErrorCode::kUnavailable, "no snapshot loaded yet"}, rr.path);
  std::string ticket, requested_by;
  try {
    codec::ObjectReader r(*body, "");
    ticket = r.StringOr("ticket", "");
    requested_by = r.StringOr("requested_by", "");
  } catch (const codec::FieldError& e) {
    return ErrorResponse(Error{ErrorCode::kInvalidArgument, e.what()}, rr.path);
  }
  auto result = engine_->Assess(Context(req, snap), *body);
  if (!result) return ErrorResponse(result.error(), rr.path);
  store::AssessmentRecord rec;
  rec.id = routing::NewId("a", sequence_);
  rec.created_at = routing::NowSeconds();
  rec.kind = "assessment";
  rec.ticket = ticket;
  rec.requested_by = requested_by;
  rec.topology_version = snap->topology_version;
  rec.jobs_version = snap->jobs_version;
  rec.verdict = result->verdict;
  rec.idempotency_key = key;
  rec.request = body->dump();
  rec.result = result->body.dump();
  if (auto st = state_->store().PutAssessment(rec); !st) return ErrorResponse(st.error(), rr.path);
  if (hooks_.on_result) {
    hooks_.on_result("assessment", rec.verdict, result->body.value("timings_ms", json::object()).value("total", 0.0) / 1e3);
  }
  json out = RecordJson(rec);
  auto r = WantsText(req, rr.query) ? TextResponse(201, engine_->RenderText("assessment", out)) : JsonResponse(201, out);
  r.headers.emplace_back("Location", "/v1/assessments/" + rec.id);
  return r;
}

ApiResponse Api::GetAssessment(const RoutedRequest& rr) {
  const std::string& id = rr.Param("id");
  auto rec = state_->store().GetAssessment(id);
  if (!rec) return ErrorResponse(rec.error(), rr.path);
  if (!*rec) return ErrorResponse(Error{ErrorCode::kNotFound, fmt::format("unknown assessment '{}'", id)}, rr.path);
  json out = RecordJson(**rec);
  if (WantsText(rr.request, rr.query)) return TextResponse(200, engine_->RenderText((*rec)->kind, out));
  return JsonResponse(200, out);
}

ApiResponse Api::ListAssessments(const RoutedRequest& rr) {
  const std::string& ticket = rr.Query("ticket");
  int limit = 50;
  if (auto it = rr.query.find("limit"); it != rr.query.end()) limit = std::clamp(std::atoi(it->second.c_str()), 1, 1000);
  auto recs = state_->store().ListAssessments(ticket, limit);
  if (!recs) return ErrorResponse(recs.error(), rr.path);
  if (WantsText(rr.request, rr.query)) {
    report::Table t({"ID", "CREATED", "KIND", "VERDICT", "TICKET", "REQUESTED_BY"});
    for (const auto& r : *recs) {
      t.Add({Cell(r.id), codec::FormatRfc3339(r.created_at), Cell(r.kind), Cell(r.verdict), Cell(r.ticket),
             Cell(r.requested_by)});
    }
    return TextResponse(200, t.Render());
  }
  json list = json::array();
  for (const auto& r : *recs) {
    json request = json::parse(r.request, nullptr, false);
    json item = {{"id", r.id},
                 {"kind", r.kind},
                 {"created_at", codec::FormatRfc3339(r.created_at)},
                 {"ticket", r.ticket},
                 {"requested_by", r.requested_by},
                 {"verdict", r.verdict},
                 {"topology_version", r.topology_version},
                 {"jobs_version", r.jobs_version}};
    if (!request.is_discarded() && request.contains("drain")) item["drain"] = request["drain"];
    list.push_back(std::move(item));
  }
  return JsonResponse(200, {{"assessments", list}});
}

ApiResponse Api::DrainCandidates(const RoutedRequest& rr) {
  auto snap = state_->snapshot();
  if (!snap) return ErrorResponse(Error{ErrorCode::kUnavailable, "no snapshot loaded yet"}, rr.path);
  std::string tier = rr.Query("tier");
  std::vector<std::string> switches;
  if (auto it = rr.query.find("switches"); it != rr.query.end()) {
    std::string_view s = it->second;
    size_t start = 0;
    while (start <= s.size()) {
      size_t end = s.find(',', start);
      if (end == std::string_view::npos) end = s.size();
      if (end > start) switches.emplace_back(s.substr(start, end - start));
      start = end + 1;
    }
  }
  if (tier.empty() && switches.empty()) tier = "spine";
  auto r = engine_->DrainCandidates(Context(rr.request, snap), tier, switches);
  if (!r) return ErrorResponse(r.error(), rr.path);
  (*r)["topology_version"] = snap->topology_version;
  (*r)["jobs_version"] = snap->jobs_version;
  if (WantsText(rr.request, rr.query)) return TextResponse(200, engine_->RenderText("candidates", *r));
  return JsonResponse(200, *r);
}

ApiResponse Api::PostPlan(const RoutedRequest& rr) {
  const ApiRequest& req = rr.request;
  auto body = routing::ParseBody(req);
  if (!body) return ErrorResponse(body.error(), rr.path);
  if (!body->is_object()) {
    return ErrorResponse(Error{ErrorCode::kInvalidArgument, "request body: expected an object"}, rr.path);
  }
  auto snap = state_->snapshot();
  if (!snap) return ErrorResponse(Error{ErrorCode::kUnavailable, "no snapshot loaded yet"}, rr.path);
  auto result = engine_->Plan(Context(req, snap), *body);
  if (!result) return ErrorResponse(result.error(), rr.path);
  store::AssessmentRecord rec;
  rec.id = routing::NewId("p", sequence_);
  rec.created_at = routing::NowSeconds();
  rec.kind = "plan";
  rec.ticket = body->value("ticket", "");
  rec.requested_by = body->value("requested_by", "");
  rec.topology_version = snap->topology_version;
  rec.jobs_version = snap->jobs_version;
  rec.verdict = result->verdict;
  rec.request = body->dump();
  rec.result = result->body.dump();
  if (auto st = state_->store().PutAssessment(rec); !st) return ErrorResponse(st.error(), rr.path);
  if (hooks_.on_result) {
    hooks_.on_result("plan", rec.verdict, result->body.value("timings_ms", json::object()).value("total", 0.0) / 1e3);
  }
  json out = RecordJson(rec);
  auto r = WantsText(req, rr.query) ? TextResponse(201, engine_->RenderText("plan", out)) : JsonResponse(201, out);
  r.headers.emplace_back("Location", "/v1/assessments/" + rec.id);
  return r;
}

}  // namespace drainwise::server
