#include <doctest/doctest.h>

#include <map>

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
  std::map<std::string, std::vector<LldpNeighbor>> multi = {
      {"gpu002", *ParseLldpctl(ReadJson("fixtures/lldpctl_multi.json"))}};
  auto t2 = MergeLldpReports(multi);
  REQUIRE(t2.has_value());
  CHECK(t2->links.size() == 2);
  CHECK(t2->nodes.size() == 3);

  auto unnamed = MergeLldpReports({{"", {}}});
  REQUIRE_FALSE(unnamed.has_value());
}

// A GPU server cabled to SONiC: four rail NICs to LEAF01..LEAF04 (upper
// case), a storage switch on eno1, one neighbour without a system name.
TEST_CASE("lldp: upper-case leaves are leaves; StorageSW is not a 'tor'; the unplaceable is named") {
  Diagnostics diag;
  auto n = ParseLldpctl(ReadJson("connectors/lldp_gpu-07_sonic.json"), &diag);
  REQUIRE(n.has_value());
  CHECK(n->size() == 5);
  REQUIRE(diag.skipped.size() == 1);
  CHECK(diag.skipped[0].item == "interface ens20np0");
  CHECK(diag.skipped[0].reason == "neighbour without a system name (chassis name)");

  auto t = MergeLldpReports({{"gpu-07", *n}}, {}, &diag);
  REQUIRE(t.has_value());
  std::map<std::string, std::string> tier;
  for (const auto& node : t->nodes) tier[node.id] = node.kind == model::NodeKind::kHost ? "host" : node.tier;
  CHECK(tier.at("gpu-07") == "host");
  for (const char* leaf : {"LEAF01", "LEAF02", "LEAF03", "LEAF04"}) CHECK(tier.at(leaf) == "leaf");
  CHECK(tier.count("StorageSW") == 0);  // kept out of the compute fabric...
  CHECK(t->links.size() == 4);          // ...and the four rail uplinks are there
  bool named = false;
  for (const auto& s : diag.skipped) {
    if (s.item == "switch StorageSW") {
      named = true;
      CHECK(s.reason.find("ambiguous") == 0);
    }
  }
  CHECK(named);

  // A fabric_ports rule decides instead: the rail NICs are the fabric.
  LldpOptions rails;
  rails.fabric_ports = {"ENS1?NP0"};
  Diagnostics d2;
  auto t2 = MergeLldpReports({{"gpu-07", *n}}, rails, &d2);
  REQUIRE(t2.has_value());
  CHECK(t2->links.size() == 4);
  for (const auto& s : d2.skipped) CHECK(s.item != "switch StorageSW");
  REQUIRE(d2.skipped.size() == 1);
  CHECK(d2.skipped[0].reason.find("outside fabric_ports") != std::string::npos);
}

TEST_CASE("lldp: tiers from structure; a disagreeing name is a warning; names match case-insensitively") {
  // h1 -> sw-a (leaf by structure), sw-a's own report -> spine-like "core-9"
  // named leaf by a hint (it is two hops up: spine).
  std::map<std::string, std::vector<LldpNeighbor>> reports;
  reports["h1"] = {{"eth0", "SW-A.dc1.example.com", "p1"}};
  reports["h2"] = {{"eth0", "sw-a", "p2"}};
  LldpOptions o;
  o.tier_patterns = {{"sw-*", "leaf"}, {"x-*", "leaf"}};
  auto first = MergeLldpReports(reports, o);
  REQUIRE(first.has_value());
  // "SW-A.dc1.example.com" and "sw-a" are one switch (domain stripped, case folded).
  CHECK(first->nodes.size() == 3);
  CHECK(first->links.size() == 2);

  reports["sw-a"] = {{"p9", "x-up", "e1"}};
  Diagnostics diag;
  auto t = MergeLldpReports(reports, o, &diag);
  REQUIRE(t.has_value());
  std::map<std::string, std::string> tier;
  for (const auto& node : t->nodes) tier[node.id] = node.tier;
  CHECK(tier.at("SW-A") == "leaf");
  CHECK(tier.at("x-up") == "spine");   // structure wins over the hint...
  REQUIRE(diag.warnings.size() == 1);  // ...and the conflict is named
  CHECK(diag.warnings[0].item == "switch x-up");
}

TEST_CASE("lldp: an empty result names the rule that emptied it") {
  std::map<std::string, std::vector<LldpNeighbor>> reports;
  reports["leaf1"] = {};  // a switch's report with no neighbours
  auto none = MergeLldpReports(reports);
  REQUIRE_FALSE(none.has_value());
  CHECK(none.error().message ==
        "lldp: 0 of 0 LLDP neighbours gave a fabric link: no report came from a host (every local system matched a "
        "switch tier pattern), the reports list no neighbours");

  reports = {{"h1", {{"eth0", "h2", "eth0"}}}, {"h2", {{"eth0", "h1", "eth0"}}}};
  auto hh = MergeLldpReports(reports);
  REQUIRE_FALSE(hh.has_value());
  CHECK(hh.error().message == "lldp: 0 of 2 LLDP neighbours gave a fabric link: 2 were host-host");

  LldpOptions o;
  o.fabric_ports = {"rdma*"};
  auto nf = MergeLldpReports({{"h1", {{"eth0", "leaf1", "p1"}}}}, o);
  REQUIRE_FALSE(nf.has_value());
  CHECK(nf.error().message ==
        "lldp: 0 of 1 LLDP neighbours gave a fabric link: 1 went through interfaces outside fabric_ports");
}

}  // namespace
}  // namespace drainwise::connectors
