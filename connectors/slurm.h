// Slurm: the tree topology (topology.conf) and running jobs (squeue --json,
// slurmrestd /slurm/v0.0.4x/jobs).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "connectors/diagnostics.h"
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
  // topology/block has no switches above its blocks: they are joined by one
  // spine of this name (the fabric between blocks, whose shape Slurm does not
  // describe), at `default_gbps`.
  std::string block_spine = "block-fabric";
};

// topology.conf in either of Slurm's two hierarchical formats:
//
// topology/tree: "SwitchName=x Switches=<hostlist>" and "SwitchName=x
// Nodes=<hostlist>", optional "LinkSpeed=N"; '#' comments, keys
// case-insensitive, a trailing '\' continues a line. Switches that list no
// Switches= are leaves (level 1); every other switch is one level above its
// highest child. Levels 1/2/3 are named leaf/spine/superspine, higher levels
// "tierN". Nodes are hosts linked to each switch that lists them.
// "SwitchName=no-topology" is not a switch: NVIDIA topograph writes the nodes
// it could not place there. Those nodes are left out (listed in `diagnostics`)
// rather than made an isolated leaf.
//
// topology/block: "BlockName=b Nodes=<hostlist>" lines and an optional
// "BlockSizes=N[,N...]" line. Each block becomes a leaf switch named after it
// (a block is a group of nodes with a fast fabric inside); blocks are joined by
// one spine (options.block_spine). With two or more block sizes, consecutive
// blocks aggregated at the second size share a pod ("block-pod-0", ...), as
// Slurm's planning aggregates them. A block larger than the base size (the
// first of BlockSizes) is refused.
//
// A file mixing SwitchName= and BlockName= lines is refused. Errors name the
// line: unknown keys, undefined or duplicate switches, cycles, bad hostlists,
// hostlists past the bounds of hostlist.h (every line of a file shares one
// document budget).
Result<model::TopologySpec> ParseSlurmTopologyConf(std::string_view text, const SlurmTopologyOptions& options = {},
                                                   Diagnostics* diagnostics = nullptr);

struct SlurmJobsOptions {
  std::string id_prefix;  // prepended to job ids, e.g. "slurm:" when several clusters feed one daemon
  // Jobs that hold no GPU (no "gpu" in tres_per_node, tres_per_job,
  // tres_per_task, tres_per_socket or tres_alloc_str while at least one of
  // them is reported): "skip" leaves them out (listed in diagnostics), "mark"
  // keeps them with the label cpu_only=true and gpus_per_host 0.
  std::string cpu_jobs = "skip";
};

// squeue --json / slurmrestd jobs. Only jobs whose job_state (a string before
// 23.11, a list since) contains RUNNING are returned; a running job with an
// empty node list is skipped. Numbers may be plain or {"set","infinite",
// "number"} objects (used only when set and not infinite). Mapping:
//   id = id_prefix + job_id, name = name, tenant = account,
//   hosts = expanded `nodes`, gpus_per_host from tres_per_node "gres/gpu[:type]:N",
//   else from tres_alloc_str "gres/gpu[:type]=N" divided by the job's hosts,
//   started_at = start_time, expected_end = end_time (when set and > 0),
//   labels: partition, user (user_name), account, qos, slurm_job_name.
// Slurm's priority is a scheduling number, not business importance: not mapped.
// The iteration is left empty and profile_source "default"; see profiles.h.
// One job that cannot be read (a bad hostlist, a missing job_id) is skipped and
// named in `diagnostics`; the other jobs apply. A document that is not a job
// list at all (or an in-band slurmrestd error) is an error.
Result<model::JobsSpec> ParseSlurmJobs(const nlohmann::json& doc, const SlurmJobsOptions& options = {},
                                       Diagnostics* diagnostics = nullptr);

}  // namespace drainwise::connectors
