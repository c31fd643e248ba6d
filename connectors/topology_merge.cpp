#include "connectors/topology_merge.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "connectors/util.h"

namespace drainwise::connectors {
namespace {

bool IsAddress(std::string_view s) {
  if (s.find(':') != std::string_view::npos) return true;  // IPv6
  return !s.empty() && s.find_first_not_of("0123456789.") == std::string_view::npos;
}

bool IsIntent(TopologyAuthority a) { return a != TopologyAuthority::kObservation; }
bool IsObservation(TopologyAuthority a) { return a != TopologyAuthority::kIntent; }

// A cable as the merge sees it: two (device, port) ends, lower end first.
struct End {
  std::string device, port;
  auto operator<=>(const End&) const = default;
};

struct Cable {
  End x, y;
  double gbps = 0;
  std::vector<std::string> intent_sources, observed_sources;
  std::vector<std::string> speed_sources;
  std::optional<double> intent_gbps, observed_gbps;
};

}  // namespace

std::string_view TopologyAuthorityName(TopologyAuthority a) {
  switch (a) {
    case TopologyAuthority::kIntent:
      return "intent";
    case TopologyAuthority::kObservation:
      return "observation";
    case TopologyAuthority::kAll:
      return "all";
  }
  return "all";
}

Result<TopologyAuthority> ParseTopologyAuthority(std::string_view name) {
  if (name == "intent") return TopologyAuthority::kIntent;
  if (name == "observation") return TopologyAuthority::kObservation;
  if (name == "all") return TopologyAuthority::kAll;
  return InvalidArgument(fmt::format("authority '{}': expected intent, observation or all", name));
}

std::string NormaliseDeviceName(std::string_view name, const NameOptions& options) {
  std::string n(internal::Trim(name));
  std::string lower = internal::ToLower(n);
  for (const auto& [from, to] : options.aliases) {
    if (internal::ToLower(from) == lower) return to;
  }
  if (options.strip_domain && !IsAddress(n)) {
    auto dot = n.find('.');
    if (dot != std::string::npos && dot > 0) n.resize(dot);
  }
  return n;
}

Result<MergedTopology> MergeTopologies(const std::vector<TopologyContribution>& contributions,
                                       const NameOptions& names) {
  if (contributions.empty()) return InvalidArgument("topology merge: no source has a topology yet");
  MergedTopology out;
  out.spec.name = contributions.size() == 1 ? contributions[0].spec.name : "merged";

  // One id per device: the first spelling of its normalised, case-folded name.
  std::map<std::string, std::string> id_of;  // lower -> id
  auto canon = [&](std::string_view raw) -> std::string {
    std::string n = NormaliseDeviceName(raw, names);
    return id_of.emplace(internal::ToLower(n), n).first->second;
  };

  // Nodes: intent's attributes win; observation fills in what intent lacks.
  std::vector<std::string> order;
  std::map<std::string, model::NodeSpec> nodes;
  std::map<std::string, bool> from_intent;
  std::map<std::string, std::set<std::string>> known_by_intent, known_by_observation;
  bool any_intent = false, any_observation = false;
  std::set<std::string> observed;  // systems whose own ports were observed
  for (const auto& c : contributions) {
    // An "all" source plans as well as observes: it counts as intent when
    // compared with an observation-only source (LLDP), never with itself.
    any_intent |= IsIntent(c.authority);
    any_observation |= c.authority == TopologyAuthority::kObservation;
    for (const auto& s : c.observed_systems) observed.insert(canon(s));
    for (const auto& n : c.spec.nodes) {
      std::string id = canon(n.id);
      auto& srcs = out.node_sources[id];
      if (std::find(srcs.begin(), srcs.end(), c.source) == srcs.end()) srcs.push_back(c.source);
      (IsIntent(c.authority) ? known_by_intent : known_by_observation)[id].insert(c.source);
      auto it = nodes.find(id);
      bool intent = IsIntent(c.authority);
      if (it == nodes.end()) {
        order.push_back(id);
        model::NodeSpec copy = n;
        copy.id = id;
        nodes.emplace(id, std::move(copy));
        from_intent[id] = intent;
      } else if (intent && !from_intent[id]) {
        model::NodeSpec copy = n;
        copy.id = id;
        it->second = std::move(copy);
        from_intent[id] = true;
      }
    }
  }

  // Cables.
  std::vector<Cable> cables;
  std::map<std::pair<End, End>, size_t> by_ends;                          // with ports
  std::multimap<std::pair<std::string, std::string>, size_t> by_devices;  // device pair, for port-less matches
  auto key_of = [](End a, End b) { return a < b ? std::pair{a, b} : std::pair{b, a}; };
  auto devices_of = [](const End& a, const End& b) {
    return a.device < b.device ? std::pair{a.device, b.device} : std::pair{b.device, a.device};
  };
  for (const auto& c : contributions) {
    bool intent = IsIntent(c.authority), observation = IsObservation(c.authority);
    for (const auto& l : c.spec.links) {
      End a{canon(l.a), l.a_port}, b{canon(l.b), l.b_port};
      if (a.device == b.device) continue;
      auto key = key_of(a, b);
      std::optional<size_t> match;
      bool ported = !a.port.empty() && !b.port.empty();
      if (ported) {
        if (auto it = by_ends.find(key); it != by_ends.end()) match = it->second;
      }
      if (!match) {
        // A source without ports (topology.conf) matches any cable between the
        // two devices that this source has not matched yet: one for one.
        auto dk = devices_of(a, b);
        auto [lo, hi] = by_devices.equal_range(dk);
        for (auto it = lo; it != hi; ++it) {
          const Cable& cand = cables[it->second];
          bool cand_ported = !cand.x.port.empty() && !cand.y.port.empty();
          if (ported && cand_ported) continue;  // both name ports and they differ: another cable
          bool already = std::find(cand.intent_sources.begin(), cand.intent_sources.end(), c.source) !=
                             cand.intent_sources.end() ||
                         std::find(cand.observed_sources.begin(), cand.observed_sources.end(), c.source) !=
                             cand.observed_sources.end();
          if (already) continue;
          match = it->second;
          break;
        }
      }
      if (!match) {
        Cable cab;
        cab.x = key.first;
        cab.y = key.second;
        cab.gbps = l.gbps;
        cables.push_back(std::move(cab));
        match = cables.size() - 1;
        if (ported) by_ends.emplace(key, *match);
        by_devices.emplace(devices_of(a, b), *match);
      }
      Cable& cab = cables[*match];
      if (cab.x.port.empty() && cab.y.port.empty() && ported) {  // ports learnt from a later source
        cab.x = key.first;
        cab.y = key.second;
        by_ends.emplace(key, *match);
      }
      if (intent) cab.intent_sources.push_back(c.source);
      if (observation) cab.observed_sources.push_back(c.source);
      if (c.speeds_stated) {
        // An "all" source counts as intent for speeds: a mismatch is between
        // two different sources, a plan and a measurement.
        auto& slot = intent ? cab.intent_gbps : cab.observed_gbps;
        if (!slot) slot = l.gbps;
        cab.speed_sources.push_back(c.source);
      }
      // The speed a link runs at: measured when measured, else planned, else
      // the first connector default.
      if (cab.observed_gbps)
        cab.gbps = *cab.observed_gbps;
      else if (cab.intent_gbps)
        cab.gbps = *cab.intent_gbps;
    }
  }

  auto add_drift = [&](DriftItem item) {
    size_t index = out.drift.size();
    out.drift_by_device[item.a].push_back(index);
    if (!item.b.empty()) out.drift_by_device[item.b].push_back(index);
    out.drift.push_back(std::move(item));
  };
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  };

  for (const auto& cab : cables) {
    bool intended = !cab.intent_sources.empty();
    bool seen = !cab.observed_sources.empty();
    bool checkable = observed.count(cab.x.device) || observed.count(cab.y.device);
    // Pure-intent sources alongside an observation: the observation must have
    // seen the cable where it looked.
    bool only_intent_seen =
        seen && std::all_of(cab.observed_sources.begin(), cab.observed_sources.end(), [&](const std::string& s) {
          return std::find(cab.intent_sources.begin(), cab.intent_sources.end(), s) != cab.intent_sources.end();
        });
    if (any_observation && intended && (!seen || only_intent_seen) && checkable) {
      add_drift({"cable_not_seen", cab.x.device, cab.x.port, cab.y.device, cab.y.port,
                 "intended, but not seen up by the observing source(s); left out of the fabric", cab.intent_sources});
      continue;
    }
    if (any_intent && seen && !intended && nodes.count(cab.x.device) && nodes.count(cab.y.device)) {
      add_drift({"cable_not_intended", cab.x.device, cab.x.port, cab.y.device, cab.y.port,
                 "seen up, but no intent source plans it; kept in the fabric", cab.observed_sources});
    }
    if (cab.intent_gbps && cab.observed_gbps && *cab.intent_gbps != *cab.observed_gbps) {
      add_drift({"speed_mismatch", cab.x.device, cab.x.port, cab.y.device, cab.y.port,
                 fmt::format("intended {:g} Gb/s, observed {:g} Gb/s; using {:g}", *cab.intent_gbps, *cab.observed_gbps,
                             cab.gbps),
                 cab.speed_sources});
    }
    model::LinkSpec l{cab.x.device, cab.y.device, cab.gbps, cab.x.port, cab.y.port};
    out.spec.links.push_back(std::move(l));
    std::vector<std::string> srcs = cab.intent_sources;
    for (const auto& s : cab.observed_sources) {
      if (std::find(srcs.begin(), srcs.end(), s) == srcs.end()) srcs.push_back(s);
    }
    out.link_sources.push_back(std::move(srcs));
  }

  // Devices one side knows and the other does not (only when both sides exist).
  if (any_intent && any_observation) {
    for (const auto& id : order) {
      bool in_intent = known_by_intent.count(id) > 0, in_obs = known_by_observation.count(id) > 0;
      if (in_intent == in_obs) continue;
      // A planned device is missing from the observation only where the
      // observation looked (its own reports); a device nobody planned is
      // always worth a look.
      if (in_intent && !observed.count(id)) continue;
      const auto& by = in_intent ? known_by_intent[id] : known_by_observation[id];
      std::vector<std::string> srcs(by.begin(), by.end());
      add_drift({"device_only_in", id, "", "", "",
                 fmt::format("only {} ({}) knows this device", in_intent ? "intent" : "observation", join(srcs)),
                 srcs});
    }
  }

  for (const auto& id : order) out.spec.nodes.push_back(nodes.at(id));
  return out;
}

namespace {

std::string Cable(const DriftItem& d) {
  auto end = [](const std::string& dev, const std::string& port) { return port.empty() ? dev : dev + ":" + port; };
  return d.b.empty() ? d.a : end(d.a, d.a_port) + " - " + end(d.b, d.b_port);
}

// A line break or other control character in a name must not forge a row.
std::string Escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    else
      out.push_back(c);
  }
  return out;
}

}  // namespace

nlohmann::json DriftToJson(const MergedTopology& merged) {
  nlohmann::json items = nlohmann::json::array();
  std::map<std::string, int> counts;
  for (const auto& d : merged.drift) {
    items.push_back({{"kind", d.kind},
                     {"a", d.a},
                     {"a_port", d.a_port},
                     {"b", d.b},
                     {"b_port", d.b_port},
                     {"detail", d.detail},
                     {"sources", d.sources}});
    ++counts[d.kind];
  }
  nlohmann::json provenance = nlohmann::json::object();
  for (const auto& [device, _] : merged.drift_by_device) {
    auto it = merged.node_sources.find(device);
    provenance[device] = it == merged.node_sources.end() ? nlohmann::json::array() : nlohmann::json(it->second);
  }
  // Every node's and link's provenance: which sources said it.
  nlohmann::json nodes = nlohmann::json::object();
  for (const auto& [node, sources] : merged.node_sources) nodes[node] = sources;
  nlohmann::json links = nlohmann::json::array();
  for (size_t i = 0; i < merged.spec.links.size() && i < merged.link_sources.size(); ++i) {
    const auto& l = merged.spec.links[i];
    links.push_back(
        {{"a", l.a}, {"a_port", l.a_port}, {"b", l.b}, {"b_port", l.b_port}, {"sources", merged.link_sources[i]}});
  }
  return {{"items", std::move(items)},
          {"counts", counts},
          {"sources", std::move(provenance)},
          {"provenance", {{"nodes", std::move(nodes)}, {"links", std::move(links)}}}};
}

std::string DriftToText(const MergedTopology& merged) {
  if (merged.drift.empty()) return "no drift: the topology sources agree\n";
  std::string out = fmt::format("{} drift item(s)\n", merged.drift.size());
  for (const auto& d : merged.drift) {
    std::string sources;
    for (const auto& s : d.sources) sources += (sources.empty() ? "" : ",") + s;
    out += fmt::format("{:<20} {:<40} {} [{}]\n", d.kind, Escape(Cable(d)), Escape(d.detail), Escape(sources));
  }
  return out;
}

std::map<std::string, std::vector<std::string>> DriftByDevice(const MergedTopology& merged) {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& [device, indexes] : merged.drift_by_device) {
    for (size_t i : indexes) {
      const DriftItem& d = merged.drift[i];
      out[device].push_back(
          fmt::format("{} {}", d.kind == "device_only_in" ? "device" : "cable " + Cable(d), d.detail));
    }
  }
  return out;
}

}  // namespace drainwise::connectors
