// The task-level simulation (sim/task_sim.h): closed-form availability,
// hand-checkable scheduling, checkpoints, drains and slowdown, determinism.
#include "sim/task_sim.h"

#include <cmath>
#include <memory>

#include <doctest/doctest.h>

#include "fabric/generator.h"
#include "report/task_report.h"
#include "testing/fabrics.h"

namespace drainwise {
namespace {

constexpr double kH = 3600;

std::shared_ptr<const model::Topology> Fabric(const fabric::FabricOptions& o) {
  auto t = model::BuildTopology(fabric::GenerateFabric(o));
  REQUIRE(t);
  return std::make_shared<const model::Topology>(std::move(*t));
}

std::shared_ptr<const model::Topology> TwoByTwo(double uplink_gbps, double host_gbps) {
  return std::make_shared<const model::Topology>(testing::TopologyFromJson(testing::TwoByTwo(uplink_gbps, host_gbps)));
}

// Nothing fails unless a test says so.
sim::TaskOptions NoFailures() {
  sim::TaskOptions o;
  for (const char* kind : {"host", "link", "leaf", "spine", "superspine", "switch"}) o.reliability[kind] = {0, 0};
  return o;
}

sim::TaskJob Job(const char* id, double submit_h, int hosts, double work_h, double limit_h = 0) {
  sim::TaskJob j;
  j.id = id;
  j.submit_s = submit_h * kH;
  j.hosts = hosts;
  j.work_s = work_h * kH;
  j.limit_s = limit_h * kH;
  return j;
}

const sim::TaskJobOutcome& Outcome(const sim::TaskReport& r, const std::string& id) {
  for (const auto& j : r.jobs) {
    if (j.id == id) return j;
  }
  FAIL("no job " << id);
  return r.jobs.front();
}

// One switch tier fails: 16 spines, exponential up times of mean 100 h and
// down times of mean 10 h, nothing else fails, no jobs, 10 years.
// Each spine is a two-state Markov process with failure rate l = 1/100 and
// repair rate m = 1/10 per hour; its stationary availability is
//   a = MTBF / (MTBF + MTTR) = 100 / 110 = 0.909091.
// Statistical error: the up-indicator's autocovariance is a(1-a) e^{-(l+m)t},
// so the variance of its time average over T hours is about
// 2 a(1-a) / ((l+m) T); averaging n independent spines divides it by n:
//   sigma = sqrt(2 x 0.0826 / (0.11 x 87,600 x 16)) = 1.04e-3.
// All spines start up, not stationary: that biases the average by at most
// (1-a) / ((l+m) T) = 9.4e-6. The run must land within 4 sigma + bias
// (a fixed seed: the check is deterministic; 4 sigma is not a flake bound).
TEST_CASE("one failing tier: availability is MTBF / (MTBF + MTTR) within the run's statistical error") {
  fabric::FabricOptions f;
  f.hosts = 64;
  f.hosts_per_leaf = 16;
  f.spines_per_pod = 16;
  auto topo = Fabric(f);
  sim::TaskOptions o = NoFailures();
  o.reliability["spine"] = {100, 10};
  o.horizon_s = 87600 * kH;
  o.sample_interval_s = 8760 * kH;
  o.seed = 7;
  auto r = sim::SimulateTasks(topo, {}, o);
  REQUIRE(r);
  const double a = 100.0 / 110.0;
  const double rate = 1.0 / 100 + 1.0 / 10;
  const double T = 87600;
  const double sigma = std::sqrt(2 * a * (1 - a) / (rate * T * 16));
  const double bias = (1 - a) / (rate * T);
  REQUIRE(r->tiers.size() == 2);
  const auto& spine = r->tiers[1];
  CHECK(spine.tier == "spine");
  CHECK(spine.switches == 16);
  CHECK(std::abs(spine.availability - a) <= 4 * sigma + bias);
  CHECK(r->tiers[0].availability == 1.0);  // leaves never fail
  // About 16 x 87,600 / 110 = 12,742 failures.
  CHECK(spine.failures > 12000);
  CHECK(spine.failures < 13500);
}

// k-of-n: hosts with 4 rails (one leaf each); leaves fail (MTBF 100 h, MTTR
// 10 h, a = 10/11); a host counts as available with at least 3 of its 4 NICs
// live. Binomial form: P(>= 3 of 4 up) = a^4 + 4 a^3 (1 - a) = 14,000 / 14,641 = 0.956219.
// Error bound: the 16 host groups are independent; the group indicator Y is
// a function of 4 independent reversible two-state processes, so its
// autocovariance decays at least as fast as e^{-(l+m)t} (the spectral gap of
// the product process is l + m), and Var(time average) <= 2 p(1-p) / ((l+m) T)
// per group: sigma <= sqrt(2 x 0.0419 / (0.11 x 87,600 x 16)) = 7.4e-4. Starting
// all up biases by at most 4 (1-a) / ((l+m) T) = 3.8e-5.
TEST_CASE("k-of-n redundancy: GPU availability follows the binomial form") {
  fabric::FabricOptions f;
  f.hosts = 256;
  f.hosts_per_leaf = 16;
  f.rails = 4;
  f.spines_per_pod = 2;
  auto topo = Fabric(f);
  sim::TaskOptions o = NoFailures();
  o.reliability["leaf"] = {100, 10};
  o.min_nics_up = 3;
  o.horizon_s = 87600 * kH;
  o.sample_interval_s = 8760 * kH;
  o.seed = 11;
  auto r = sim::SimulateTasks(topo, {}, o);
  REQUIRE(r);
  const double a = 10.0 / 11.0;
  const double p = std::pow(a, 4) + 4 * std::pow(a, 3) * (1 - a);
  const double rate = 0.11;
  const double T = 87600;
  const double sigma = std::sqrt(2 * p * (1 - p) / (rate * T * 16));
  const double bias = 4 * (1 - a) / (rate * T);
  CHECK(p == doctest::Approx(14000.0 / 14641));
  CHECK(std::abs(r->gpu_availability - p) <= 4 * sigma + bias);
  // With 1 of 4 enough it is 1 - (1-a)^4 = 0.999932: clearly different.
  o.min_nics_up = 1;
  auto r1 = sim::SimulateTasks(topo, {}, o);
  REQUIRE(r1);
  CHECK(std::abs(r1->gpu_availability - (1 - std::pow(1 - a, 4))) <= 4 * sigma + bias);
  CHECK(r1->gpu_availability > r->gpu_availability + 0.03);
}

// 2x2 fabric: 4 hosts of 1 GPU (h0, h1 on leaf0; h2, h3 on leaf1), nothing fails.
//   A  0 h  2 hosts  10 h         starts 0, ends 10 (h0, h1)
//   B  1 h  4 hosts   5 h         head, blocked: reservation at 10 h (A's end), no extra hosts
//   C  2 h  2 hosts   3 h         backfilled at 2 h: ends at 5 h <= 10 h
//   D  3 h  1 host    8 h         5 + 8 > 10 and no extra host: never backfilled, starts after B at 15 h
//   E  4 h  2 hosts   4 h (limit 5) backfilled at 5 h when C ends: 5 + 5 <= 10; ends at 9 h
// B starts at 10 h, ends 15 h; D runs 15-23 h.
// Delays: A 0, B 9, C 0, D 12, E 1 -> mean 4.4 h, max 12 h.
// Useful GPU-hours: 2x10 + 4x5 + 2x3 + 1x8 + 2x4 = 62.
TEST_CASE("FCFS with EASY backfill on a tiny cluster, by hand") {
  auto topo = TwoByTwo(100, 100);
  std::vector<sim::TaskJob> trace = {Job("A", 0, 2, 10), Job("B", 1, 4, 5), Job("C", 2, 2, 3), Job("D", 3, 1, 8),
                                     Job("E", 4, 2, 4, 5)};
  sim::TaskOptions o = NoFailures();
  o.horizon_s = 48 * kH;
  o.record_jobs = true;
  auto r = sim::SimulateTasks(topo, trace, o);
  REQUIRE(r);
  struct Want {
    const char* id;
    double start_h, end_h;
  };
  for (Want w : {Want{"A", 0, 10}, Want{"B", 10, 15}, Want{"C", 2, 5}, Want{"D", 15, 23}, Want{"E", 5, 9}}) {
    CAPTURE(w.id);
    CHECK(Outcome(*r, w.id).first_start_s == doctest::Approx(w.start_h * kH));
    CHECK(Outcome(*r, w.id).end_s == doctest::Approx(w.end_h * kH));
  }
  CHECK(r->jobs_completed == 5);
  CHECK(r->queue_delay_mean_h == doctest::Approx(4.4));
  CHECK(r->queue_delay_max_h == doctest::Approx(12));
  CHECK(r->useful_gpu_h == doctest::Approx(62));
  CHECK(r->allocated_gpu_h == doctest::Approx(62));

  SUBCASE("without backfill it is plain FCFS") {
    // A 0-10, B 10-15, then C (2 hosts) and D (1 host) at 15, E waits for C: 18-22.
    // Delays: A 0, B 9, C 13, D 12, E 14 -> mean 9.6 h.
    o.backfill_depth = 0;
    auto f = sim::SimulateTasks(topo, trace, o);
    REQUIRE(f);
    CHECK(Outcome(*f, "C").first_start_s == doctest::Approx(15 * kH));
    CHECK(Outcome(*f, "D").first_start_s == doctest::Approx(15 * kH));
    CHECK(Outcome(*f, "E").first_start_s == doctest::Approx(18 * kH));
    CHECK(f->queue_delay_mean_h == doctest::Approx(9.6));
  }
}

// One 4-host job (4 GPUs) spanning both leaves, 10 h of work, a checkpoint
// every hour, 0.5 h to restart. Both spines drained in [2.5 h, 3 h).
TEST_CASE("a drain that cuts a job off: restart from the last checkpoint, or migrate first") {
  auto topo = TwoByTwo(100, 100);
  sim::TaskJob job = Job("J", 0, 4, 10);
  job.checkpoint_interval_s = 1 * kH;
  job.restart_cost_s = 0.5 * kH;
  std::vector<sim::TaskJob> trace = {job};
  sim::TaskOptions o = NoFailures();
  o.horizon_s = 24 * kH;
  o.record_jobs = true;
  sim::DrainWindow w;
  w.start_s = 2.5 * kH;
  w.end_s = 3 * kH;
  w.drain.switches = {*topo->FindNode("spine0"), *topo->FindNode("spine1")};
  std::sort(w.drain.switches.begin(), w.drain.switches.end());

  SUBCASE("unannounced: 0.5 h of work since the 2 h checkpoint is lost") {
    // Cut at 2.5 h: lost 0.5 h x 4 GPUs = 2 GPU-h; it cannot restart while
    // the leaves are apart; at 3 h it restarts (0.5 h x 4 = 2 GPU-h) from
    // 2 h of work: ends at 3 + 0.5 + 8 = 11.5 h.
    w.migrate = false;
    o.drains = {w};
    auto r = sim::SimulateTasks(topo, trace, o);
    REQUIRE(r);
    CHECK(r->planned_drain.interruptions == 1);
    CHECK(r->planned_drain.lost_work_gpu_h == doctest::Approx(2));
    CHECK(r->planned_drain.restart_gpu_h == doctest::Approx(2));
    CHECK(r->migration.interruptions == 0);
    CHECK(Outcome(*r, "J").end_s == doctest::Approx(11.5 * kH));
    CHECK(r->useful_gpu_h == doctest::Approx(40));
    // allocated = 0-2.5 h and 3-11.5 h, x 4 GPUs = 44 = useful + lost + restart.
    CHECK(r->allocated_gpu_h == doctest::Approx(44));
  }
  SUBCASE("migrated: checkpointed just before, only the restart is lost") {
    w.migrate = true;
    o.drains = {w};
    auto r = sim::SimulateTasks(topo, trace, o);
    REQUIRE(r);
    CHECK(r->migration.interruptions == 1);
    CHECK(r->migration.lost_work_gpu_h == 0);
    CHECK(r->migration.restart_gpu_h == doctest::Approx(2));
    CHECK(r->planned_drain.interruptions == 0);
    CHECK(Outcome(*r, "J").end_s == doctest::Approx(11 * kH));  // 3 + 0.5 + 7.5
  }
}

// 2x2 with 50G uplinks and 100G host links: a cross-leaf pair sprays over
// two 50G uplinks (100G, as its host link); with spine0 drained one 50G
// uplink is left: bandwidth fraction 0.5. With half of an iteration spent
// communicating the job runs at 1 / (0.5 + 0.5 / 0.5) = 2/3 speed for the 3 h
// of the drain [1 h, 4 h): 1 h of work lost to slowdown, 10 h of work end at
// 11 h; slowdown GPU-hours = 4 GPUs x 3 h x 1/3 = 4.
TEST_CASE("lost bandwidth slows a job down by the job-level pass's fraction") {
  auto topo = TwoByTwo(50, 100);
  std::vector<sim::TaskJob> trace = {Job("J", 0, 4, 10)};
  sim::TaskOptions o = NoFailures();
  o.horizon_s = 24 * kH;
  o.comm_fraction = 0.5;
  o.record_jobs = true;
  sim::DrainWindow w;
  w.start_s = 1 * kH;
  w.end_s = 4 * kH;
  w.drain.switches = {*topo->FindNode("spine0")};
  o.drains = {w};
  auto r = sim::SimulateTasks(topo, trace, o);
  REQUIRE(r);
  CHECK(Outcome(*r, "J").end_s == doctest::Approx(11 * kH));
  CHECK(Outcome(*r, "J").interruptions == 0);
  CHECK(r->planned_drain.slowdown_gpu_h == doctest::Approx(4));
  CHECK(r->failure.slowdown_gpu_h == 0);
  CHECK(r->switch_in_service == doctest::Approx(1 - (3.0 / 24) / 4));  // 1 of 4 switches for 3 of 24 h
}

sim::TaskOptions WithFailures(uint64_t seed) {
  sim::TaskOptions o;
  o.seed = seed;
  o.horizon_s = 60 * 86400.0;
  // Failure rates raised so that 60 days see every kind fail several times.
  o.reliability["host"] = {500, 12};
  o.reliability["link"] = {5000, 4};
  o.reliability["switch"] = {2000, 8};
  return o;
}

TEST_CASE("same seed, same bytes; another seed, another run; GPU-hours add up") {
  fabric::FabricOptions f;
  f.hosts = 128;
  f.hosts_per_leaf = 16;
  f.rails = 2;
  f.spines_per_pod = 4;
  auto topo = Fabric(f);
  sim::SyntheticTraceOptions so;
  so.seed = 3;
  so.horizon_s = 60 * 86400.0;
  so.total_hosts = 128;
  so.max_work_s = 24 * kH;
  auto trace = sim::GenerateSyntheticTrace(so);
  REQUIRE(trace.size() > 100);
  CHECK(sim::GenerateSyntheticTrace(so).size() == trace.size());

  auto a = sim::SimulateTasks(topo, trace, WithFailures(5));
  auto b = sim::SimulateTasks(topo, trace, WithFailures(5));
  auto c = sim::SimulateTasks(topo, trace, WithFailures(6));
  REQUIRE(a);
  REQUIRE(b);
  REQUIRE(c);
  const std::string ja = report::TaskReportToJson(*a).dump();
  CHECK(ja == report::TaskReportToJson(*b).dump());
  CHECK(report::TaskSeriesCsv(*a) == report::TaskSeriesCsv(*b));
  CHECK(report::TaskReportText(*a) == report::TaskReportText(*b));
  CHECK(ja != report::TaskReportToJson(*c).dump());

  // Every allocated GPU-second is progress kept, progress lost, restart or slowdown.
  for (const sim::TaskReport* r : {&*a, &*c}) {
    const double lost = r->failure.total_gpu_h() + r->planned_drain.total_gpu_h() + r->migration.total_gpu_h();
    CHECK(r->allocated_gpu_h == doctest::Approx(r->useful_gpu_h + lost).epsilon(1e-9));
    CHECK(r->failure.interruptions > 0);
    CHECK(r->host_failures > 0);
    CHECK(r->link_failures > 0);
    CHECK(r->useful_gpu_h < r->allocated_gpu_h);
    CHECK(r->allocated_gpu_h <= r->total_gpu_h);
    CHECK(r->series.size() == 60);
  }
}

TEST_CASE("errors name the field") {
  auto topo = TwoByTwo(100, 100);
  sim::TaskOptions o = NoFailures();
  o.reliability["spine"] = {100, 0};
  auto r = sim::SimulateTasks(topo, {}, o);
  REQUIRE(!r);
  CHECK(r.error().code == ErrorCode::kInvalidArgument);
  CHECK(r.error().message == "reliability.spine: mttr_h must be > 0 when mtbf_h is");
  o = NoFailures();
  std::vector<sim::TaskJob> trace = {Job("x", 0, 0, 1)};
  r = sim::SimulateTasks(topo, trace, o);
  REQUIRE(!r);
  CHECK(r.error().message == "job 'x': hosts must be > 0");
  o.horizon_s = 0;
  r = sim::SimulateTasks(topo, {}, o);
  REQUIRE(!r);
  CHECK(r.error().message == "horizon: must be > 0");
}

TEST_CASE("a stop token cancels the run") {
  fabric::FabricOptions f;
  f.hosts = 64;
  auto topo = Fabric(f);
  sim::TaskOptions o = WithFailures(1);
  o.horizon_s = 3650 * 86400.0;
  std::stop_source stop;
  int calls = 0;
  auto r = sim::SimulateTasks(
      topo, {}, o,
      [&](double) {
        if (++calls == 2) stop.request_stop();
      },
      stop.get_token());
  REQUIRE(!r);
  CHECK(r.error().code == ErrorCode::kCancelled);
}

}  // namespace
}  // namespace drainwise

namespace drainwise {
namespace {

// 4 hosts with 2 NICs each (rail leaves r0 and r1), 8 GPUs each; one 4-host
// job of 10 h. Host 0's NIC 0 link is drained in [1 h, 4 h): that host keeps
// 1 of its 2 NICs, so the job's bandwidth fraction is 1/2 and, with half of
// an iteration communicating, it runs at 1 / (0.5 + 0.5 / 0.5) = 2/3 speed:
// ends at 11 h; slowdown 32 GPUs x 3 h x 1/3 = 32 GPU-h. With min_nics_up = 2
// host 0's 8 GPUs count as unavailable for those 3 h: GPU availability
// 1 - 8 x 3 / (32 x 24) = 0.96875.
TEST_CASE("a host that loses one of its NICs slows its job by its share of NICs") {
  fabric::FabricOptions f;
  f.hosts = 4;
  f.hosts_per_leaf = 4;
  f.rails = 2;
  f.spines_per_pod = 1;
  auto topo = Fabric(f);
  const model::NodeId h0 = topo->hosts()[0];
  REQUIRE(topo->neighbors(h0).size() == 2);
  std::vector<sim::TaskJob> trace = {Job("J", 0, 4, 10)};
  sim::TaskOptions o = NoFailures();
  o.horizon_s = 24 * kH;
  o.comm_fraction = 0.5;
  o.record_jobs = true;
  sim::DrainWindow w;
  w.start_s = 1 * kH;
  w.end_s = 4 * kH;
  w.drain.links = {topo->neighbors(h0)[0].link};
  o.drains = {w};
  auto r = sim::SimulateTasks(topo, trace, o);
  REQUIRE(r);
  CHECK(Outcome(*r, "J").end_s == doctest::Approx(11 * kH));
  CHECK(r->planned_drain.slowdown_gpu_h == doctest::Approx(32));
  CHECK(r->gpu_availability == 1.0);
  o.min_nics_up = 2;
  r = sim::SimulateTasks(topo, trace, o);
  REQUIRE(r);
  CHECK(r->gpu_availability == doctest::Approx(0.96875));
}

}  // namespace
}  // namespace drainwise
