#include "model/jobs.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include <fmt/format.h>

namespace drainwise::model {

std::string_view CollectiveKindName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return "allreduce";
    case CollectiveKind::kAllGather:
      return "allgather";
    case CollectiveKind::kReduceScatter:
      return "reducescatter";
    case CollectiveKind::kAllToAll:
      return "alltoall";
    case CollectiveKind::kSendRecv:
      return "sendrecv";
    case CollectiveKind::kFlows:
      return "flows";
  }
  return "flows";
}

std::optional<CollectiveKind> ParseCollectiveKind(std::string_view name) {
  for (auto k : {CollectiveKind::kAllReduce, CollectiveKind::kAllGather, CollectiveKind::kReduceScatter,
                 CollectiveKind::kAllToAll, CollectiveKind::kSendRecv, CollectiveKind::kFlows}) {
    if (CollectiveKindName(k) == name) return k;
  }
  return std::nullopt;
}

JobSet::JobSet(std::vector<Job> jobs, size_t node_count) : jobs_(std::move(jobs)) {
  by_id_.reserve(jobs_.size());
  std::vector<uint32_t> count(node_count + 1, 0);
  for (size_t j = 0; j < jobs_.size(); ++j) {
    by_id_.emplace(jobs_[j].id, JobId(j));
    for (NodeId h : jobs_[j].hosts) ++count[h.value];
  }
  host_offsets_.assign(node_count + 1, 0);
  for (size_t n = 0; n < node_count; ++n) host_offsets_[n + 1] = host_offsets_[n] + count[n];
  host_jobs_.resize(host_offsets_.back());
  std::vector<uint32_t> fill(host_offsets_.begin(), host_offsets_.end() - 1);
  for (size_t j = 0; j < jobs_.size(); ++j) {
    for (NodeId h : jobs_[j].hosts) host_jobs_[fill[h.value]++] = JobId(j);
  }
}

std::optional<JobId> JobSet::FindJob(std::string_view id) const {
  auto it = by_id_.find(std::string(id));
  if (it == by_id_.end()) return std::nullopt;
  return it->second;
}

std::span<const JobId> JobSet::JobsOnHost(NodeId host) const {
  if (host.value + 1 >= host_offsets_.size()) return {};
  return {host_jobs_.data() + host_offsets_[host.value], host_jobs_.data() + host_offsets_[host.value + 1]};
}

int GpusPerHost(const Job& job, const Topology& topology) {
  if (job.gpus_per_host > 0) return job.gpus_per_host;
  if (job.hosts.empty()) return 0;
  return std::max(1, topology.node(job.hosts.front()).gpus);
}

JobSpec DescribeJob(const Job& job, const Topology& topology) {
  return MapJobHosts<std::string>(job, [&](NodeId h) { return topology.node(h).name; });
}

JobsSpec DescribeJobs(const JobSet& jobs, const Topology& topology) {
  JobsSpec spec;
  spec.jobs.reserve(jobs.size());
  for (const auto& j : jobs.jobs()) spec.jobs.push_back(DescribeJob(j, topology));
  return spec;
}

namespace {

bool FiniteNonNegative(double v) { return std::isfinite(v) && v >= 0; }

Result<Job> ResolveJob(const JobSpec& s, const Topology& topology) {
  if (s.gpus_per_host < 0) return InvalidArgument("gpus_per_host must be >= 0");
  std::unordered_map<std::string, NodeId> hosts;  // the job's hosts by name
  for (size_t i = 0; i < s.hosts.size(); ++i) {
    auto h = topology.FindNode(s.hosts[i]);
    if (!h) return InvalidArgument(fmt::format("hosts[{}]: unknown host '{}'", i, s.hosts[i]));
    if (!topology.node(*h).is_host()) {
      return InvalidArgument(fmt::format("hosts[{}]: '{}' is a switch, not a host", i, s.hosts[i]));
    }
    if (!hosts.emplace(s.hosts[i], *h).second) {
      return InvalidArgument(fmt::format("hosts[{}]: host '{}' listed twice", i, s.hosts[i]));
    }
    int gpus = topology.node(*h).gpus;
    if (s.gpus_per_host > 0 && gpus > 0 && s.gpus_per_host > gpus) {
      return InvalidArgument(
          fmt::format("gpus_per_host {} exceeds the {} GPUs of host '{}'", s.gpus_per_host, gpus, s.hosts[i]));
    }
  }
  const auto& it = s.iteration;
  if (!FiniteNonNegative(it.compute_s)) return InvalidArgument("iteration.compute_ms must be >= 0");
  if (!(it.overlap >= 0 && it.overlap <= 1)) {
    return InvalidArgument(fmt::format("iteration.overlap must be within [0, 1], got {}", it.overlap));
  }
  for (size_t c = 0; c < it.collectives.size(); ++c) {
    const CollectiveSpec& cs = it.collectives[c];
    auto where = [&] { return fmt::format("iteration.collectives[{}]", c); };
    if (!FiniteNonNegative(cs.bytes)) return InvalidArgument(where() + ".bytes must be >= 0");
    if (cs.group_size < 0) return InvalidArgument(where() + ".group_size must be >= 0");
    if (cs.stages < 0) return InvalidArgument(where() + ".stages must be >= 0");
    if (cs.count < 1) return InvalidArgument(where() + ".count must be >= 1");
    for (size_t f = 0; f < cs.flows.size(); ++f) {
      const auto& fs = cs.flows[f];
      auto fwhere = [&] { return fmt::format("{}.flows[{}]", where(), f); };
      if (!hosts.count(fs.src)) {
        return InvalidArgument(fmt::format("{}.src: '{}' is not a host of this job", fwhere(), fs.src));
      }
      if (!hosts.count(fs.dst)) {
        return InvalidArgument(fmt::format("{}.dst: '{}' is not a host of this job", fwhere(), fs.dst));
      }
      if (!FiniteNonNegative(fs.bytes)) return InvalidArgument(fwhere() + ".bytes must be >= 0");
    }
  }
  return MapJobHosts<NodeId>(s, [&](const std::string& name) { return hosts.at(name); });
}

// Several jobs may share a host, but not more GPUs than it has.
Status CheckGpuCapacity(const std::vector<Job>& jobs, const Topology& topology) {
  std::vector<int> used(topology.node_count(), 0);
  for (const Job& j : jobs) {
    int per_host = GpusPerHost(j, topology);
    for (NodeId h : j.hosts) {
      used[h.value] += per_host;
      int gpus = topology.node(h).gpus;
      if (gpus > 0 && used[h.value] > gpus) {
        return InvalidArgument(fmt::format("job '{}': host '{}' has {} GPUs but jobs place {} on it", j.id,
                                           topology.node(h).name, gpus, used[h.value]));
      }
    }
  }
  return {};
}

}  // namespace

Result<JobSet> ResolveJobs(const JobsSpec& spec, const Topology& topology) {
  std::vector<Job> jobs;
  jobs.reserve(spec.jobs.size());
  std::unordered_set<std::string> ids;
  for (size_t i = 0; i < spec.jobs.size(); ++i) {
    const JobSpec& s = spec.jobs[i];
    if (s.id.empty()) return InvalidArgument(fmt::format("jobs[{}]: empty id", i));
    if (!ids.insert(s.id).second) return InvalidArgument(fmt::format("jobs[{}] ('{}'): duplicate job id", i, s.id));
    auto j = ResolveJob(s, topology);
    if (!j) return tl::unexpected(j.error().Wrap(fmt::format("jobs[{}] ('{}')", i, s.id)));
    jobs.push_back(std::move(*j));
  }
  if (auto st = CheckGpuCapacity(jobs, topology); !st) return tl::unexpected(st.error());
  return JobSet(std::move(jobs), topology.node_count());
}

LenientJobs ResolveJobsLenient(const JobsSpec& spec, const Topology& topology) {
  LenientJobs out;
  std::vector<Job> jobs;
  std::unordered_set<std::string> ids;
  std::vector<int> used(topology.node_count(), 0);
  for (size_t i = 0; i < spec.jobs.size(); ++i) {
    const JobSpec& s = spec.jobs[i];
    auto where = fmt::format("jobs[{}] ('{}')", i, s.id);
    if (s.id.empty() || !ids.insert(s.id).second) {
      out.dropped.push_back(where + ": empty or duplicate id");
      continue;
    }
    auto j = ResolveJob(s, topology);
    if (!j) {
      out.dropped.push_back(j.error().Wrap(where).message);
      continue;
    }
    jobs.push_back(std::move(*j));
    if (!CheckGpuCapacity(jobs, topology)) {
      out.dropped.push_back(where + ": more GPUs placed on a host than it has");
      jobs.pop_back();
    }
  }
  out.jobs = JobSet(std::move(jobs), topology.node_count());
  return out;
}

}  // namespace drainwise::model
