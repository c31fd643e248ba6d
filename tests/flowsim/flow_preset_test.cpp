// The presets the benchmarks run on (src/fabric/generator.h): what they
// claim to contain, checked on the generated documents and the workload.
#include <functional>
#include <set>
#include <string>

#include <doctest/doctest.h>

#include "fabric/generator.h"
#include "model/snapshot.h"
#include "sim/flow_workload.h"

namespace drainwise {
namespace {

TEST_CASE("32k-moe: 4 jobs x 256 hosts over two pods, all-to-all groups across pods and leaf groups, >= 4 M flows") {
  auto preset = fabric::FindPreset("32k-moe");
  REQUIRE(preset.has_value());
  auto spec = fabric::GenerateFabric(preset->fabric);
  auto jobs = fabric::GenerateJobs(spec, preset->fabric, preset->jobs);
  auto topo = std::make_shared<const model::Topology>(*model::BuildTopology(spec));
  auto snap = model::MakeSnapshot(topo, 1, jobs, 1);
  REQUIRE(snap->dropped_jobs.empty());
  REQUIRE(snap->jobs->size() == 4);
  std::set<std::string> all_pods;
  for (size_t j = 0; j < 4; ++j) {
    CAPTURE(j);
    const model::Job& job = snap->jobs->job(model::JobId(j));
    REQUIRE(job.hosts.size() == 256);
    REQUIRE(job.iteration.collectives.size() == 2);
    CHECK(job.iteration.collectives[0].kind == model::CollectiveKind::kAllToAll);
    CHECK(job.iteration.collectives[0].group_size == 512);
    CHECK(job.iteration.collectives[1].kind == model::CollectiveKind::kAllReduce);
    // 512 ranks = 64 hosts of 8 GPUs: each group has hosts of two pods and,
    // in each pod, of four leaf groups (the rail-0 leaf names the group).
    std::set<std::string> job_pods;
    for (size_t g = 0; g < 4; ++g) {
      std::set<std::string> pods, groups;
      for (size_t h = 64 * g; h < 64 * (g + 1); ++h) {
        const model::NodeId host = job.hosts[h];
        pods.insert(topo->node(host).pod);
        groups.insert(topo->node(topo->neighbors(host)[0].peer).name);
      }
      CHECK(pods.size() == 2);
      CHECK(groups.size() == 8);
      job_pods.insert(pods.begin(), pods.end());
    }
    CHECK(job_pods.size() == 2);
    all_pods.insert(job_pods.begin(), job_pods.end());
  }
  CHECK(all_pods.size() == 8);  // the jobs share no pod
  // Per group: 64 hosts x 63 other hosts x 8 x 8 rank pairs; per job's ring:
  // 8 channels x 256 hosts. 16 groups and 4 rings.
  auto w = sim::BuildWorkload(*topo, *snap->jobs);
  CHECK(w.rank_flows == 16ull * 64 * 63 * 64 + 4ull * 8 * 256);
  CHECK(w.rank_flows >= 4'000'000);
  // Built in two runs of jobs (a runner), joined in job order: the same.
  int calls = 0;
  const sim::TaskRunner runner = [&](size_t n, const std::function<void(size_t)>& task) {
    ++calls;
    for (size_t i = n; i-- > 0;) task(i);  // the second run first
  };
  auto two = sim::BuildWorkload(*topo, *snap->jobs, runner);
  CHECK(calls == 1);
  REQUIRE(two.demands.size() == w.demands.size());
  bool same = true;
  for (size_t i = 0; i < w.demands.size(); ++i) {
    const sim::FlowDemand &x = w.demands[i], &y = two.demands[i];
    same = same && x.job == y.job && x.collective == y.collective && x.src == y.src && x.dst == y.dst &&
           x.src_nic == y.src_nic && x.dst_nic == y.dst_nic && x.multiplicity == y.multiplicity && x.bytes == y.bytes;
  }
  CHECK(same);
  REQUIRE(two.collectives.size() == w.collectives.size());
  for (size_t c = 0; c < w.collectives.size(); ++c) {
    CHECK(two.collectives[c].job == w.collectives[c].job);
    CHECK(two.collectives[c].first_demand == w.collectives[c].first_demand);
    CHECK(two.collectives[c].end_demand == w.collectives[c].end_demand);
    CHECK(two.collectives[c].steps == w.collectives[c].steps);
  }
  CHECK(two.job_first_demand == w.job_first_demand);
  CHECK(two.job_flows == w.job_flows);
  CHECK(two.rank_flows == w.rank_flows);
}

TEST_CASE("32k-moe-2to1: the same jobs, leaf uplinks at half the host-facing capacity") {
  auto a = *fabric::FindPreset("32k-moe");
  auto b = *fabric::FindPreset("32k-moe-2to1");
  CHECK(b.fabric.leaf_spine_gbps * b.fabric.spines_per_pod * b.fabric.leaf_spine_links ==
        doctest::Approx(b.fabric.hosts_per_leaf * b.fabric.host_gbps / 2));
  CHECK(a.jobs.moe_jobs == b.jobs.moe_jobs);
  CHECK(a.jobs.moe_hosts == b.jobs.moe_hosts);
}

}  // namespace
}  // namespace drainwise
