// JSON, text and CSV of a task-level simulation (sim/task_sim.h), for the CLI
// (`drainwise simulate --mode task`) and the REST background runs alike.
// Times in the documents are hours (_h) or seconds (_s); shares in [0, 1].
//
//   {"kind":"task", "horizon_h", "seed",
//    "fabric":{"hosts", "gpus", "switches", "attachment_classes",
//              "switch_availability", "switch_in_service", "link_capacity_in_service",
//              "tiers":[{"tier", "switches", "availability", "in_service", "failures"}],
//              "host_failures", "link_failures"},
//    "gpus":{"availability", "total_gpu_h", "allocated_gpu_h", "useful_gpu_h",
//            "useful_share"},                      // useful / total
//    "lost":{"failure"|"planned_drain"|"migration":
//              {"interruptions", "lost_work_gpu_h", "restart_gpu_h", "slowdown_gpu_h", "total_gpu_h"}},
//    "jobs":{"submitted", "rejected", "started", "completed", "running_at_end", "queued_at_end",
//            "queue_delay_h":{"mean", "p50", "p95", "max"}},
//    "work":{"events", "network_passes"},
//    "series":[{"start_h", "end_h", "switch_availability", "gpu_availability", "gpu_utilization",
//               "lost_failure_gpu_h", "lost_drain_gpu_h", "lost_migration_gpu_h",
//               "interruptions", "running", "queued"}],
//    "job_outcomes":[...]}                          // only when recorded
//
// The CSV is the series, one row per step, with the same column names.
// Pure functions; no I/O. Same report, same bytes.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "sim/task_sim.h"

namespace drainwise::report {

nlohmann::json TaskReportToJson(const sim::TaskReport& report);
std::string TaskReportText(const sim::TaskReport& report);
std::string TaskSeriesCsv(const sim::TaskReport& report);

}  // namespace drainwise::report
