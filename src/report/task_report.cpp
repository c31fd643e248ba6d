// Renderers of the task-level report (contract in task_report.h).
#include "report/task_report.h"

#include <fmt/format.h>

#include "report/table.h"

namespace drainwise::report {

namespace {

constexpr double kHour = 3600;

nlohmann::json CauseJson(const sim::CauseTotals& c) {
  return {{"interruptions", c.interruptions},
          {"lost_work_gpu_h", c.lost_work_gpu_h},
          {"restart_gpu_h", c.restart_gpu_h},
          {"slowdown_gpu_h", c.slowdown_gpu_h},
          {"total_gpu_h", c.total_gpu_h()}};
}

}  // namespace

nlohmann::json TaskReportToJson(const sim::TaskReport& r) {
  nlohmann::json tiers = nlohmann::json::array();
  for (const auto& t : r.tiers) {
    tiers.push_back({{"tier", t.tier},
                     {"switches", t.switches},
                     {"availability", t.availability},
                     {"in_service", t.in_service},
                     {"failures", t.failures}});
  }
  nlohmann::json series = nlohmann::json::array();
  for (const auto& s : r.series) {
    series.push_back({{"start_h", s.start_s / kHour},
                      {"end_h", s.end_s / kHour},
                      {"switch_availability", s.switch_availability},
                      {"gpu_availability", s.gpu_availability},
                      {"gpu_utilization", s.gpu_utilization},
                      {"lost_failure_gpu_h", s.lost_failure_gpu_h},
                      {"lost_drain_gpu_h", s.lost_drain_gpu_h},
                      {"lost_migration_gpu_h", s.lost_migration_gpu_h},
                      {"interruptions", s.interruptions},
                      {"running", s.running},
                      {"queued", s.queued}});
  }
  nlohmann::json doc = {
      {"kind", "task"},
      {"horizon_h", r.horizon_s / kHour},
      {"seed", r.seed},
      {"fabric",
       {{"hosts", r.hosts},
        {"gpus", r.gpus},
        {"switches", r.switches},
        {"attachment_classes", r.attachment_classes},
        {"switch_availability", r.switch_availability},
        {"switch_in_service", r.switch_in_service},
        {"link_capacity_in_service", r.link_capacity_in_service},
        {"tiers", tiers},
        {"host_failures", r.host_failures},
        {"link_failures", r.link_failures}}},
      {"gpus",
       {{"availability", r.gpu_availability},
        {"total_gpu_h", r.total_gpu_h},
        {"allocated_gpu_h", r.allocated_gpu_h},
        {"useful_gpu_h", r.useful_gpu_h},
        {"useful_share", r.total_gpu_h > 0 ? r.useful_gpu_h / r.total_gpu_h : 0.0}}},
      {"lost",
       {{"failure", CauseJson(r.failure)},
        {"planned_drain", CauseJson(r.planned_drain)},
        {"migration", CauseJson(r.migration)}}},
      {"jobs",
       {{"submitted", r.jobs_submitted},
        {"rejected", r.jobs_rejected},
        {"started", r.jobs_started},
        {"completed", r.jobs_completed},
        {"running_at_end", r.running_at_end},
        {"queued_at_end", r.queued_at_end},
        {"queue_delay_h",
         {{"mean", r.queue_delay_mean_h},
          {"p50", r.queue_delay_p50_h},
          {"p95", r.queue_delay_p95_h},
          {"max", r.queue_delay_max_h}}}}},
      {"work", {{"events", r.events}, {"network_passes", r.network_passes}}},
      {"series", series},
  };
  if (!r.jobs.empty()) {
    nlohmann::json outcomes = nlohmann::json::array();
    for (const auto& j : r.jobs) {
      outcomes.push_back(
          {{"id", j.id},
           {"submit_h", j.submit_s / kHour},
           {"first_start_h", j.first_start_s < 0 ? nlohmann::json() : nlohmann::json(j.first_start_s / kHour)},
           {"end_h", j.end_s < 0 ? nlohmann::json() : nlohmann::json(j.end_s / kHour)},
           {"interruptions", j.interruptions}});
    }
    doc["job_outcomes"] = std::move(outcomes);
  }
  return doc;
}

std::string TaskReportText(const sim::TaskReport& r) {
  std::string out =
      fmt::format("Task-level simulation: {:.0f} h ({:.1f} days), seed {}, {} hosts, {} GPUs, {} switches\n\n",
                  r.horizon_s / kHour, r.horizon_s / 86400, r.seed, r.hosts, r.gpus, r.switches);
  out += fmt::format(
      "Availability\n  switches not failed   {:.6f}\n  switches in service   {:.6f}\n"
      "  link capacity usable  {:.6f}\n  GPUs available        {:.6f}\n",
      r.switch_availability, r.switch_in_service, r.link_capacity_in_service, r.gpu_availability);
  Table tiers({"tier", "switches", "availability", "in service", "failures"});
  for (const auto& t : r.tiers) {
    tiers.Add({t.tier, std::to_string(t.switches), fmt::format("{:.6f}", t.availability),
               fmt::format("{:.6f}", t.in_service), std::to_string(t.failures)});
  }
  out += "\n" + tiers.Render();
  out += fmt::format("  host failures {}, link failures {}\n\n", r.host_failures, r.link_failures);
  out += fmt::format("GPU-hours\n  total      {:.1f}\n  allocated  {:.1f}\n  useful     {:.1f} ({:.2f} % of total)\n\n",
                     r.total_gpu_h, r.allocated_gpu_h, r.useful_gpu_h,
                     r.total_gpu_h > 0 ? 100 * r.useful_gpu_h / r.total_gpu_h : 0.0);
  Table lost({"cause", "interruptions", "lost work GPU-h", "restart GPU-h", "slowdown GPU-h", "total GPU-h"});
  auto row = [&](const char* name, const sim::CauseTotals& c) {
    lost.Add({name, std::to_string(c.interruptions), fmt::format("{:.1f}", c.lost_work_gpu_h),
              fmt::format("{:.1f}", c.restart_gpu_h), fmt::format("{:.1f}", c.slowdown_gpu_h),
              fmt::format("{:.1f}", c.total_gpu_h())});
  };
  row("failure", r.failure);
  row("planned drain", r.planned_drain);
  row("migration", r.migration);
  out += lost.Render();
  out += fmt::format(
      "\nJobs\n  submitted {}, rejected {}, started {}, completed {}, running at end {}, queued at end {}\n"
      "  queueing delay (h): mean {:.2f}, p50 {:.2f}, p95 {:.2f}, max {:.2f}\n",
      r.jobs_submitted, r.jobs_rejected, r.jobs_started, r.jobs_completed, r.running_at_end, r.queued_at_end,
      r.queue_delay_mean_h, r.queue_delay_p50_h, r.queue_delay_p95_h, r.queue_delay_max_h);
  out += fmt::format("\nWork: {} events, {} network passes\n", r.events, r.network_passes);
  return out;
}

std::string TaskSeriesCsv(const sim::TaskReport& r) {
  std::string out =
      "start_h,end_h,switch_availability,gpu_availability,gpu_utilization,lost_failure_gpu_h,lost_drain_gpu_h,"
      "lost_migration_gpu_h,interruptions,running,queued\n";
  for (const auto& s : r.series) {
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{}\n", s.start_s / kHour, s.end_s / kHour, s.switch_availability,
                       s.gpu_availability, s.gpu_utilization, s.lost_failure_gpu_h, s.lost_drain_gpu_h,
                       s.lost_migration_gpu_h, s.interruptions, s.running, s.queued);
  }
  return out;
}

}  // namespace drainwise::report
