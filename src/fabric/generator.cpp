#include "fabric/generator.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

namespace drainwise::fabric {

namespace {

// splitmix64: tiny, fast, and the same on every platform and standard
// library (std::uniform_*_distribution is not), so same seed => same bytes.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }  // [0, 1)
  double Uniform(double lo, double hi) { return lo + (hi - lo) * Uniform(); }
  int Int(int lo, int hi) { return lo + static_cast<int>(Next() % static_cast<uint64_t>(hi - lo + 1)); }
  template <class T>
  const T& Pick(const std::vector<T>& v) {
    return v[Next() % v.size()];
  }

 private:
  uint64_t state_;
};

std::string HostName(int pod, int index) { return fmt::format("p{}-gpu{:04}", pod, index); }

double Round(double v, double unit) { return std::round(v / unit) * unit; }

// The cross-pod mixture-of-experts jobs of JobMixOptions (moe_*), taken out
// of `hosts` (and `pods`, the pod of each host) in document order.
void PlaceMoeJobs(const FabricOptions& fabric, const JobMixOptions& o, std::vector<std::string>& hosts,
                  std::vector<std::string>& pods, int& seq, model::JobsSpec& out) {
  std::vector<std::string> pod_names;  // in order of first appearance
  for (const auto& p : pods) {
    if (std::find(pod_names.begin(), pod_names.end(), p) == pod_names.end()) pod_names.push_back(p);
  }
  const int npods = static_cast<int>(pod_names.size());
  const int per_job_pods = std::clamp(o.moe_pods, 1, std::max(1, npods));
  const int per_leaf = std::max(1, fabric.hosts_per_leaf);
  std::vector<uint8_t> taken(hosts.size(), 0);
  for (int k = 0; k < o.moe_jobs; ++k) {
    // Per pod of the job: its first free hosts, `moe_hosts / pods` of them
    // (the first pods take the remainder), reordered position-major over
    // leaf groups (g0h0, g1h0, ..., g0h1, ...) so that any run of
    // consecutive hosts covers every leaf group of the selection.
    std::vector<std::vector<size_t>> per_pod;
    for (int m = 0; m < per_job_pods; ++m) {
      const std::string& pod = pod_names[static_cast<size_t>((k * per_job_pods + m) % npods)];
      const int want = o.moe_hosts / per_job_pods + (m < o.moe_hosts % per_job_pods ? 1 : 0);
      std::vector<size_t> sel;
      for (size_t i = 0; i < hosts.size() && static_cast<int>(sel.size()) < want; ++i) {
        if (!taken[i] && pods[i] == pod) sel.push_back(i);
      }
      std::vector<size_t> order(sel.size());
      std::iota(order.begin(), order.end(), size_t{0});
      std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
        return std::make_pair(x % per_leaf, x / per_leaf) < std::make_pair(y % per_leaf, y / per_leaf);
      });
      std::vector<size_t> ordered;
      for (size_t x : order) ordered.push_back(sel[x]);
      for (size_t i : ordered) taken[i] = 1;
      per_pod.push_back(std::move(ordered));
    }
    // Interleave the pods: host i of the job comes from pod i mod pods.
    model::JobSpec j;
    for (size_t r = 0;; ++r) {
      bool any = false;
      for (const auto& v : per_pod) {
        if (r < v.size()) {
          j.hosts.push_back(hosts[v[r]]);
          any = true;
        }
      }
      if (!any) break;
    }
    if (j.hosts.empty()) break;
    j.id = fmt::format("job-{:04}", ++seq);
    j.name = fmt::format("moe-cross-pod-{}", seq);
    j.tenant = "prod-llm";
    j.priority = 50;
    j.labels = {{"workload", "expert-parallel"}, {"team", "prod-llm"}};
    j.started_at = o.now - 24 * 3600;
    j.checkpoint = model::Checkpoint{1800, 300};
    j.iteration.compute_s = 0.3;
    j.iteration.overlap = 0;
    model::CollectiveSpec a2a;
    a2a.kind = model::CollectiveKind::kAllToAll;
    a2a.algorithm = "direct";
    a2a.bytes = o.moe_alltoall_bytes;
    a2a.group_size = o.moe_group_ranks;
    j.iteration.collectives.push_back(a2a);
    model::CollectiveSpec ar;
    ar.kind = model::CollectiveKind::kAllReduce;
    ar.bytes = o.moe_allreduce_bytes;
    j.iteration.collectives.push_back(ar);
    out.jobs.push_back(std::move(j));
  }
  std::vector<std::string> rest, rest_pods;
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (taken[i]) continue;
    rest.push_back(std::move(hosts[i]));
    rest_pods.push_back(std::move(pods[i]));
  }
  hosts = std::move(rest);
  pods = std::move(rest_pods);
}

}  // namespace

std::optional<Preset> FindPreset(std::string_view name) {
  Preset p;
  if (name == "demo") {
    auto& f = p.fabric;
    f.name = "demo";
    f.tiers = 3;
    f.pods = 2;
    f.hosts = 128;
    f.gpus_per_host = 8;
    f.rails = 4;
    f.hosts_per_leaf = 16;
    f.spines_per_pod = 4;
    f.superspines_per_plane = 2;
    f.host_gbps = 400;
    f.leaf_spine_gbps = 400;
    f.spine_super_gbps = 400;
    f.single_homed_hosts = 2;
    p.jobs.jobs = 15;
    p.jobs.seed = 7;
    p.jobs.busy_fraction = 0.8;
    return p;
  }
  if (name == "32k") {
    auto& f = p.fabric;
    f.name = "32k";
    f.tiers = 3;
    f.pods = 8;
    f.hosts = 4096;
    f.gpus_per_host = 8;
    f.rails = 8;
    f.hosts_per_leaf = 32;
    f.spines_per_pod = 32;
    f.leaf_spine_links = 1;
    f.superspines_per_plane = 8;
    f.spine_super_links = 8;
    f.host_gbps = 400;
    f.leaf_spine_gbps = 400;
    f.spine_super_gbps = 400;
    f.single_homed_hosts = 0;
    p.jobs.jobs = 1000;
    p.jobs.seed = 1;
    p.jobs.large_jobs = {1024, 512, 256, 256, 128, 128};
    p.jobs.busy_fraction = 0.9;
    return p;
  }
  if (name == "128k") {
    // Four times the 32k fabric: 32 pods of 512 hosts (16 leaf groups of 32
    // hosts x 8 rails = 128 leaves, 32 spines), 16 superspines in each of
    // the 32 planes; every spine has 64 x 400G up (16 superspines x 4 links)
    // as at 32k, every superspine 32 pods x 4 links = 128 ports.
    p = *FindPreset("32k");
    auto& f = p.fabric;
    f.name = "128k";
    f.pods = 32;
    f.hosts = 16384;
    f.superspines_per_plane = 16;
    f.spine_super_links = 4;
    p.jobs.jobs = 4000;
    p.jobs.large_jobs = {2048, 1024, 1024, 512, 512, 256, 256, 128, 128};
    return p;
  }
  if (name == "32k-moe" || name == "32k-moe-2to1") {
    p = *FindPreset("32k");
    p.fabric.name = std::string(name);
    if (name == "32k-moe-2to1") {
      // Leaves: 32 hosts x 400G down, 32 spines x 200G up (2:1). Spines:
      // 128 leaves x 200G down, 64 superspine links x 400G up (1:1).
      p.fabric.leaf_spine_gbps = 200;
    }
    p.jobs.jobs = 0;
    p.jobs.large_jobs.clear();
    p.jobs.moe_jobs = 4;
    p.jobs.moe_hosts = 256;
    p.jobs.moe_pods = 2;
    p.jobs.moe_group_ranks = 512;
    return p;
  }
  if (name == "small") {
    auto& f = p.fabric;
    f.name = "small";
    f.tiers = 2;
    f.pods = 1;
    f.hosts = 16;
    f.gpus_per_host = 8;
    f.rails = 2;
    f.hosts_per_leaf = 4;
    f.spines_per_pod = 2;
    f.single_homed_hosts = 1;
    p.jobs.jobs = 5;
    p.jobs.seed = 3;
    return p;
  }
  return std::nullopt;
}

model::TopologySpec GenerateFabric(const FabricOptions& o) {
  model::TopologySpec t;
  t.name = o.name;
  const int pods = o.tiers >= 3 ? std::max(1, o.pods) : 1;
  const int rails = std::max(1, o.rails);
  const int per_leaf = std::max(1, o.hosts_per_leaf);
  const int hosts_per_pod = (std::max(1, o.hosts) + pods - 1) / pods;
  const int groups_per_pod = (hosts_per_pod + per_leaf - 1) / per_leaf;
  const int power = std::max(1, o.power_feeds);

  auto add_switch = [&](std::string id, std::string tier, std::string pod, std::string plane,
                        std::map<std::string, std::string> domains) {
    model::NodeSpec n;
    n.id = std::move(id);
    n.kind = model::NodeKind::kSwitch;
    n.tier = std::move(tier);
    n.pod = std::move(pod);
    n.plane = std::move(plane);
    n.domains = std::move(domains);
    t.nodes.push_back(std::move(n));
  };
  auto add_link = [&](const std::string& a, const std::string& b, double gbps, std::string a_port, std::string b_port) {
    t.links.push_back({a, b, gbps, std::move(a_port), std::move(b_port)});
  };

  // Superspines first, so that switch tiers read top-down in the document.
  if (o.tiers >= 3) {
    for (int plane = 0; plane < o.spines_per_pod; ++plane) {
      for (int k = 0; k < o.superspines_per_plane; ++k) {
        add_switch(fmt::format("ss{}-{}", plane, k), "superspine", "", fmt::format("plane-{}", plane),
                   {{"power", fmt::format("core-feed-{}", k % power)}, {"row", "core"}});
      }
    }
  }
  for (int p = 0; p < pods; ++p) {
    std::string pod = fmt::format("pod{}", p);
    for (int s = 0; s < o.spines_per_pod; ++s) {
      std::string spine = o.tiers >= 3 ? fmt::format("p{}-spine{}", p, s) : fmt::format("spine{}", s);
      add_switch(spine, "spine", o.tiers >= 3 ? pod : "", fmt::format("plane-{}", s),
                 {{"power", fmt::format("{}-spine-feed-{}", pod, s % power)}, {"row", pod + "-net"}});
      if (o.tiers >= 3) {
        for (int k = 0; k < o.superspines_per_plane; ++k) {
          for (int l = 0; l < o.spine_super_links; ++l) {
            std::string ss = fmt::format("ss{}-{}", s, k);
            add_link(spine, ss, o.spine_super_gbps, fmt::format("up{}", k * o.spine_super_links + l),
                     fmt::format("down{}", p * o.spine_super_links + l));
          }
        }
      }
    }
    int host_index = 0;
    for (int g = 0; g < groups_per_pod; ++g) {
      std::vector<std::string> leaves;
      for (int r = 0; r < rails; ++r) {
        std::string leaf = o.tiers >= 3 ? fmt::format("p{}-leaf{}-r{}", p, g, r) : fmt::format("leaf{}-r{}", g, r);
        if (rails == 1) leaf = o.tiers >= 3 ? fmt::format("p{}-leaf{}", p, g) : fmt::format("leaf{}", g);
        add_switch(leaf, "leaf", o.tiers >= 3 ? pod : "", rails > 1 ? fmt::format("rail-{}", r) : "",
                   {{"rack", fmt::format("{}-net{}", pod, g)},
                    {"row", fmt::format("{}-row{}", pod, g / 4)},
                    {"power", fmt::format("{}-feed-{}", pod, r % power)}});
        for (int s = 0; s < o.spines_per_pod; ++s) {
          std::string spine = o.tiers >= 3 ? fmt::format("p{}-spine{}", p, s) : fmt::format("spine{}", s);
          for (int l = 0; l < o.leaf_spine_links; ++l) {
            add_link(leaf, spine, o.leaf_spine_gbps, fmt::format("up{}", s * o.leaf_spine_links + l),
                     fmt::format("down{}", (g * rails + r) * o.leaf_spine_links + l));
          }
        }
        leaves.push_back(std::move(leaf));
      }
      for (int h = 0; h < per_leaf && host_index < hosts_per_pod; ++h, ++host_index) {
        model::NodeSpec n;
        n.id = HostName(p, host_index);
        n.kind = model::NodeKind::kHost;
        n.gpus = o.gpus_per_host;
        n.pod = o.tiers >= 3 ? pod : "";
        int rack = host_index / std::max(1, o.hosts_per_rack);
        n.domains = {{"rack", fmt::format("{}-rack{}", pod, rack)},
                     {"row", fmt::format("{}-row{}", pod, g / 4)},
                     {"power", fmt::format("{}-feed-{}", pod, rack % power)}};
        bool single = host_index >= hosts_per_pod - o.single_homed_hosts;
        for (int r = 0; r < (single ? 1 : rails); ++r) {
          add_link(n.id, leaves[r], o.host_gbps, fmt::format("nic{}", r), fmt::format("eth{}", h));
        }
        t.nodes.push_back(std::move(n));
      }
    }
  }
  return t;
}

model::JobsSpec GenerateJobs(const model::TopologySpec& topology, const FabricOptions& fabric, const JobMixOptions& o) {
  Rng rng(o.seed);
  // Hosts in document order: pod, group, index. Single-homed ones are kept
  // apart so that one job (an inference service) can be placed on them.
  std::vector<std::string> hosts;
  std::vector<std::string> single_homed;
  std::vector<std::string> host_pods;  // pod of hosts[i]
  {
    std::map<std::string, int> nics;
    for (const auto& l : topology.links) ++nics[l.a];
    for (const auto& n : topology.nodes) {
      if (n.kind != model::NodeKind::kHost) continue;
      bool single = fabric.rails > 1 && nics[n.id] == 1;
      (single ? single_homed : hosts).push_back(n.id);
      if (!single) host_pods.push_back(n.pod);
    }
  }
  model::JobsSpec out;
  int seq = 0;
  if (o.moe_jobs > 0) PlaceMoeJobs(fabric, o, hosts, host_pods, seq, out);
  if (o.jobs <= 0 || hosts.empty()) return out;

  int njobs = o.jobs;
  if (!single_homed.empty()) --njobs;  // reserved for the inference service below
  int busy = std::clamp(static_cast<int>(std::lround(o.busy_fraction * hosts.size())),
                        std::min<int>(njobs, hosts.size()), static_cast<int>(hosts.size()));
  njobs = std::min(njobs, busy);

  // Heavy-tailed sizes: Pareto weights scaled to the busy hosts, so a few jobs
  // span hundreds or thousands of hosts and most take one to a few.
  std::vector<int> sizes(njobs, 1);
  int cap = o.max_job_hosts > 0 ? o.max_job_hosts : busy;
  int fixed_hosts = 0;
  size_t nfixed = 0;
  for (; nfixed < o.large_jobs.size() && static_cast<int>(nfixed) < njobs; ++nfixed) {
    int s = std::min(o.large_jobs[nfixed], busy - fixed_hosts - (njobs - static_cast<int>(nfixed) - 1));
    if (s < 1) break;
    sizes[nfixed] = s;
    fixed_hosts += s;
  }
  std::vector<double> w(njobs, 0.0);
  for (int i = static_cast<int>(nfixed); i < njobs; ++i) w[i] = std::pow(1.0 - rng.Uniform(), -1.0 / 1.1);
  double wsum = std::accumulate(w.begin(), w.end(), 0.0);
  for (int i = static_cast<int>(nfixed); i < njobs; ++i) {
    sizes[i] = std::clamp(static_cast<int>(std::floor(w[i] / wsum * (busy - fixed_hosts))), 1, cap);
  }
  int total = std::accumulate(sizes.begin(), sizes.end(), 0);
  // Give leftover hosts to the largest jobs, or take excess from them.
  std::vector<int> order(njobs);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return sizes[a] > sizes[b]; });
  for (size_t k = 0; total != busy && k < 100000; ++k) {
    int i = order[k % order.size()];
    if (i < static_cast<int>(nfixed)) continue;  // keep the requested large sizes exact
    if (total < busy && sizes[i] < cap) {
      ++sizes[i];
      ++total;
    } else if (total > busy && sizes[i] > 1) {
      --sizes[i];
      --total;
    }
  }

  // Place the largest jobs first, contiguously (a topology-aware scheduler),
  // leaving a gap of free hosts now and then.
  const std::vector<std::string> tenants = {"research", "prod-llm", "ads-ranking", "search"};
  const std::vector<int> priorities = {0, 0, 10, 10, 50, 100};
  int free_hosts = static_cast<int>(hosts.size()) - busy;
  size_t cursor = 0;
  std::vector<model::JobSpec> jobs(njobs);
  for (int rank = 0; rank < njobs; ++rank) {
    int i = order[rank];
    model::JobSpec& j = jobs[i];
    if (free_hosts > 0 && rng.Uniform() < 0.3) {
      int gap = std::min(free_hosts, rng.Int(1, std::max(1, free_hosts / std::max(1, njobs / 4))));
      cursor += gap;
      free_hosts -= gap;
    }
    for (int h = 0; h < sizes[i] && cursor < hosts.size(); ++h) j.hosts.push_back(hosts[cursor++]);
  }

  for (int i = 0; i < njobs; ++i) {
    model::JobSpec& j = jobs[i];
    if (j.hosts.empty()) continue;
    const int n = static_cast<int>(j.hosts.size());
    const int ranks = n * fabric.gpus_per_host;
    j.id = fmt::format("job-{:04}", ++seq);
    j.tenant = rng.Pick(tenants);
    j.priority = rng.Pick(priorities);
    double kind = rng.Uniform();
    std::string workload;
    auto& it = j.iteration;
    if (kind >= o.alltoall_share + o.pipeline_share || n == 1) {
      workload = "data-parallel";
      it.compute_s = Round(rng.Uniform(0.2, 0.8), 0.001);
      it.overlap = Round(rng.Uniform(0.2, 0.6), 0.01);
      model::CollectiveSpec ar;
      ar.kind = model::CollectiveKind::kAllReduce;
      ar.bytes = Round(rng.Uniform(0.25, 2.0), 0.25) * 1e9;
      it.collectives.push_back(ar);
    } else if (kind < o.alltoall_share) {
      workload = "expert-parallel";
      it.compute_s = Round(rng.Uniform(0.1, 0.4), 0.001);
      it.overlap = Round(rng.Uniform(0.0, 0.3), 0.01);
      model::CollectiveSpec a2a;
      a2a.kind = model::CollectiveKind::kAllToAll;
      a2a.algorithm = "direct";
      a2a.bytes = Round(rng.Uniform(64, 512), 64) * 1e6;
      a2a.group_size = std::min(ranks, 64);
      a2a.count = 4;
      it.collectives.push_back(a2a);
      model::CollectiveSpec ar;
      ar.kind = model::CollectiveKind::kAllReduce;
      ar.bytes = 0.5e9;
      it.collectives.push_back(ar);
    } else {
      workload = "pipeline";
      it.compute_s = Round(rng.Uniform(0.3, 1.0), 0.001);
      it.overlap = Round(rng.Uniform(0.1, 0.5), 0.01);
      int stages = std::min(n, rng.Pick(std::vector<int>{2, 4, 8}));
      model::CollectiveSpec sr;
      sr.kind = model::CollectiveKind::kSendRecv;
      sr.bytes = Round(rng.Uniform(32, 256), 32) * 1e6;
      sr.stages = stages;
      sr.count = 8;  // micro-batches
      it.collectives.push_back(sr);
      model::CollectiveSpec ar;
      ar.kind = model::CollectiveKind::kAllReduce;
      ar.bytes = Round(rng.Uniform(0.25, 1.0), 0.25) * 1e9;
      ar.group_size = std::max(1, ranks / stages);
      it.collectives.push_back(ar);
    }
    j.name = fmt::format("{}-{}", workload, seq);
    j.labels = {{"workload", workload}, {"team", j.tenant}};
    j.started_at = o.now - static_cast<int64_t>(rng.Uniform(1, 72)) * 3600;
    if (rng.Uniform() < 0.7) j.expected_end = o.now + static_cast<int64_t>(rng.Uniform(1, 14 * 24)) * 3600;
    j.checkpoint = model::Checkpoint{Round(rng.Uniform(600, 3600), 60), Round(rng.Uniform(120, 900), 30)};
    out.jobs.push_back(std::move(j));
  }

  if (!single_homed.empty()) {
    // An inference service on the single-homed hosts of the first pod: the
    // job a careless leaf drain cuts off.
    model::JobSpec j;
    j.id = fmt::format("job-{:04}", ++seq);
    j.name = "inference-frontend";
    j.tenant = "prod-llm";
    j.priority = 100;
    j.labels = {{"workload", "inference"}, {"team", "prod-llm"}, {"tier", "critical"}};
    std::string pod_prefix = single_homed.front().substr(0, single_homed.front().find('-'));
    for (const auto& h : single_homed) {
      if (h.rfind(pod_prefix + "-", 0) == 0) j.hosts.push_back(h);
    }
    j.started_at = o.now - 48 * 3600;
    j.checkpoint = model::Checkpoint{0, 60};
    j.iteration.compute_s = 0.05;
    j.iteration.overlap = 0;
    model::CollectiveSpec ag;
    ag.kind = model::CollectiveKind::kAllGather;
    ag.bytes = 64e6;
    j.iteration.collectives.push_back(ag);
    out.jobs.push_back(std::move(j));
  }
  return out;
}

}  // namespace drainwise::fabric
