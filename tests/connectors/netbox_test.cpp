#include <doctest/doctest.h>

#include <map>
#include <string>

#include "connectors/netbox.h"
#include "model/topology.h"
#include "test_data.h"

namespace drainwise::connectors {
namespace {

using nlohmann::json;
using testdata::ReadJson;

const model::LinkSpec* FindLink(const model::TopologySpec& t, const std::string& a, const std::string& b) {
  for (const auto& l : t.links) {
    if ((l.a == a && l.b == b) || (l.a == b && l.b == a)) return &l;
  }
  return nullptr;
}

const model::NodeSpec* FindNode(const model::TopologySpec& t, const std::string& id) {
  for (const auto& n : t.nodes) {
    if (n.id == id) return &n;
  }
  return nullptr;
}

TEST_CASE("netbox 4.x fixture pages parse field by field") {
  auto devices = ParseNetboxDevices(ReadJson("fixtures/netbox_devices.json"));
  REQUIRE(devices.has_value());
  REQUIRE(devices->size() == 1);
  CHECK((*devices)[0].id == 101);
  CHECK((*devices)[0].name == "leaf-a01");
  CHECK((*devices)[0].role == "leaf");  // 4.x `role`
  CHECK((*devices)[0].site == "dc1");
  CHECK((*devices)[0].rack == "R12");
  CHECK((*devices)[0].status == "active");

  auto ifs = ParseNetboxInterfaces(ReadJson("fixtures/netbox_interfaces.json"));
  REQUIRE(ifs.has_value());
  REQUIRE(ifs->size() == 2);
  CHECK((*ifs)[0].name == "swp1");
  CHECK((*ifs)[0].device_id == 101);
  CHECK((*ifs)[0].device == "leaf-a01");
  CHECK(*(*ifs)[0].gbps == doctest::Approx(400));  // 400000000 kbit/s
  CHECK((*ifs)[1].name == "swp2");
  CHECK(*(*ifs)[1].gbps == doctest::Approx(400));  // speed null -> type 400gbase-x-osfp

  auto cables = ParseNetboxCables(ReadJson("fixtures/netbox_cables.json"));
  REQUIRE(cables.has_value());
  REQUIRE(cables->size() == 1);
  const auto& c = (*cables)[0];
  CHECK(c.id == 9001);
  CHECK(c.status == "connected");
  REQUIRE(c.a.size() == 1);
  REQUIRE(c.b.size() == 1);
  CHECK(c.a[0].interface_id == 5001);
  CHECK(c.a[0].device == "leaf-a01");
  CHECK(c.a[0].interface == "swp1");
  CHECK(c.b[0].interface_id == 6017);
  CHECK(c.b[0].device == "spine-01");
  CHECK(c.b[0].interface == "swp17");

  // The fixture lists only leaf-a01: its one cable goes to a device NetBox did
  // not return, so nothing is cabled, and the refusal says why.
  auto empty = BuildNetboxTopology(*devices, *ifs, *cables);
  REQUIRE_FALSE(empty.has_value());
  CHECK(empty.error().message ==
        "netbox: 0 of 1 cable terminations gave a fabric link: 1 ended on a device that is unknown, unnamed or of a "
        "skipped status");

  // With the spine present the cable becomes a 400G link; the spine's port
  // speed is unknown (not in the interfaces page) so leaf swp1's 400G counts.
  NetboxDevice spine{201, "spine-01", "spine", "active", "dc1", "", std::nullopt};
  devices->push_back(spine);
  auto t = BuildNetboxTopology(*devices, *ifs, *cables);
  REQUIRE(t.has_value());
  REQUIRE(t->links.size() == 1);
  CHECK(t->links[0].a == "leaf-a01");
  CHECK(t->links[0].a_port == "swp1");
  CHECK(t->links[0].b == "spine-01");
  CHECK(t->links[0].b_port == "swp17");
  CHECK(t->links[0].gbps == doctest::Approx(400));
  CHECK(model::BuildTopology(*t).has_value());
}

TEST_CASE("netbox 3.x bundle: device_role, integer nested cables, null speeds, legacy terminations") {
  auto t = ParseNetboxBundle(ReadJson("connectors/netbox_v3_bundle.json"));
  REQUIRE(t.has_value());
  // Kept: leaf-a01, spine-01 (9001), leaf-a02 (9002), gpu001 (9101), gpu005 (9102).
  // Dropped: console-01 (cabled to a spine, not a leaf), pdu-01 (no cable),
  // gpu099 (offline), cable 9401 (planned), cable 9501 (front port).
  REQUIRE(t->nodes.size() == 5);
  CHECK(t->nodes[0].id == "leaf-a01");
  CHECK(t->nodes[1].id == "spine-01");
  CHECK(FindNode(*t, "console-01") == nullptr);
  CHECK(FindNode(*t, "pdu-01") == nullptr);
  CHECK(FindNode(*t, "gpu099") == nullptr);
  REQUIRE(t->links.size() == 4);

  const auto* leaf2 = FindNode(*t, "leaf-a02");
  REQUIRE(leaf2);
  CHECK(leaf2->kind == model::NodeKind::kSwitch);
  CHECK(leaf2->tier == "leaf");  // role slug "tor"
  CHECK(leaf2->domains.at("rack") == "R13");
  const auto* gpu1 = FindNode(*t, "gpu001");
  REQUIRE(gpu1);
  CHECK(gpu1->kind == model::NodeKind::kHost);
  CHECK(gpu1->gpus == 4);                    // custom field
  CHECK(FindNode(*t, "gpu005")->gpus == 8);  // custom field null -> default
  CHECK(FindNode(*t, "spine-01")->tier == "spine");
  CHECK(FindNode(*t, "spine-01")->domains.count("rack") == 0);

  // 9002: leaf-a02 swp1 type "other" (unknown), spine swp18 100gbase -> 100.
  CHECK(FindLink(*t, "leaf-a02", "spine-01")->gbps == doctest::Approx(100));
  // 9101: both speeds null, both types 400G.
  CHECK(FindLink(*t, "gpu001", "leaf-a01")->gbps == doctest::Approx(400));
  CHECK(FindLink(*t, "gpu001", "leaf-a01")->a_port == "eth1");
  // 9102 (termination_a/b form): 200gbase on the leaf, infiniband-ndr (400) on the host -> 200.
  const auto* l = FindLink(*t, "leaf-a02", "gpu005");
  REQUIRE(l);
  CHECK(l->gbps == doctest::Approx(200));
  CHECK(l->a_port == "swp9");
  CHECK(l->b_port == "eth1");
  CHECK(model::BuildTopology(*t).has_value());
}

TEST_CASE("netbox role mapping and host detection are configurable") {
  json bundle = ReadJson("connectors/netbox_v3_bundle.json");
  NetboxOptions o;
  o.host_roles = {"storage"};  // gpu-server is no longer a host role
  auto t = ParseNetboxBundle(bundle, o);
  REQUIRE(t.has_value());
  CHECK(FindNode(*t, "gpu001") == nullptr);
  CHECK(t->links.size() == 2);

  NetboxOptions o2;
  o2.role_tiers = {{"leaf", "leaf"}, {"spine", "spine"}};  // "tor" unmapped: leaf-a02 becomes a host candidate
  auto t2 = ParseNetboxBundle(bundle, o2);
  REQUIRE(t2.has_value());
  CHECK(FindNode(*t2, "leaf-a02") == nullptr);  // cabled only to a spine and a host
  CHECK(FindNode(*t2, "gpu005") == nullptr);
}

TEST_CASE("netbox errors name the item and field") {
  json page = ReadJson("fixtures/netbox_interfaces.json");
  page["results"][1]["speed"] = "fast";
  auto ifs = ParseNetboxInterfaces(page);
  REQUIRE_FALSE(ifs.has_value());
  CHECK(ifs.error().message == "netbox interfaces: results[1].speed: expected a number, got string");

  json devices = ReadJson("fixtures/netbox_devices.json");
  devices["results"][0].erase("id");
  auto d = ParseNetboxDevices(devices);
  REQUIRE_FALSE(d.has_value());
  CHECK(d.error().message == "netbox devices: results[0].id: required");

  json cables = ReadJson("fixtures/netbox_cables.json");
  cables["results"][0].erase("a_terminations");
  cables["results"][0].erase("b_terminations");
  auto c = ParseNetboxCables(cables);
  REQUIRE_FALSE(c.has_value());
  CHECK(c.error().message == "netbox cables: results[0].a_terminations: required");

  // A cable whose speed nobody knows: error naming it, unless default_gbps.
  std::vector<NetboxDevice> devs = {{1, "leaf-1", "leaf", "active", "", "", std::nullopt},
                                    {2, "spine-1", "spine", "active", "", "", std::nullopt}};
  std::vector<NetboxInterface> its = {{10, 1, "leaf-1", "e1", std::nullopt, "other", true},
                                      {20, 2, "spine-1", "e9", std::nullopt, "", true}};
  std::vector<NetboxCable> cab = {{77, "connected", {{10, "", ""}}, {{20, "", ""}}}};
  auto t = BuildNetboxTopology(devs, its, cab);
  REQUIRE_FALSE(t.has_value());
  CHECK(t.error().message.find("netbox cable 77 (leaf-1:e1 - spine-1:e9)") == 0);
  NetboxOptions o;
  o.default_gbps = 100;
  auto t2 = BuildNetboxTopology(devs, its, cab, o);
  REQUIRE(t2.has_value());
  CHECK(t2->links[0].gbps == doctest::Approx(100));
}

TEST_CASE("netbox interface type to speed") {
  const std::pair<const char*, double> known[] = {
      {"400gbase-x-osfp", 400}, {"800gbase-x-osfp", 800}, {"100gbase-x-qsfp28", 100}, {"25gbase-x-sfp28", 25},
      {"2.5gbase-t", 2.5},      {"1000base-t", 1},        {"100base-tx", 0.1},        {"infiniband-ndr", 400},
      {"infiniband-hdr", 200},  {"1.6tbase-cr8", 1600}};
  for (const auto& entry : known) {
    // Not a structured binding: clang 14 cannot capture one in CAPTURE's lambda.
    const char* type = entry.first;
    double gbps = entry.second;
    CAPTURE(type);
    REQUIRE(GbpsFromNetboxType(type).has_value());
    CHECK(*GbpsFromNetboxType(type) == doctest::Approx(gbps));
  }
  CHECK_FALSE(GbpsFromNetboxType("other").has_value());
  CHECK_FALSE(GbpsFromNetboxType("virtual").has_value());
  CHECK_FALSE(GbpsFromNetboxType("lag").has_value());
}

TEST_CASE("netbox pagination follows next, keeping the configured origin") {
  std::map<std::string, std::string> pages = {
      {"https://nb.local:8443/api/dcim/devices/?limit=2",
       R"({"count":3,"next":"http://netbox.internal/api/dcim/devices/?limit=2&offset=2","previous":null,"results":[{"id":1},{"id":2}]})"},
      {"https://nb.local:8443/api/dcim/devices/?limit=2&offset=2",
       R"({"count":3,"next":null,"previous":"x","results":[{"id":3}]})"},
  };
  std::vector<std::string> asked;
  FetchFn fetch = [&](const std::string& url) -> Result<std::string> {
    asked.push_back(url);
    auto it = pages.find(url);
    if (it == pages.end()) return NotFound(url);
    return it->second;
  };
  auto all = FetchNetboxPages(fetch, "https://nb.local:8443/api/dcim/devices/?limit=2");
  REQUIRE(all.has_value());
  REQUIRE((*all)["results"].size() == 3);
  CHECK((*all)["results"][2]["id"] == 3);
  CHECK(asked.size() == 2);
  CHECK(asked[1] == "https://nb.local:8443/api/dcim/devices/?limit=2&offset=2");

  // A page pointing back at itself is a loop, not an endless crawl.
  pages["https://nb.local:8443/api/dcim/devices/?limit=2&offset=2"] =
      R"({"count":3,"next":"https://nb.local:8443/api/dcim/devices/?limit=2","results":[]})";
  auto loop = FetchNetboxPages(fetch, "https://nb.local:8443/api/dcim/devices/?limit=2");
  REQUIRE_FALSE(loop.has_value());
  CHECK(loop.error().message.find("repeats") != std::string::npos);

  // max_pages bounds it too.
  auto bounded = FetchNetboxPages(fetch, "https://nb.local:8443/api/dcim/devices/?limit=2", 1);
  REQUIRE_FALSE(bounded.has_value());
  CHECK(bounded.error().message.find("more than 1 pages") != std::string::npos);

  // A failing page fails the whole fetch, naming the page.
  auto missing = FetchNetboxPages(fetch, "https://nb.local:8443/api/dcim/cables/?limit=2");
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().code == ErrorCode::kNotFound);

  pages["bad"] = R"({"count":1,"next":null,"results":{}})";
  auto bad = FetchNetboxPages(fetch, "bad");
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().message == "netbox page bad: results: expected an array");
}

TEST_CASE("netbox: an empty fabric names the roles role_tiers does not know") {
  // The fixture's leaf and a spine, with role_tiers naming neither role.
  NetboxOptions o;
  o.role_tiers = {{"fabric-leaf", "leaf"}, {"fabric-spine", "spine"}};
  auto devices = ParseNetboxDevices(ReadJson("fixtures/netbox_devices.json"), o);
  auto interfaces = ParseNetboxInterfaces(ReadJson("fixtures/netbox_interfaces.json"));
  auto cables = ParseNetboxCables(ReadJson("fixtures/netbox_cables.json"));
  REQUIRE(devices.has_value());
  REQUIRE(interfaces.has_value());
  REQUIRE(cables.has_value());
  devices->push_back(NetboxDevice{201, "spine-01", "spine", "active", "dc1", "", std::nullopt});
  auto t = BuildNetboxTopology(*devices, *interfaces, *cables, o);
  REQUIRE_FALSE(t.has_value());
  CHECK(t.error().message ==
        "netbox: 0 of 1 cable terminations gave a fabric link: 1 joined two devices whose roles role_tiers does not "
        "name (roles seen: '" +
            (*devices)[0].role + "' ×1, 'spine' ×1; role_tiers: fabric-leaf, fabric-spine)");

  auto none = BuildNetboxTopology(*devices, *interfaces, {}, o);
  REQUIRE_FALSE(none.has_value());
  CHECK(none.error().message == "netbox: 0 of 0 cable terminations gave a fabric link: NetBox returned no cables");
}

}  // namespace
}  // namespace drainwise::connectors
