#include "connectors/lldp.h"

#include <set>
#include <tuple>

#include <fmt/format.h>

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
    if (id_type == "ifname" || id_type == "local" || descr.empty()) n.remote_port = id_value;
    else n.remote_port = descr;
  }
  return n;
}

}  // namespace

Result<std::vector<LldpNeighbor>> ParseLldpctl(const json& doc) {
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
      if (!n.remote_system.empty() && !n.local_port.empty()) out.push_back(std::move(n));
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

Result<model::TopologySpec> MergeLldpReports(const std::map<std::string, std::vector<LldpNeighbor>>& reports,
                                             const LldpOptions& options) {
  auto tier_of = [&](const std::string& name) -> std::string {
    for (const auto& [pattern, tier] : options.tier_patterns) {
      if (internal::GlobMatch(pattern, name)) return tier;
    }
    return "";
  };
  auto port_speed = [&](const std::string& sys, const std::string& port) -> std::optional<double> {
    auto it = options.port_gbps.find(sys + ":" + port);
    if (it == options.port_gbps.end()) return std::nullopt;
    return it->second;
  };

  model::TopologySpec spec;
  spec.name = options.name;
  using EndKey = std::pair<std::string, std::string>;  // (system, port)
  std::set<std::pair<EndKey, EndKey>> links;             // ordered (lower end first)
  std::set<EndKey> busy;                                 // ports already in a link
  std::vector<std::string> order;
  std::set<std::string> seen;
  auto see = [&](const std::string& n) {
    if (seen.insert(n).second) order.push_back(n);
  };
  for (const auto& [local, neighbors] : reports) {
    if (local.empty()) return InvalidArgument("lldp: a report without a local system name");
    for (const auto& n : neighbors) {
      EndKey a{local, n.local_port}, b{n.remote_system, n.remote_port};
      if (a.first == b.first) continue;
      auto key = a < b ? std::pair{a, b} : std::pair{b, a};
      if (links.count(key)) continue;  // the other end's report, already merged
      if (busy.count(a) || (!b.second.empty() && busy.count(b))) continue;
      std::string ta = tier_of(a.first), tb = tier_of(b.first);
      if (ta.empty() && tb.empty()) continue;  // host-host
      links.insert(key);
      busy.insert(a);
      if (!b.second.empty()) busy.insert(b);
      see(a.first);
      see(b.first);
      std::optional<double> gbps;
      for (const auto& s : {port_speed(a.first, a.second), port_speed(b.first, b.second)}) {
        if (s) gbps = gbps ? std::min(*gbps, *s) : *s;
      }
      spec.links.push_back({a.first, b.first, gbps.value_or(options.default_gbps), a.second, b.second});
    }
  }
  for (const auto& name : order) {
    model::NodeSpec n;
    n.id = name;
    std::string tier = tier_of(name);
    if (tier.empty()) {
      n.kind = model::NodeKind::kHost;
      n.gpus = options.gpus_per_host;
    } else {
      n.kind = model::NodeKind::kSwitch;
      n.tier = tier;
      auto lv = options.tier_levels.find(tier);
      if (lv != options.tier_levels.end()) n.level = lv->second;
    }
    spec.nodes.push_back(std::move(n));
  }
  return spec;
}

}  // namespace drainwise::connectors
