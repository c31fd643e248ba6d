// The task-level simulation's request (POST /v1/simulations {"mode":"task"}
// and `drainwise simulate --mode task --options FILE`): one JSON document
// into sim::TaskOptions and a trace, resolved against one topology.
//
//   {"mode": "task",                           // optional here; the server routes on it
//    "horizon": "365d",                        // or seconds; "Nd", "Nh", "Nm", "Ns"; default 365d
//    "seed": 1,
//    "sample_interval": "1d",                  // time series step; default 1d
//    "reliability": {"host": {"mtbf_h": 7000, "mttr_h": 24}, "spine": {...}, "link": {...}},
//    "min_nics_up": 1, "comm_fraction": 0.2, "checkpoint_interval_s": 3600,
//    "restart_cost_s": 600, "backfill_depth": 100,
//    "drains": [{"start": "2d", "end": "50h", "switches": [names],        // durations from the start
//                "links": [{"a", "b", "a_port"?}], "migrate": true, "label": ""}],
//    "trace": {"synthetic": {"seed", "load", "max_hosts", "min_work_s", "max_work_s"}}
//           | {"sacct": <the output of sacct --json>}}  // default: synthetic, seeded by "seed"
//
// Errors (kInvalidArgument) name the field and the rule; unknown fields are
// refused (a typo would otherwise silently run the defaults).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "connectors/diagnostics.h"
#include "connectors/slurm_sacct.h"
#include "model/error.h"
#include "model/topology.h"
#include "sim/task_sim.h"

namespace drainwise::engine {

struct TaskRun {
  sim::TaskOptions options;
  std::vector<sim::TaskJob> trace;
  std::string trace_source;                   // "synthetic (seed N, load L)" or "sacct (N jobs)"
  connectors::Diagnostics trace_diagnostics;  // sacct jobs left out, and why
};

Result<TaskRun> ParseTaskRequest(const nlohmann::json& request, const model::Topology& topology);

// The daemon configuration's "task" section: defaults under every request,
// e.g. {"reliability": {"spine": {"mtbf_h": 150000, "mttr_h": 4}}, "comm_fraction": 0.3}.
// A request's field replaces the default's, but "reliability" merges by kind.
nlohmann::json ApplyTaskDefaults(const nlohmann::json& defaults, const nlohmann::json& request);
// Checks a "task" section: the fields of a request but "mode", "drains" and
// "trace", which belong to each request. Errors name the field: "task.reliability.spine: ...".
Status CheckTaskDefaults(const nlohmann::json& defaults);

// "365d", "12h", "90m", "3600s" or a number of seconds; > 0. `field` names
// the field in errors.
Result<double> ParseDurationSeconds(const nlohmann::json& value, std::string_view field);

// sacct records as a trace: submit times relative to the earliest, work =
// elapsed (a running job's elapsed so far), limit = its time limit, hosts =
// its nodes. A record with no elapsed time is left out (named in diagnostics).
std::vector<sim::TaskJob> TraceFromSacct(const std::vector<connectors::SacctJob>& jobs,
                                         connectors::Diagnostics* diagnostics);

}  // namespace drainwise::engine
