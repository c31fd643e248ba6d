// JSON document and terminal tables of a flow-level what-if
// (sim/flow_sim.h), for the CLI (`drainwise simulate --mode flow`) and the
// REST API alike. Units are in the field names: seconds (_s), Gbit/s
// (_gbps), utilisation as a fraction of the usable capacity (1 = full).
//
//   {"jobs":[{"id", "name", "flows",
//             "baseline":{"connected", "comm_s", "bandwidth_s", "latency_s",
//                         "iteration_s", "max_hops"},
//             "drained":{... same ...},
//             "slowdown_pct",            // null when cut off on either side
//             "bottlenecks":[{"from", "to", "link", "utilisation",
//                             "shared_with":[job ids], "shared_with_count"}]}],
//    "links":[{"from", "to", "link", "capacity_gbps", "baseline_utilisation",
//              "drained_utilisation", "down"}],   // changed links, largest change first
//    "links_changed": n,
//    "hot_links":[{"from", "to", "link", "utilisation", "load_gbps",
//                  "jobs":[ids], "job_count"}],
//    "summary":{"jobs", "jobs_slowed", "jobs_cut_off", "max_slowdown_pct"},
//    "model":{"routing", "seeds", "goodput", ... how the numbers were made}}
//
// Hash routing adds "comm_s_worst"/"iteration_s_worst" to each side and
// "slowdown_pct_worst" to each job: the worst of the seeds (the plain
// fields are their mean).
//
// Pure functions; no I/O.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "model/snapshot.h"
#include "sim/flow_sim.h"

namespace drainwise::report {

struct FlowJsonOptions {
  int max_jobs = 0;          // 0 = every job; else the most slowed (cut-off first)
  int max_links = 200;       // changed links listed (links_changed is always complete)
  double min_change = 1e-3;  // utilisation change that counts a link as changed
};

nlohmann::json FlowReportToJson(const sim::FlowReport& report, const model::Snapshot& snapshot,
                                const FlowJsonOptions& options = {});

// Aligned tables from the JSON above: the most slowed jobs with their
// bottlenecks, the hot links, and the model line.
std::string FlowReportText(const nlohmann::json& flow, int max_rows = 20);

}  // namespace drainwise::report
