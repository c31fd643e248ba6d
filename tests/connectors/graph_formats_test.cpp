#include <doctest/doctest.h>

#include "connectors/graph_formats.h"
#include "model/topology.h"
#include "test_data.h"

namespace drainwise::connectors {
namespace {

using nlohmann::json;
using testdata::ReadJson;

TEST_CASE("containerlab topology-data.json") {
  auto t = ParseContainerlabData(ReadJson("fixtures/clab_topology-data.json"));
  REQUIRE(t.has_value());
  CHECK(t->name == "gpu-pod1");
  REQUIRE(t->nodes.size() == 2);
  // Node order follows the document's object keys (nlohmann sorts them).
  CHECK(t->nodes[0].id == "leaf-a01");
  CHECK(t->nodes[0].tier == "leaf");  // labels.role
  CHECK(t->nodes[1].tier == "spine");
  REQUIRE(t->links.size() == 1);
  CHECK(t->links[0].a == "leaf-a01");
  CHECK(t->links[0].a_port == "eth1");
  CHECK(t->links[0].b == "spine-01");
  CHECK(t->links[0].b_port == "eth17");
  CHECK(t->links[0].gbps == 400);
  CHECK(model::BuildTopology(*t).has_value());
  json bad = ReadJson("fixtures/clab_topology-data.json");
  bad["links"][0].erase("z");
  auto e = ParseContainerlabData(bad);
  REQUIRE_FALSE(e.has_value());
  CHECK(e.error().message == "containerlab: links[0].z: required");
}

TEST_CASE("networkx node_link_data: edges (>= 3.6) or links (older), parallel edges kept") {
  json doc = ReadJson("fixtures/nx_node_link.json");
  auto t = ParseNetworkxNodeLink(doc);
  REQUIRE(t.has_value());
  CHECK(t->name == "gpu-pod1");
  REQUIRE(t->nodes.size() == 3);
  CHECK(t->nodes[0].id == "spine-01");
  CHECK(t->nodes[0].tier == "spine");
  CHECK(t->nodes[1].tier == "leaf");
  CHECK(t->nodes[2].kind == model::NodeKind::kHost);  // role "host"
  REQUIRE(t->links.size() == 3);
  CHECK(t->links[0].a_port == "swp1");
  CHECK(t->links[1].a_port == "swp2");  // key 1: the parallel uplink
  CHECK(t->links[1].b_port == "swp18");
  CHECK(t->links[2].a == "gpu001");
  CHECK(model::BuildTopology(*t).has_value());

  doc["links"] = doc["edges"];
  doc.erase("edges");
  auto older = ParseNetworkxNodeLink(doc);
  REQUIRE(older.has_value());
  CHECK(older->links.size() == 3);
  doc["links"][0]["speed_gbps"] = "fast";
  auto bad = ParseNetworkxNodeLink(doc);
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().message == "networkx: links[0].speed_gbps: expected a number, got string");
}

TEST_CASE("Batfish layer-1 edges in both directions become one link") {
  auto t = ParseBatfishLayer1(ReadJson("fixtures/batfish_layer1_topology.json"));
  REQUIRE(t.has_value());
  REQUIRE(t->links.size() == 1);
  CHECK(t->links[0].a == "leaf-a01");
  CHECK(t->links[0].a_port == "Ethernet0");
  CHECK(t->links[0].b == "spine-01");
  CHECK(t->links[0].b_port == "Ethernet64");
  REQUIRE(t->nodes.size() == 2);
  CHECK(t->nodes[0].tier == "leaf");  // from the name pattern
  CHECK(t->nodes[1].tier == "spine");
}

}  // namespace
}  // namespace drainwise::connectors
