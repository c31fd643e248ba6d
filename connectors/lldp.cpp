#include "connectors/lldp.h"

#include <set>
#include <tuple>

#include <fmt/format.h>

#include "connectors/topology_merge.h"
#include "connectors/util.h"

namespace drainwise::connectors {
namespace {

using codec::FieldError;
using internal::json;

// json0 wraps everything in one-element lists; json uses bare objects.
const json& Unwrap(const json& j) { return j.is_array() && j.size() == 1 ? j[0] : j; }

// A scalar that may be "x", ["x"], {"value": "x"} or [{"value": "x"}].
std::string ScalarValue(const json& j) {
  const json& v = Unwrap(j);
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("value") && v["value"].is_string()) return v["value"].get<std::string>();
  return "";
}

LldpNeighbor ParseInterface(const std::string& local_port, const json& body, const std::string& path) {
  LldpNeighbor n;
  n.local_port = local_port;
  const json& b = Unwrap(body);
  if (!b.is_object()) throw FieldError(path, "expected an object");
  if (b.contains("chassis")) {
    const json& c = Unwrap(b["chassis"]);
    if (!c.is_object()) throw FieldError(path + ".chassis", "expected an object");
    if (c.contains("name")) {
      n.remote_system = ScalarValue(c["name"]);  // json0
    } else if (c.size() == 1 && c.begin().value().is_object() && c.begin().key() != "id") {
      n.remote_system = c.begin().key();  // json: the chassis object is keyed by name
    }
  }
  if (b.contains("port")) {
    const json& p = Unwrap(b["port"]);
    if (!p.is_object()) throw FieldError(path + ".port", "expected an object");
    std::string id_type, id_value;
    if (p.contains("id")) {
      const json& id = Unwrap(p["id"]);
      if (id.is_object()) {
        id_type = id.value("type", "");
        if (id.contains("value") && id["value"].is_string()) id_value = id["value"].get<std::string>();
      } else if (id.is_string()) {
        id_value = id.get<std::string>();
      }
    }
    std::string descr = p.contains("descr") ? ScalarValue(p["descr"]) : "";
    // A MAC port id names nothing we can match: the description usually is the ifname.
    if (id_type == "ifname" || id_type == "local" || descr.empty())
      n.remote_port = id_value;
    else
      n.remote_port = descr;
  }
  return n;
}

}  // namespace

Result<std::vector<LldpNeighbor>> ParseLldpctl(const json& doc, Diagnostics* diagnostics) {
  return internal::Guard("lldpctl", [&] {
    std::vector<LldpNeighbor> out;
    if (!doc.is_object() || !doc.contains("lldp")) throw FieldError("lldp", "required");
    const json& lldp = Unwrap(doc["lldp"]);
    if (lldp.is_object() && lldp.empty()) return out;  // no neighbours: lldpctl prints {"lldp": {}}
    if (!lldp.is_object()) throw FieldError("lldp", "expected an object");
    if (!lldp.contains("interface")) return out;
    const json& ifs = lldp["interface"];
    auto add = [&](const std::string& name, const json& body, const std::string& path) {
      auto n = ParseInterface(name, body, path);
      if (!n.remote_system.empty() && !n.local_port.empty()) {
        out.push_back(std::move(n));
      } else if (diagnostics) {
        diagnostics->Skip(
            fmt::format("interface {}", name.empty() ? path : name),
            n.remote_system.empty() ? "neighbour without a system name (chassis name)" : "interface without a name");
      }
    };
    if (ifs.is_object()) {
      // -f json with one interface: {"eth0": {...}}
      for (auto it = ifs.begin(); it != ifs.end(); ++it) add(it.key(), it.value(), "lldp.interface." + it.key());
    } else if (ifs.is_array()) {
      for (size_t i = 0; i < ifs.size(); ++i) {
        const json& e = ifs[i];
        std::string path = fmt::format("lldp.interface[{}]", i);
        if (!e.is_object()) throw FieldError(path, "expected an object");
        if (e.contains("name")) {
          add(ScalarValue(e["name"]), e, path);  // json0: {"name": "eth0", ...}
        } else {
          for (auto it = e.begin(); it != e.end(); ++it) add(it.key(), it.value(), path + "." + it.key());
        }
      }
    } else {
      throw FieldError("lldp.interface", "expected an object or a list");
    }
    return out;
  });
}

namespace {

bool AnyGlob(const std::vector<std::string>& patterns, std::string_view text) {
  std::string lower = internal::ToLower(text);
  for (const auto& p : patterns) {
    if (internal::GlobMatch(internal::ToLower(p), lower)) return true;
  }
  return false;
}

int LevelOfTier(const std::string& tier, const LldpOptions& options) {
  if (tier == "leaf") return model::kLeafLevel;
  if (tier == "spine") return model::kSpineLevel;
  if (tier == "superspine") return model::kSuperspineLevel;
  auto it = options.tier_levels.find(tier);
  return it == options.tier_levels.end() ? 0 : it->second;
}

std::string TierOfLevel(int level, const std::string& hint, const LldpOptions& options) {
  if (!hint.empty() && LevelOfTier(hint, options) == level) return hint;
  return internal::TierNameOfLevel(level);
}

}  // namespace

std::string NormaliseSystemName(std::string_view name, const LldpOptions& options) {
  return NormaliseDeviceName(name, NameOptions{options.aliases, options.strip_domain});
}

Result<model::TopologySpec> MergeLldpReports(const std::map<std::string, std::vector<LldpNeighbor>>& reports,
                                             const LldpOptions& options, Diagnostics* diagnostics) {
  Diagnostics local;
  Diagnostics& diag = diagnostics ? *diagnostics : local;

  // One spelling per system: names match case-insensitively after aliases
  // and domain stripping; the first spelling seen is the node's id.
  std::map<std::string, std::string> spelling;  // lower -> id
  auto canon = [&](std::string_view raw) -> std::string {
    std::string n = NormaliseSystemName(raw, options);
    auto [it, inserted] = spelling.emplace(internal::ToLower(n), n);
    return it->second;
  };
  auto hint_of = [&](const std::string& name) -> std::string {
    std::string lower = internal::ToLower(name);
    for (const auto& [pattern, tier] : options.tier_patterns) {
      if (internal::GlobMatch(internal::ToLower(pattern), lower)) return tier;
    }
    return "";
  };
  auto port_speed = [&](const std::string& sys, const std::string& port) -> std::optional<double> {
    auto it = options.port_gbps.find(sys + ":" + port);
    if (it == options.port_gbps.end()) return std::nullopt;
    return it->second;
  };

  struct Adj {
    std::string local, local_port, remote, remote_port;
  };
  std::vector<Adj> adjs;
  std::vector<std::string> order;  // nodes in the order seen
  std::set<std::string> seen, owners;
  auto see = [&](const std::string& n) {
    if (seen.insert(n).second) order.push_back(n);
  };
  size_t total = 0;
  for (const auto& [local_raw, neighbors] : reports) {
    if (internal::Trim(local_raw).empty()) return InvalidArgument("lldp: a report without a local system name");
    std::string local = canon(local_raw);
    owners.insert(local);
    see(local);
    for (const auto& n : neighbors) {
      ++total;
      std::string remote = canon(n.remote_system);
      see(remote);
      adjs.push_back({local, n.local_port, remote, n.remote_port});
    }
  }

  // Hosts: report owners without a switch hint; neighbours seen only from
  // switches and matching no hint (a leaf's lldpctl lists its hosts).
  std::map<std::string, std::string> hint;
  for (const auto& n : order) hint[n] = hint_of(n);
  std::set<std::string> hosts;
  for (const auto& n : owners) {
    if (hint[n].empty()) hosts.insert(n);
  }
  {
    std::set<std::string> seen_from_host;
    for (const auto& a : adjs) {
      if (hosts.count(a.local)) seen_from_host.insert(a.remote);
    }
    for (const auto& n : order) {
      if (!owners.count(n) && hint[n].empty() && !seen_from_host.count(n)) hosts.insert(n);
    }
  }

  // Which adjacencies are fabric links.
  size_t host_host = 0, self_links = 0, non_fabric = 0;
  std::vector<const Adj*> fabric;
  for (const auto& a : adjs) {
    if (a.local == a.remote) {
      ++self_links;
      continue;
    }
    bool lh = hosts.count(a.local) > 0, rh = hosts.count(a.remote) > 0;
    if (lh && rh) {
      ++host_host;
      diag.Skip(fmt::format("link {}:{} - {}", a.local, a.local_port, a.remote), "host-host adjacency (not fabric)");
      continue;
    }
    if (!options.fabric_ports.empty()) {
      const std::string& host_port = lh ? a.local_port : rh ? a.remote_port : std::string();
      if ((lh || rh) && !host_port.empty() && !AnyGlob(options.fabric_ports, host_port)) {
        ++non_fabric;
        continue;
      }
    }
    fabric.push_back(&a);
  }
  if (non_fabric > 0) {
    diag.Skip(fmt::format("{} neighbour(s)", non_fabric),
              "seen through host interfaces outside fabric_ports (storage, management or front-end networks)");
  }

  // Ambiguity: a host reaching hinted switches and switches no hint names,
  // with no fabric_ports rule to say which of its NICs are fabric NICs.
  std::set<std::string> ambiguous;
  if (options.fabric_ports.empty()) {
    std::map<std::string, std::set<std::string>> host_switches;
    for (const auto* a : fabric) {
      if (hosts.count(a->local)) host_switches[a->local].insert(a->remote);
      if (hosts.count(a->remote)) host_switches[a->remote].insert(a->local);
    }
    for (const auto& [host, sws] : host_switches) {
      std::vector<std::string> hinted, unhinted;
      for (const auto& s : sws) (hint[s].empty() ? unhinted : hinted).push_back(s);
      if (hinted.empty() || unhinted.empty()) continue;
      for (const auto& s : unhinted) {
        if (ambiguous.insert(s).second) {
          diag.Skip(fmt::format("switch {}", s),
                    fmt::format("ambiguous: host {} also reaches {} (named as a {} by tier_patterns), while no tier "
                                "pattern names {} and no fabric_ports rule says which host interfaces are fabric "
                                "NICs; kept out of the compute fabric (set fabric_ports, tier_patterns or an alias)",
                                host, hinted.front(), hint[hinted.front()], s));
        }
      }
    }
  }

  // Levels from structure: breadth-first from the hosts.
  std::map<std::string, std::set<std::string>> adjacency;
  for (const auto* a : fabric) {
    if (ambiguous.count(a->local) || ambiguous.count(a->remote)) continue;
    adjacency[a->local].insert(a->remote);
    adjacency[a->remote].insert(a->local);
  }
  std::map<std::string, int> level;
  std::vector<std::string> frontier;
  for (const auto& h : hosts) {
    level[h] = 0;
    frontier.push_back(h);
  }
  while (!frontier.empty()) {
    std::vector<std::string> next;
    for (const auto& n : frontier) {
      for (const auto& m : adjacency[n]) {
        if (level.count(m) || hosts.count(m)) continue;
        level[m] = level[n] + 1;
        next.push_back(m);
      }
    }
    frontier = std::move(next);
  }
  std::set<std::string> unplaced;
  for (const auto& n : order) {
    if (hosts.count(n) || ambiguous.count(n)) continue;
    int hinted_level = hint[n].empty() ? 0 : LevelOfTier(hint[n], options);
    auto it = level.find(n);
    if (it == level.end()) {
      if (hinted_level > 0) {
        level[n] = hinted_level;
        diag.Warn(fmt::format("switch {}", n),
                  fmt::format("no path to a host in these reports; placed as {} by its name (tier_patterns)", hint[n]));
      } else if (adjacency.count(n)) {
        unplaced.insert(n);
        diag.Skip(fmt::format("switch {}", n),
                  "cannot be placed: no path to a host in these reports and no tier pattern names it");
      } else {
        unplaced.insert(n);  // only ambiguous or dropped links led here; named where they were dropped
      }
    } else if (hinted_level > 0 && hinted_level != it->second) {
      diag.Warn(fmt::format("switch {}", n),
                fmt::format("its name says {} (tier_patterns) but it is {} hop(s) from a host, so {}; using the "
                            "structure",
                            hint[n], it->second, TierOfLevel(it->second, "", options)));
    }
  }

  model::TopologySpec spec;
  spec.name = options.name;
  using EndKey = std::pair<std::string, std::string>;  // (system, port)
  std::set<std::pair<EndKey, EndKey>> links;           // ordered (lower end first)
  std::set<EndKey> busy;                               // ports already in a link
  std::set<std::string> linked;
  size_t kept = 0;
  for (const auto* a : fabric) {
    if (ambiguous.count(a->local) || ambiguous.count(a->remote) || unplaced.count(a->local) ||
        unplaced.count(a->remote)) {
      continue;
    }
    EndKey x{a->local, a->local_port}, y{a->remote, a->remote_port};
    auto key = x < y ? std::pair{x, y} : std::pair{y, x};
    if (links.count(key)) {
      ++kept;  // the other end's report, already merged
      continue;
    }
    if (busy.count(x) || (!y.second.empty() && busy.count(y))) {
      diag.Skip(fmt::format("link {}:{} - {}:{}", x.first, x.second, y.first, y.second),
                "the port already links to another neighbour (first report wins)");
      continue;
    }
    links.insert(key);
    busy.insert(x);
    if (!y.second.empty()) busy.insert(y);
    linked.insert(x.first);
    linked.insert(y.first);
    ++kept;
    std::optional<double> gbps;
    for (const auto& s : {port_speed(x.first, x.second), port_speed(y.first, y.second)}) {
      if (s) gbps = gbps ? std::min(*gbps, *s) : *s;
    }
    spec.links.push_back({x.first, y.first, gbps.value_or(options.default_gbps), x.second, y.second});
  }
  if (spec.links.empty()) {
    std::vector<std::string> why;
    size_t unnamed = 0;
    for (const auto& s : diag.skipped) unnamed += s.reason.rfind("neighbour without a system name", 0) == 0;
    if (unnamed) why.push_back(fmt::format("{} had no system name", unnamed));
    if (host_host) why.push_back(fmt::format("{} were host-host", host_host));
    if (self_links) why.push_back(fmt::format("{} pointed back at their own system", self_links));
    if (non_fabric) why.push_back(fmt::format("{} went through interfaces outside fabric_ports", non_fabric));
    if (!ambiguous.empty()) why.push_back(fmt::format("{} ambiguous switch(es)", ambiguous.size()));
    if (!unplaced.empty()) why.push_back(fmt::format("{} switch(es) that cannot be placed", unplaced.size()));
    if (hosts.empty()) why.push_back("no report came from a host (every local system matched a switch tier pattern)");
    if (total == 0 && unnamed == 0) why.push_back("the reports list no neighbours");
    std::string joined;
    for (const auto& w : why) joined += (joined.empty() ? "" : ", ") + w;
    return InvalidArgument(fmt::format("lldp: 0 of {} LLDP neighbours gave a fabric link: {}", total + unnamed,
                                       joined.empty() ? "no switch reached" : joined));
  }
  for (const auto& name : order) {
    if (!linked.count(name)) continue;
    model::NodeSpec n;
    n.id = name;
    if (hosts.count(name)) {
      n.kind = model::NodeKind::kHost;
      n.gpus = options.gpus_per_host;
    } else {
      n.kind = model::NodeKind::kSwitch;
      n.level = level.at(name);
      n.tier = TierOfLevel(n.level, hint[name], options);
    }
    spec.nodes.push_back(std::move(n));
  }
  return spec;
}

}  // namespace drainwise::connectors
