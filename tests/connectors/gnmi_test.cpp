#include <doctest/doctest.h>

#include "connectors/gnmi.h"
#include "test_data.h"

namespace drainwise::connectors {
namespace {

using nlohmann::json;
using testdata::ReadJson;
using testdata::ReadText;

TEST_CASE("gnmic event output: counter64 strings, device from source") {
  auto c = ParseGnmicEvents(ReadText("fixtures/gnmic_events.json"), {}, 5);
  REQUIRE(c.has_value());
  REQUIRE(c->interfaces.size() == 1);
  const auto& i = c->interfaces[0];
  CHECK(i.device == "leaf-a01");  // "leaf-a01:8080"
  CHECK(i.interface == "Ethernet0");
  CHECK(*i.rx_bytes == 918273645501.0);
  CHECK(*i.tx_bytes == 908172635401.0);
  CHECK(*i.rx_errors == 0);
  CHECK(*i.rx_discards == 3);
  CHECK(*i.tx_discards == 17);
  CHECK(*i.time_s == doctest::Approx(1718012345.123456789));
  CHECK(c->time_s == 5);
}

TEST_CASE("gnmic events: several documents one after another merge per interface") {
  std::string text =
      R"([{"name":"s","timestamp":1000000000,"tags":{"interface_name":"Ethernet0","source":"leaf-a01:57400"},"values":{"/interfaces/interface/state/counters/in-octets":"10"}}])"
      "\n"
      R"([{"name":"s","timestamp":2000000000,"tags":{"interface_name":"Ethernet0","source":"leaf-a01:57400"},"values":{"/openconfig-interfaces:interfaces/interface/state/oper-status":"DOWN","/interfaces/interface/ethernet/state/port-speed":"openconfig-if-ethernet:SPEED_100GB"}},)"
      R"({"name":"s","timestamp":2000000000,"tags":{"source":"leaf-a01:57400"},"values":{"/system/state/hostname":"leaf-a01"}}])";
  GnmiOptions o;
  o.device = "leaf-a01-override";
  auto c = ParseGnmicEvents(text, o, 0);
  REQUIRE(c.has_value());
  REQUIRE(c->interfaces.size() == 1);  // the event without an interface is ignored
  const auto& i = c->interfaces[0];
  CHECK(i.device == "leaf-a01-override");
  CHECK(*i.rx_bytes == 10);
  CHECK_FALSE(*i.oper_up);
  CHECK(*i.speed_bps == 1e11);
  CHECK(*i.time_s == doctest::Approx(2));

  auto bad = ParseGnmicEvents(
      R"([{"tags":{"interface_name":"e0","source":"x"},"values":{"/interfaces/interface/state/counters/in-octets":"lots"}}])",
      {}, 0);
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().message ==
        "gnmic events: [0].values[\"/interfaces/interface/state/counters/in-octets\"]: expected a counter (number or "
        "numeric string), got \"lots\"");
  auto malformed = ParseGnmicEvents("[{\"tags\": ", {}, 0);
  REQUIRE_FALSE(malformed.has_value());
  CHECK(malformed.error().message.find("gnmic events: malformed JSON value 0") == 0);
}

TEST_CASE("OpenConfig interfaces in JSON_IETF") {
  json doc = ReadJson("fixtures/openconfig_if_counters_json_ietf.json");
  auto none = ParseOpenconfigInterfaces(doc, {}, 0);
  REQUIRE_FALSE(none.has_value());  // the document does not name its target
  CHECK(none.error().message == "openconfig interfaces: the device option is required for JSON_IETF documents");
  GnmiOptions o;
  o.device = "leaf-a01";
  auto c = ParseOpenconfigInterfaces(doc, o, 7);
  REQUIRE(c.has_value());
  REQUIRE(c->interfaces.size() == 1);
  const auto& i = c->interfaces[0];
  CHECK(i.device == "leaf-a01");
  CHECK(i.interface == "Ethernet0");
  CHECK(*i.rx_bytes == 918273645501.0);
  CHECK(*i.tx_bytes == 908172635401.0);
  CHECK(*i.rx_discards == 3);
  CHECK(*i.tx_discards == 17);
  CHECK(*i.oper_up);
  CHECK_FALSE(i.time_s.has_value());
  CHECK(c->time_s == 7);

  doc["openconfig-interfaces:interfaces"]["interface"][0]["state"]["counters"]["in-octets"] = json::array();
  auto bad = ParseOpenconfigInterfaces(doc, o, 0);
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().message.find(
            "openconfig interfaces: openconfig-interfaces:interfaces.interface[0].state.counters.in-octets") == 0);
}

TEST_CASE("OpenConfig speed names") {
  CHECK(*BpsFromOpenconfigSpeed("SPEED_400GB") == 4e11);
  CHECK(*BpsFromOpenconfigSpeed("openconfig-if-ethernet:SPEED_2500MB") == 2.5e9);
  CHECK_FALSE(BpsFromOpenconfigSpeed("SPEED_UNKNOWN").has_value());
}

}  // namespace
}  // namespace drainwise::connectors
