#include <doctest/doctest.h>

#include "connectors/lldp.h"
#include "model/topology.h"
#include "test_data.h"

namespace drainwise::connectors {
namespace {

using nlohmann::json;
using testdata::ReadJson;

TEST_CASE("lldpctl -f json with one interface (object keyed by name)") {
  auto n = ParseLldpctl(ReadJson("fixtures/lldpctl_single.json"));
  REQUIRE(n.has_value());
  REQUIRE(n->size() == 1);
  CHECK((*n)[0].local_port == "eth0");
  CHECK((*n)[0].remote_system == "leaf-a01");
  CHECK((*n)[0].remote_port == "Ethernet8");  // port id of type ifname wins over descr
}

TEST_CASE("lldpctl -f json with several interfaces (list of one-key objects)") {
  auto n = ParseLldpctl(ReadJson("fixtures/lldpctl_multi.json"));
  REQUIRE(n.has_value());
  REQUIRE(n->size() == 2);
  CHECK((*n)[0].local_port == "eth0");
  CHECK((*n)[0].remote_system == "leaf-a01");
  CHECK((*n)[0].remote_port == "Ethernet8");
  CHECK((*n)[1].local_port == "eth1");
  CHECK((*n)[1].remote_system == "leaf-a02");
  CHECK((*n)[1].remote_port == "Ethernet8");
}

TEST_CASE("lldpctl -f json0 (everything wrapped in lists)") {
  auto n = ParseLldpctl(ReadJson("fixtures/lldpctl_json0.json"));
  REQUIRE(n.has_value());
  REQUIRE(n->size() == 1);
  CHECK((*n)[0].local_port == "eth0");
  CHECK((*n)[0].remote_system == "leaf-a01");
  CHECK((*n)[0].remote_port == "Ethernet8");
}

TEST_CASE("lldpctl: MAC port ids fall back to the port description; no neighbours is empty") {
  auto n = ParseLldpctl(ReadJson("connectors/lldp_leaf-a01.json"));
  REQUIRE(n.has_value());
  REQUIRE(n->size() == 2);
  CHECK((*n)[0].local_port == "Ethernet8");
  CHECK((*n)[0].remote_system == "gpu001");
  CHECK((*n)[0].remote_port == "eth0");  // id is a MAC, descr is the ifname
  CHECK((*n)[1].remote_port == "Ethernet64");

  auto none = ParseLldpctl(json::parse(R"({"lldp": {}})"));
  REQUIRE(none.has_value());
  CHECK(none->empty());

  auto bad = ParseLldpctl(json::parse(R"({"lldp": {"interface": 3}})"));
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().message == "lldpctl: lldp.interface: expected an object or a list");
  auto missing = ParseLldpctl(json::parse(R"({"lldpd": {}})"));
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().message == "lldpctl: lldp: required");
}

TEST_CASE("lldp reports merge into links seen once, tiers from name patterns") {
  std::map<std::string, std::vector<LldpNeighbor>> reports;
  reports["gpu001"] = *ParseLldpctl(ReadJson("fixtures/lldpctl_single.json"));
  reports["leaf-a01"] = *ParseLldpctl(ReadJson("connectors/lldp_leaf-a01.json"));
  LldpOptions o;
  o.port_gbps = {{"leaf-a01:Ethernet0", 800}};
  auto t = MergeLldpReports(reports, o);
  REQUIRE(t.has_value());
  // gpu001:eth0 <-> leaf-a01:Ethernet8 is reported by both ends: one link.
  REQUIRE(t->links.size() == 2);
  CHECK(t->links[0].a == "gpu001");
  CHECK(t->links[0].a_port == "eth0");
  CHECK(t->links[0].b == "leaf-a01");
  CHECK(t->links[0].b_port == "Ethernet8");
  CHECK(t->links[0].gbps == doctest::Approx(400));  // default
  CHECK(t->links[1].a == "leaf-a01");
  CHECK(t->links[1].b == "spine-01");
  CHECK(t->links[1].b_port == "Ethernet64");
  CHECK(t->links[1].gbps == doctest::Approx(800));  // port_gbps
  REQUIRE(t->nodes.size() == 3);
  CHECK(t->nodes[0].id == "gpu001");
  CHECK(t->nodes[0].kind == model::NodeKind::kHost);
  CHECK(t->nodes[1].tier == "leaf");
  CHECK(t->nodes[2].tier == "spine");
  CHECK(model::BuildTopology(*t).has_value());

  // A host seeing two leaves (the multi fixture) links to both.
  std::map<std::string, std::vector<LldpNeighbor>> multi = {{"gpu002", *ParseLldpctl(ReadJson("fixtures/lldpctl_multi.json"))}};
  auto t2 = MergeLldpReports(multi);
  REQUIRE(t2.has_value());
  CHECK(t2->links.size() == 2);
  CHECK(t2->nodes.size() == 3);

  auto unnamed = MergeLldpReports({{"", {}}});
  REQUIRE_FALSE(unnamed.has_value());
}

}  // namespace
}  // namespace drainwise::connectors
