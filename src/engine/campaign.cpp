#include "engine/campaign.h"

#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "codec/json_reader.h"
#include "codec/native.h"
#include "engine/engine.h"
#include "engine/slurm_reservation.h"
#include "policies/verdict_json.h"
#include "report/table.h"

namespace drainwise::engine {

using nlohmann::json;

namespace {

int64_t Time(const codec::ObjectReader& r, std::string_view key) {
  auto t = codec::ParseRfc3339(r.String(key));
  if (!t) throw codec::FieldError(r.Child(key), "not an RFC 3339 time");
  return *t;
}

advisor::TimeWindow Window(const codec::ObjectReader& r) {
  r.RejectUnknown({"start", "end"});
  advisor::TimeWindow w{Time(r, "start"), Time(r, "end")};
  if (w.end_unix_s <= w.start_unix_s) throw codec::FieldError(r.Child("end"), "must be after start");
  return w;
}

double Round(double v, double unit) { return std::round(v / unit) * unit; }

json Names(const model::Topology& t, const std::vector<model::NodeId>& ids) {
  json a = json::array();
  for (auto id : ids) a.push_back(t.node(id).name);
  return a;
}

json Costs(double migration, double interruption, double slowdown, double delay) {
  return {{"migration", Round(migration, 0.01)},
          {"interruption", Round(interruption, 0.01)},
          {"slowdown", Round(slowdown, 0.01)},
          {"delay", Round(delay, 0.01)},
          {"total", Round(migration + interruption + slowdown + delay, 0.01)}};
}

std::string Worst(const advisor::CampaignSchedule& s) {
  int worst = s.unscheduled.empty() ? 0 : 2;
  for (const auto& b : s.batches) {
    worst = std::max(worst, b.predicted.decision == policies::Decision::kDeny   ? 2
                            : b.predicted.decision == policies::Decision::kWarn ? 1
                                                                                : 0);
  }
  return worst == 2 ? "deny" : worst == 1 ? "warn" : "allow";
}

json Row(const advisor::CampaignSchedule& s) {
  json row = {
      {"strategy", s.strategy},
      {"batches", s.batches.size()},
      {"unscheduled", s.unscheduled.size()},
      {"all_allowed", s.all_allowed},
      {"verdict", Worst(s)},
      {"gpu_hours", Costs(s.migration_gpu_hours, s.interruption_gpu_hours, s.slowdown_gpu_hours, s.delay_gpu_hours)}};
  row["finish"] = s.batches.empty() ? json() : json(codec::FormatRfc3339(s.finish));
  return row;
}

}  // namespace

Result<advisor::TimeWindow> ParseTimeWindow(const json& doc, const std::string& path) {
  try {
    return Window(codec::ObjectReader(doc, path));
  } catch (const codec::FieldError& e) {
    return InvalidArgument(e.what());
  }
}

Result<CampaignRequest> ParseCampaignRequest(const json& body, const model::Topology& topology, int64_t now) {
  CampaignRequest req;
  try {
    codec::ObjectReader r(body, "");
    r.RejectUnknown({"items", "window", "constraints", "objective", "modes", "ticket", "requested_by"});
    req.window = r.Has("window") ? Window(codec::ObjectReader(r.Raw("window"), "window"))
                                 : advisor::TimeWindow{now, now + 7 * 86400};
    auto items = r.Objects("items");
    if (items.empty()) throw codec::FieldError("items", "required: at least one maintenance item");
    for (size_t i = 0; i < items.size(); ++i) {
      const auto& ir = items[i];
      ir.RejectUnknown({"switches", "links", "duration_s", "earliest", "deadline"});
      json drain = json::object();
      if (ir.Has("switches")) drain["switches"] = ir.Raw("switches");
      if (ir.Has("links")) drain["links"] = ir.Raw("links");
      auto spec = codec::ParseDrain(drain);
      if (!spec) return tl::unexpected(spec.error().Wrap(ir.path()));
      if (spec->empty()) throw codec::FieldError(ir.path(), "names no switch and no link");
      auto d = model::ResolveDrain(*spec, topology);
      if (!d) return tl::unexpected(d.error().Wrap(ir.path()));
      advisor::CampaignItem item;
      item.drain = std::move(*d);
      item.duration_s = ir.NumberOr("duration_s", 3600);
      if (!(item.duration_s > 0 && item.duration_s <= 30 * 86400)) {
        throw codec::FieldError(ir.Child("duration_s"), "must be within (0, 30 days]");
      }
      if (ir.Has("earliest")) item.earliest = Time(ir, "earliest");
      if (ir.Has("deadline")) item.deadline = Time(ir, "deadline");
      if (item.earliest && item.deadline && *item.deadline <= *item.earliest) {
        throw codec::FieldError(ir.Child("deadline"), "must be after earliest");
      }
      req.items.push_back(std::move(item));
    }
    if (r.Has("constraints")) {
      codec::ObjectReader c(r.Raw("constraints"), "constraints");
      c.RejectUnknown({"max_concurrent", "blackouts"});
      req.max_concurrent = static_cast<int>(c.IntOr("max_concurrent", 1));
      if (req.max_concurrent < 1) throw codec::FieldError(c.Child("max_concurrent"), "must be >= 1");
      for (const auto& b : c.Objects("blackouts")) req.blackouts.push_back(Window(b));
    }
    std::string objective = r.StringOr("objective", "gpu_hours");
    if (objective == "gpu_hours")
      req.objective = advisor::CampaignObjective::kGpuHours;
    else if (objective == "finish")
      req.objective = advisor::CampaignObjective::kFinish;
    else
      throw codec::FieldError("objective", fmt::format("unknown objective '{}' (gpu_hours, finish)", objective));
    for (const auto& m : r.StringList("modes")) {
      if (m == "flow")
        req.flow = true;
      else if (m != "job")
        throw codec::FieldError("modes", fmt::format("unknown mode '{}' (job, flow)", m));
    }
  } catch (const codec::FieldError& e) {
    return InvalidArgument(e.what());
  }
  return req;
}

json CampaignJson(const CampaignOutcome& o, const View& view, const std::string& name) {
  const auto& snap = *view.snapshot;
  const auto& topo = *snap.topology;
  const auto& s = o.campaign.chosen;
  json batches = json::array();
  for (size_t k = 0; k < s.batches.size(); ++k) {
    const auto& b = s.batches[k];
    json actions = json::array();
    for (const auto& a : b.actions) {
      json ja = {{"kind", advisor::CampaignActionKindName(a.kind)}, {"job", snap.jobs->job(a.job).id}};
      if (a.kind == advisor::CampaignActionKind::kMigrate) {
        ja["at"] = codec::FormatRfc3339(a.at);
        ja["after_checkpoint"] = a.after_checkpoint;
        ja["from_hosts"] = Names(topo, a.from_hosts);
        ja["to_hosts"] = Names(topo, a.to_hosts);
        ja["gpu_hours"] = Round(a.gpu_hours, 0.01);
      } else {
        ja["until"] = codec::FormatRfc3339(a.at);
        ja["gpu_hours"] = 0;  // the wait's price is the batch's delay
      }
      actions.push_back(std::move(ja));
    }
    json interrupted = json::array();
    for (auto j : b.interrupted) interrupted.push_back(snap.jobs->job(j).id);
    SlurmReservation res;
    res.name = fmt::format("drainwise-{}-b{}", name, k + 1);
    res.start_unix_s = b.start;
    res.duration_s = b.end - b.start;
    res.hosts = advisor::ReservationHosts(snap, b);
    res.comment = fmt::format("drainwise campaign {} batch {}", name, k + 1);
    json slurm = {{"reservation", res.name}, {"hosts", res.hosts}};
    if (!res.hosts.empty()) {
      slurm["scontrol"] = ScontrolCreateReservation(res);
      slurm["slurmrestd"] = {
          {"method", "POST"}, {"path", "/slurm/v0.0.43/reservation"}, {"body", SlurmrestdReservation(res)}};
    }
    auto spec = model::DescribeDrain(b.drain, topo);
    batches.push_back(
        {{"index", k + 1},
         {"start", codec::FormatRfc3339(b.start)},
         {"end", codec::FormatRfc3339(b.end)},
         {"items", b.items},
         {"drain", codec::DrainSpecToJson(spec)},
         {"actions", actions},
         {"verdict", policies::DecisionName(b.predicted.decision)},
         {"reasons", policies::VerdictToJson(b.verdict)["reasons"]},
         {"jobs_affected", b.predicted.jobs_affected},
         {"jobs_disconnected", b.predicted.jobs_disconnected},
         {"max_slowdown_pct", Round(b.predicted.max_slowdown_pct, 0.01)},
         {"interrupted", interrupted},
         {"gpu_hours", Costs(b.migration_gpu_hours, b.interruption_gpu_hours, b.slowdown_gpu_hours, b.delay_gpu_hours)},
         {"slurm", slurm}});
  }
  json comparison = json::array();
  comparison.push_back(Row(s));
  comparison.back()["chosen"] = true;
  for (const auto& st : o.campaign.strategies) {
    comparison.push_back(Row(st));
    comparison.back()["chosen"] = false;
  }
  json blackouts = json::array();
  for (const auto& b : o.request.blackouts) {
    blackouts.push_back({{"start", codec::FormatRfc3339(b.start_unix_s)}, {"end", codec::FormatRfc3339(b.end_unix_s)}});
  }
  json out = {
      {"verdict", Worst(s)},
      {"objective", advisor::CampaignObjectiveName(o.request.objective)},
      {"window",
       {{"start", codec::FormatRfc3339(o.request.window.start_unix_s)},
        {"end", codec::FormatRfc3339(o.request.window.end_unix_s)}}},
      {"constraints", {{"max_concurrent", o.request.max_concurrent}, {"blackouts", blackouts}}},
      {"modes", o.request.flow ? json{"job", "flow"} : json{"job"}},
      {"delay_gpu_hours_per_hour", o.delay_gpu_hours_per_hour},
      {"strategy", s.strategy},
      {"batches", batches},
      {"unscheduled", s.unscheduled},
      {"all_allowed", s.all_allowed},
      {"finish", s.batches.empty() ? json() : json(codec::FormatRfc3339(s.finish))},
      {"gpu_hours", Costs(s.migration_gpu_hours, s.interruption_gpu_hours, s.slowdown_gpu_hours, s.delay_gpu_hours)},
      {"comparison", comparison},
      {"notes", o.campaign.notes},
      {"topology_version", snap.topology_version},
      {"jobs_version", snap.jobs_version},
      {"timings_ms", {{"total", Round(o.total_ms, 0.01)}}}};
  return out;
}

namespace {
std::string S(const json& o, const char* key) {
  auto it = o.find(key);
  if (it == o.end() || it->is_null()) return "-";
  return it->is_string() ? it->get<std::string>() : it->dump();
}
std::string G(const json& costs) { return costs.is_object() ? fmt::format("{:.2f}", costs.value("total", 0.0)) : "-"; }
// A GPU-hour figure of the comparison table, with the batches' two decimals.
std::string H(const json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_number() ? fmt::format("{:.2f}", it->get<double>()) : "-";
}
}  // namespace

std::string CampaignText(const json& doc) {
  std::string out = fmt::format("campaign {}: verdict {}, objective {}, strategy {}, {} GPU-hours, finish {}\n",
                                S(doc, "id"), S(doc, "verdict"), S(doc, "objective"), S(doc, "strategy"),
                                G(doc.value("gpu_hours", json())), S(doc, "finish"));
  out += "\nBATCHES\n";
  report::Table t({"#", "START", "END", "DRAIN", "VERDICT", "ACTIONS", "GPU_H"});
  for (const auto& b : doc.value("batches", json::array())) {
    std::string drain;
    const json d = b.value("drain", json::object());
    for (const auto& sw : d.value("switches", json::array()))
      drain += (drain.empty() ? "" : ",") + sw.get<std::string>();
    if (d.contains("links") && !d["links"].empty())
      drain += fmt::format("{}{} link(s)", drain.empty() ? "" : " +", d["links"].size());
    std::string actions;
    for (const auto& a : b.value("actions", json::array())) {
      if (!actions.empty()) actions += "; ";
      if (a.value("kind", "") == "migrate") {
        actions += fmt::format("migrate {} at {}{}", S(a, "job"), S(a, "at"),
                               a.value("after_checkpoint", false) ? " (after checkpoint)" : "");
      } else {
        actions += fmt::format("wait for {} until {}", S(a, "job"), S(a, "until"));
      }
    }
    t.Add({S(b, "index"), S(b, "start"), S(b, "end"), drain, S(b, "verdict"), actions.empty() ? "-" : actions,
           G(b.value("gpu_hours", json()))});
  }
  out += t.Render();
  out += "\nCOMPARISON\n";
  report::Table c(
      {"STRATEGY", "CHOSEN", "VERDICT", "MIGRATION", "INTERRUPTION", "SLOWDOWN", "DELAY", "TOTAL", "FINISH"});
  for (const auto& r : doc.value("comparison", json::array())) {
    const json g = r.value("gpu_hours", json::object());
    c.Add({S(r, "strategy"), r.value("chosen", false) ? "yes" : "", S(r, "verdict"), H(g, "migration"),
           H(g, "interruption"), H(g, "slowdown"), H(g, "delay"), H(g, "total"), S(r, "finish")});
  }
  out += c.Render();
  bool slurm_header = false;
  for (const auto& b : doc.value("batches", json::array())) {
    const json sl = b.value("slurm", json::object());
    if (!sl.contains("scontrol")) continue;
    if (!slurm_header) out += "\nSLURM\n";
    slurm_header = true;
    out += sl["scontrol"].get<std::string>() + "\n";
  }
  for (const auto& n : doc.value("notes", json::array())) out += "note: " + n.get<std::string>() + "\n";
  return out;
}

Result<CampaignOutcome> Engine::Campaign(const View& view, const CampaignRequest& request, const Call& call) {
  auto start = std::chrono::steady_clock::now();
  auto c = view.advisor->PlanCampaign(view.AdvisorContext(call.now), request, *view.policy, call.stop);
  if (!c) return tl::unexpected(c.error());
  CampaignOutcome out;
  out.campaign = std::move(*c);
  out.request = request;
  out.delay_gpu_hours_per_hour = view.advisor->options().delay_gpu_hours_per_hour;
  out.total_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace drainwise::engine
