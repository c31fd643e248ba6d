// Intent and observation merged by the real daemon: NetBox (paged, served on
// loopback) plans the cabling, LLDP reports from the hosts say what is up.
// One planned cable is missing, one unplanned cable is there: the topology
// served is the merge, with provenance; /v1/topology/drift lists both
// differences with the source of each claim; an assessment draining the
// switch they touch carries the drift reason.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "connectors/loopback_http_server.h"
#include "testing/daemon.h"

using namespace drainwise;
using nlohmann::json;

namespace {

// lldpctl -f json with one interface per entry, as lldpd writes it.
json LldpReport(const std::vector<std::tuple<std::string, std::string, std::string>>& ifaces) {
  json list = json::array();
  for (const auto& [local, system, port] : ifaces) {
    list.push_back({{local,
                     {{"via", "LLDP"},
                      {"chassis", {{system, {{"id", {{"type", "mac"}, {"value", "0c:42:a1:00:00:01"}}}}}}},
                      {"port", {{"id", {{"type", "ifname"}, {"value", port}}}, {"ttl", "120"}}}}}});
  }
  return {{"lldp", {{"interface", list}}}};
}

}  // namespace

TEST_CASE("NetBox intent + LLDP observation: one merged topology, drift both ways, drift in the verdict") {
  // NetBox: leaf-a01:swp1 - spine-01:swp17, gpu001:eth1 - leaf-a01:swp9,
  // leaf-a01:swp10 - gpu002:eth1 (tests/data/connectors/netbox_v4_*).
  connectors::loopback::LoopbackHttpServer server;
  connectors::loopback::ServeNetboxPages(server);
  std::string dir = testing::MakeTempDir();
  std::filesystem::create_directories(dir + "/lldp");
  // gpu001 sees its planned cable; gpu002's planned eth1 is dark and an
  // unplanned eth2 lands on leaf-a01:swp11.
  std::ofstream(dir + "/lldp/gpu001.json") << LldpReport({{"eth1", "leaf-a01", "swp9"}}).dump();
  std::ofstream(dir + "/lldp/gpu002.json") << LldpReport({{"eth2", "leaf-a01", "swp11"}}).dump();
  std::ofstream(dir + "/lldp/gpu009.json") << "{\"lldp\": {\"interface\": [";  // truncated: skipped, named
  {
    std::ofstream token(dir + "/netbox.token");
    token << "0123456789abcdef\n";
    json cfg = {{"sources",
                 {{{"name", "netbox"},
                   {"kind", "netbox"},
                   {"url", server.base_url() + "/"},
                   {"refresh_s", 0.3},
                   {"timeout_s", 5},
                   {"token_file", dir + "/netbox.token"},
                   {"options", {{"page_size", 2}}}},
                  {{"name", "lldp"}, {"kind", "lldp"}, {"path", dir + "/lldp"}, {"refresh_s", 0.3}}}}};
    std::ofstream(dir + "/config.json") << cfg.dump(2);
  }
  testing::Daemon d({"--config", dir + "/config.json"}, dir);
  REQUIRE_MESSAGE(d.started(), d.log());

  REQUIRE_MESSAGE(testing::Eventually([&] {
                    auto drift = d.Get("/v1/topology/drift");
                    return drift.status == 200 && drift.Json()["items"].size() == 2 &&
                           d.Get("/v1/topology").status == 200;
                  }),
                  d.log());

  // The merge: NetBox's cables that LLDP did not contradict, plus the one it saw.
  auto topo = d.Get("/v1/topology").Json();
  std::set<std::pair<std::string, std::string>> cables;
  for (const auto& l : topo["links"]) {
    std::string a = l["a"].get<std::string>() + ":" + l.value("a_port", "");
    std::string b = l["b"].get<std::string>() + ":" + l.value("b_port", "");
    cables.insert(std::minmax(a, b));
  }
  CHECK(cables.count(std::minmax(std::string("gpu001:eth1"), std::string("leaf-a01:swp9"))) == 1);
  CHECK(cables.count(std::minmax(std::string("gpu002:eth2"), std::string("leaf-a01:swp11"))) == 1);
  CHECK(cables.count(std::minmax(std::string("gpu002:eth1"), std::string("leaf-a01:swp10"))) == 0);
  CHECK(cables.count(std::minmax(std::string("leaf-a01:swp1"), std::string("spine-01:swp17"))) == 1);

  auto drift = d.Get("/v1/topology/drift").Json();
  CHECK(drift["counts"]["cable_not_seen"] == 1);
  CHECK(drift["counts"]["cable_not_intended"] == 1);
  for (const auto& item : drift["items"]) {  // `drift` holds the document
    if (item["kind"] == "cable_not_seen") {
      CHECK(item["a"] == "gpu002");
      CHECK(item["sources"] == json::array({"netbox"}));
    } else {
      CHECK(item["kind"] == "cable_not_intended");
      CHECK(item["b_port"] == "swp11");
      CHECK(item["sources"] == json::array({"lldp"}));
    }
  }
  CHECK(drift["sources"]["leaf-a01"] == json::array({"netbox", "lldp"}));
  CHECK(drift["provenance"]["nodes"]["spine-01"] == json::array({"netbox"}));  // LLDP did not look there
  // The skipped report is also in the log, named.
  CHECK(d.log().find("source lldp: skipped report gpu009.json") != std::string::npos);
  auto text = d.Get("/v1/topology/drift?format=text").body;
  CHECK(text.find("cable_not_seen") != std::string::npos);
  CHECK(d.Get("/metrics").body.find("drainwise_topology_drift{kind=\"cable_not_intended\"} 1") != std::string::npos);

  // The truncated report is skipped and named; the others applied.
  json lldp;
  json sources = d.Get("/v1/sources").Json();
  for (const auto& s : sources["sources"]) {
    if (s["name"] == "lldp") lldp = s;
  }
  REQUIRE(lldp.is_object());
  CHECK(lldp["skipped"]["count"] == 1);
  CHECK(lldp["skipped"]["first"][0]["item"] == "report gpu009.json");

  // Draining the switch with drift: the default policy's warning names it.
  auto a = d.Call("POST", "/v1/assessments", json{{"drain", {{"switches", {"leaf-a01"}}}}, {"modes", {"job"}}}.dump());
  REQUIRE_MESSAGE(a.status == 201, a.body);
  bool named = false;
  json assessed = a.Json();
  for (const auto& r : assessed["reasons"]) {
    if (r["rule"] == "topology-drift") {
      named = true;
      CHECK(r["message"].get<std::string>().find("leaf-a01 (drained) has topology drift") == 0);
    }
  }
  CHECK_MESSAGE(named, a.body);
  // A spine no drift touches carries no such reason.
  auto s = d.Call("POST", "/v1/assessments", json{{"drain", {{"switches", {"spine-01"}}}}, {"modes", {"job"}}}.dump());
  REQUIRE(s.status == 201);
  json spine = s.Json();
  for (const auto& r : spine["reasons"]) CHECK(r["rule"] != "topology-drift");
  d.Stop();
  std::filesystem::remove_all(dir);
}
