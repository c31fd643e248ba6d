// Jobs: who runs where, and what one training iteration sends.
//
// A JobsSpec names hosts by id; ResolveJobs() maps them onto a Topology and
// validates the workload, naming the offending job and field in its errors.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/error.h"
#include "model/ids.h"
#include "model/topology.h"

namespace drainwise::model {

enum class CollectiveKind { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kSendRecv, kFlows };

std::string_view CollectiveKindName(CollectiveKind kind);
std::optional<CollectiveKind> ParseCollectiveKind(std::string_view name);

template <class HostRef>
struct BasicFlow {
  HostRef src;
  HostRef dst;
  double bytes = 0;
};

// One collective of an iteration. `bytes` is the per-rank buffer size (the
// NCCL "count x sizeof(type)"): what each rank contributes or receives.
template <class HostRef>
struct BasicCollective {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  std::string algorithm = "ring";  // ring | direct (alltoall) | tree...
  double bytes = 0;
  int group_size = 0;                     // ranks per communicator; 0 = every rank of the job
  int stages = 0;                         // sendrecv: pipeline stages; 0 = one per host
  int count = 1;                          // how many times per iteration
  std::vector<BasicFlow<HostRef>> flows;  // kFlows only
};

template <class HostRef>
struct BasicIteration {
  double compute_s = 0;  // compute time of one iteration
  double overlap = 0;    // 0..1, share of comm hidden behind compute
  std::vector<BasicCollective<HostRef>> collectives;
};

struct Checkpoint {
  double interval_s = 0;
  double restart_cost_s = 0;
};

template <class HostRef>
struct BasicJob {
  std::string id;
  std::string name;
  std::string tenant;
  int priority = 0;  // higher is more important
  std::map<std::string, std::string> labels;
  std::vector<HostRef> hosts;
  int gpus_per_host = 0;                // 0 = every GPU of each host
  std::optional<int64_t> started_at;    // unix seconds
  std::optional<int64_t> expected_end;  // unix seconds
  std::optional<Checkpoint> checkpoint;
  BasicIteration<HostRef> iteration;
  std::string profile_source = "declared";  // declared | chakra | rule | default
};

using JobSpec = BasicJob<std::string>;
using CollectiveSpec = BasicCollective<std::string>;
using Job = BasicJob<NodeId>;
using Collective = BasicCollective<NodeId>;
using Flow = BasicFlow<NodeId>;

struct JobsSpec {
  std::vector<JobSpec> jobs;
};

class JobSet {
 public:
  JobSet() = default;
  JobSet(std::vector<Job> jobs, size_t node_count);

  const std::vector<Job>& jobs() const { return jobs_; }
  size_t size() const { return jobs_.size(); }
  const Job& job(JobId id) const { return jobs_[id.value]; }
  std::optional<JobId> FindJob(std::string_view id) const;
  // The jobs placed on `host` (several jobs may share a host's GPUs).
  std::span<const JobId> JobsOnHost(NodeId host) const;
  bool HostIsFree(NodeId host) const { return JobsOnHost(host).empty(); }

 private:
  std::vector<Job> jobs_;
  std::unordered_map<std::string, JobId> by_id_;
  std::vector<uint32_t> host_offsets_;  // CSR over node ids
  std::vector<JobId> host_jobs_;
};

// Maps host names onto `topology` and validates. Errors name the job and the
// field: duplicate job ids, unknown or non-host hosts, a host listed twice in
// a job, more GPUs placed on a host than it has, overlap outside [0,1],
// negative sizes, explicit flows between hosts outside the job.
Result<JobSet> ResolveJobs(const JobsSpec& spec, const Topology& topology);

// As ResolveJobs, but a job that does not resolve (typically: the topology
// changed under it) is left out and its error message listed in `dropped`.
struct LenientJobs {
  JobSet jobs;
  std::vector<std::string> dropped;
};
LenientJobs ResolveJobsLenient(const JobsSpec& spec, const Topology& topology);

// The GPUs (ranks) a job uses on each host.
int GpusPerHost(const Job& job, const Topology& topology);

// The same job with every host reference (hosts, flow ends) mapped by
// `host`: the one place that knows all of a job's fields.
template <class To, class From, class Fn>
BasicJob<To> MapJobHosts(const BasicJob<From>& job, Fn&& host) {
  BasicJob<To> out;
  out.id = job.id;
  out.name = job.name;
  out.tenant = job.tenant;
  out.priority = job.priority;
  out.labels = job.labels;
  out.hosts.reserve(job.hosts.size());
  for (const auto& h : job.hosts) out.hosts.push_back(host(h));
  out.gpus_per_host = job.gpus_per_host;
  out.started_at = job.started_at;
  out.expected_end = job.expected_end;
  out.checkpoint = job.checkpoint;
  out.profile_source = job.profile_source;
  out.iteration.compute_s = job.iteration.compute_s;
  out.iteration.overlap = job.iteration.overlap;
  for (const auto& c : job.iteration.collectives) {
    BasicCollective<To> col;
    col.kind = c.kind;
    col.algorithm = c.algorithm;
    col.bytes = c.bytes;
    col.group_size = c.group_size;
    col.stages = c.stages;
    col.count = c.count;
    for (const auto& f : c.flows) col.flows.push_back({host(f.src), host(f.dst), f.bytes});
    out.iteration.collectives.push_back(std::move(col));
  }
  return out;
}

// The spec of a resolved job (host names): the inverse of ResolveJobs.
JobSpec DescribeJob(const Job& job, const Topology& topology);
JobsSpec DescribeJobs(const JobSet& jobs, const Topology& topology);

}  // namespace drainwise::model
