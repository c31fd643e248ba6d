// Properties of the flow-level what-if on generated fabrics with every
// collective kind, hash-mode collisions, and the JSON/table renderers.
#include <algorithm>
#include <set>
#include <stop_token>

#include <doctest/doctest.h>

#include <fmt/format.h>

#include "fabric/generator.h"
#include "flowsim/flow_testing.h"
#include "report/flow_report.h"

namespace drainwise {
namespace {

using flowtest::FlowsJob;
using flowtest::Jobs;
using flowtest::TopoBuilder;
using nlohmann::json;

std::string Name(const char* prefix, int i) { return fmt::format("{}{}", prefix, i); }

model::SnapshotPtr Preset(const std::string& name, double gbps_scale = 1.0) {
  auto p = *fabric::FindPreset(name);
  auto spec = fabric::GenerateFabric(p.fabric);
  auto jobs = fabric::GenerateJobs(spec, p.fabric, p.jobs);
  for (auto& l : spec.links) l.gbps *= gbps_scale;
  auto topo = model::BuildTopology(spec);
  REQUIRE(topo.has_value());
  return model::MakeSnapshot(std::make_shared<const model::Topology>(std::move(*topo)), 1, jobs, 1);
}

model::Drain Switches(const model::Topology& t, std::vector<std::string> names) {
  model::DrainSpec s;
  s.switches = std::move(names);
  auto d = model::ResolveDrain(s, t);
  REQUIRE(d.has_value());
  return *d;
}

sim::FlowReport Run(const model::SnapshotPtr& snap, const model::Drain& d, const sim::FlowOptions& o) {
  auto rep = sim::SimulateFlows(*snap, d, o);
  REQUIRE_MESSAGE(rep.has_value(), (rep ? "" : rep.error().message));
  return std::move(*rep);
}

TEST_CASE("empty drain: no job slows down, in every routing mode") {
  auto snap = Preset("demo");
  for (auto routing : {sim::FlowRouting::kSpray, sim::FlowRouting::kSprayPath, sim::FlowRouting::kHashResilient,
                       sim::FlowRouting::kHashRehash, sim::FlowRouting::kAdaptive}) {
    CAPTURE(sim::FlowRoutingName(routing));
    sim::FlowOptions o;
    o.routing = routing;
    o.hash_seeds = 2;
    auto rep = Run(snap, model::Drain{}, o);
    REQUIRE(rep.jobs.size() == snap->jobs->size());
    size_t with_comm = 0;
    for (const auto& j : rep.jobs) {
      REQUIRE(j.slowdown_pct.has_value());
      CHECK(*j.slowdown_pct == doctest::Approx(0.0).epsilon(1e-9));
      CHECK(j.drained.comm_s == doctest::Approx(j.baseline.comm_s));
      with_comm += j.baseline.comm_s > 0;
    }
    CHECK(with_comm > rep.jobs.size() / 2);  // the mix really communicates
    CHECK(rep.model.flows > 1000);
  }
}

TEST_CASE("a drain no flow crosses leaves every rate unchanged (and is not re-solved)") {
  // "small": 2 tiers, leaves of 4 hosts with 2 rails. Jobs confined to one
  // leaf group each never cross a spine; draining a spine changes nothing.
  auto p = *fabric::FindPreset("small");
  auto spec = fabric::GenerateFabric(p.fabric);
  auto topo = std::make_shared<const model::Topology>(*model::BuildTopology(spec));
  model::JobsSpec jobs;
  auto job = [&](std::string id, std::vector<std::string> hosts, model::CollectiveKind kind, double bytes) {
    model::JobSpec j;
    j.id = std::move(id);
    j.hosts = std::move(hosts);
    j.iteration.compute_s = 0.1;
    j.iteration.overlap = 0.2;
    model::CollectiveSpec c;
    c.kind = kind;
    c.bytes = bytes;
    j.iteration.collectives.push_back(c);
    jobs.jobs.push_back(j);
  };
  job("ring", {"p0-gpu0000", "p0-gpu0001", "p0-gpu0002", "p0-gpu0003"}, model::CollectiveKind::kAllReduce, 1e9);
  job("a2a", {"p0-gpu0004", "p0-gpu0005", "p0-gpu0006"}, model::CollectiveKind::kAllToAll, 256e6);
  auto snap = model::MakeSnapshot(topo, 1, jobs, 1);
  REQUIRE(snap->jobs->size() == 2);
  auto rep = Run(snap, Switches(*topo, {"spine0"}), sim::FlowOptions{});
  for (const auto& j : rep.jobs) {
    CHECK(j.baseline.comm_s > 0);
    CHECK(j.drained.comm_s == j.baseline.comm_s);  // bit for bit
    CHECK(*j.slowdown_pct == 0.0);
  }
  for (size_t l = 0; l < rep.drained_load_bps.size(); ++l) {
    if (!rep.link_down[l]) CHECK(rep.drained_load_bps[l] == rep.baseline_load_bps[l]);
  }
  CHECK(rep.model.components_solved == 0);
  CHECK(rep.model.components_reused > 0);
}

TEST_CASE("doubling every capacity halves every bandwidth time") {
  auto a = Preset("demo");
  auto b = Preset("demo", 2.0);
  auto o = sim::FlowOptions::Exact();
  auto ra = Run(a, Switches(*a->topology, {"p0-spine1"}), o);
  auto rb = Run(b, Switches(*b->topology, {"p0-spine1"}), o);
  REQUIRE(ra.jobs.size() == rb.jobs.size());
  size_t checked = 0;
  for (size_t j = 0; j < ra.jobs.size(); ++j) {
    CAPTURE(j);
    CHECK(rb.jobs[j].baseline.comm_s == doctest::Approx(ra.jobs[j].baseline.comm_s / 2).epsilon(1e-9));
    REQUIRE(ra.jobs[j].drained.connected == rb.jobs[j].drained.connected);
    if (ra.jobs[j].drained.connected) {
      CHECK(rb.jobs[j].drained.comm_s == doctest::Approx(ra.jobs[j].drained.comm_s / 2).epsilon(1e-9));
    }
    checked += ra.jobs[j].baseline.comm_s > 0;
  }
  CHECK(checked > 5);
}

namespace {
sim::FlowOptions NicLinksToo(sim::FlowOptions o) {
  o.hot_links_fabric_only = false;
  return o;
}
}  // namespace

TEST_CASE("a leaf drain slows the jobs behind it (NIC fallback) and the report says why") {
  // demo: 4 rails; draining a rail leaf moves its hosts' rail traffic onto
  // their other NICs, which now carry two rails' worth.
  auto snap = Preset("demo");
  sim::FlowOptions options;
  options.hot_links_fabric_only = false;  // the hosts' remaining NICs are the hot links
  auto rep = Run(snap, Switches(*snap->topology, {"p0-leaf0-r0"}), options);
  int slowed = 0;
  for (const auto& j : rep.jobs) {
    if (j.slowdown_pct && *j.slowdown_pct > 1) {
      ++slowed;
      CHECK_FALSE(j.bottlenecks.empty());
      CHECK(j.drained.comm_s > j.baseline.comm_s);
    }
  }
  CHECK(slowed >= 1);
  CHECK_FALSE(rep.hot_links.empty());
  CHECK(rep.hot_links.front().utilisation == doctest::Approx(1.0).epsilon(1e-6));
  CHECK(rep.hot_links.front().job_count >= 1);
}

// A job's bottlenecks and a link's jobs depend on the jobs' traffic, not on
// the order the jobs are listed in (the report sums each job's bits per
// link on its own).
TEST_CASE("listing the jobs in reverse order reports the same bottlenecks and the same jobs per link") {
  auto p = *fabric::FindPreset("demo");
  auto spec = fabric::GenerateFabric(p.fabric);
  auto jobs = fabric::GenerateJobs(spec, p.fabric, p.jobs);
  // Fabric links at a tenth of their speed: jobs then share bottlenecks.
  std::set<std::string> hosts;
  for (const auto& n : spec.nodes) {
    if (n.kind == model::NodeKind::kHost) hosts.insert(n.id);
  }
  for (auto& l : spec.links) {
    if (!hosts.count(l.a) && !hosts.count(l.b)) l.gbps *= 0.1;
  }
  auto reversed = jobs;
  std::reverse(reversed.jobs.begin(), reversed.jobs.end());
  auto topo = std::make_shared<const model::Topology>(*model::BuildTopology(spec));
  auto a = model::MakeSnapshot(topo, 1, jobs, 1);
  auto b = model::MakeSnapshot(topo, 1, reversed, 1);
  sim::FlowOptions o;
  o.hot_links_fabric_only = false;
  o.bottlenecks_per_job = 8;
  const auto drain = Switches(*topo, {"p0-leaf0-r0"});
  const sim::FlowReport ra = Run(a, drain, o), rb = Run(b, drain, o);
  auto names = [](const model::SnapshotPtr& s, const std::vector<model::JobId>& ids) {
    std::vector<std::string> out;
    for (model::JobId id : ids) out.push_back(s->jobs->job(id).id);
    std::sort(out.begin(), out.end());
    return out;
  };
  size_t listed = 0, shared = 0;
  for (size_t j = 0; j < ra.jobs.size(); ++j) {
    const std::string& id = a->jobs->job(model::JobId(static_cast<uint32_t>(j))).id;
    CAPTURE(id);
    const sim::FlowJobResult& x = ra.jobs[j];
    const sim::FlowJobResult& y = rb.jobs[b->jobs->FindJob(id)->value];
    REQUIRE(x.bottlenecks.size() == y.bottlenecks.size());
    for (size_t k = 0; k < x.bottlenecks.size(); ++k) {
      CHECK(x.bottlenecks[k].directed_link == y.bottlenecks[k].directed_link);
      CHECK(x.bottlenecks[k].job_count == y.bottlenecks[k].job_count);
      CHECK(names(a, x.bottlenecks[k].jobs) == names(b, y.bottlenecks[k].jobs));
      shared += x.bottlenecks[k].job_count > 1 ? 1 : 0;
    }
    listed += x.bottlenecks.size() > 1 ? 1 : 0;
  }
  CHECK(listed > 2);  // jobs with several bottlenecks: their order is compared
  CHECK(shared > 0);  // and links several jobs cross
}

TEST_CASE("same seed, same bytes; the hash seed matters") {
  auto snap = Preset("demo");
  auto drain = Switches(*snap->topology, {"p0-spine0"});
  sim::FlowOptions o;
  o.routing = sim::FlowRouting::kHashResilient;
  o.hash_seeds = 3;
  auto a = report::FlowReportToJson(Run(snap, drain, o), *snap).dump();
  auto b = report::FlowReportToJson(Run(snap, drain, o), *snap).dump();
  CHECK(a == b);
  // One simulator, two calls: same document.
  auto sim = sim::FlowSimulator::Create(snap, o);
  REQUIRE(sim.has_value());
  auto c = report::FlowReportToJson(*(*sim)->Simulate(drain), *snap).dump();
  auto d = report::FlowReportToJson(*(*sim)->Simulate(drain), *snap).dump();
  CHECK(c == d);
  CHECK(a == c);
  o.seed = 1000;
  auto e = report::FlowReportToJson(Run(snap, drain, o), *snap).dump();
  CHECK(e != a);
}

TEST_CASE("hash mode shows a collision that spray averages away") {
  // 3 flows of 1 GB from 3 hosts of leaf0 to 3 hosts of leaf1 over 2 spines
  // (100G everywhere). Spray: 200G of uplink shared by 3: 66.7G each, all
  // done at 8e9 / (200e9 / 3) = 0.12 s. Hash: 3 flows on 2 paths, so at least
  // two share a spine: they get 50G and finish at 0.16 s (or 0.24 s if all
  // three collide). The worst job is at least 0.16 s in every seed.
  TopoBuilder t;
  t.Switch("spine0", "spine").Switch("spine1", "spine").Switch("leaf0", "leaf").Switch("leaf1", "leaf");
  for (auto leaf : {"leaf0", "leaf1"}) {
    for (auto spine : {"spine0", "spine1"}) t.Link(leaf, spine, 100);
  }
  for (int h = 0; h < 6; ++h) {
    std::string id = Name("h", h);
    t.Host(id);
    t.Link(id, h < 3 ? "leaf0" : "leaf1", 100);
  }
  json jobs = Jobs(
      {FlowsJob("a", {{"h0", "h3", 1e9}}), FlowsJob("b", {{"h1", "h4", 1e9}}), FlowsJob("c", {{"h2", "h5", 1e9}})});
  auto spray = flowtest::Simulate(t.Build(), jobs, flowtest::NoDrain(), sim::FlowOptions::Exact());
  for (const char* id : {"a", "b", "c"}) CHECK(spray.Job(id).baseline.comm_s == doctest::Approx(0.12));

  for (uint64_t seed : {1, 2, 3, 4, 5}) {
    CAPTURE(seed);
    auto o = sim::FlowOptions::Exact();
    o.routing = sim::FlowRouting::kHashResilient;
    o.hash_seeds = 1;
    o.seed = seed;
    auto run = flowtest::Simulate(t.Build(), jobs, flowtest::NoDrain(), o);
    double worst = 0;
    for (const char* id : {"a", "b", "c"}) {
      double c = run.Job(id).baseline.comm_s;
      CHECK((c == doctest::Approx(0.08) || c == doctest::Approx(0.16) || c == doctest::Approx(0.24)));
      worst = std::max(worst, c);
    }
    CHECK(worst >= 0.16 - 1e-9);
  }
  // With 8 seeds the report's worst case is the collision, the mean is above spray.
  auto o = sim::FlowOptions::Exact();
  o.routing = sim::FlowRouting::kHashRehash;
  auto run = flowtest::Simulate(t.Build(), jobs, flowtest::NoDrain(), o);
  CHECK(run.report.model.seeds == 8);
  double worst = 0, mean_max = 0;
  for (const char* id : {"a", "b", "c"}) {
    worst = std::max(worst, run.Job(id).baseline.comm_s_worst);
    mean_max = std::max(mean_max, run.Job(id).baseline.comm_s);
  }
  CHECK(worst >= 0.16 - 1e-9);
  CHECK(mean_max > 0.12);
}

TEST_CASE("hash resilient: a drain only moves the flows whose path it removed") {
  // 4 spines, 2 leaves; 4 flows leaf0 -> leaf1 with 400G NICs and 100G
  // uplinks. Drain spine3: under resilient hashing a flow that was not on
  // spine3 keeps its spine, so a flow alone on its spine before (100G, 0.08 s
  // for 1 GB) can only gain company from flows that were on spine3.
  // Rehash moves everything; the baseline is the same in both modes.
  TopoBuilder t;
  for (int s = 0; s < 4; ++s) t.Switch(Name("spine", s), "spine");
  t.Switch("leaf0", "leaf").Switch("leaf1", "leaf");
  for (auto leaf : {"leaf0", "leaf1"}) {
    for (int s = 0; s < 4; ++s) t.Link(leaf, Name("spine", s), 100);
  }
  json jl = json::array();
  for (int h = 0; h < 8; ++h) {
    std::string id = Name("h", h);
    t.Host(id);
    t.Link(id, h < 4 ? "leaf0" : "leaf1", 400);
  }
  json jobs = Jobs({FlowsJob("a", {{"h0", "h4", 1e9}}), FlowsJob("b", {{"h1", "h5", 1e9}}),
                    FlowsJob("c", {{"h2", "h6", 1e9}}), FlowsJob("d", {{"h3", "h7", 1e9}})});
  json drain = {{"switches", {"spine3"}}};
  int kept_total = 0;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    CAPTURE(seed);
    auto o = sim::FlowOptions::Exact();
    o.hash_seeds = 1;
    o.seed = seed;
    o.routing = sim::FlowRouting::kHashResilient;
    auto res = flowtest::Simulate(t.Build(), jobs, drain, o);
    o.routing = sim::FlowRouting::kHashRehash;
    auto reh = flowtest::Simulate(t.Build(), jobs, drain, o);
    // Per-link baseline loads agree (same hash before the drain).
    CHECK(res.report.baseline_load_bps == reh.report.baseline_load_bps);
    // Resilient: the load on spines 0-2 from leaf0 can only grow.
    for (size_t l = 0; l < res.report.baseline_load_bps.size(); ++l) {
      std::string name = res.LinkName(static_cast<uint32_t>(l));
      if (name.rfind("leaf0>spine", 0) != 0 || name == "leaf0>spine3") continue;
      if (res.report.baseline_load_bps[l] > 0) {
        CHECK(res.report.drained_load_bps[l] > 0);
        ++kept_total;
      }
    }
  }
  CHECK(kept_total > 10);
}

TEST_CASE("cancellation is an error, not a crash") {
  auto snap = Preset("demo");
  std::stop_source src;
  src.request_stop();
  auto rep = sim::SimulateFlows(*snap, model::Drain{}, sim::FlowOptions{}, src.get_token());
  REQUIRE_FALSE(rep.has_value());
  CHECK(rep.error().code == ErrorCode::kCancelled);
}

TEST_CASE("bad options are rejected with the field named") {
  auto snap = Preset("small");
  sim::FlowOptions o;
  o.goodput = 1.5;
  auto rep = sim::SimulateFlows(*snap, model::Drain{}, o);
  REQUIRE_FALSE(rep.has_value());
  CHECK(rep.error().code == ErrorCode::kInvalidArgument);
  CHECK(rep.error().message.find("goodput") != std::string::npos);
  o = sim::FlowOptions{};
  o.background_bps = {1.0};
  rep = sim::SimulateFlows(*snap, model::Drain{}, o);
  REQUIRE_FALSE(rep.has_value());
  CHECK(rep.error().message.find("background_bps") != std::string::npos);
}

TEST_CASE("renderer: the documented JSON shape and a readable table") {
  // The cut-off case of the golden tests: j1 loses h0's NIC, j2 speeds up.
  auto run = flowtest::Simulate(flowtest::TwoByTwo(100, 100),
                                Jobs({FlowsJob("j1", {{"h0", "h2", 1e9}}), FlowsJob("j2", {{"h1", "h2", 1e9}})}),
                                {{"links", {{{"a", "h0"}, {"b", "leaf0"}}}}}, NicLinksToo(sim::FlowOptions::Exact()));
  json doc = report::FlowReportToJson(run.report, *run.snapshot);
  REQUIRE(doc["jobs"].size() == 2);
  const json& j1 = doc["jobs"][0];
  CHECK(j1["id"] == "j1");
  CHECK(j1["baseline"]["connected"] == true);
  CHECK(j1["baseline"]["comm_s"].get<double>() == doctest::Approx(0.16));
  CHECK(j1["drained"]["connected"] == false);
  CHECK(j1["drained"]["comm_s"].is_null());
  CHECK(j1["slowdown_pct"].is_null());
  const json& j2 = doc["jobs"][1];
  CHECK(j2["drained"]["comm_s"].get<double>() == doctest::Approx(0.08));
  CHECK(j2["slowdown_pct"].get<double>() == doctest::Approx(-50.0));
  CHECK(j2["drained"]["latency_s"].get<double>() == 0.0);
  // Before, both jobs share leaf1 -> h2; after, j2 is alone and full on
  // its own path (h1's NIC and h2's, both 100G: either is the bottleneck).
  REQUIRE(j2["bottlenecks"].size() >= 1);
  const json& b = j2["bottlenecks"][0];
  CHECK(((b["from"] == "h1" && b["to"] == "leaf0") || (b["from"] == "leaf1" && b["to"] == "h2")));
  CHECK(b["shared_with_count"] == 0);
  CHECK(b["utilisation"].get<double>() == doctest::Approx(1.0));
  // The drained NIC link is listed as down; h2's downlink stays full.
  bool down_listed = false;
  for (const json& l : doc["links"]) {
    if (l["from"] == "h0" && l["to"] == "leaf0") {
      CHECK(l["down"] == true);
      CHECK(l["baseline_utilisation"].get<double>() == doctest::Approx(0.5));
      down_listed = true;
    }
  }
  CHECK(down_listed);
  CHECK(doc["links_changed"].get<size_t>() >= 1);
  CHECK(doc["hot_links"][0]["utilisation"].get<double>() == doctest::Approx(1.0));
  CHECK(doc["summary"]["jobs_cut_off"] == 1);
  CHECK(doc["model"]["routing"] == "spray-path");  // the default (docs/model.md)
  CHECK(doc["model"]["routing_source"] == "default");
  CHECK(doc["model"]["goodput"] == 1.0);
  std::string text = report::FlowReportText(doc);
  CHECK(text.find("j2") != std::string::npos);
  CHECK(text.find("cut off") != std::string::npos);
  CHECK(text.find("leaf1 -> h2") != std::string::npos);  // the hot link
}

}  // namespace
}  // namespace drainwise
