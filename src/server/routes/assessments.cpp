// Assessments, plans and drain candidates: the routes that run simulations
// (kSimulation) and the stored results (kRead).
#include <algorithm>

#include <fmt/format.h>

#include "codec/json_reader.h"
#include "codec/native.h"
#include "engine/codec.h"
#include "report/table.h"
#include "server/api.h"
#include "server/routes/common.h"
#include "server/routes/idempotency.h"
#include "server/routes/packet_run.h"

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
              {"principal", r.principal},
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

// The answer for a stored record: 201 when just made, 200 when replayed.
ApiResponse RecordResponse(const RoutedRequest& rr, const store::AssessmentRecord& rec, bool replayed) {
  json out = RecordJson(rec);
  int status = replayed ? 200 : 201;
  auto r = WantsText(rr.request, rr.query) ? TextResponse(status, engine::RenderText(rec.kind, out))
                                           : JsonResponse(status, out);
  r.headers.emplace_back("Location", (rec.kind == "campaign" ? "/v1/campaigns/" : "/v1/assessments/") + rec.id);
  if (replayed) r.headers.emplace_back("Idempotent-Replayed", "true");
  return r;
}

// What a request with an Idempotency-Key gets before any simulation: the
// stored result when the principal used the key for this very request, a
// 422 when for another one; nothing when the key is new (or expired).
std::optional<ApiResponse> Replay(const RoutedRequest& rr, store::Store& store, const routing::IdempotencyKey& key) {
  auto entry = store.FindIdempotency(rr.principal, key.key);
  if (!entry) return ErrorResponse(entry.error(), rr.path);
  if (!*entry) return std::nullopt;
  if ((*entry)->fingerprint != key.fingerprint) return routing::KeyReused(key.key, rr.path);
  auto rec = store.GetAssessment((*entry)->record_id);
  if (!rec) return ErrorResponse(rec.error(), rr.path);
  if (!*rec) {
    return ErrorResponse(Error{ErrorCode::kConflict, fmt::format("Idempotency-Key '{}' names record '{}', which is "
                                                                 "no longer stored; use a new key",
                                                                 key.key, (*entry)->record_id)},
                         rr.path);
  }
  return RecordResponse(rr, **rec, true);
}

}  // namespace

// Assessments and plans share the idempotency and storage steps; only the
// engine call differs.
ApiResponse Api::PostSimulation(const RoutedRequest& rr, std::string_view kind) {
  const ApiRequest& req = rr.request;
  auto body = routing::ParseBody(req);
  if (!body) return ErrorResponse(body.error(), rr.path);
  if (!body->is_object()) {
    return ErrorResponse(Error{ErrorCode::kInvalidArgument, "request body: expected an object"}, rr.path);
  }
  auto key = routing::ReadIdempotencyKey(rr);
  if (!key) return ErrorResponse(key.error(), rr.path);
  // Held until the record is stored, so a concurrent retry cannot simulate a second time.
  auto hold = *key ? keys_in_flight_->Acquire(rr.principal, (*key)->key) : routing::KeysInFlight::Hold();
  if (*key) {
    if (!hold) return routing::KeyInFlight((*key)->key, rr.path);
    if (auto replay = Replay(rr, state_->store(), **key)) return *replay;
  }
  std::string ticket, requested_by;
  try {
    codec::ObjectReader r(*body, "");
    ticket = r.StringOr("ticket", "");
    requested_by = r.StringOr("requested_by", "");
  } catch (const codec::FieldError& e) {
    return ErrorResponse(Error{ErrorCode::kInvalidArgument, e.what()}, rr.path);
  }
  if (hooks_.catch_up) hooks_.catch_up();  // several daemons: the others' committed writes first
  auto view = state_->view();  // the one view this answer is computed on
  if (!view->snapshot) return ErrorResponse(Error{ErrorCode::kUnavailable, "no snapshot loaded yet"}, rr.path);
  const auto& snap = view->snapshot;
  bool plan = kind == "plan";
  // The id first: a campaign names its Slurm reservations after it.
  const std::string id = routing::NewId(kind == "campaign" ? "c" : plan ? "p" : "a", sequence_);
  // Wire JSON -> typed request -> engine -> typed result -> JSON, on `view`.
  json result;
  double total_ms = 0;
  if (kind == "campaign") {
    auto computed = ComputeCampaign(rr, *body, *view, id);
    if (!computed) return ErrorResponse(computed.error(), rr.path);
    result = std::move(computed->first);
    total_ms = computed->second;
  } else if (plan) {
    auto typed = engine::ParsePlanRequest(*body, *snap->topology);
    if (!typed) return ErrorResponse(typed.error(), rr.path);
    auto outcome = engine_->Plan(*view, *typed, Call(req));
    if (!outcome) return ErrorResponse(outcome.error(), rr.path);
    result = engine::PlanJson(*outcome, *view);
    total_ms = outcome->total_ms;
  } else {
    auto typed = engine::ParseAssessRequest(*body, *snap->topology);
    if (!typed) return ErrorResponse(typed.error(), rr.path);
    auto outcome = engine_->Assess(*view, *typed, Call(req));
    if (!outcome) return ErrorResponse(outcome.error(), rr.path);
    result = engine::AssessmentJson(*outcome, *view);
    total_ms = outcome->total_ms;
  }
  store::AssessmentRecord rec;
  rec.id = id;
  rec.created_at = routing::NowSeconds();
  rec.kind = std::string(kind);
  rec.ticket = ticket;
  rec.requested_by = requested_by;
  rec.principal = rr.principal;
  rec.topology_version = snap->topology_version;
  rec.jobs_version = snap->jobs_version;
  rec.verdict = engine::VerdictOf(result);
  if (*key) {
    rec.idempotency_key = (*key)->key;
    rec.idempotency_fingerprint = (*key)->fingerprint;
  }
  rec.request = body->dump();
  rec.result = result.dump();
  if (auto st = state_->store().PutAssessment(rec); !st) {
    // Another daemon thread or process stored the key first: answer as the draft says for a retry.
    if (st.error().code == ErrorCode::kConflict && *key) {
      if (auto replay = Replay(rr, state_->store(), **key)) return *replay;
    }
    return ErrorResponse(st.error(), rr.path);
  }
  if (hooks_.on_result) hooks_.on_result(rec.kind, rec.verdict, total_ms / 1e3);
  return RecordResponse(rr, rec, false);
}

ApiResponse Api::PostAssessment(const RoutedRequest& rr) {
  // "modes":["packet"] can take minutes: it is a background run (202 +
  // Location of /v1/simulations/{id}), never answered on the request path.
  if (auto packet = PacketRunBodyOfAssessment(rr.request.body)) {
    RoutedRequest run = rr;
    run.request.body = packet->dump();
    return PostSimulationRun(run);
  }
  return PostSimulation(rr, "assessment");
}

ApiResponse Api::PostPlan(const RoutedRequest& rr) { return PostSimulation(rr, "plan"); }

ApiResponse Api::GetAssessment(const RoutedRequest& rr) {
  const std::string& id = rr.Param("id");
  auto rec = state_->store().GetAssessment(id);
  if (!rec) return ErrorResponse(rec.error(), rr.path);
  if (!*rec) return ErrorResponse(Error{ErrorCode::kNotFound, fmt::format("unknown assessment '{}'", id)}, rr.path);
  json out = RecordJson(**rec);
  if (WantsText(rr.request, rr.query)) return TextResponse(200, engine::RenderText((*rec)->kind, out));
  return JsonResponse(200, out);
}

ApiResponse Api::ListAssessments(const RoutedRequest& rr) {
  const std::string& ticket = rr.Query("ticket");
  int limit = 50;
  if (auto it = rr.query.find("limit"); it != rr.query.end())
    limit = std::clamp(std::atoi(it->second.c_str()), 1, 1000);
  auto recs = state_->store().ListAssessments(ticket, limit);
  if (!recs) return ErrorResponse(recs.error(), rr.path);
  if (WantsText(rr.request, rr.query)) {
    report::Table t({"ID", "CREATED", "KIND", "VERDICT", "TICKET", "REQUESTED_BY", "PRINCIPAL"});
    for (const auto& r : *recs) {
      t.Add({Cell(r.id), codec::FormatRfc3339(r.created_at), Cell(r.kind), Cell(r.verdict), Cell(r.ticket),
             Cell(r.requested_by), Cell(r.principal)});
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
                 {"principal", r.principal},
                 {"verdict", r.verdict},
                 {"topology_version", r.topology_version},
                 {"jobs_version", r.jobs_version}};
    if (!request.is_discarded() && request.contains("drain")) item["drain"] = request["drain"];
    list.push_back(std::move(item));
  }
  return JsonResponse(200, {{"assessments", list}});
}

ApiResponse Api::DrainCandidates(const RoutedRequest& rr) {
  auto view = state_->view();
  if (!view->snapshot) return ErrorResponse(Error{ErrorCode::kUnavailable, "no snapshot loaded yet"}, rr.path);
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
  auto typed = engine::ResolveCandidates(tier, switches, *view->snapshot->topology);
  if (!typed) return ErrorResponse(typed.error(), rr.path);
  auto outcome = engine_->DrainCandidates(*view, *typed, Call(rr.request));
  if (!outcome) return ErrorResponse(outcome.error(), rr.path);
  json out = engine::CandidatesJson(*outcome, *view);
  if (WantsText(rr.request, rr.query)) return TextResponse(200, engine::RenderText("candidates", out));
  return JsonResponse(200, out);
}

}  // namespace drainwise::server
