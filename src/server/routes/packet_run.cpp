#include "server/routes/packet_run.h"

#include <chrono>

#include <fmt/format.h>

#include "codec/json_reader.h"
#include "codec/native.h"
#include "model/drain.h"
#include "report/packet_report.h"
#include "server/problem.h"
#include "server/routes/common.h"
#include "sim/packet/packet_sim.h"

namespace drainwise::server {

using nlohmann::json;

bool PacketModeUnavailable() { return !sim::PacketLevelAvailable(); }

std::optional<json> PacketRunBodyOfAssessment(const std::string& text) {
  json body = json::parse(text, nullptr, false);
  if (body.is_discarded() || !body.is_object() || !body.contains("modes") || !body["modes"].is_array()) {
    return std::nullopt;
  }
  bool packet = false;
  for (const json& m : body["modes"]) packet = packet || (m.is_string() && m.get<std::string>() == "packet");
  if (!packet) return std::nullopt;
  json out = {{"mode", "packet"}};
  for (const char* k : {"drain", "ticket", "requested_by"}) {
    if (body.contains(k)) out[k] = body[k];
  }
  if (body.contains("routing") && body["routing"].is_string()) {
    const std::string r = body["routing"].get<std::string>();
    out["routing"] = r.rfind("spray", 0) == 0 ? "spray" : "hash";
  }
  return out;
}

ApiResponse BlastRadiusProblem(const sim::PacketBlastRadiusSize& size, std::string_view instance) {
  json problem = ProblemJson(422, "blast-radius-too-large", "Blast radius above the packet level's cap",
                             sim::BlastRadiusTooLarge(size).message, instance);
  problem["blast_radius"] = {{"jobs", size.jobs}, {"hosts", size.hosts}, {"flows", size.flows}};
  problem["cap"] = {{"max_hosts", size.max_hosts}, {"max_flows", size.max_flows}};
  ApiResponse r;
  r.status = 422;
  r.content_type = std::string(kProblemContentType);
  r.body = problem.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
  return r;
}

Result<PreparedPacketRun> PreparePacketRun(const json& body, const PacketRunContext& ctx) {
  if (!sim::PacketLevelAvailable()) {
    return MakeError(ErrorCode::kUnavailable, std::string(sim::PacketLevelUnavailableMessage()));
  }
  model::SnapshotPtr snapshot = ctx.view.snapshot;
  sim::PacketOptions o;
  model::Drain drain;
  std::string ticket, requested_by;
  try {
    codec::ObjectReader r(body, "");
    r.RejectUnknown({"mode", "drain", "routing", "seed", "per_hop_delay_us", "per_message_overhead_us", "max_hosts",
                     "max_flows", "jobs", "ticket", "requested_by", "modes"});
    auto spec = codec::ParseDrain(r.Raw("drain"));
    if (!spec) return tl::unexpected(spec.error().Wrap("drain"));
    auto d = model::ResolveDrain(*spec, *snapshot->topology);
    if (!d) return tl::unexpected(d.error().Wrap("drain"));
    if (d->empty()) return InvalidArgument("drain: names no switch and no link");
    drain = std::move(*d);
    const std::string routing = r.StringOr("routing", "hash");
    auto pr = sim::ParsePacketRouting(routing);
    if (!pr) return InvalidArgument(fmt::format("routing: '{}' is not hash or spray", routing));
    o.routing = *pr;
    o.flow.routing = *pr == sim::PacketRouting::kSpray ? sim::FlowRouting::kSpray : sim::FlowRouting::kHashResilient;
    o.seed = static_cast<uint64_t>(std::max<int64_t>(1, r.IntOr("seed", 1)));
    o.flow.seed = o.seed;
    o.per_hop_delay_s = o.flow.per_hop_latency_s = r.NumberOr("per_hop_delay_us", 1) / 1e6;
    o.per_message_overhead_s = o.flow.per_message_overhead_s = r.NumberOr("per_message_overhead_us", 5) / 1e6;
    const int64_t max_hosts = r.IntOr("max_hosts", static_cast<int64_t>(o.max_hosts));
    const int64_t max_flows = r.IntOr("max_flows", static_cast<int64_t>(o.max_flows));
    // The caps bound a run's memory and time: a request may lower them, not raise them.
    if (max_hosts < 1 || static_cast<size_t>(max_hosts) > o.max_hosts)
      return InvalidArgument(fmt::format("max_hosts: must be in [1, {}]", o.max_hosts));
    if (max_flows < 1 || static_cast<size_t>(max_flows) > o.max_flows)
      return InvalidArgument(fmt::format("max_flows: must be in [1, {}]", o.max_flows));
    o.max_hosts = static_cast<size_t>(max_hosts);
    o.max_flows = static_cast<size_t>(max_flows);
    // Never forked here: the daemon is multi-threaded (I/O, workers,
    // logger), and a forked child inherits any lock another thread held at
    // fork() time (seen once in 17 end-to-end runs: a child that never
    // finished, progress stuck at 0.5). Spawned workers copy nothing, so
    // with one baseline and drained run at once; without, one after another.
    o.worker_program = ctx.worker_program;
    o.parallel_runs = !o.worker_program.empty();
    for (const std::string& id : r.StringList("jobs")) {
      auto j = snapshot->jobs->FindJob(id);
      if (!j) return InvalidArgument(fmt::format("jobs: unknown job '{}'", id));
      o.jobs.push_back(*j);
    }
    ticket = r.StringOr("ticket", "");
    requested_by = r.StringOr("requested_by", "");
  } catch (const codec::FieldError& e) {
    return InvalidArgument(e.what());
  }
  if (auto ok = sim::ValidatePacketOptions(o); !ok) return tl::unexpected(ok.error());
  auto planned = sim::PlanPackets(*snapshot, drain, o, ctx.stop);
  if (!planned) return tl::unexpected(planned.error());
  std::shared_ptr<const sim::PacketPlan> plan = std::move(*planned);
  if (const sim::PacketBlastRadiusSize size = sim::Size(*plan); !size.within_cap()) {
    if (ctx.log) {
      ctx.log->info("packet run refused: blast radius of {} hosts, {} flows above the cap of {} hosts, {} flows",
                    size.hosts, size.flows, size.max_hosts, size.max_flows);
    }
    return PreparedPacketRun{nullptr, size};
  }
  PreparedPacketRun prepared;
  prepared.run = [snapshot, plan, drain, o, ticket, requested_by, request = body.dump(), log = ctx.log,
                  store = ctx.store, sequence = ctx.sequence, principal = ctx.principal](
                     const BackgroundProgress& progress, std::stop_token stop) -> Result<BackgroundResult> {
    sim::PacketOptions options = o;
    options.progress = progress;
    if (log) {
      log->info("packet run: drain of {} switches, {} links, {} routing", drain.switches.size(), drain.links.size(),
                sim::PacketRoutingName(o.routing));
    }
    const auto start = std::chrono::steady_clock::now();
    auto report = sim::SimulatePlannedPackets(*snapshot, *plan, options, stop);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!report) {
      if (log) log->info("packet run: stopped after {:.2f} s: {}", seconds, report.error().message);
      return tl::unexpected(report.error());
    }
    json doc = report::PacketReportToJson(*report, *snapshot);
    if (store) {
      store::AssessmentRecord rec;
      rec.id = routing::NewId("k", *sequence);
      rec.created_at = routing::NowSeconds();
      rec.kind = "packet";
      rec.ticket = ticket;
      rec.requested_by = requested_by;
      rec.principal = principal;
      rec.topology_version = snapshot->topology_version;
      rec.jobs_version = snapshot->jobs_version;
      rec.request = request;
      rec.result = doc.dump();
      if (auto st = store->PutAssessment(rec); !st) return tl::unexpected(st.error().Wrap("storing the packet result"));
      doc["assessment_id"] = rec.id;
    }
    if (log) {
      log->info("packet run: done in {:.2f} s, {} jobs, {} hosts, {} flows{}", seconds, report->jobs.size(),
                report->hosts, report->flows,
                doc.contains("assessment_id") ? ", stored as " + doc["assessment_id"].get<std::string>() : "");
    }
    BackgroundResult result;
    result.renditions["text"] = report::PacketReportText(doc);
    result.document = std::move(doc);
    return result;
  };
  return prepared;
}

}  // namespace drainwise::server
