#include <doctest/doctest.h>

#include <cmath>

#include "connectors/prometheus.h"
#include "test_data.h"

namespace drainwise::connectors {
namespace {

using nlohmann::json;
using testdata::ReadJson;
using testdata::ReadText;

TEST_CASE("prometheus text: node_exporter fixture") {
  auto s = ParsePrometheusText(ReadText("fixtures/node_exporter.prom"));
  REQUIRE(s.has_value());
  REQUIRE(s->size() == 5);
  CHECK((*s)[0].name == "node_network_receive_bytes_total");
  CHECK((*s)[0].labels.at("device") == "eth1");
  CHECK((*s)[0].labels.at("instance") == "gpu001:9100");
  CHECK((*s)[0].value == doctest::Approx(8.4102236471e12));
  CHECK_FALSE((*s)[0].timestamp_ms.has_value());
  CHECK((*s)[1].value == 237886);
  CHECK((*s)[3].name == "node_network_speed_bytes");
  CHECK((*s)[3].value == 5e10);
}

TEST_CASE("prometheus text: escapes, trailing comma, timestamps, special values") {
  auto s = ParsePrometheusText(
      "m{a=\"x\\\"y\\\\z\\n\",b=\"2\",} 1 1718012345000\n"
      "  # indented comment\n"
      "up 1\r\n"
      "nan_metric NaN\n"
      "inf_metric{le=\"+Inf\"} +Inf\n"
      "neg -Inf\n"
      "sci 1.5e-3\n");
  REQUIRE(s.has_value());
  REQUIRE(s->size() == 6);
  CHECK((*s)[0].labels.at("a") == "x\"y\\z\n");
  CHECK((*s)[0].labels.at("b") == "2");
  CHECK(*(*s)[0].timestamp_ms == 1718012345000);
  CHECK((*s)[1].name == "up");
  CHECK(std::isnan((*s)[2].value));
  CHECK((*s)[3].labels.at("le") == "+Inf");
  CHECK(std::isinf((*s)[3].value));
  CHECK((*s)[4].value < 0);
  CHECK((*s)[5].value == doctest::Approx(0.0015));
}

TEST_CASE("prometheus text: errors name the line") {
  struct Case {
    const char* text;
    const char* message;
  };
  const Case cases[] = {
      {"ok 1\nm{a=\"x} 1\n", "prometheus text line 2: m: label 'a': missing closing quote"},
      {"{a=\"b\"} 1\n", "prometheus text line 1: expected a metric name"},
      {"m 1 2 3\n", "prometheus text line 1: m: unexpected text after the timestamp"},
      {"m one\n", "prometheus text line 1: m: bad value 'one'"},
      {"m\n", "prometheus text line 1: m: missing value"},
      {"m{a=\"1\",a=\"2\"} 1\n", "prometheus text line 1: m: label 'a' repeated"},
      {"m{a=\"\\t\"} 1\n", "prometheus text line 1: m: label 'a': unknown escape '\\t'"},
      {"m 1 12.5\n", "prometheus text line 1: m: bad timestamp '12.5'"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.text);
    auto s = ParsePrometheusText(c.text);
    REQUIRE_FALSE(s.has_value());
    CHECK(s.error().message == c.message);
  }
}

TEST_CASE("interface counters from node_exporter: device from instance, lo skipped") {
  auto s = ParsePrometheusText(ReadText("fixtures/node_exporter.prom"));
  REQUIRE(s.has_value());
  auto c = CountersFromPrometheus(*s, {}, 1000);
  REQUIRE(c.has_value());
  CHECK(c->time_s == 1000);
  REQUIRE(c->interfaces.size() == 1);
  const auto& i = c->interfaces[0];
  CHECK(i.device == "gpu001");
  CHECK(i.interface == "eth1");
  CHECK(*i.rx_bytes == doctest::Approx(8.4102236471e12));
  CHECK_FALSE(i.tx_bytes.has_value());
  CHECK(*i.rx_discards == 12);
  CHECK(*i.speed_bps == doctest::Approx(4e11));  // 5e10 bytes/s
  CHECK(*i.oper_up);
}

TEST_CASE("interface counters from the SNMP exporter: ifName, Mbit/s, oper status") {
  auto s = ParsePrometheusText(ReadText("fixtures/snmp_exporter_if_mib.prom"));
  REQUIRE(s.has_value());
  REQUIRE(s->size() == 5);
  // Scraped straight from the exporter there is no instance label.
  auto missing = CountersFromPrometheus(*s, {}, 0);
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().message ==
        "prometheus ifHCInOctets{ifName=\"swp1\"}: no 'instance' label and no device option");
  PrometheusTelemetryOptions o;
  o.device = "leaf-a01";
  auto c = CountersFromPrometheus(*s, o, 0);
  REQUIRE(c.has_value());
  REQUIRE(c->interfaces.size() == 1);
  const auto& i = c->interfaces[0];
  CHECK(i.device == "leaf-a01");
  CHECK(i.interface == "swp1");
  CHECK(*i.rx_bytes == doctest::Approx(1.8446744e15));
  CHECK(*i.tx_bytes == doctest::Approx(1.7012034e15));
  CHECK(*i.rx_discards == 0);
  CHECK_FALSE(i.tx_discards.has_value());
  CHECK(*i.speed_bps == doctest::Approx(4e11));  // 400000 Mbit/s
  CHECK(*i.oper_up);
}

TEST_CASE("prometheus /api/v1/query vector result") {
  auto s = ParsePrometheusQuery(ReadJson("connectors/prometheus_query_vector.json"));
  REQUIRE(s.has_value());
  REQUIRE(s->size() == 3);
  CHECK((*s)[0].name == "ifHCInOctets");
  CHECK((*s)[0].labels.count("__name__") == 0);
  CHECK(*(*s)[0].timestamp_ms == 1718012345500);
  CHECK((*s)[0].value == 1844674400000000.0);
  PrometheusTelemetryOptions o;
  o.strip_suffix = ".dc1.example.net";
  auto c = CountersFromPrometheus(*s, o, 0);
  REQUIRE(c.has_value());
  REQUIRE(c->interfaces.size() == 1);
  CHECK(c->interfaces[0].device == "leaf-a01");
  CHECK(*c->interfaces[0].time_s == doctest::Approx(1718012345.5));
  CHECK_FALSE(*c->interfaces[0].oper_up);  // ifOperStatus 2 = down

  auto err =
      ParsePrometheusQuery(json::parse(R"({"status": "error", "errorType": "bad_data", "error": "parse error"})"));
  REQUIRE_FALSE(err.has_value());
  CHECK(err.error().message == "prometheus query: status: 'error': parse error");
  auto scalar = ParsePrometheusQuery(
      json::parse(R"({"status": "success", "data": {"resultType": "scalar", "result": [1, "2"]}})"));
  REQUIRE_FALSE(scalar.has_value());
  CHECK(scalar.error().message == "prometheus query: data.resultType: 'scalar' (expected vector or matrix)");
  auto matrix = ParsePrometheusQuery(json::parse(
      R"({"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {"__name__": "x"}, "values": [[1, "1"], [2, "5"]]}]}})"));
  REQUIRE(matrix.has_value());
  CHECK((*matrix)[0].value == 5);
  CHECK(*(*matrix)[0].timestamp_ms == 2000);
}

}  // namespace
}  // namespace drainwise::connectors
