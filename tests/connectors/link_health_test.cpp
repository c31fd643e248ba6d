// Link health signals: exporter names, gnmic events, Prometheus range answers.
#include <doctest/doctest.h>

#include <cmath>
#include <utility>

#include "connectors/link_health.h"
#include "connectors/test_data.h"
#include "model/topology.h"

using namespace drainwise;
using namespace drainwise::connectors;
using testdata::ReadJson;
using testdata::ReadText;

TEST_CASE("exporter metric names map to health signals") {
  struct Case {
    const char* name;
    const char* signal;
    bool cumulative;
    double scale;
  };
  const Case cases[] = {
      {"ifInErrors", "in_errors", true, 1},
      {"ifOutDiscards", "out_discards", true, 1},
      {"ifHCInOctets", "rx_bps", true, 8},
      {"ifHighSpeed", "speed_bps", false, 1e6},
      {"dot3StatsFCSErrors", "in_errors", true, 1},
      {"node_network_receive_errs_total", "in_errors", true, 1},
      {"node_network_carrier_changes_total", "carrier_transitions", true, 1},
      {"node_network_speed_bytes", "speed_bps", false, 8},
      {"node_ethtool_rx_corrected_bits_phy", "fec_corrected", true, 1},
      {"node_ethtool_rx_prio3_pause", "pfc_pause", true, 1},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    auto m = HealthMetricForPrometheus(c.name);
    REQUIRE(m);
    CHECK(m->signal == c.signal);
    CHECK(m->cumulative == c.cumulative);
    CHECK(m->scale == c.scale);
  }
  CHECK_FALSE(HealthMetricForPrometheus("node_cpu_seconds_total"));
  CHECK_FALSE(HealthMetricForPrometheus("node_ethtool_rx_prio3_bytes"));
  CHECK(HealthMetricForGnmicPath("/interfaces/interface/state/counters/carrier-transitions")->signal ==
        "carrier_transitions");
  CHECK(
      HealthMetricForGnmicPath("openconfig-interfaces:/interfaces/interface/phy/fec/state/rs-fec-uncorrectable-blocks")
          ->signal == "fec_uncorrectable");
  CHECK(
      HealthMetricForGnmicPath("/components/component/transceiver/physical-channels/channel/state/input-power/instant")
          ->signal == "rx_power_dbm");
  CHECK_FALSE(HealthMetricForGnmicPath("/components/component/state/temperature/instant"));
}

TEST_CASE("gnmic events give health samples; in-fcs-errors yields to in-errors") {
  auto s = HealthSamplesFromGnmicEvents(ReadText("connectors/gnmic_health_events.json"), "", 0);
  REQUIRE(s);
  std::map<std::string, HealthSample> by;
  for (const auto& x : *s) by[x.signal] = x;
  // 7 values of the first event minus in-fcs-errors (in-errors counts them),
  // plus input and output power (laser bias is no health signal here).
  CHECK(s->size() == 8);
  CHECK(by["in_errors"].value == 12);
  CHECK(by["in_errors"].cumulative);
  CHECK(by["in_errors"].device == "leaf-a01");
  CHECK(by["in_errors"].interface == "Ethernet0");
  CHECK(by["in_errors"].time_s == doctest::Approx(1718012345.123456789));
  CHECK(by["carrier_transitions"].value == 4);
  CHECK(by["speed_bps"].value == 400e9);
  CHECK_FALSE(by["speed_bps"].cumulative);
  CHECK(by["fec_corrected"].value == 123456);
  CHECK(by["fec_uncorrectable"].value == 0);
  CHECK(by["rx_power_dbm"].value == doctest::Approx(-3.21));
  CHECK(by["rx_power_dbm"].interface == "Ethernet0");  // component_name
  CHECK(by["tx_power_dbm"].value == doctest::Approx(1.05));
  auto bad = HealthSamplesFromGnmicEvents(
      R"([{"tags":{"interface_name":"e0","source":"x"},"values":{"/a/in-errors":"many"}}])", "", 0);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message.find("in-errors") != std::string::npos);
}

TEST_CASE("a Prometheus range answer keeps every point") {
  auto r = ParsePrometheusRange(ReadJson("connectors/prometheus_query_range_matrix.json"));
  REQUIRE(r);
  REQUIRE(r->size() == 2);
  CHECK((*r)[0].labels.at("ifName") == "swp1");
  REQUIRE((*r)[0].points.size() == 3);
  CHECK((*r)[0].points[1].first == doctest::Approx(1435781445.781));
  CHECK((*r)[0].points[2].second == 2);
  CHECK(std::isnan((*r)[1].points[0].second));
  CHECK(std::isinf((*r)[1].points[1].second));
  CHECK((*r)[1].labels.at("__name__") == "node_network_carrier_changes_total");

  auto vector =
      ParsePrometheusRange(nlohmann::json::parse(R"({"status":"success","data":{"resultType":"vector","result":[]}})"));
  REQUIRE_FALSE(vector);
  CHECK(vector.error().message.find("expected matrix") != std::string::npos);
  auto error = ParsePrometheusRange(nlohmann::json::parse(
      R"({"status":"error","errorType":"bad_data","error":"exceeded maximum resolution of 11,000 points per timeseries"})"));
  REQUIRE_FALSE(error);
  CHECK(error.error().message.find("11,000 points") != std::string::npos);
  auto bad = ParsePrometheusRange(nlohmann::json::parse(
      R"({"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,2]]}]}})"));
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message.find("values[0]") != std::string::npos);
}

TEST_CASE("link ends are found by device and port, through aliases and domains") {
  model::TopologySpec spec;
  for (auto [id, tier] : {std::pair{"leaf-a01", "leaf"}, std::pair{"spine-01", "spine"}}) {
    model::NodeSpec n;
    n.id = id;
    n.tier = tier;
    spec.nodes.push_back(std::move(n));
  }
  spec.links = {{"leaf-a01", "spine-01", 400, "swp1", "swp9"}};
  auto topo = model::BuildTopology(spec);
  REQUIRE(topo);
  NameOptions names;
  names.aliases = {{"10.0.0.9", "spine-01"}};
  names.strip_domain = true;
  LinkEndIndex index(*topo, names);
  auto a = index.Find("LEAF-A01.dc1.example.net", "swp1");
  REQUIRE(a);
  CHECK(a->is_a);
  auto b = index.Find("10.0.0.9", "swp9");
  REQUIRE(b);
  CHECK_FALSE(b->is_a);
  CHECK_FALSE(index.Find("leaf-a01", "swp2"));
}
