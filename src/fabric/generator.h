// Synthetic Clos fabrics and job mixes: the embedded demo, the 32k benchmark
// preset, and anything between, from a seed. Pure: same options, same output.
//
// Layout. Hosts come in groups of `hosts_per_leaf`; each group has `rails`
// leaves and NIC r of every host in the group is wired to the group's rail-r
// leaf (rails = 1 is a classic single-leaf ToR). Groups form pods; every leaf
// of a pod connects to every spine of the pod. With tiers = 3, spine j of
// every pod connects to every superspine of plane j.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/jobs.h"
#include "model/topology.h"

namespace drainwise::fabric {

struct FabricOptions {
  std::string name = "fabric";
  int tiers = 2;   // 2 = leaf/spine, 3 = leaf/spine/superspine
  int pods = 1;    // tiers = 2 needs pods = 1
  int hosts = 64;  // total hosts (rounded up to whole groups)
  int gpus_per_host = 8;
  int rails = 1;            // NICs per host, one rail leaf each
  int hosts_per_leaf = 16;  // hosts in a group (= host ports of each leaf)
  int spines_per_pod = 4;
  int leaf_spine_links = 1;  // parallel links between a leaf and each spine
  int superspines_per_plane = 2;
  int spine_super_links = 1;  // parallel links between a spine and each superspine
  double host_gbps = 400;
  double leaf_spine_gbps = 400;
  double spine_super_gbps = 400;
  int single_homed_hosts = 0;  // hosts per pod wired with NIC 0 only (the pod's last ones)
  int hosts_per_rack = 4;
  int power_feeds = 2;  // power domains per pod (hosts, leaves), and for spines
};

struct JobMixOptions {
  int jobs = 15;
  uint64_t seed = 1;
  double busy_fraction = 0.85;  // share of hosts given to jobs
  int64_t now = 1796083200;     // 2026-12-01T00:00:00Z: started_at / expected_end are relative to it
  int max_job_hosts = 0;        // 0 = no cap beyond the fabric
  std::vector<int> large_jobs;  // sizes (hosts) of jobs placed first, e.g. {1024, 512}
  double alltoall_share = 0.2;  // share of expert-parallel (all-to-all) jobs
  double pipeline_share = 0.2;  // share of pipeline-parallel jobs; the rest is data-parallel
  // Cross-pod mixture-of-experts jobs, placed before the mix above (which
  // then takes `jobs` more on the hosts left). Each takes `moe_hosts` hosts,
  // evenly from `moe_pods` consecutive pods (job k starts at pod k x
  // moe_pods), in an order that puts hosts of every pod and every leaf group
  // it uses into each all-to-all group of `moe_group_ranks` consecutive
  // ranks. Collectives: that all-to-all (`direct`, `moe_alltoall_bytes` per
  // rank) and a ring all-reduce of `moe_allreduce_bytes` over all its ranks.
  int moe_jobs = 0;
  int moe_hosts = 256;
  int moe_pods = 2;
  int moe_group_ranks = 512;
  double moe_alltoall_bytes = 256e6;
  double moe_allreduce_bytes = 1e9;
};

struct Preset {
  FabricOptions fabric;
  JobMixOptions jobs;
};

// The named presets: "demo" (about 1,000 GPUs in two pods, 4 rails, ~15 jobs,
// single-homed and free hosts), "32k" (4,096 hosts x 8 GPUs, 8 rails, 3 tiers,
// about 1,000 jobs), "32k-moe" (the 32k fabric with only 4 cross-pod
// mixture-of-experts jobs of 256 hosts: all-to-all groups of 512 ranks over
// two pods and 4 leaf groups each, plus a ring all-reduce; 4.1 M rank-level
// flows), "32k-moe-2to1" (the same with 200G leaf uplinks: 2:1
// oversubscribed at the leaves), "128k" (16,384 hosts x 8 GPUs = 131,072
// GPUs: 32 pods of the 32k layout, about 4,000 jobs) and "small" (a 2-tier
// fabric for tests).
std::optional<Preset> FindPreset(std::string_view name);

model::TopologySpec GenerateFabric(const FabricOptions& options);

// A synthetic job mix placed on the hosts of `topology` (as generated above):
// data-parallel ring all-reduce jobs, expert-parallel all-to-all jobs and
// pipeline jobs, from one host to thousands; some hosts stay free.
model::JobsSpec GenerateJobs(const model::TopologySpec& topology, const FabricOptions& fabric,
                             const JobMixOptions& options);

}  // namespace drainwise::fabric
