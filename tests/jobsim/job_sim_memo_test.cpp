// The job-level assessment's level memo (sim/job_assessor.cpp, Fused) is a
// pure shortcut: with it and without it every field of every job must be
// bit-for-bit the same. The memo is switched off through the workspace's
// internal state, which is what this test reaches into.
#include <bit>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

#include "fabric/generator.h"
#include "model/snapshot.h"
#include "sim/job_sim.h"
#include "sim/job_sim_internal.h"

namespace drainwise::sim {
namespace {

// `uneven`: every link gets its own capacity (100-400G), so a pair's
// bottleneck can sit above a level the memo matches as well as below it.
model::SnapshotPtr PresetSnapshot(const char* name, bool uneven) {
  auto p = fabric::FindPreset(name);
  REQUIRE(p);
  auto spec = fabric::GenerateFabric(p->fabric);
  auto jobs = fabric::GenerateJobs(spec, p->fabric, p->jobs);
  std::mt19937 rng(3);
  if (uneven) {
    for (model::LinkSpec& l : spec.links) l.gbps = 100.0 * (1 + rng() % 4);
  }
  auto t = model::BuildTopology(spec);
  REQUIRE(t);
  auto snap = model::MakeSnapshot(std::make_shared<const model::Topology>(std::move(*t)), 1, jobs, 1);
  REQUIRE(snap->dropped_jobs.empty());
  return snap;
}

bool Same(double a, double b) { return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b); }

void CheckSame(const JobAssessment& a, const JobAssessment& b) {
  REQUIRE(a.jobs.size() == b.jobs.size());
  CHECK(a.jobs_affected == b.jobs_affected);
  CHECK(a.jobs_disconnected == b.jobs_disconnected);
  CHECK(a.pair_routes == b.pair_routes);
  for (size_t j = 0; j < a.jobs.size(); ++j) {
    CAPTURE(j);
    const JobImpact &x = a.jobs[j], &y = b.jobs[j];
    CHECK(x.affected == y.affected);
    CHECK(x.connected == y.connected);
    CHECK(Same(x.path_fraction, y.path_fraction));
    CHECK(Same(x.bandwidth_fraction, y.bandwidth_fraction));
    CHECK(Same(x.crossing_share, y.crossing_share));
    CHECK(x.min_paths_after.has_value() == y.min_paths_after.has_value());
    if (x.min_paths_after && y.min_paths_after) CHECK(Same(*x.min_paths_after, *y.min_paths_after));
    CHECK(x.crossed_switches == y.crossed_switches);
    CHECK(x.crossed_links == y.crossed_links);
    CHECK(x.host_pairs_crossing == y.host_pairs_crossing);
    CHECK(x.host_pairs_cut == y.host_pairs_cut);
  }
}

// Drains that make the memo's levels differ in every way the pass looks at:
// single switches of each tier, every spine of one pod (its superspines and
// the other pods' spines of those planes die), two spines, a spine with a
// superspine, named switch links (bundles that lose some links) and NICs.
std::vector<model::Drain> Drains(const model::Topology& t) {
  std::vector<model::Drain> drains;
  for (const char* tier : {"leaf", "spine", "superspine"}) {
    for (NodeId s : SwitchesOfTier(t, tier)) drains.push_back(model::Drain{{s}, {}});
  }
  auto spines = SwitchesOfTier(t, "spine");
  auto supers = SwitchesOfTier(t, "superspine");
  model::Drain pod;
  for (NodeId s : spines) {
    if (t.node(s).pod == t.node(spines[0]).pod) pod.switches.push_back(s);
  }
  drains.push_back(pod);
  drains.push_back(model::Drain{{spines[0], spines[1]}, {}});
  if (!supers.empty()) drains.push_back(model::Drain{{spines[0], supers[0]}, {}});
  std::mt19937 rng(11);
  for (int i = 0; i < 12; ++i) drains.push_back(model::Drain{{}, {LinkId(rng() % t.link_count())}});
  model::Drain links;
  auto nb = t.neighbors(spines[1]);
  for (size_t i = 0; i < nb.size(); i += 2) links.links.push_back(nb[i].link);
  drains.push_back(links);
  for (auto& d : drains) {
    std::sort(d.switches.begin(), d.switches.end());
    std::sort(d.links.begin(), d.links.end());
    d.links.erase(std::unique(d.links.begin(), d.links.end()), d.links.end());
  }
  return drains;
}

TEST_CASE("the level memo changes no bit of any job's result") {
  for (const auto& [preset_name, uneven_links] : {std::pair{"demo", false}, {"demo", true}, {"small", true}}) {
    // Plain copies: clang 14 cannot capture structured bindings in CAPTURE's lambda.
    const std::string preset = preset_name;
    const bool uneven = uneven_links;
    CAPTURE(preset);
    CAPTURE(uneven);
    JobSimIndex index(PresetSnapshot(preset.c_str(), uneven));
    // One workspace per mode, reused across drains as the server does (the
    // memo must not leak from one drain into the next).
    JobSimWorkspace with, without;
    without.state().memo_off = true;
    int affected = 0;
    for (const model::Drain& d : Drains(index.topology())) {
      auto a = AssessJobs(index, d, with);
      auto b = AssessJobs(index, d, without);
      REQUIRE(a);
      REQUIRE(b);
      CheckSame(*a, *b);
      // And pair by pair (a job's fields are minima over its pairs, which
      // can hide a pair's difference).
      const auto &sa = with.state(), &sb = without.state();
      REQUIRE(sa.pair_epoch.size() == sb.pair_epoch.size());
      for (size_t pid = 0; pid < sa.pair_epoch.size(); ++pid) {
        const bool done = sa.pair_epoch[pid] == sa.epoch;
        REQUIRE(done == (sb.pair_epoch[pid] == sb.epoch));
        if (!done) continue;
        CAPTURE(pid);
        CHECK(sa.after[pid].connected == sb.after[pid].connected);
        CHECK(Same(sa.after[pid].paths, sb.after[pid].paths));
        CHECK(Same(sa.after[pid].spray_bps, sb.after[pid].spray_bps));
        CHECK(Same(sa.after[pid].clean_share, sb.after[pid].clean_share));
      }
      affected += a->jobs_affected;
    }
    CHECK(affected > 0);
    CHECK(without.state().memo_hits == 0);
    // Not vacuous: the shortcut was taken.
    if (std::string_view(preset) == "demo") CHECK(with.state().memo_hits > 0);
  }
}

}  // namespace
}  // namespace drainwise::sim
