// Source configuration: the `sources` entries of the daemon's config file
// parsed into SourceConfig (common fields, then each kind's options), with
// errors naming the field.
#include "connectors/source.h"

#include <cctype>
#include <set>

#include <fmt/format.h>

#include "codec/native.h"
#include "connectors/util.h"

namespace drainwise::connectors {
namespace {

using codec::FieldError;
using codec::ObjectReader;
using internal::json;

bool KnownKind(const std::string& kind) {
  for (const char* k : kSourceKinds) {
    if (kind == k) return true;
  }
  return false;
}

std::set<std::string> StringSet(const ObjectReader& r, std::string_view key) {
  auto v = r.StringList(key);
  return {v.begin(), v.end()};
}

std::map<std::string, double> NumberMap(const ObjectReader& r, std::string_view key) {
  std::map<std::string, double> out;
  if (!r.Has(key)) return out;
  ObjectReader m(r.Raw(key), r.Child(key));
  for (const auto& [k, _] : r.Raw(key).items()) out[k] = m.Number(k);
  return out;
}

void ParseKindOptions(SourceConfig& c, const ObjectReader& o) {
  if (c.kind == "netbox") {
    o.RejectUnknown({"name", "role_tiers", "tier_levels", "host_roles", "skip_device_statuses", "skip_cable_statuses",
                     "default_gbps", "gpus_custom_field", "default_gpus", "filter", "page_size"});
    auto& n = c.netbox;
    n.name = o.StringOr("name", c.name);
    if (o.Has("role_tiers")) n.role_tiers = o.StringMap("role_tiers");
    for (const auto& [k, v] : NumberMap(o, "tier_levels")) n.tier_levels[k] = static_cast<int>(v);
    if (o.Has("host_roles")) n.host_roles = StringSet(o, "host_roles");
    if (o.Has("skip_device_statuses")) n.skip_device_statuses = StringSet(o, "skip_device_statuses");
    if (o.Has("skip_cable_statuses")) n.skip_cable_statuses = StringSet(o, "skip_cable_statuses");
    n.default_gbps = o.NumberOr("default_gbps", n.default_gbps);
    if (n.default_gbps < 0) throw FieldError(o.Child("default_gbps"), "must be >= 0");
    n.gpus_custom_field = o.StringOr("gpus_custom_field", n.gpus_custom_field);
    n.default_gpus = static_cast<int>(o.IntOr("default_gpus", n.default_gpus));
    c.netbox_filter = o.StringOr("filter", "");
    c.netbox_page_size = static_cast<int>(o.IntOr("page_size", c.netbox_page_size));
    if (c.netbox_page_size < 1 || c.netbox_page_size > 1000)
      throw FieldError(o.Child("page_size"), "must be within [1, 1000]");
  } else if (c.kind == "lldp") {
    o.RejectUnknown({"name", "tier_patterns", "tier_levels", "default_gbps", "port_gbps", "gpus_per_host",
                     "local_system", "fabric_ports", "aliases", "strip_domain"});
    auto& l = c.lldp;
    l.name = o.StringOr("name", c.name);
    if (o.Has("tier_patterns")) {
      l.tier_patterns.clear();
      for (const auto& p : o.Objects("tier_patterns")) {
        p.RejectUnknown({"match", "tier"});
        l.tier_patterns.emplace_back(p.String("match"), p.String("tier"));
      }
    }
    for (const auto& [k, v] : NumberMap(o, "tier_levels")) l.tier_levels[k] = static_cast<int>(v);
    l.default_gbps = o.NumberOr("default_gbps", l.default_gbps);
    if (l.default_gbps <= 0) throw FieldError(o.Child("default_gbps"), "must be > 0");
    l.port_gbps = NumberMap(o, "port_gbps");
    l.gpus_per_host = static_cast<int>(o.IntOr("gpus_per_host", l.gpus_per_host));
    c.lldp_local_system = o.StringOr("local_system", "");
    if (o.Has("fabric_ports")) l.fabric_ports = o.StringList("fabric_ports");
    if (o.Has("aliases")) l.aliases = o.StringMap("aliases");
    l.strip_domain = o.BoolOr("strip_domain", l.strip_domain);
  } else if (c.kind == "slurm-topology") {
    o.RejectUnknown({"name", "default_gbps", "link_speed_unit_gbps", "gpus_per_host"});
    auto& s = c.slurm_topology;
    s.name = o.StringOr("name", c.name);
    s.default_gbps = o.NumberOr("default_gbps", s.default_gbps);
    if (s.default_gbps <= 0) throw FieldError(o.Child("default_gbps"), "must be > 0");
    s.link_speed_unit_gbps = o.NumberOr("link_speed_unit_gbps", s.link_speed_unit_gbps);
    if (s.link_speed_unit_gbps < 0) throw FieldError(o.Child("link_speed_unit_gbps"), "must be >= 0");
    s.gpus_per_host = static_cast<int>(o.IntOr("gpus_per_host", s.gpus_per_host));
  } else if (c.kind == "slurm") {
    o.RejectUnknown({"id_prefix", "user", "cpu_jobs"});
    c.slurm.id_prefix = o.StringOr("id_prefix", "");
    c.slurm.cpu_jobs = o.StringOr("cpu_jobs", c.slurm.cpu_jobs);
    if (c.slurm.cpu_jobs != "skip" && c.slurm.cpu_jobs != "mark") {
      throw FieldError(o.Child("cpu_jobs"), fmt::format("'{}': expected skip or mark", c.slurm.cpu_jobs));
    }
    c.slurm_user = o.StringOr("user", "");
  } else if (c.kind == "kubernetes") {
    o.RejectUnknown({"job_labels", "id_prefix", "gpu_resource"});
    if (o.Has("job_labels")) c.kubernetes.job_labels = o.StringList("job_labels");
    if (c.kubernetes.job_labels.empty()) throw FieldError(o.Child("job_labels"), "must not be empty");
    c.kubernetes.id_prefix = o.StringOr("id_prefix", "");
    c.kubernetes.gpu_resource = o.StringOr("gpu_resource", c.kubernetes.gpu_resource);
  } else if (c.kind == "prometheus") {
    o.RejectUnknown({"device", "device_label", "strip_suffix", "skip_interfaces", "device_aliases", "strip_domain"});
    c.prometheus.device = o.StringOr("device", "");
    c.prometheus.device_label = o.StringOr("device_label", c.prometheus.device_label);
    c.prometheus.strip_suffix = o.StringOr("strip_suffix", "");
    if (o.Has("skip_interfaces")) c.prometheus.skip_interfaces = o.StringList("skip_interfaces");
  } else if (c.kind == "gnmi") {
    o.RejectUnknown({"device", "device_aliases", "strip_domain"});
    c.gnmi.device = o.StringOr("device", "");
  } else if (c.kind == "chakra") {
    o.RejectUnknown({"profile"});
    c.chakra_profile = o.StringOr("profile", "");
  } else if (c.kind == "containerlab" || c.kind == "networkx" || c.kind == "batfish") {
    o.RejectUnknown({"name", "role_tiers", "host_roles", "tier_patterns", "default_gbps", "gpus_per_host"});
    auto& g = c.graph;
    g.name = o.StringOr("name", "");
    if (o.Has("role_tiers")) g.role_tiers = o.StringMap("role_tiers");
    if (o.Has("host_roles")) g.host_roles = o.StringList("host_roles");
    if (o.Has("tier_patterns")) {
      g.tier_patterns.clear();
      for (const auto& p : o.Objects("tier_patterns")) {
        p.RejectUnknown({"match", "tier"});
        g.tier_patterns.emplace_back(p.String("match"), p.String("tier"));
      }
    }
    g.default_gbps = o.NumberOr("default_gbps", g.default_gbps);
    if (g.default_gbps <= 0) throw FieldError(o.Child("default_gbps"), "must be > 0");
    g.gpus_per_host = static_cast<int>(o.IntOr("gpus_per_host", g.gpus_per_host));
  } else {
    o.RejectUnknown({});
  }
  if (c.kind == "prometheus" || c.kind == "gnmi") {
    // gnmic names targets by address, SNMP exporters devices by FQDN.
    if (o.Has("device_aliases")) c.telemetry_names.aliases = o.StringMap("device_aliases");
    c.telemetry_names.strip_domain = o.BoolOr("strip_domain", c.telemetry_names.strip_domain);
  }
}

bool IsTopologyKind(std::string_view kind) {
  return kind == "netbox" || kind == "lldp" || kind == "slurm-topology" || kind == "containerlab" ||
         kind == "networkx" || kind == "batfish" || kind == "native";
}

}  // namespace

std::string SourceConfig::Location() const {
  if (!url.empty()) {
    // Drop the query: it may carry filters an operator considers private.
    return "url " + url.substr(0, url.find('?'));
  }
  if (!path.empty()) return "path " + path;
  // Only the program: arguments may carry a credential (curl -H ...).
  auto t = internal::Trim(command);
  auto end = t.find_first_of(" \t");
  return "command " + std::string(t.substr(0, end)) + (end == std::string_view::npos ? "" : " ...");
}

Result<SourceConfig> ParseSourceConfig(const json& j, const std::string& path) {
  return internal::Guard("", [&] {
    ObjectReader r(j, path);
    r.RejectUnknown({"name", "kind", "url", "path", "command", "refresh_s", "timeout_s", "max_bytes", "token_env",
                     "token_file", "auth_scheme", "ca_file", "insecure_skip_verify", "options", "authority"});
    SourceConfig c;
    c.name = r.String("name");
    if (c.name.empty()) throw FieldError(r.Child("name"), "must not be empty");
    for (char ch : c.name) {
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_' && ch != '.') {
        throw FieldError(r.Child("name"), fmt::format("'{}': use letters, digits, '-', '_' and '.'", c.name));
      }
    }
    c.kind = r.String("kind");
    if (!KnownKind(c.kind)) {
      throw FieldError(r.Child("kind"), fmt::format("unknown kind '{}' (netbox, lldp, slurm-topology, slurm, "
                                                    "kubernetes, prometheus, gnmi, chakra, native, "
                                                    "containerlab, networkx, batfish)",
                                                    c.kind));
    }
    c.url = r.StringOr("url", "");
    c.path = r.StringOr("path", "");
    c.command = r.StringOr("command", "");
    int locations = !c.url.empty() + !c.path.empty() + !c.command.empty();
    if (locations != 1) throw FieldError(path, "exactly one of url, path, command is required");
    if (!c.url.empty()) {
      auto u = ParseUrl(c.url);
      if (!u) throw FieldError(r.Child("url"), u.error().message);
    }
    c.refresh_s = r.NumberOr("refresh_s", c.refresh_s);
    if (c.refresh_s <= 0) throw FieldError(r.Child("refresh_s"), "must be > 0");
    c.timeout_s = r.NumberOr("timeout_s", c.timeout_s);
    if (c.timeout_s <= 0 || c.timeout_s > 3600) throw FieldError(r.Child("timeout_s"), "must be within (0, 3600]");
    int64_t max_bytes = r.IntOr("max_bytes", static_cast<int64_t>(c.max_bytes));
    if (max_bytes < 1) throw FieldError(r.Child("max_bytes"), "must be >= 1");
    c.max_bytes = static_cast<size_t>(max_bytes);
    c.token_env = r.StringOr("token_env", "");
    c.token_file = r.StringOr("token_file", "");
    if (!c.token_env.empty() && !c.token_file.empty()) {
      throw FieldError(r.Child("token_file"), "give token_env or token_file, not both");
    }
    c.auth_scheme = r.StringOr("auth_scheme", "");
    if (!c.auth_scheme.empty() && c.auth_scheme != "token" && c.auth_scheme != "bearer" && c.auth_scheme != "slurm") {
      throw FieldError(r.Child("auth_scheme"), "expected token, bearer or slurm");
    }
    c.ca_file = r.StringOr("ca_file", "");
    c.insecure_skip_verify = r.BoolOr("insecure_skip_verify", false);
    c.chakra_profile = c.name;
    json empty = json::object();
    ObjectReader o(r.Has("options") ? r.Raw("options") : empty, r.Child("options"));
    ParseKindOptions(c, o);
    if (c.chakra_profile.empty()) c.chakra_profile = c.name;
    c.authority = c.kind == "netbox" || c.kind == "slurm-topology" ? TopologyAuthority::kIntent
                  : c.kind == "lldp"                               ? TopologyAuthority::kObservation
                                                                   : TopologyAuthority::kAll;
    if (r.Has("authority")) {
      if (!IsTopologyKind(c.kind)) {
        throw FieldError(r.Child("authority"), fmt::format("only topology sources have one, not {}", c.kind));
      }
      auto a = ParseTopologyAuthority(r.String("authority"));
      if (!a) throw FieldError(r.Child("authority"), a.error().message);
      c.authority = *a;
    }
    return c;
  });
}

Result<std::vector<SourceConfig>> ParseSourceConfigs(const json& array, const std::string& path) {
  if (!array.is_array()) return InvalidArgument(fmt::format("{}: expected an array", path));
  std::vector<SourceConfig> out;
  std::set<std::string> names;
  for (size_t i = 0; i < array.size(); ++i) {
    std::string p = fmt::format("{}[{}]", path, i);
    auto c = ParseSourceConfig(array[i], p);
    if (!c) return tl::unexpected(c.error());
    if (!names.insert(c->name).second) return InvalidArgument(fmt::format("{}.name: '{}' used twice", p, c->name));
    out.push_back(std::move(*c));
  }
  return out;
}

Result<ConnectorsConfig> ParseConnectorsConfig(const json& root) {
  if (!root.is_object()) return InvalidArgument("config: expected an object");
  ConnectorsConfig out;
  if (root.contains("sources") && !root["sources"].is_null()) {
    auto sources = ParseSourceConfigs(root["sources"], "sources");
    if (!sources) return tl::unexpected(sources.error());
    out.sources = std::move(*sources);
  }
  if (root.contains("profiles") && !root["profiles"].is_null()) {
    auto profiles = ParseProfileRules(root["profiles"], "profiles");
    if (!profiles) return tl::unexpected(profiles.error());
    out.profiles = std::move(*profiles);
  }
  return out;
}

}  // namespace drainwise::connectors
