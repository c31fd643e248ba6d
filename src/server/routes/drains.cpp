// Drains in progress: recorded, listed, ended.
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
json DrainJson(const store::DrainRecord& r) {
  json spec = json::parse(r.spec, nullptr, false);
  json out = {{"id", r.id},
              {"ticket", r.ticket},
              {"requested_by", r.requested_by},
              {"principal", r.principal},
              {"started_at", codec::FormatRfc3339(r.started_at)},
              {"drain", spec.is_discarded() ? json() : spec}};
  out["expected_end"] = r.expected_end ? json(codec::FormatRfc3339(*r.expected_end)) : json();
  out["ended_at"] = r.ended_at ? json(codec::FormatRfc3339(*r.ended_at)) : json();
  return out;
}
}  // namespace

ApiResponse Api::PostDrain(const RoutedRequest& rr) {
  auto body = routing::ParseBody(rr.request);
  if (!body) return ErrorResponse(body.error(), rr.path);
  auto snap = state_->snapshot();
  if (!snap) return ErrorResponse(Error{ErrorCode::kUnavailable, "no snapshot loaded yet"}, rr.path);
  store::DrainRecord rec;
  try {
    codec::ObjectReader r(*body, "");
    r.RejectUnknown({"drain", "ticket", "requested_by", "expected_end", "assessment"});
    if (!r.Has("drain")) throw codec::FieldError("drain", "required");
    auto spec = codec::ParseDrain(r.Raw("drain"));
    if (!spec) return ErrorResponse(spec.error(), rr.path);
    if (spec->empty()) throw codec::FieldError("drain", "names no switch and no link");
    auto resolved = model::ResolveDrain(*spec, *snap->topology);
    if (!resolved) return ErrorResponse(resolved.error().Wrap("drain"), rr.path);
    rec.ticket = r.StringOr("ticket", "");
    rec.requested_by = r.StringOr("requested_by", "");
    if (r.Has("expected_end")) {
      auto t = codec::ParseRfc3339(r.String("expected_end"));
      if (!t) throw codec::FieldError("expected_end", "not an RFC 3339 time");
      rec.expected_end = *t;
    }
    rec.spec = codec::DrainSpecToJson(*spec).dump();
  } catch (const codec::FieldError& e) {
    return ErrorResponse(Error{ErrorCode::kInvalidArgument, e.what()}, rr.path);
  }
  rec.principal = rr.principal;
  rec.id = routing::NewId("d", sequence_);
  rec.started_at = routing::NowSeconds();
  if (auto st = state_->store().PutDrain(rec); !st) return ErrorResponse(st.error(), rr.path);
  if (auto st = state_->ReloadDrains(); !st) return ErrorResponse(st.error(), rr.path);
  auto r = JsonResponse(201, DrainJson(rec));
  r.headers.emplace_back("Location", "/v1/drains/" + rec.id);
  return r;
}

ApiResponse Api::ListDrains(const RoutedRequest& rr) {
  const std::string& all_param = rr.Query("all");
  bool all = all_param == "true" || all_param == "1";
  auto recs = state_->store().ListDrains(!all);
  if (!recs) return ErrorResponse(recs.error(), rr.path);
  if (WantsText(rr.request, rr.query)) {
    report::Table t({"ID", "STARTED", "EXPECTED_END", "ENDED", "TICKET", "REQUESTED_BY", "PRINCIPAL", "DRAIN"});
    for (const auto& r : *recs) {
      t.Add({Cell(r.id), codec::FormatRfc3339(r.started_at),
             r.expected_end ? codec::FormatRfc3339(*r.expected_end) : "-",
             r.ended_at ? codec::FormatRfc3339(*r.ended_at) : "-", Cell(r.ticket), Cell(r.requested_by),
             Cell(r.principal), Cell(r.spec)});
    }
    return TextResponse(200, t.Render());
  }
  json list = json::array();
  for (const auto& r : *recs) list.push_back(DrainJson(r));
  return JsonResponse(200, {{"drains", list}});
}

ApiResponse Api::DeleteDrain(const RoutedRequest& rr) {
  const std::string& id = rr.Param("id");
  auto ended = state_->store().EndDrain(id, routing::NowSeconds());
  if (!ended) return ErrorResponse(ended.error(), rr.path);
  if (!*ended) return ErrorResponse(Error{ErrorCode::kNotFound, fmt::format("no active drain '{}'", id)}, rr.path);
  if (auto st = state_->ReloadDrains(); !st) return ErrorResponse(st.error(), rr.path);
  return JsonResponse(200, {{"id", id}, {"ended", true}});
}

}  // namespace drainwise::server
