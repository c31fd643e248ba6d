// Background simulations: POST /v1/simulations starts a run of a mode and
// answers 202 with its Location; GET polls its state, progress and result;
// DELETE cancels a running one (or forgets a finished one). The runs live in
// server/background.h; the modes a run can take are the rows of kModes.
//
// Adding a mode: one row below whose Prepare turns the
// request body and the serving view into a Prepared: a BackgroundRunFn (or
// a refusal to answer at once, as the packet mode above its cap). It runs on a
// thread of its own: it must report progress and honour the stop token.
#include <chrono>
#include <optional>
#include <stop_token>

#include <fmt/format.h>

#include "codec/json_reader.h"
#include "engine/task_request.h"
#include "report/task_report.h"
#include "server/api.h"
#include "server/background.h"
#include "server/routes/common.h"
#include "server/routes/packet_run.h"
#include "sim/packet/packet_sim.h"
#include "sim/task_sim.h"

namespace drainwise::server {

using nlohmann::json;

namespace {

struct RunContext {
  const engine::View& view;
  std::shared_ptr<spdlog::logger> log;  // may be null
  const ApiHooks& hooks;
  store::Store* store = nullptr;  // results stored as assessments (packet)
  std::atomic<uint64_t>* sequence = nullptr;
  std::string principal;
  std::stop_token stop;  // the request's
  std::string path;      // the request's, for problem+json "instance"
};

// A run to start, or a refusal to answer instead (packet: blast radius above the cap).
struct Prepared {
  BackgroundRunFn run;
  std::optional<ApiResponse> refusal;
};

// The task-level simulation (sim/task_sim.h) on the serving view's topology.
Result<Prepared> PrepareTask(const json& body, const RunContext& ctx) {
  std::shared_ptr<const model::Topology> topology = ctx.view.snapshot->topology;
  auto run = engine::ParseTaskRequest(engine::ApplyTaskDefaults(ctx.hooks.task_defaults, body), *topology);
  if (!run) return tl::unexpected(run.error());
  auto shared = std::make_shared<engine::TaskRun>(std::move(*run));
  BackgroundRunFn fn = [topology, shared, log = ctx.log](const BackgroundProgress& progress,
                                                         std::stop_token stop) -> Result<BackgroundResult> {
    if (log) {
      log->info("task run: {} hosts, {:.0f} h, seed {}, trace {}", topology->hosts().size(),
                shared->options.horizon_s / 3600, shared->options.seed, shared->trace_source);
    }
    int last_tenth = 0;
    auto on_progress = [&](double f) {
      progress(f);
      const int tenth = static_cast<int>(f * 10);
      if (log && tenth > last_tenth) {
        last_tenth = tenth;
        log->info("task run: {} % simulated", tenth * 10);
      }
    };
    const auto start = std::chrono::steady_clock::now();
    auto report = sim::SimulateTasks(topology, shared->trace, shared->options, on_progress, stop);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!report) {
      if (log) log->info("task run: stopped after {:.2f} s: {}", seconds, report.error().message);
      return tl::unexpected(report.error());
    }
    if (log) {
      log->info("task run: done in {:.2f} s, {} events, {} network passes", seconds, report->events,
                report->network_passes);
    }
    BackgroundResult result;
    result.document = report::TaskReportToJson(*report);
    json skipped = json::array();
    for (const auto& s : shared->trace_diagnostics.skipped) skipped.push_back({{"item", s.item}, {"reason", s.reason}});
    result.document["trace"] = {{"source", shared->trace_source}, {"jobs", shared->trace.size()}, {"skipped", skipped}};
    result.renditions["text"] = report::TaskReportText(*report);
    result.renditions["csv"] = report::TaskSeriesCsv(*report);
    return result;
  };
  return Prepared{std::move(fn), std::nullopt};
}

// The packet level on ns-3 for a drain's blast radius (routes/packet_run.h);
// refused here, before any run, above the blast-radius cap.
Result<Prepared> PreparePacket(const json& body, const RunContext& ctx) {
  auto p = PreparePacketRun(body, PacketRunContext{ctx.view, ctx.log, ctx.store, ctx.sequence, ctx.principal, ctx.stop,
                                                   ctx.hooks.packet_worker_program});
  if (!p) return tl::unexpected(p.error());
  if (p->refused) return Prepared{nullptr, BlastRadiusProblem(*p->refused, ctx.path)};
  return Prepared{std::move(p->run), std::nullopt};
}

struct Mode {
  const char* name;
  Result<Prepared> (*prepare)(const json& body, const RunContext& ctx);
};
constexpr Mode kModes[] = {
    {"task", PrepareTask},
    {"packet", PreparePacket},
};

json StatusJson(const RunStatus& s, bool with_result) {
  json out = {{"id", s.id},
              {"mode", s.kind},
              {"state", RunStateName(s.state)},
              {"progress", s.progress},
              {"cancel_requested", s.cancel_requested},
              {"principal", s.principal},
              {"created_at", codec::FormatRfc3339(s.created)},
              {"finished_at", s.finished ? json(codec::FormatRfc3339(s.finished)) : json()},
              {"elapsed_s", s.elapsed_s}};
  if (s.error) out["error"] = {{"code", ErrorCodeName(s.error->code)}, {"message", s.error->message}};
  if (with_result && s.result) out["result"] = s.result->document;
  return out;
}

}  // namespace

ApiResponse Api::PostSimulationRun(const RoutedRequest& rr) {
  auto body = routing::ParseBody(rr.request);
  if (!body) return ErrorResponse(body.error(), rr.path);
  if (!body->is_object())
    return ErrorResponse(Error{ErrorCode::kInvalidArgument, "request body: must be an object"}, rr.path);
  if (!body->contains("mode") || !(*body)["mode"].is_string()) {
    return ErrorResponse(Error{ErrorCode::kInvalidArgument, "mode: required, one of: task, packet"}, rr.path);
  }
  const std::string mode = (*body)["mode"].get<std::string>();
  const Mode* found = nullptr;
  std::string names;
  for (const Mode& m : kModes) {
    if (mode == m.name) found = &m;
    names += names.empty() ? m.name : std::string(", ") + m.name;
  }
  if (!found) {
    return ErrorResponse(Error{ErrorCode::kInvalidArgument, fmt::format("mode: '{}' is not one of: {}", mode, names)},
                         rr.path);
  }
  if (mode == "packet" && PacketModeUnavailable()) {  // a build without ns-3
    return routing::ProblemResponse(501, "not-implemented", "Not implemented in this build",
                                    std::string(sim::PacketLevelUnavailableMessage()), rr.path);
  }
  auto view = state_->view();
  if (!view || !view->snapshot) return ErrorResponse(Error{ErrorCode::kUnavailable, "no snapshot loaded yet"}, rr.path);
  auto fn = found->prepare(*body, RunContext{*view, hooks_.background_log, hooks_, &state_->store(), &sequence_,
                                             rr.principal, rr.request.stop, rr.path});
  if (!fn) return ErrorResponse(fn.error(), rr.path);
  if (fn->refusal) return *fn->refusal;
  auto id = background_->Start(mode, rr.principal, std::move(fn->run));
  if (!id) {
    ApiResponse r = ErrorResponse(id.error(), rr.path);
    r.headers.emplace_back("Retry-After", "10");
    return r;
  }
  if (hooks_.background_log) hooks_.background_log->info("{} run {} started by {}", mode, *id, rr.principal);
  auto status = background_->Get(*id);
  ApiResponse r = JsonResponse(202, status ? StatusJson(*status, false) : json{{"id", *id}});
  r.headers.emplace_back("Location", "/v1/simulations/" + *id);
  return r;
}

ApiResponse Api::ListSimulationRuns(const RoutedRequest& rr) {
  json runs = json::array();
  for (const RunStatus& s : background_->List()) runs.push_back(StatusJson(s, false));
  (void)rr;
  return JsonResponse(200, {{"simulations", runs}});
}

ApiResponse Api::GetSimulationRun(const RoutedRequest& rr) {
  auto status = background_->Get(rr.Param("id"));
  if (!status) {
    return ErrorResponse(Error{ErrorCode::kNotFound, fmt::format("no simulation '{}'", rr.Param("id"))}, rr.path);
  }
  const std::string& format = rr.Query("format");
  if (!format.empty() && format != "json") {
    if (format != "text" && format != "csv") {
      return ErrorResponse(Error{ErrorCode::kInvalidArgument, "format: must be json, text or csv"}, rr.path);
    }
    if (status->state != RunState::kDone || !status->result) {
      return routing::ProblemResponse(
          409, "not-done", "Not done",
          fmt::format("simulation '{}' is {}: no {} result yet", status->id, RunStateName(status->state), format),
          rr.path);
    }
    auto it = status->result->renditions.find(format);
    if (it == status->result->renditions.end()) {
      return ErrorResponse(
          Error{ErrorCode::kInvalidArgument, fmt::format("format: a {} run has no {} rendition", status->kind, format)},
          rr.path);
    }
    ApiResponse r = TextResponse(200, it->second);
    if (format == "csv") r.content_type = "text/csv; charset=utf-8";
    return r;
  }
  return JsonResponse(200, StatusJson(*status, true));
}

ApiResponse Api::DeleteSimulationRun(const RoutedRequest& rr) {
  const std::string& id = rr.Param("id");
  auto running = background_->Cancel(id);
  if (!running) return ErrorResponse(running.error(), rr.path);
  if (hooks_.background_log) {
    hooks_.background_log->info("run {} {} by {}", id, *running ? "cancel requested" : "forgotten", rr.principal);
  }
  if (!*running) {
    ApiResponse r;
    r.status = 204;
    r.body.clear();
    return r;
  }
  auto status = background_->Get(id);
  return JsonResponse(202, status ? StatusJson(*status, false) : json{{"id", id}});
}

}  // namespace drainwise::server
