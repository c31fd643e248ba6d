#include "sim/flow_workload.h"

#include <algorithm>
#include <tuple>

namespace drainwise::sim {

namespace {

using model::CollectiveKind;

struct Rank {
  uint32_t host;  // index into job.hosts
  int gpu;        // local GPU index
};

class JobBuilder {
 public:
  JobBuilder(const model::Topology& topology, const model::Job& job, uint32_t job_index, Workload& out)
      : topology_(topology), job_(job), job_index_(job_index), out_(out) {
    gpus_ = std::max(1, model::GpusPerHost(job, topology));
    ranks_ = static_cast<int64_t>(job.hosts.size()) * gpus_;
  }

  void Build() {
    const auto& collectives = job_.iteration.collectives;
    for (uint32_t c = 0; c < collectives.size(); ++c) {
      const model::Collective& coll = collectives[c];
      if (!(coll.bytes > 0) && coll.kind != CollectiveKind::kFlows) continue;
      const double count = std::max(1, coll.count);
      size_t first = out_.demands.size();
      collective_ = c;
      double steps = 0;
      switch (coll.kind) {
        case CollectiveKind::kAllReduce:
          steps = Ring(coll, c, 2.0);
          break;
        case CollectiveKind::kAllGather:
        case CollectiveKind::kReduceScatter:
          steps = Ring(coll, c, 1.0);
          break;
        case CollectiveKind::kAllToAll:
          steps = AllToAll(coll, c);
          break;
        case CollectiveKind::kSendRecv:
          steps = SendRecv(coll, c);
          break;
        case CollectiveKind::kFlows:
          steps = Explicit(coll, c);
          break;
      }
      MergeFrom(first);
      if (out_.demands.size() > first) {
        out_.collectives.push_back(
            {job_index_, c, steps * count, static_cast<uint32_t>(first), static_cast<uint32_t>(out_.demands.size())});
      }
    }
  }

 private:
  uint32_t HostValue(uint32_t host_index) const { return job_.hosts[host_index].value; }
  int Nics(uint32_t host_index) const { return static_cast<int>(topology_.neighbors(job_.hosts[host_index]).size()); }
  int16_t Nic(uint32_t host_index, int gpu) const {
    int nics = Nics(host_index);
    // A host without NICs keeps NIC 0: the simulator finds it down and the
    // job disconnected.
    return static_cast<int16_t>(nics <= 0 ? 0 : NicOfGpu(gpu, nics, gpus_));
  }
  Rank RankAt(int64_t r) const { return {static_cast<uint32_t>(r / gpus_), static_cast<int>(r % gpus_)}; }

  void Add(uint32_t src_host, int16_t src_nic, uint32_t dst_host, int16_t dst_nic, uint32_t mult, double bytes) {
    if (!(bytes > 0) || mult == 0) return;
    FlowDemand d;
    d.job = job_index_;
    d.collective = collective_;
    d.src = HostValue(src_host);
    d.dst = HostValue(dst_host);
    d.src_nic = src_nic;
    d.dst_nic = dst_nic;
    d.multiplicity = mult;
    d.bytes = bytes;
    out_.demands.push_back(d);
    out_.job_flows[job_index_] += mult;
    out_.rank_flows += mult;
  }

  // Groups of `group_size` consecutive ranks (0 = all ranks).
  template <class F>
  void ForEachGroup(const model::Collective& coll, F&& f) const {
    int64_t m = coll.group_size > 0 ? std::min<int64_t>(coll.group_size, ranks_) : ranks_;
    if (m <= 0) return;
    for (int64_t begin = 0; begin < ranks_; begin += m) f(begin, std::min(begin + m, ranks_));
  }

  // Ring collectives: `factor` 2 for all-reduce, 1 for all-gather and
  // reduce-scatter. Per group of n ranks on k hosts, G' = the fewest GPUs any
  // of those hosts has in the group: G' rings, ring c linking the c-th GPU of
  // each host to the c-th GPU of the next host (last -> first), each
  // carrying factor (n-1)/n B / G' per inter-host hop. Returns the steps.
  double Ring(const model::Collective& coll, uint32_t c, double factor) {
    const double count = std::max(1, coll.count);
    double steps = 0;
    ForEachGroup(coll, [&](int64_t begin, int64_t end) {
      const int64_t n = end - begin;
      steps = std::max(steps, factor * static_cast<double>(n - 1));
      // Hosts of the group, in rank order, with their GPUs in the group.
      hosts_.clear();
      host_gpus_.clear();
      for (int64_t r = begin; r < end; ++r) {
        Rank rank = RankAt(r);
        if (hosts_.empty() || hosts_.back() != rank.host) {
          hosts_.push_back(rank.host);
          host_gpus_.push_back(rank.gpu);  // first GPU; the rest are consecutive
        }
      }
      const size_t k = hosts_.size();
      if (k <= 1) return;
      int channels = gpus_;
      for (size_t i = 0; i < k; ++i) {
        int64_t first_rank = static_cast<int64_t>(hosts_[i]) * gpus_ + host_gpus_[i];
        int64_t host_end = std::min<int64_t>(end, static_cast<int64_t>(hosts_[i] + 1) * gpus_);
        channels = std::min<int>(channels, static_cast<int>(host_end - std::max(begin, first_rank)));
      }
      const double bytes = factor * static_cast<double>(n - 1) / static_cast<double>(n) * coll.bytes / channels * count;
      for (int ch = 0; ch < channels; ++ch) {
        for (size_t i = 0; i < k; ++i) {
          size_t j = (i + 1) % k;
          Add(hosts_[i], Nic(hosts_[i], host_gpus_[i] + ch), hosts_[j], Nic(hosts_[j], host_gpus_[j] + ch), 1, bytes);
        }
      }
    });
    return steps;
  }

  // All-to-all over a group of n ranks: B/n from every rank to every other
  // member; pairs on one host stay inside it. PXN: a flow to GPU j leaves the
  // source host through the NIC of its own GPU j's rail and arrives on the
  // NIC of GPU j, so all flows from host a to GPU j of host b are identical:
  // one demand with multiplicity = a's ranks in the group.
  double AllToAll(const model::Collective& coll, uint32_t c) {
    const double count = std::max(1, coll.count);
    ForEachGroup(coll, [&](int64_t begin, int64_t end) {
      const int64_t n = end - begin;
      const double bytes = coll.bytes / static_cast<double>(n) * count;
      hosts_.clear();
      host_gpus_.clear();   // first GPU in group
      host_count_.clear();  // GPUs in group
      for (int64_t r = begin; r < end; ++r) {
        Rank rank = RankAt(r);
        if (hosts_.empty() || hosts_.back() != rank.host) {
          hosts_.push_back(rank.host);
          host_gpus_.push_back(rank.gpu);
          host_count_.push_back(0);
        }
        ++host_count_.back();
      }
      for (size_t a = 0; a < hosts_.size(); ++a) {
        for (size_t b = 0; b < hosts_.size(); ++b) {
          if (a == b) continue;
          for (int g = host_gpus_[b]; g < host_gpus_[b] + host_count_[b]; ++g) {
            Add(hosts_[a], Nic(hosts_[a], g), hosts_[b], Nic(hosts_[b], g), static_cast<uint32_t>(host_count_[a]),
                bytes);
          }
        }
      }
    });
    return 1;
  }

  // Pipeline: the job's hosts in `stages` consecutive groups (0 = one per
  // host); GPU g of the i-th host of stage s sends `bytes` to GPU g of the
  // (i mod q)-th host of stage s+1 (q hosts) and gets as much back.
  double SendRecv(const model::Collective& coll, uint32_t c) {
    const double count = std::max(1, coll.count);
    const int64_t h = static_cast<int64_t>(job_.hosts.size());
    const int64_t s_count = coll.stages > 0 ? std::min<int64_t>(coll.stages, h) : h;
    if (s_count <= 1) return 1;
    auto stage_begin = [&](int64_t s) { return s * h / s_count; };
    for (int64_t s = 0; s + 1 < s_count; ++s) {
      int64_t a0 = stage_begin(s), p = stage_begin(s + 1) - a0;
      int64_t b0 = stage_begin(s + 1), q = stage_begin(s + 2) - b0;
      if (p <= 0 || q <= 0) continue;
      for (int64_t i = 0; i < std::max(p, q); ++i) {
        uint32_t a = static_cast<uint32_t>(a0 + i % p), b = static_cast<uint32_t>(b0 + i % q);
        for (int g = 0; g < gpus_; ++g) {
          Add(a, Nic(a, g), b, Nic(b, g), 1, coll.bytes * count);
          Add(b, Nic(b, g), a, Nic(a, g), 1, coll.bytes * count);
        }
      }
    }
    return 1;
  }

  double Explicit(const model::Collective& coll, uint32_t c) {
    const double count = std::max(1, coll.count);
    for (const model::Flow& f : coll.flows) {
      if (f.src == f.dst || !(f.bytes > 0)) continue;
      FlowDemand d;
      d.job = job_index_;
      d.collective = collective_;
      d.src = f.src.value;
      d.dst = f.dst.value;
      d.bytes = f.bytes * count;
      out_.demands.push_back(d);
      out_.job_flows[job_index_] += 1;
      out_.rank_flows += 1;
    }
    return 1;
  }

  // Merges identical demands appended since `first`.
  void MergeFrom(size_t first) {
    auto begin = out_.demands.begin() + static_cast<std::ptrdiff_t>(first);
    auto key = [](const FlowDemand& d) { return std::tie(d.src, d.src_nic, d.dst, d.dst_nic, d.bytes); };
    std::sort(begin, out_.demands.end(), [&](const FlowDemand& x, const FlowDemand& y) { return key(x) < key(y); });
    auto w = begin;
    for (auto r = begin; r != out_.demands.end(); ++r) {
      if (w != begin && key(*(w - 1)) == key(*r)) {
        (w - 1)->multiplicity += r->multiplicity;
      } else {
        *w++ = *r;
      }
    }
    out_.demands.erase(w, out_.demands.end());
  }

  const model::Topology& topology_;
  const model::Job& job_;
  uint32_t job_index_;
  Workload& out_;
  int gpus_ = 1;
  int64_t ranks_ = 0;
  uint32_t collective_ = 0;
  std::vector<uint32_t> hosts_;
  std::vector<int> host_gpus_;
  std::vector<int> host_count_;
};

}  // namespace

Workload BuildWorkload(const model::Topology& topology, const model::JobSet& jobs, const TaskRunner& runner) {
  const auto nj = static_cast<uint32_t>(jobs.size());
  // The second run starts at the first job past half the hosts (a job's
  // demands are its own: built apart, they are the same).
  size_t hosts = 0, half = 0;
  for (uint32_t j = 0; j < nj; ++j) hosts += jobs.job(model::JobId(j)).hosts.size();
  uint32_t cut = 0;
  while (cut < nj && 2 * half < hosts) half += jobs.job(model::JobId(cut++)).hosts.size();
  if (!runner) cut = nj;
  Workload part[2];
  RunTasks(runner, cut < nj ? 2 : 1, [&](size_t h) {
    Workload& out = part[h];
    out.job_flows.assign(nj, 0);
    for (uint32_t j = h == 0 ? 0 : cut; j < (h == 0 ? cut : nj); ++j) {
      out.job_first_demand.push_back(static_cast<uint32_t>(out.demands.size()));
      JobBuilder(topology, jobs.job(model::JobId(j)), j, out).Build();
    }
  });
  Workload out = std::move(part[0]);
  Workload& second = part[1];
  const auto base = static_cast<uint32_t>(out.demands.size());
  out.demands.insert(out.demands.end(), second.demands.begin(), second.demands.end());
  for (CollectiveSteps c : second.collectives) {
    c.first_demand += base;
    c.end_demand += base;
    out.collectives.push_back(c);
  }
  for (uint32_t first : second.job_first_demand) out.job_first_demand.push_back(base + first);
  if (!second.job_flows.empty()) {
    for (uint32_t j = 0; j < nj; ++j) out.job_flows[j] += second.job_flows[j];
  }
  out.rank_flows += second.rank_flows;
  out.job_first_demand.push_back(static_cast<uint32_t>(out.demands.size()));
  out.demands.shrink_to_fit();
  return out;
}

}  // namespace drainwise::sim
