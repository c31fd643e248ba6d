// Slurm accounting records: the output of `sacct --json` (Slurm 21.08 and
// later; the shapes of data_parser v0.0.37 to v0.0.41), as a workload trace
// for the task-level simulation (sim/task_sim.h).
//
// Read per job: job_id, name, state.current (a string before 23.02, a list
// after), time.submission / start / end / elapsed (unix seconds, seconds),
// time.limit (minutes: a number before 23.02, {"set","infinite","number"}
// after), allocation_nodes (a number or {"set","number"}), else the "node"
// entry of tres.allocated, and the "gres"/"gpu" entry of tres.allocated.
// Steps (nested under each job) are ignored: a job's allocation is what
// occupies hosts.
//
// A job that never ran (start 0, no node allocated: PENDING, cancelled
// before start) is skipped and named in `diagnostics`; so is an entry that
// is not an object or has no job_id. A document without a "jobs" list is an
// error.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "connectors/diagnostics.h"
#include "model/error.h"

namespace drainwise::connectors {

struct SacctJob {
  std::string id;  // job_id, with "_<task>" for array tasks
  std::string name;
  std::string state;      // first entry of state.current, e.g. "COMPLETED"
  int64_t submit = 0;     // unix seconds
  int64_t start = 0;      // unix seconds
  int64_t end = 0;        // unix seconds; 0 while running
  int64_t elapsed_s = 0;  // run time so far (or in total once ended)
  int64_t limit_s = 0;    // time limit; 0 when unset or infinite
  int nodes = 0;          // allocated nodes
  int gpus = 0;           // allocated GPUs (all nodes); 0 when none
  std::string nodelist;   // "nodes", a Slurm hostlist
};

Result<std::vector<SacctJob>> ParseSacctJson(std::string_view text, Diagnostics* diagnostics = nullptr);

}  // namespace drainwise::connectors
