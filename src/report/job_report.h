// JSON document and terminal table of a job-level what-if
// (sim/job_sim.h), for the CLI (`drainwise simulate --mode job`) and the REST
// API alike. Units are in the field names (bits per second: _bps).
//
//   {"drain":{"switches":[names], "links":[{"a","b","a_port"?}]},
//    "summary":{"jobs", "jobs_affected", "jobs_disconnected", "gpus_affected"},
//    "jobs":[{"id", "name", "tenant", "priority", "hosts", "gpus",
//             "affected", "connected",
//             "path_fraction", "min_paths_after" (null when no pair lost paths),
//             "bandwidth_fraction",
//             "crossing":{"switches":[names], "links":[{"a","b","a_port"?}],
//                         "share"},          // share of the job's traffic
//             "host_pairs", "host_pairs_crossing", "host_pairs_cut"}],
//             // affected first, worst first (sim::RankJobs)
//    "fabric":{"switches_drained", "links_down",
//              "capacity":[{"tier", "pod", "removed_bps", "total_bps",
//                           "removed_fraction"}],
//              "single_uplink_leaves":[{"leaf", "uplinks_before", "uplinks_after"}],
//              "hosts_cut_off":[names], "hosts_degraded":[names],
//              "domains":[{"key", "value", "switches":[names]}]}}
//
// Drain candidates (sim::SweepDrainCandidates), safest first:
//   {"candidates":[{"rank", "switch", "tier", "pod", "jobs_affected",
//                   "jobs_disconnected", "gpus_affected", "gpus_disconnected",
//                   "worst_path_fraction", "worst_bandwidth_fraction",
//                   "min_paths_after", "hosts_cut_off", "affected_jobs":[ids]}]}
//
// Pure functions; no I/O.
#pragma once

#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/drain.h"
#include "model/snapshot.h"
#include "sim/job_sim.h"

namespace drainwise::report {

struct JobJsonOptions {
  bool include_unaffected = true;  // false: only jobs whose traffic crossed the drain
};

nlohmann::json JobAssessmentToJson(const sim::JobAssessment& assessment, const model::Snapshot& snapshot,
                                   const model::Drain& drain, const JobJsonOptions& options = {});

// For a terminal: a summary line, the affected jobs (worst first, at most
// `max_rows`), then what the fabric loses.
std::string JobAssessmentTable(const sim::JobAssessment& assessment, const model::Snapshot& snapshot,
                               const model::Drain& drain, int max_rows = 50);

// `max_jobs_per_candidate` caps each candidate's affected_jobs list (0 = all).
nlohmann::json DrainCandidatesToJson(std::span<const sim::DrainCandidate> candidates, const model::Snapshot& snapshot,
                                     int max_jobs_per_candidate = 20);
std::string DrainCandidatesTable(std::span<const sim::DrainCandidate> candidates, const model::Snapshot& snapshot,
                                 int max_rows = 50);

}  // namespace drainwise::report
