#include <doctest/doctest.h>

#include <algorithm>

#include "connectors/lldp.h"
#include "connectors/topology_merge.h"
#include "model/topology.h"

namespace drainwise::connectors {
namespace {

model::NodeSpec Host(const std::string& id) {
  model::NodeSpec n;
  n.id = id;
  n.kind = model::NodeKind::kHost;
  n.gpus = 8;
  n.domains["rack"] = "r1";
  return n;
}

model::NodeSpec Switch(const std::string& id, const std::string& tier) {
  model::NodeSpec n;
  n.id = id;
  n.tier = tier;
  n.domains["power"] = "pdu-" + id;
  return n;
}

// Intent (as NetBox plans it): h1 dual-homed to leaf1 and leaf2, h2 on leaf2,
// both leaves up to sp1, all 400G.
model::TopologySpec Intent() {
  model::TopologySpec t;
  t.name = "netbox";
  t.nodes = {Host("h1"), Host("h2"), Switch("leaf1", "leaf"), Switch("leaf2", "leaf"), Switch("sp1", "spine")};
  t.links = {{"h1", "leaf1", 400, "eth0", "p1"},
             {"h1", "leaf2", 400, "eth1", "p2"},
             {"h2", "leaf2", 400, "eth0", "p1"},
             {"leaf1", "sp1", 400, "p9", "e1"},
             {"leaf2", "sp1", 400, "p9", "e2"}};
  return t;
}

// Observation (LLDP on the hosts): h1's eth1 cable is not seen; h2 has an
// extra cable eth1 -> leaf1 p3 nobody planned. Switch names as the switches
// announce them (upper case, FQDN).
std::map<std::string, std::vector<LldpNeighbor>> Reports() {
  return {{"h1", {{"eth0", "LEAF1.dc1.example.com", "p1"}}},
          {"h2", {{"eth0", "LEAF2.dc1.example.com", "p1"}, {"eth1", "LEAF1.dc1.example.com", "p3"}}}};
}

size_t LinkIndex(const model::TopologySpec& t, const std::string& a, const std::string& b) {
  for (size_t i = 0; i < t.links.size(); ++i) {
    const auto& l = t.links[i];
    if ((l.a == a && l.b == b) || (l.a == b && l.b == a)) return i;
  }
  return t.links.size();
}

TEST_CASE("merge: intent plus observation, with provenance and drift both ways") {
  Diagnostics diag;
  auto observed = MergeLldpReports(Reports(), {}, &diag);
  REQUIRE(observed.has_value());
  TopologyContribution lldp{"lldp", TopologyAuthority::kObservation, *observed, {"h1", "h2"}, false};
  TopologyContribution netbox{"netbox", TopologyAuthority::kIntent, Intent(), {}, true};
  auto m = MergeTopologies({netbox, lldp});
  REQUIRE(m.has_value());

  // 5 intended - 1 not seen + 1 seen but not intended = 5 links.
  REQUIRE(m->spec.links.size() == 5);
  CHECK(LinkIndex(m->spec, "h1", "leaf2") == m->spec.links.size());  // down: left out
  size_t extra = LinkIndex(m->spec, "h2", "leaf1");
  REQUIRE(extra < m->spec.links.size());
  CHECK(m->link_sources[extra] == std::vector<std::string>{"lldp"});
  size_t both = LinkIndex(m->spec, "h1", "leaf1");
  REQUIRE(both < m->spec.links.size());
  CHECK(m->link_sources[both] == std::vector<std::string>{"netbox", "lldp"});
  size_t uplink = LinkIndex(m->spec, "leaf1", "sp1");  // no LLDP looked there: intent stands
  REQUIRE(uplink < m->spec.links.size());
  CHECK(m->link_sources[uplink] == std::vector<std::string>{"netbox"});

  // Intent's attributes win: the switch keeps NetBox's tier and power domain
  // under NetBox's spelling, though LLDP named it first in upper case.
  auto leaf1 = std::find_if(m->spec.nodes.begin(), m->spec.nodes.end(), [](auto& n) { return n.id == "leaf1"; });
  REQUIRE(leaf1 != m->spec.nodes.end());
  CHECK(leaf1->domains.at("power") == "pdu-leaf1");
  CHECK(m->node_sources.at("leaf1") == std::vector<std::string>{"netbox", "lldp"});
  CHECK(m->node_sources.at("sp1") == std::vector<std::string>{"netbox"});

  REQUIRE(m->drift.size() == 2);
  CHECK(m->drift[0].kind == "cable_not_seen");
  CHECK(m->drift[0].a == "h1");
  CHECK(m->drift[0].a_port == "eth1");
  CHECK(m->drift[0].b == "leaf2");
  CHECK(m->drift[0].sources == std::vector<std::string>{"netbox"});
  CHECK(m->drift[1].kind == "cable_not_intended");
  CHECK(m->drift[1].a == "h2");
  CHECK(m->drift[1].b == "leaf1");
  CHECK(m->drift[1].b_port == "p3");
  CHECK(m->drift[1].sources == std::vector<std::string>{"lldp"});
  CHECK(m->drift_by_device.at("leaf1") == std::vector<size_t>{1});
  CHECK(m->drift_by_device.at("leaf2") == std::vector<size_t>{0});
  CHECK(model::BuildTopology(m->spec).has_value());

  auto j = DriftToJson(*m);
  CHECK(j["counts"]["cable_not_seen"] == 1);
  CHECK(j["counts"]["cable_not_intended"] == 1);
  CHECK(j["items"][1]["sources"] == nlohmann::json::array({"lldp"}));
  CHECK(j["sources"]["leaf1"] == nlohmann::json::array({"netbox", "lldp"}));
  CHECK(j["provenance"]["nodes"]["sp1"] == nlohmann::json::array({"netbox"}));
  CHECK(j["provenance"]["links"].size() == 5);
  std::string text = DriftToText(*m);
  CHECK(text.find("cable_not_seen       h1:eth1 - leaf2:p2") != std::string::npos);
  auto by_device = DriftByDevice(*m);
  REQUIRE(by_device.at("leaf1").size() == 1);
  CHECK(by_device.at("leaf1")[0] ==
        "cable h2:eth1 - leaf1:p3 seen up, but no intent source plans it; kept in the fabric");
}

TEST_CASE("merge: a port-less plan (topology.conf) matches observed cables one for one; speeds compared when stated") {
  model::TopologySpec plan;
  plan.nodes = {Host("h1"), Switch("leaf1", "leaf")};
  plan.links = {{"h1", "leaf1", 400, "", ""}, {"h1", "leaf1", 400, "", ""}};  // two cables, no ports
  model::TopologySpec seen;
  seen.nodes = {Host("h1"), Switch("leaf1", "leaf")};
  seen.links = {{"h1", "leaf1", 200, "eth0", "p1"}, {"h1", "leaf1", 400, "eth1", "p2"}};
  auto m = MergeTopologies({{"slurm", TopologyAuthority::kIntent, plan, {}, true},
                            {"probe", TopologyAuthority::kObservation, seen, {"h1"}, true}});
  REQUIRE(m.has_value());
  REQUIRE(m->spec.links.size() == 2);
  CHECK(m->spec.links[0].a_port == "eth0");              // ports learnt from the observation
  CHECK(m->spec.links[0].gbps == doctest::Approx(200));  // runs at the measured speed
  REQUIRE(m->drift.size() == 1);
  CHECK(m->drift[0].kind == "speed_mismatch");
  CHECK(m->drift[0].detail == "intended 400 Gb/s, observed 200 Gb/s; using 200");
}

TEST_CASE("merge: a native document (authority all) against LLDP reports drift both ways too") {
  auto observed = MergeLldpReports(Reports());
  REQUIRE(observed.has_value());
  auto m = MergeTopologies({{"native", TopologyAuthority::kAll, Intent(), {}, true},
                            {"lldp", TopologyAuthority::kObservation, *observed, {"h1", "h2"}, false}});
  REQUIRE(m.has_value());
  REQUIRE(m->drift.size() == 2);
  CHECK(m->drift[0].kind == "cable_not_seen");
  CHECK(m->drift[1].kind == "cable_not_intended");
  // One source alone has nothing to disagree with.
  auto alone = MergeTopologies({{"native", TopologyAuthority::kAll, Intent(), {}, true}});
  REQUIRE(alone.has_value());
  CHECK(alone->drift.empty());
  CHECK(alone->spec.links.size() == 5);
}

TEST_CASE("merge: devices one side alone knows; names by alias; nothing to merge") {
  model::TopologySpec plan = Intent();
  model::TopologySpec seen;
  seen.nodes = {Host("h1"), Switch("rogue-sw", "leaf"), Switch("LEAF-ONE", "leaf")};
  seen.links = {{"h1", "rogue-sw", 100, "eth5", "x"}, {"h1", "LEAF-ONE", 400, "eth0", "p1"}};
  NameOptions names;
  names.aliases = {{"leaf-one", "leaf1"}};
  auto m = MergeTopologies({{"netbox", TopologyAuthority::kIntent, plan, {}, true},
                            {"lldp", TopologyAuthority::kObservation, seen, {"h1"}, false}},
                           names);
  REQUIRE(m.has_value());
  std::vector<std::string> only;
  for (const auto& d : m->drift) {
    if (d.kind == "device_only_in") only.push_back(d.a);
  }
  // rogue-sw only in LLDP. h2, leaf2 and sp1 only in NetBox, but LLDP looked
  // from h1 alone: not drift (h1's missing cable to leaf2 is, as a cable).
  CHECK(only == std::vector<std::string>{"rogue-sw"});
  CHECK(LinkIndex(m->spec, "h1", "leaf1") < m->spec.links.size());  // the alias matched

  auto none = MergeTopologies({});
  REQUIRE_FALSE(none.has_value());
  CHECK(none.error().message == "topology merge: no source has a topology yet");
  CHECK(ParseTopologyAuthority("intended").error().message ==
        "authority 'intended': expected intent, observation or all");
}

}  // namespace
}  // namespace drainwise::connectors
