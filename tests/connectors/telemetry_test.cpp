#include <doctest/doctest.h>

#include "connectors/prometheus.h"
#include "connectors/telemetry.h"
#include "test_data.h"
#include "testing/fabrics.h"

namespace drainwise::connectors {
namespace {

using nlohmann::json;
using testdata::ReadText;

CounterSample Scrape(const std::string& file, double time_s) {
  auto s = ParsePrometheusText(ReadText(file));
  REQUIRE(s.has_value());
  auto c = CountersFromPrometheus(*s, {}, time_s);
  REQUIRE(c.has_value());
  return *c;
}

TEST_CASE("rates between two node_exporter scrapes, with a counter reset") {
  CounterSample t1 = Scrape("connectors/node_exporter_t1.prom", 100);
  CounterSample t2 = Scrape("connectors/node_exporter_t2.prom", 110);
  auto rates = ComputeRates(t1, t2);
  REQUIRE(rates.size() == 1);
  const auto& r = rates[0];
  CHECK(r.device == "gpu001");
  CHECK(r.interface == "eth1");
  REQUIRE(r.has_rates);
  // rx: 8.4152236471e12 - 8.4102236471e12 = 5e9 bytes in 10 s = 5e8 B/s = 4e9 bit/s.
  CHECK(r.rx_bps == doctest::Approx(4e9));
  // tx went from 1e9 down to 2.5e8: a reset, so the increase is 2.5e8 bytes
  // in 10 s = 2.5e7 B/s = 2e8 bit/s.
  CHECK(r.counter_reset);
  CHECK(r.tx_bps == doctest::Approx(2e8));
  // drops 12 -> 112 in 10 s.
  CHECK(r.rx_discards_per_s == doctest::Approx(10));
  CHECK(r.rx_errors_per_s == 0);  // not reported
  CHECK(*r.speed_bps == doctest::Approx(4e11));
  CHECK(*r.oper_up);

  // First sample only: no rates yet, but speed and state.
  auto first = ComputeRates(CounterSample{}, t1);
  REQUIRE(first.size() == 1);
  CHECK_FALSE(first[0].has_rates);
  CHECK(*first[0].speed_bps == doctest::Approx(4e11));
  // No time elapsed: no rates.
  CHECK_FALSE(ComputeRates(t1, t1)[0].has_rates);
}

TEST_CASE("telemetry maps onto links by port name; both ends merge") {
  json topo = {{"format", "drainwise.topology/v1"},
               {"name", "t"},
               {"nodes",
                {{{"id", "leaf-a01"}, {"kind", "switch"}, {"tier", "leaf"}},
                 {{"id", "gpu001"}, {"kind", "host"}, {"gpus", 8}},
                 {{"id", "gpu002"}, {"kind", "host"}, {"gpus", 8}}}},
               {"links",
                {{{"a", "gpu001"}, {"b", "leaf-a01"}, {"gbps", 400}, {"a_port", "eth1"}, {"b_port", "swp9"}},
                 {{"a", "gpu002"}, {"b", "leaf-a01"}, {"gbps", 400}}}}};
  model::Topology t = testing::TopologyFromJson(topo);

  InterfaceTelemetry host;
  host.device = "gpu001";
  host.interface = "eth1";
  host.has_rates = true;
  host.tx_bps = 2e8;  // gpu001 -> leaf (a -> b)
  host.rx_bps = 4e9;  // leaf -> gpu001 (b -> a)
  host.rx_discards_per_s = 10;
  host.speed_bps = 4e11;
  host.oper_up = true;
  InterfaceTelemetry leaf;
  leaf.device = "leaf-a01";
  leaf.interface = "swp9";
  leaf.has_rates = true;
  leaf.tx_bps = 5e9;  // leaf -> gpu001 (b -> a), measured higher on the switch
  leaf.rx_bps = 1e8;  // gpu001 -> leaf (a -> b)
  leaf.rx_errors_per_s = 2;
  leaf.speed_bps = 2e11;  // negotiated down
  leaf.oper_up = true;
  InterfaceTelemetry stray;
  stray.device = "gpu002";
  stray.interface = "eth9";

  auto set = MapToLinks(t, {host, leaf, stray});
  REQUIRE(set.links.size() == 1);
  const auto& l = set.links[0];
  CHECK(l.link.value == 0);
  CHECK(l.a_to_b_bps == doctest::Approx(2e8));  // max(2e8, 1e8)
  CHECK(l.b_to_a_bps == doctest::Approx(5e9));  // max(4e9, 5e9)
  CHECK(l.errors_per_s == doctest::Approx(2));
  CHECK(l.discards_per_s == doctest::Approx(10));
  CHECK(*l.oper_up);
  CHECK(*l.speed_bps == doctest::Approx(2e11));
  CHECK(l.capacity_bps == doctest::Approx(4e11));
  CHECK(l.Utilization() == doctest::Approx(5e9 / 4e11));
  // The second link has no ports: nothing can match it.
  CHECK(set.unmatched == std::vector<std::string>{"gpu002:eth9"});

  auto bg = BackgroundBps(t, set);
  REQUIRE(bg.size() == 2);
  CHECK(bg[0].first == doctest::Approx(2e8));
  CHECK(bg[0].second == doctest::Approx(5e9));
  CHECK(bg[1].first == 0);

  DegradedThresholds th;
  auto reasons = DegradedReasons(l, th);
  // errors 2/s > 1/s, and running at 200G of 400G.
  REQUIRE(reasons.size() == 2);
  CHECK(reasons[0] == "errors 2/s > 1/s");
  CHECK(reasons[1] == "running at 200 Gb/s of 400 Gb/s");
  th.max_errors_per_s = 5;
  th.max_discards_per_s = 5;
  th.max_utilization = 0.01;
  reasons = DegradedReasons(l, th);
  REQUIRE(reasons.size() == 3);
  CHECK(reasons[0] == "discards 10/s > 5/s");
  CHECK(reasons[2] == "utilisation 1% > 1%");  // 1.25% rounds to 1%

  // gnmic keys the switch by its target address, SNMP by its FQDN in upper
  // case: an alias and domain stripping map both onto the topology's name.
  InterfaceTelemetry by_ip = leaf;
  by_ip.device = "10.0.0.11";
  InterfaceTelemetry by_fqdn = leaf;
  by_fqdn.device = "LEAF-A01.dc1.example.com";
  NameOptions names;
  names.strip_domain = true;
  names.aliases = {{"10.0.0.11", "leaf-a01"}};
  for (const auto& keyed : {by_ip, by_fqdn}) {
    CAPTURE(keyed.device);
    auto mapped = MapToLinks(t, {keyed}, names);
    REQUIRE(mapped.links.size() == 1);
    CHECK(mapped.links[0].errors_per_s == doctest::Approx(2));
    CHECK(mapped.unmatched.empty());
  }
  CHECK(MapToLinks(t, {by_ip}).unmatched == std::vector<std::string>{"10.0.0.11:swp9"});  // no alias: named

  leaf.oper_up = false;
  auto down = MapToLinks(t, {host, leaf});
  CHECK_FALSE(*down.links[0].oper_up);
  CHECK(DegradedReasons(down.links[0], {})[0] == "oper down");
}

}  // namespace
}  // namespace drainwise::connectors
