// The pooled, regularised calibration fit (advisor/calibration.h): a
// hand-derived one-parameter case, two job shapes that together identify
// every parameter and are fitted back, one shape that cannot identify them
// all (and says so), and the refusal of a fit that predicts held-out
// observations worse than the parameters in force.
#include <doctest/doctest.h>

#include <cmath>

#include "advisor/calibration.h"
#include "testing/fabrics.h"

using namespace drainwise;
using nlohmann::json;

namespace {

// Bandwidth only (H = S = 0), no compute, no overlap: B = 1 s and every
// observation 1.25 s, i.e. goodput 0.8. The defaults are 0.95, 1 us, 5 us.
// In prior units (docs/calibration.md), u = 1/g:
//   d_u = 1/0.95 = 1.0526316, tau_u = 0.05 d_u^2 = 0.0554017
//   e = (d_u - 1.25) / 1.25 = -0.1578947, g = tau_u / 1.25 = 0.0443213
// The only sensitive coordinate is z_u; its ridge solution, sigma = 0.01:
//   z_u = -3 e g / (3 g^2 + sigma^2) = 3.503057
//   u = d_u + tau_u z_u = 1.2467068 -> goodput 0.8021132
// (0.26 % from the unpenalised 0.8: the penalty's pull on an identified
// parameter). h and o have no data: they stay at the defaults.
// Fisher of z_u: 3 g^2 / sigma^2 = 58.931 (the residual scatter, 0.46 %, is
// under the 1 % floor), so C = 1 / 59.931, data share 0.98331, and the 95 %
// interval u +- 1.96 sqrt(C) tau_u = 1.2467068 +- 0.0140266 is goodput
// [0.793189, 0.811240]. Leave-one-out: the fit on two predicts the third
// with |e + g z| = 0.0039192 (z = -2 e g / (2 g^2 + sigma^2)), against
// 0.1578947 for the parameters in force (the defaults).
TEST_CASE("one identified parameter: the ridge solution, its interval and leave-one-out error, by hand") {
  std::vector<advisor::ObservationTerms> terms(3);
  for (auto& t : terms) t.bandwidth_s = 1;
  std::vector<double> observed(3, 1.25);
  auto fit = advisor::FitCalibration(terms, observed, {});
  REQUIRE(fit.has_value());
  CHECK(fit->params.goodput == doctest::Approx(0.8021132).epsilon(1e-6));
  CHECK(fit->params.per_hop_latency_s == doctest::Approx(1e-6));
  CHECK(fit->params.per_message_overhead_s == doctest::Approx(5e-6));
  CHECK(fit->goodput.identified);
  CHECK(fit->goodput.data_share == doctest::Approx(0.9833143).epsilon(1e-6));
  CHECK(fit->goodput.lo == doctest::Approx(0.7931891).epsilon(1e-6));
  CHECK(fit->goodput.hi == doctest::Approx(0.8112404).epsilon(1e-6));
  CHECK(fit->noise == doctest::Approx(0.01));
  CHECK_FALSE(fit->per_hop_latency.identified);
  CHECK_FALSE(fit->per_message_overhead.identified);
  CHECK(fit->per_hop_latency.data_share == doctest::Approx(0).epsilon(1e-12));
  CHECK(std::isnan(fit->per_hop_latency.lo));
  CHECK(fit->folds == 3);
  CHECK(fit->holdout_rel_rms == doctest::Approx(0.0039192).epsilon(1e-4));
  CHECK(fit->holdout_rel_rms_before == doctest::Approx(0.1578947).epsilon(1e-6));
  CHECK(fit->holdout_rmse_s == doctest::Approx(0.0039192 * 1.25).epsilon(1e-4));
  CHECK(fit->applicable);
}

// Two rail leaves (r0, r1) under two spines, 100G everywhere; hosts a, b,
// c, d have 2 GPUs and one NIC on each rail (nic0 on r0, nic1 on r1). GPU g
// talks over rail g, so undrained traffic stays on one rail leaf (2 hops);
// a drained NIC link sends that host's rail-0 traffic up through a spine to
// the other rail (4 hops).
json Fabric() {
  json nodes = json::array(), links = json::array();
  for (auto s : {"spine0", "spine1"}) nodes.push_back({{"id", s}, {"kind", "switch"}, {"tier", "spine"}});
  for (auto l : {"r0", "r1"}) {
    nodes.push_back({{"id", l}, {"kind", "switch"}, {"tier", "leaf"}});
    for (auto s : {"spine0", "spine1"}) links.push_back({{"a", l}, {"b", s}, {"gbps", 100}});
  }
  for (auto h : {"a", "b", "c", "d"}) {
    nodes.push_back({{"id", h}, {"kind", "host"}, {"gpus", 2}});
    links.push_back({{"a", h}, {"b", "r0"}, {"gbps", 100}, {"a_port", "nic0"}});
    links.push_back({{"a", h}, {"b", "r1"}, {"gbps", 100}, {"a_port", "nic1"}});
  }
  return {{"format", "drainwise.topology/v1"}, {"name", "two-rails"}, {"nodes", nodes}, {"links", links}};
}

json Job(const std::string& id, const std::vector<std::string>& hosts, const std::string& kind, double bytes,
         double compute_ms) {
  return {{"id", id},
          {"hosts", hosts},
          {"gpus_per_host", 2},
          {"iteration",
           {{"compute_ms", compute_ms},
            {"overlap", 0},
            {"collectives", json::array({{{"kind", kind}, {"bytes", bytes}}})}}}};
}

json Jobs(json list) { return {{"format", "drainwise.jobs/v1"}, {"jobs", std::move(list)}}; }

// Two shapes. "a2a": a 2 GB all-to-all over c and d with 10 ms of compute,
// bandwidth-bound (its one step's latency is microseconds against a
// fluid time of tens of milliseconds): it yields goodput. "ring": a 64 KB
// ring all-reduce over a and b (4 ranks, 2 (4 - 1) = 6 steps), latency-bound
// (microseconds of bandwidth against 6 round trips); undrained each step is
// 2 hops, latency 6 (2 x 2 h + o) = 24 h + 6 o; with a's nic0 drained 4
// hops, 48 h + 6 o. The two give h and o apart. Together: all three.
model::SnapshotPtr TwoShapes() {
  return testing::SnapshotFromJson(Fabric(), Jobs(json::array({Job("a2a", {"c", "d"}, "alltoall", 2e9, 10),
                                                               Job("ring", {"a", "b"}, "allreduce", 65536, 0.01)})));
}

// A drained NIC link of `host` (its nic0 to r0).
json NicDrain(const std::string& host) { return {{"links", {{{"a", host}, {"b", "r0"}}}}}; }

struct Observed {
  std::vector<advisor::ObservationTerms> terms;
  std::vector<double> observed;
};

// Observations of `jobs` under `drains` as the simulator predicts them with
// `truth`, and their terms as the calibration computes them (with the
// default parameters: the terms do not depend on them).
Observed Observe(const model::SnapshotPtr& snap, const std::vector<std::string>& jobs, const std::vector<json>& drains,
                 const sim::FlowOptions& truth) {
  std::vector<advisor::Observation> obs;
  Observed out;
  for (const auto& dj : drains) {
    auto d = dj.is_null() ? model::Drain{} : testing::DrainOf(*snap->topology, dj);
    auto rep = sim::SimulateFlows(*snap, d, truth);
    REQUIRE(rep.has_value());
    for (const auto& id : jobs) {
      auto j = snap->jobs->FindJob(id);
      REQUIRE(j.has_value());
      const auto& side = rep->jobs[j->value].drained;
      REQUIRE(side.connected);
      obs.push_back({*j, d, side.iteration_s});
      out.observed.push_back(side.iteration_s);
    }
  }
  auto terms = advisor::ComputeTerms(snap, obs, sim::FlowOptions{});
  REQUIRE(terms.has_value());
  out.terms = *terms;
  return out;
}

sim::FlowOptions Truth() {
  sim::FlowOptions t;
  t.goodput = 0.85;
  t.per_hop_latency_s = 2e-6;
  t.per_message_overhead_s = 12e-6;
  return t;
}

const advisor::CalibrationParams kDefaults{0.95, 1e-6, 5e-6};

}  // namespace

TEST_CASE("two job shapes generated with known parameters are fitted back within 5 %, every parameter identified") {
  auto snap = TwoShapes();
  auto o = Observe(snap, {"a2a", "ring"}, {nullptr, NicDrain("a"), NicDrain("c")}, Truth());
  REQUIRE(o.terms.size() == 6);
  // The shapes as described (terms: 0 a2a, 1 ring undrained; 2 a2a, 3 ring
  // with a's NIC drained; 4 a2a, 5 ring with c's NIC drained).
  CHECK(o.terms[1].steps == doctest::Approx(6));
  CHECK(o.terms[1].hop_steps == doctest::Approx(24));  // 6 steps x round trip of 2 hops
  CHECK(o.terms[3].hop_steps == doctest::Approx(48));  // 4 hops
  CHECK(o.terms[5].hop_steps == doctest::Approx(24));
  CHECK(o.terms[0].steps == doctest::Approx(1));
  // Bandwidth-bound and latency-bound, at the truth's parameters.
  CHECK(o.terms[0].hop_steps * 2e-6 + 12e-6 < 1e-3 * o.terms[0].bandwidth_s);
  CHECK(o.terms[1].bandwidth_s < 0.1 * (o.terms[1].hop_steps * 2e-6 + o.terms[1].steps * 12e-6));
  CHECK(o.terms[4].bandwidth_s > 1.5 * o.terms[0].bandwidth_s);  // c's drained NIC
  auto fit = advisor::FitCalibration(o.terms, o.observed, kDefaults);
  REQUIRE(fit.has_value());
  const auto t = Truth();
  MESSAGE("fitted goodput " << fit->params.goodput << ", " << fit->params.per_hop_latency_s * 1e6 << " us/hop, "
                            << fit->params.per_message_overhead_s * 1e6 << " us/message; data shares "
                            << fit->goodput.data_share << ", " << fit->per_hop_latency.data_share << ", "
                            << fit->per_message_overhead.data_share << "; held-out rel rms " << fit->holdout_rel_rms
                            << " vs " << fit->holdout_rel_rms_before);
  CHECK(fit->params.goodput == doctest::Approx(t.goodput).epsilon(0.05));
  CHECK(fit->params.per_hop_latency_s == doctest::Approx(t.per_hop_latency_s).epsilon(0.05));
  CHECK(fit->params.per_message_overhead_s == doctest::Approx(t.per_message_overhead_s).epsilon(0.05));
  for (const auto* p : {&fit->goodput, &fit->per_hop_latency, &fit->per_message_overhead}) {
    CHECK(p->identified);
    CHECK(p->lo <= p->value);
    CHECK(p->value <= p->hi);
  }
  CHECK(fit->goodput.lo <= t.goodput);
  CHECK(t.goodput <= fit->goodput.hi);
  CHECK(fit->applicable);
  CHECK(fit->holdout_rel_rms < fit->holdout_rel_rms_before);
}

TEST_CASE("one job shape reports the parameters it cannot identify, and leaves them near the defaults") {
  auto snap = TwoShapes();
  const auto t = Truth();
  SUBCASE("latency-bound ring only: per-hop latency and per-message overhead only as 4 h + o, goodput not at all") {
    // Paths that never change length: every observation has H = 4 S and a
    // bandwidth term of a few percent of the total, so the data see
    // 4 h + o, not h and o apart. (A drained spine or another host's NIC
    // leaves the ring's rails alone.)
    auto o = Observe(snap, {"ring"}, {nullptr, json{{"switches", {"spine1"}}}, NicDrain("c")}, t);
    auto fit = advisor::FitCalibration(o.terms, o.observed, kDefaults);
    REQUIRE(fit.has_value());
    CHECK_FALSE(fit->per_hop_latency.identified);
    CHECK_FALSE(fit->per_message_overhead.identified);
    CHECK_FALSE(fit->goodput.identified);
    CHECK(std::isnan(fit->per_hop_latency.lo));
    // The combination the data does see is fitted: 4 h + o within 5 % of
    // the truth's 20 us (the goodput's share of the residual is small).
    CHECK(4 * fit->params.per_hop_latency_s + fit->params.per_message_overhead_s ==
          doctest::Approx(4 * t.per_hop_latency_s + t.per_message_overhead_s).epsilon(0.05));
    // No corner: neither parameter at a bound (0 or 50 us / 500 us).
    CHECK(fit->params.per_hop_latency_s > 0);
    CHECK(fit->params.per_hop_latency_s < 10e-6);
    CHECK(fit->params.per_message_overhead_s > 0);
    CHECK(fit->params.per_message_overhead_s < 50e-6);
  }
  SUBCASE("bandwidth-bound all-to-all only: goodput identified, the latency terms not") {
    auto o = Observe(snap, {"a2a"}, {nullptr, NicDrain("c"), NicDrain("d")}, t);
    auto fit = advisor::FitCalibration(o.terms, o.observed, kDefaults);
    REQUIRE(fit.has_value());
    CHECK(fit->goodput.identified);
    CHECK(fit->params.goodput == doctest::Approx(t.goodput).epsilon(0.05));
    CHECK_FALSE(fit->per_hop_latency.identified);
    CHECK_FALSE(fit->per_message_overhead.identified);
    CHECK(fit->per_hop_latency.data_share < 0.1);
    CHECK(fit->params.per_hop_latency_s == doctest::Approx(kDefaults.per_hop_latency_s).epsilon(0.05));
    CHECK(fit->params.per_message_overhead_s == doctest::Approx(kDefaults.per_message_overhead_s).epsilon(0.05));
  }
}

TEST_CASE("a fit that predicts held-out observations worse than the parameters in force is refused, naming both") {
  // The parameters in force are the truth (an operator measured them); the
  // fit is pulled towards the defaults, so each held-out prediction is a
  // little off where the parameters in force are exact.
  auto snap = TwoShapes();
  const auto t = Truth();
  auto o = Observe(snap, {"a2a", "ring"}, {nullptr, NicDrain("a"), NicDrain("c")}, t);
  advisor::FitSettings settings;
  settings.defaults = kDefaults;
  auto fit = advisor::FitCalibration(o.terms, o.observed, {t.goodput, t.per_hop_latency_s, t.per_message_overhead_s},
                                     settings);
  REQUIRE(fit.has_value());
  CHECK(fit->holdout_rel_rms_before < 1e-6);  // exact up to rounding
  CHECK(fit->holdout_rel_rms > fit->holdout_rel_rms_before);
  CHECK_FALSE(fit->applicable);
  INFO(fit->not_applicable);
  CHECK(fit->not_applicable.rfind("the fit does not predict held-out observations better", 0) == 0);
  CHECK(fit->not_applicable.find("(fit) vs") != std::string::npos);
  CHECK(fit->not_applicable.find("(in force)") != std::string::npos);
  // With the defaults equal to the parameters in force the same data are
  // fitted back to exactly them: the penalty only pulls towards the defaults.
  settings.defaults = {t.goodput, t.per_hop_latency_s, t.per_message_overhead_s};
  auto same = advisor::FitCalibration(o.terms, o.observed, settings.defaults, settings);
  REQUIRE(same.has_value());
  CHECK(same->params.goodput == doctest::Approx(t.goodput).epsilon(1e-6));
  CHECK(same->params.per_hop_latency_s == doctest::Approx(t.per_hop_latency_s).epsilon(1e-6));
  CHECK(same->params.per_message_overhead_s == doctest::Approx(t.per_message_overhead_s).epsilon(1e-6));
}

TEST_CASE("the fit is bounded: data that want a goodput above 1 get 1, and the misfit widens the noise") {
  // Observations faster than goodput 1 can explain: B = 1 s, observed
  // 0.9 s (u = 0.9 < 1). The fit stops at goodput 1, where each relative
  // residual is (1 - 0.9) / 0.9 = 0.1111; the noise used for the intervals
  // is then the residual scatter sqrt(4 x 0.1111^2 / (4 - 3)) = 0.2222, not
  // the 1 % floor, which leaves goodput unidentified: the model cannot
  // explain these data, and the report does not pretend it can.
  std::vector<advisor::ObservationTerms> terms(4);
  for (auto& t : terms) t.bandwidth_s = 1;
  std::vector<double> observed(4, 0.9);
  auto fit = advisor::FitCalibration(terms, observed, {});
  REQUIRE(fit.has_value());
  CHECK(fit->params.goodput == doctest::Approx(1.0));
  CHECK(fit->noise == doctest::Approx(0.2222222).epsilon(1e-6));
  CHECK_FALSE(fit->goodput.identified);
  // Held out, each refit also stops at 1: 0.1111 against the defaults'
  // (1/0.95 - 0.9) / 0.9 = 0.1696.
  CHECK(fit->holdout_rel_rms == doctest::Approx(0.1111111).epsilon(1e-6));
  CHECK(fit->holdout_rel_rms_before == doctest::Approx(0.1695906).epsilon(1e-6));
  CHECK(fit->applicable);
}
