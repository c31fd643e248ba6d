// What a policy is evaluated on: the measured impact of one proposed drain.
//
// Filled by the advisor from the simulators' results (job-level and, when it
// ran, flow-level). Depends on the model only. Fabric measures (capacity
// drained, switch counts, shared domains) are not inputs: Evaluate() computes
// them from the topology and the drains, so every caller measures them the
// same way.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/drain.h"
#include "model/ids.h"
#include "model/jobs.h"
#include "model/topology.h"

namespace drainwise::policies {

// One job's identity (what selectors match on) and its measured impact.
// Fractions compare the drained fabric with the baseline (active drains
// applied in both): 1 = unchanged, 0 = nothing left.
struct JobImpact {
  // Identity.
  std::string id;
  std::string tenant;
  int priority = 0;
  std::map<std::string, std::string> labels;
  model::JobId job;  // optional back-reference into the caller's JobSet, copied into reasons

  // Measures.
  bool connected = true;               // every pair of the job's hosts still has a path
  double path_fraction = 1.0;          // share of baseline paths left, [0, 1]
  double bandwidth_fraction = 1.0;     // share of baseline bandwidth left, [0, 1]
  std::optional<int> min_paths_after;  // fewest paths left between two of its hosts
  std::optional<double> slowdown_pct;  // iteration-time increase in %; absent when only
                                       // the job-level pass ran
};

// A JobImpact with the identity fields copied from `job` and the measures at
// their "no impact" values.
inline JobImpact IdentifyJob(const model::Job& job, model::JobId id = {}) {
  JobImpact j;
  j.id = job.id;
  j.tenant = job.tenant;
  j.priority = job.priority;
  j.labels = job.labels;
  j.job = id;
  return j;
}

struct Impact {
  // REQUIRED: the fabric the drains refer to; must outlive the Evaluate() call.
  const model::Topology* topology = nullptr;
  model::Drain drain;                // the proposed drain
  std::vector<model::Drain> active;  // drains already in progress
  int64_t now_unix_s = 0;            // when the drain would start (change windows); UTC
  // The jobs to check, typically those the drain affects. A job not listed
  // is assumed unaffected.
  std::vector<JobImpact> jobs;
  // Topology drift (connectors/topology_merge.h) by device name: what the
  // intent and observation sources disagree on about that device, one plain
  // sentence each. Empty when the topology has a single source.
  std::map<std::string, std::vector<std::string>> drift;
  // Switches the affected jobs' paths cross, by name (for no_drift with
  // "crossed"); the caller fills it when it knows them.
  std::vector<std::string> crossed;
};

}  // namespace drainwise::policies
