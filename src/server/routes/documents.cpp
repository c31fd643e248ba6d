// The documents: topology, jobs, their stored versions, and the policy.
#include <algorithm>

#include <fmt/format.h>

#include "codec/json_reader.h"
#include "codec/native.h"
#include "policies/policy.h"
#include "report/table.h"
#include "server/api.h"
#include "server/routes/common.h"

namespace drainwise::server {

using nlohmann::json;
using routing::Cell;

ApiResponse Api::GetTopology(const RoutedRequest& rr) {
  auto snap = state_->snapshot();
  if (!snap) return ErrorResponse(Error{ErrorCode::kUnavailable, "no topology loaded yet"}, rr.path);
  auto r = JsonResponse(200, codec::TopologyToJson(*snap->topology));
  r.headers.emplace_back("Drainwise-Topology-Version", std::to_string(snap->topology_version));
  r.headers.emplace_back("ETag", fmt::format("\"topology-{}\"", snap->topology_version));
  return r;
}

ApiResponse Api::PutTopology(const RoutedRequest& rr) {
  auto body = routing::ParseBody(rr.request);
  if (!body) return ErrorResponse(body.error(), rr.path);
  auto out = state_->PutTopology(*body, routing::ApiSource(rr.request), rr.principal);
  if (!out) return ErrorResponse(out.error(), rr.path);
  const auto& snap = out->snapshot;  // the one this PUT published (or kept)
  return JsonResponse(out->created ? 201 : 200, {{"version", out->version},
                                                 {"created", out->created},
                                                 {"nodes", snap->topology->node_count()},
                                                 {"links", snap->topology->link_count()},
                                                 {"dropped_jobs", out->dropped_jobs}});
}

ApiResponse Api::GetJobs(const RoutedRequest& rr) {
  auto snap = state_->snapshot();
  if (!snap) return ErrorResponse(Error{ErrorCode::kUnavailable, "no snapshot loaded yet"}, rr.path);
  if (WantsText(rr.request, rr.query)) {
    report::Table t({"JOB", "NAME", "TENANT", "PRIO", "HOSTS", "GPUS", "PROFILE", "EXPECTED_END"});
    for (const auto& j : snap->jobs->jobs()) {
      t.Add({Cell(j.id), Cell(j.name), Cell(j.tenant), std::to_string(j.priority), std::to_string(j.hosts.size()),
             std::to_string(j.hosts.size() * static_cast<size_t>(model::GpusPerHost(j, *snap->topology))),
             Cell(j.profile_source), j.expected_end ? codec::FormatRfc3339(*j.expected_end) : "-"});
    }
    return TextResponse(200, fmt::format("jobs v{} ({} jobs)\n", snap->jobs_version, snap->jobs->size()) + t.Render());
  }
  json jobs = json::array();
  for (const auto& j : snap->jobs->jobs()) jobs.push_back(codec::JobToJson(j, *snap->topology));
  auto r = JsonResponse(200, {{"format", codec::kJobsFormat}, {"jobs", std::move(jobs)}});
  r.headers.emplace_back("Drainwise-Jobs-Version", std::to_string(snap->jobs_version));
  return r;
}

ApiResponse Api::GetJob(const RoutedRequest& rr) {
  const std::string& id = rr.Param("id");
  auto snap = state_->snapshot();
  if (!snap) return ErrorResponse(Error{ErrorCode::kUnavailable, "no snapshot loaded yet"}, rr.path);
  auto j = snap->jobs->FindJob(id);
  if (!j) return ErrorResponse(Error{ErrorCode::kNotFound, fmt::format("unknown job '{}'", id)}, rr.path);
  return JsonResponse(200, codec::JobToJson(snap->jobs->job(*j), *snap->topology));
}

ApiResponse Api::PutJobs(const RoutedRequest& rr) {
  auto body = routing::ParseBody(rr.request);
  if (!body) return ErrorResponse(body.error(), rr.path);
  auto out = state_->PutJobs(*body, routing::ApiSource(rr.request), rr.principal);
  if (!out) return ErrorResponse(out.error(), rr.path);
  const auto& snap = out->snapshot;
  return JsonResponse(out->created ? 201 : 200,
                      {{"version", out->version}, {"created", out->created}, {"jobs", snap->jobs->size()}});
}

ApiResponse Api::GetSnapshots(const RoutedRequest& rr) {
  int limit = 50;
  if (auto it = rr.query.find("limit"); it != rr.query.end())
    limit = std::clamp(std::atoi(it->second.c_str()), 1, 1000);
  auto docs = state_->store().ListDocuments(std::nullopt, limit);
  if (!docs) return ErrorResponse(docs.error(), rr.path);
  json versions = json::array();
  for (const auto& d : *docs) {
    json v = {{"kind", store::DocKindName(d.kind)},
              {"version", d.version},
              {"source", d.source},
              {"principal", d.principal},
              {"created_at", codec::FormatRfc3339(d.created_at)},
              {"hash", d.hash}};
    if (d.kind == store::DocKind::kTopology) {
      v["nodes"] = d.items;
      v["links"] = d.links;
    } else {
      v["items"] = d.items;
    }
    versions.push_back(std::move(v));
  }
  json current = nullptr;
  auto view = state_->view();
  if (const auto& snap = view->snapshot) {
    const auto& t = *snap->topology;
    current = {{"topology_version", snap->topology_version},
               {"jobs_version", snap->jobs_version},
               {"published_at", codec::FormatRfc3339(view->published_at)},
               {"nodes", t.node_count()},
               {"links", t.link_count()},
               {"switches", t.switches().size()},
               {"hosts", t.hosts().size()},
               {"gpus", t.total_gpus()},
               {"jobs", snap->jobs->size()},
               {"dropped_jobs", snap->dropped_jobs}};
  }
  if (WantsText(rr.request, rr.query)) {
    std::string out;
    if (!current.is_null()) {
      out = fmt::format("serving topology v{} ({} switches, {} hosts, {} GPUs) and jobs v{} ({} jobs, {} dropped)\n\n",
                        current["topology_version"].get<int64_t>(), current["switches"].get<size_t>(),
                        current["hosts"].get<size_t>(), current["gpus"].get<int>(),
                        current["jobs_version"].get<int64_t>(), current["jobs"].get<size_t>(),
                        current["dropped_jobs"].size());
    }
    report::Table t({"KIND", "VERSION", "CREATED", "SOURCE", "PRINCIPAL", "ITEMS"});
    for (const auto& v : versions) {
      t.Add({v["kind"], std::to_string(v["version"].get<int64_t>()), v["created_at"],
             Cell(v["source"].get<std::string>()), Cell(v["principal"].get<std::string>()),
             std::to_string(v.contains("nodes") ? v["nodes"].get<int64_t>() : v["items"].get<int64_t>())});
    }
    return TextResponse(200, out + t.Render());
  }
  return JsonResponse(200, {{"current", current}, {"versions", versions}});
}

ApiResponse Api::GetPolicy(const RoutedRequest&) {
  return JsonResponse(200, policies::PolicyToJson(*state_->view()->policy));
}

ApiResponse Api::PutPolicy(const RoutedRequest& rr) {
  auto body = routing::ParseBody(rr.request);
  if (!body) return ErrorResponse(body.error(), rr.path);
  auto policy = policies::ParsePolicy(*body);
  if (!policy) return ErrorResponse(policy.error(), rr.path);
  store::DocumentInfo info;
  info.kind = store::DocKind::kPolicy;
  info.source = routing::ApiSource(rr.request);
  info.principal = rr.principal;
  auto put = state_->store().PutDocument(info, body->dump());
  if (!put) return ErrorResponse(put.error(), rr.path);
  state_->SetPolicy(std::move(*policy));  // stored first, then in force
  return JsonResponse(put->created ? 201 : 200, {{"version", put->version}, {"created", put->created}});
}

}  // namespace drainwise::server
