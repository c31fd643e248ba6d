// Slurm: the tree topology (topology.conf) and running jobs (squeue --json,
// slurmrestd /slurm/v0.0.4x/jobs).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "model/error.h"
#include "model/jobs.h"
#include "model/topology.h"

namespace drainwise::connectors {

struct SlurmTopologyOptions {
  std::string name = "slurm";  // TopologySpec.name
  // Capacity of a link when its switch line has no LinkSpeed=.
  double default_gbps = 400;
  // LinkSpeed= has no unit in Slurm; it is multiplied by this to get Gb/s.
  // 0 ignores LinkSpeed altogether.
  double link_speed_unit_gbps = 1;
  int gpus_per_host = 8;  // NodeSpec.gpus of every host
};

// topology.conf (topology/tree): "SwitchName=x Switches=<hostlist>" and
// "SwitchName=x Nodes=<hostlist>", optional "LinkSpeed=N"; '#' comments,
// keys case-insensitive, a trailing '\' continues a line. Switches that list
// no Switches= are leaves (level 1); every other switch is one level above its
// highest child. Levels 1/2/3 are named leaf/spine/superspine, higher levels
// "tierN". Nodes are hosts linked to each switch that lists them.
// Errors name the line: unknown keys, undefined or duplicate switches, cycles,
// bad hostlists.
Result<model::TopologySpec> ParseSlurmTopologyConf(std::string_view text,
                                                   const SlurmTopologyOptions& options = {});

struct SlurmJobsOptions {
  std::string id_prefix;  // prepended to job ids, e.g. "slurm:" when several clusters feed one daemon
};

// squeue --json / slurmrestd jobs. Only jobs whose job_state (a string before
// 23.11, a list since) contains RUNNING are returned; a running job with an
// empty node list is skipped. Numbers may be plain or {"set","infinite",
// "number"} objects (used only when set and not infinite). Mapping:
//   id = id_prefix + job_id, name = name, tenant = account,
//   hosts = expanded `nodes`, gpus_per_host from tres_per_node "gres/gpu[:type]:N",
//   started_at = start_time, expected_end = end_time (when set and > 0),
//   labels: partition, user (user_name), account, qos, slurm_job_name.
// Slurm's priority is a scheduling number, not business importance: not mapped.
// The iteration is left empty and profile_source "default"; see profiles.h.
Result<model::JobsSpec> ParseSlurmJobs(const nlohmann::json& doc, const SlurmJobsOptions& options = {});

}  // namespace drainwise::connectors
