#include "connectors/source.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
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
    o.RejectUnknown({"name", "role_tiers", "tier_levels", "host_roles", "skip_device_statuses",
                     "skip_cable_statuses", "default_gbps", "gpus_custom_field", "default_gpus", "filter",
                     "page_size"});
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
    if (c.netbox_page_size < 1 || c.netbox_page_size > 1000) throw FieldError(o.Child("page_size"), "must be within [1, 1000]");
  } else if (c.kind == "lldp") {
    o.RejectUnknown({"name", "tier_patterns", "tier_levels", "default_gbps", "port_gbps", "gpus_per_host",
                     "local_system"});
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
    o.RejectUnknown({"id_prefix", "user"});
    c.slurm.id_prefix = o.StringOr("id_prefix", "");
    c.slurm_user = o.StringOr("user", "");
  } else if (c.kind == "kubernetes") {
    o.RejectUnknown({"job_labels", "id_prefix", "gpu_resource"});
    if (o.Has("job_labels")) c.kubernetes.job_labels = o.StringList("job_labels");
    if (c.kubernetes.job_labels.empty()) throw FieldError(o.Child("job_labels"), "must not be empty");
    c.kubernetes.id_prefix = o.StringOr("id_prefix", "");
    c.kubernetes.gpu_resource = o.StringOr("gpu_resource", c.kubernetes.gpu_resource);
  } else if (c.kind == "prometheus") {
    o.RejectUnknown({"device", "device_label", "strip_suffix", "skip_interfaces"});
    c.prometheus.device = o.StringOr("device", "");
    c.prometheus.device_label = o.StringOr("device_label", c.prometheus.device_label);
    c.prometheus.strip_suffix = o.StringOr("strip_suffix", "");
    if (o.Has("skip_interfaces")) c.prometheus.skip_interfaces = o.StringList("skip_interfaces");
  } else if (c.kind == "gnmi") {
    o.RejectUnknown({"device"});
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
}

std::string ReadToken(const SourceConfig& c, Error* error) {
  std::string token;
  if (!c.token_env.empty()) {
    const char* v = std::getenv(c.token_env.c_str());
    if (!v || !*v) {
      *error = Error{ErrorCode::kUnauthenticated, fmt::format("token_env {} is not set", c.token_env)};
      return "";
    }
    token = v;
  } else if (!c.token_file.empty()) {
    auto t = ReadFileLimited(c.token_file, 64 << 10);
    if (!t) {
      *error = Error{ErrorCode::kUnauthenticated, fmt::format("token_file: {}", t.error().message)};
      return "";
    }
    token = *t;
  }
  return std::string(internal::Trim(token));
}

Result<std::vector<HttpHeader>> AuthHeaders(const SourceConfig& c) {
  std::vector<HttpHeader> headers;
  Error err;
  std::string token = ReadToken(c, &err);
  if (!err.message.empty()) return tl::unexpected(err);
  if (c.kind == "slurm" && !c.slurm_user.empty()) headers.push_back({"X-SLURM-USER-NAME", c.slurm_user});
  if (token.empty()) return headers;
  std::string scheme = c.auth_scheme;
  if (scheme.empty()) {
    if (c.kind == "netbox") scheme = token.rfind("nbt_", 0) == 0 ? "bearer" : "token";
    else if (c.kind == "slurm") scheme = "slurm";
    else scheme = "bearer";
  }
  if (scheme == "token") headers.push_back({"Authorization", "Token " + token});
  else if (scheme == "slurm") headers.push_back({"X-SLURM-USER-TOKEN", token});
  else headers.push_back({"Authorization", "Bearer " + token});
  return headers;
}

Result<std::string> FetchBody(const SourceConfig& c, const std::string& url_override = "") {
  FetchLimits limits{c.timeout_s, c.max_bytes, c.ca_file, c.insecure_skip_verify};
  if (!c.url.empty()) {
    auto headers = AuthHeaders(c);
    if (!headers) return tl::unexpected(headers.error());
    return HttpGet(url_override.empty() ? c.url : url_override, *headers, limits);
  }
  if (!c.path.empty()) return ReadFileLimited(c.path, c.max_bytes);
  return RunCommand(c.command, limits);
}

Result<json> JsonBody(std::string_view body, std::string_view what) {
  auto doc = codec::ParseJsonText(body);
  if (!doc) return tl::unexpected(doc.error().Wrap(what));
  return doc;
}

Status CheckTopology(const model::TopologySpec& spec) {
  auto built = model::BuildTopology(spec);
  if (!built) return tl::unexpected(built.error().Wrap("topology does not build"));
  if (built->node_count() == 0) return InvalidArgument("topology is empty");
  return {};
}

uint64_t HashDouble(uint64_t h, double v) { return internal::Fnv1a64(fmt::format("{:.17g};", v), h); }
uint64_t HashOpt(uint64_t h, const std::optional<double>& v) { return v ? HashDouble(h, *v) : internal::Fnv1a64("-;", h); }

uint64_t HashData(const SourceData& d) {
  uint64_t h = internal::Fnv1a64("source");
  if (d.topology) h = internal::Fnv1a64(codec::TopologySpecToJson(*d.topology).dump(), h);
  if (d.jobs) h = internal::Fnv1a64(codec::JobsSpecToJson(*d.jobs).dump(), h);
  if (d.counters) {
    // Values only: an unchanged scrape is no news, whatever its time.
    for (const auto& c : d.counters->interfaces) {
      h = internal::Fnv1a64(c.device + ":" + c.interface + ";", h);
      for (const auto* v : {&c.rx_bytes, &c.tx_bytes, &c.rx_errors, &c.tx_errors, &c.rx_discards, &c.tx_discards, &c.speed_bps}) {
        h = HashOpt(h, *v);
      }
      h = internal::Fnv1a64(c.oper_up ? (*c.oper_up ? "up" : "down") : "?", h);
    }
  }
  if (d.chakra) {
    model::JobsSpec wrap;
    model::JobSpec j;
    j.id = "chakra";
    j.iteration.collectives = d.chakra->collectives;
    j.iteration.compute_s = d.chakra->compute_s;
    wrap.jobs.push_back(std::move(j));
    h = internal::Fnv1a64(codec::JobsSpecToJson(wrap).dump(), h);
  }
  return h;
}

uint64_t HashTelemetry(const std::vector<InterfaceTelemetry>& t) {
  uint64_t h = internal::Fnv1a64("telemetry");
  for (const auto& i : t) {
    h = internal::Fnv1a64(i.device + ":" + i.interface + (i.has_rates ? "+" : "-"), h);
    for (double v : {i.rx_bps, i.tx_bps, i.rx_errors_per_s, i.tx_errors_per_s, i.rx_discards_per_s, i.tx_discards_per_s}) {
      h = HashDouble(h, v);
    }
    h = HashOpt(h, i.speed_bps);
    h = internal::Fnv1a64(i.oper_up ? (*i.oper_up ? "up" : "down") : "?", h);
  }
  return h;
}

double SystemNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
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
                     "token_file", "auth_scheme", "ca_file", "insecure_skip_verify", "options"});
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

json SourceStatusToJson(const SourceStatus& s) {
  auto time = [](const std::optional<int64_t>& t) { return t ? json(codec::FormatRfc3339(*t)) : json(); };
  return json{{"name", s.name},
              {"kind", s.kind},
              {"location", s.location},
              {"stale", s.stale},
              {"has_data", s.has_data},
              {"last_error", s.last_error.empty() ? json() : json(s.last_error)},
              {"last_attempt", time(s.last_attempt)},
              {"last_success", time(s.last_success)},
              {"last_change", time(s.last_change)},
              {"versions", s.versions},
              {"attempts", s.attempts},
              {"failures", s.failures},
              {"content_hash", s.content_hash}};
}

Result<SourceData> ParseSourceDocument(const SourceConfig& c, std::string_view body, double now_s) {
  SourceData d;
  auto wrap = [&](const Error& e) { return tl::unexpected(e.Wrap(fmt::format("source {}", c.name))); };
  if (c.kind == "slurm-topology") {
    auto t = ParseSlurmTopologyConf(body, c.slurm_topology);
    if (!t) return wrap(t.error());
    d.topology = std::move(*t);
  } else if (c.kind == "prometheus") {
    auto t = internal::Trim(body);
    Result<std::vector<PromSample>> samples = std::vector<PromSample>{};
    if (!t.empty() && t.front() == '{') {
      auto doc = JsonBody(t, "prometheus query");
      if (!doc) return wrap(doc.error());
      samples = ParsePrometheusQuery(*doc);
    } else {
      samples = ParsePrometheusText(body);
    }
    if (!samples) return wrap(samples.error());
    auto counters = CountersFromPrometheus(*samples, c.prometheus, now_s);
    if (!counters) return wrap(counters.error());
    d.counters = std::move(*counters);
  } else if (c.kind == "chakra") {
    auto p = ParseChakra(body);
    if (!p) return wrap(p.error());
    d.chakra = std::move(*p);
  } else if (c.kind == "gnmi") {
    auto t = internal::Trim(body);
    bool ietf = false;
    if (!t.empty() && t.front() == '{') {
      auto doc = codec::ParseJsonText(t);
      if (doc && doc->is_object() && (doc->contains("openconfig-interfaces:interfaces") || doc->contains("interfaces"))) {
        ietf = true;
        auto s = ParseOpenconfigInterfaces(*doc, c.gnmi, now_s);
        if (!s) return wrap(s.error());
        d.counters = std::move(*s);
      }
    }
    if (!ietf) {
      auto s = ParseGnmicEvents(body, c.gnmi, now_s);
      if (!s) return wrap(s.error());
      d.counters = std::move(*s);
    }
  } else {
    auto doc = JsonBody(body, c.kind);
    if (!doc) return wrap(doc.error());
    if (c.kind == "netbox") {
      auto t = ParseNetboxBundle(*doc, c.netbox);
      if (!t) return wrap(t.error());
      d.topology = std::move(*t);
    } else if (c.kind == "lldp") {
      std::map<std::string, std::vector<LldpNeighbor>> reports;
      if (doc->is_object() && doc->contains("lldp")) {
        if (c.lldp_local_system.empty()) {
          return wrap(Error{ErrorCode::kInvalidArgument,
                            "a single lldpctl report needs options.local_system (lldpctl does not name its host)"});
        }
        auto n = ParseLldpctl(*doc);
        if (!n) return wrap(n.error());
        reports[c.lldp_local_system] = std::move(*n);
      } else if (doc->is_object()) {
        for (const auto& [system, report] : doc->items()) {
          auto n = ParseLldpctl(report);
          if (!n) return wrap(n.error().Wrap(system));
          reports[system] = std::move(*n);
        }
      } else {
        return wrap(Error{ErrorCode::kInvalidArgument, "expected an lldpctl report or a {system: report} object"});
      }
      auto t = MergeLldpReports(reports, c.lldp);
      if (!t) return wrap(t.error());
      d.topology = std::move(*t);
    } else if (c.kind == "slurm") {
      auto j = ParseSlurmJobs(*doc, c.slurm);
      if (!j) return wrap(j.error());
      d.jobs = std::move(*j);
    } else if (c.kind == "kubernetes") {
      auto j = ParseKubernetesPods(*doc, c.kubernetes);
      if (!j) return wrap(j.error());
      d.jobs = std::move(*j);
    } else if (c.kind == "containerlab" || c.kind == "networkx" || c.kind == "batfish") {
      auto t = c.kind == "containerlab" ? ParseContainerlabData(*doc, c.graph)
               : c.kind == "networkx"   ? ParseNetworkxNodeLink(*doc, c.graph)
                                        : ParseBatfishLayer1(*doc, c.graph);
      if (!t) return wrap(t.error());
      d.topology = std::move(*t);
    } else if (c.kind == "native") {
      std::string format = doc->is_object() && (*doc)["format"].is_string() ? (*doc)["format"].get<std::string>() : "";
      if (format == codec::kTopologyFormat) {
        auto t = codec::ParseTopology(*doc);
        if (!t) return wrap(t.error());
        d.topology = std::move(*t);
      } else if (format == codec::kJobsFormat) {
        auto j = codec::ParseJobs(*doc);
        if (!j) return wrap(j.error());
        d.jobs = std::move(*j);
      } else {
        return wrap(Error{ErrorCode::kInvalidArgument,
                          fmt::format("format: expected {} or {}", codec::kTopologyFormat, codec::kJobsFormat)});
      }
    } else {
      return wrap(Error{ErrorCode::kInternal, fmt::format("kind {} has no document parser", c.kind)});
    }
  }
  if (d.topology) {
    auto ok = CheckTopology(*d.topology);
    if (!ok) return wrap(ok.error());
  }
  return d;
}

Result<SourceData> LoadSource(const SourceConfig& c, double now_s) {
  if (c.kind == "netbox" && !c.url.empty()) {
    auto headers = AuthHeaders(c);
    if (!headers) return tl::unexpected(headers.error().Wrap(fmt::format("source {}", c.name)));
    FetchLimits limits{c.timeout_s, c.max_bytes, c.ca_file, c.insecure_skip_verify};
    FetchFn fetch = [&](const std::string& url) { return HttpGet(url, *headers, limits); };
    std::string base = c.url;
    while (!base.empty() && base.back() == '/') base.pop_back();
    json bundle = json::object();
    for (const char* ep : {"devices", "interfaces", "cables"}) {
      std::string url = fmt::format("{}/api/dcim/{}/?limit={}", base, ep, c.netbox_page_size);
      if (std::string_view(ep) == "interfaces") url += "&cabled=true";
      if (!c.netbox_filter.empty()) url += "&" + c.netbox_filter;
      auto pages = FetchNetboxPages(fetch, url);
      if (!pages) return tl::unexpected(pages.error().Wrap(fmt::format("source {}", c.name)));
      bundle[ep] = std::move(*pages);
    }
    auto t = ParseNetboxBundle(bundle, c.netbox);
    if (!t) return tl::unexpected(t.error().Wrap(fmt::format("source {}", c.name)));
    auto ok = CheckTopology(*t);
    if (!ok) return tl::unexpected(ok.error().Wrap(fmt::format("source {}", c.name)));
    SourceData d;
    d.topology = std::move(*t);
    return d;
  }
  if (c.kind == "lldp" && !c.path.empty() && std::filesystem::is_directory(c.path)) {
    // One lldpctl report per file, named after the system it was taken on.
    std::vector<std::filesystem::path> files;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(c.path, ec)) {
      if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
    }
    if (ec) return MakeError(ErrorCode::kIo, fmt::format("source {}: {}: {}", c.name, c.path, ec.message()));
    std::sort(files.begin(), files.end());
    std::map<std::string, std::vector<LldpNeighbor>> reports;
    for (const auto& f : files) {
      auto body = ReadFileLimited(f.string(), c.max_bytes);
      if (!body) return tl::unexpected(body.error().Wrap(fmt::format("source {}", c.name)));
      auto doc = JsonBody(*body, f.string());
      if (!doc) return tl::unexpected(doc.error().Wrap(fmt::format("source {}", c.name)));
      auto n = ParseLldpctl(*doc);
      if (!n) return tl::unexpected(n.error().Wrap(fmt::format("source {}: {}", c.name, f.filename().string())));
      reports[f.stem().string()] = std::move(*n);
    }
    auto t = MergeLldpReports(reports, c.lldp);
    if (!t) return tl::unexpected(t.error().Wrap(fmt::format("source {}", c.name)));
    auto ok = CheckTopology(*t);
    if (!ok) return tl::unexpected(ok.error().Wrap(fmt::format("source {}", c.name)));
    SourceData d;
    d.topology = std::move(*t);
    return d;
  }
  auto body = FetchBody(c);
  if (!body) return tl::unexpected(body.error().Wrap(fmt::format("source {}", c.name)));
  return ParseSourceDocument(c, *body, now_s);
}

// ---------------------------------------------------------------------------

struct SourceManager::State {
  SourceStatus status;
  std::optional<SourceData> data;  // last good
  uint64_t hash = 0;
  std::shared_ptr<const std::vector<InterfaceTelemetry>> rates;  // telemetry kinds
};

SourceManager::SourceManager(std::vector<SourceConfig> sources, SourceManagerOptions options, UpdateCallback on_update)
    : configs_(std::move(sources)), options_(std::move(options)), on_update_(std::move(on_update)) {
  if (!options_.loader) options_.loader = LoadSource;
  if (!options_.clock) options_.clock = SystemNow;
  for (const auto& c : configs_) {
    auto s = std::make_unique<State>();
    s->status.name = c.name;
    s->status.kind = c.kind;
    s->status.location = c.Location();
    s->status.last_error = "not fetched yet";
    states_.push_back(std::move(s));
  }
}

SourceManager::~SourceManager() { Stop(); }

void SourceManager::Start() {
  std::lock_guard lock(run_mutex_);
  if (!threads_.empty()) return;
  for (size_t i = 0; i < configs_.size(); ++i) {
    threads_.emplace_back([this, i](std::stop_token stop) { Run(stop, i); });
  }
}

void SourceManager::Stop() {
  std::vector<std::jthread> threads;
  {
    std::lock_guard lock(run_mutex_);
    threads.swap(threads_);
    for (auto& t : threads) t.request_stop();
  }
  wake_.notify_all();
  threads.clear();  // joins
}

void SourceManager::Run(std::stop_token stop, size_t index) {
  auto period = std::chrono::duration<double>(configs_[index].refresh_s);
  while (!stop.stop_requested()) {
    (void)Poll(index);
    std::unique_lock lock(run_mutex_);
    wake_.wait_for(lock, stop, std::chrono::duration_cast<std::chrono::steady_clock::duration>(period),
                   [] { return false; });
  }
}

Status SourceManager::RefreshNow(const std::string& name) {
  for (size_t i = 0; i < configs_.size(); ++i) {
    if (configs_[i].name == name) return Poll(i);
  }
  return NotFound(fmt::format("source '{}' not configured", name));
}

int SourceManager::RefreshAll() {
  int failed = 0;
  for (size_t i = 0; i < configs_.size(); ++i) failed += Poll(i) ? 0 : 1;
  return failed;
}

Status SourceManager::Poll(size_t index) {
  const SourceConfig& config = configs_[index];
  double now = options_.clock();
  Result<SourceData> result = [&]() -> Result<SourceData> {
    try {
      return options_.loader(config, now);
    } catch (const std::exception& e) {  // a loader must not take the thread down
      return MakeError(ErrorCode::kInternal, fmt::format("source {}: {}", config.name, e.what()));
    }
  }();
  std::lock_guard publish(publish_mutex_);
  std::optional<Update> update;
  {
    std::lock_guard lock(state_mutex_);
    State& s = *states_[index];
    auto t = static_cast<int64_t>(now);
    s.status.attempts++;
    s.status.last_attempt = t;
    if (!result) {
      // Keep the last good data; say why it is stale.
      s.status.failures++;
      s.status.stale = true;
      s.status.last_error = result.error().message;
      return tl::unexpected(result.error());
    }
    s.status.last_success = t;
    s.status.stale = false;
    s.status.last_error.clear();
    uint64_t h = HashData(*result);
    if (s.data && h == s.hash) return {};  // nothing new: no version, no publish
    if (result->counters) {
      s.rates = std::make_shared<const std::vector<InterfaceTelemetry>>(
          s.data && s.data->counters ? ComputeRates(*s.data->counters, *result->counters)
                                     : ComputeRates(CounterSample{}, *result->counters));
    }
    s.data = std::move(*result);
    s.hash = h;
    s.status.has_data = true;
    s.status.versions++;
    s.status.last_change = t;
    s.status.content_hash = fmt::format("{:016x}", h);
    update = Combine(config.name);
  }
  if (update && on_update_) {
    // The callback belongs to the server; an exception from it must not take
    // a polling thread (and with it the process) down.
    try {
      on_update_(*update);
    } catch (...) {
    }
  }
  return {};
}

// REQUIRES: state_mutex_ held. Returns the update when a combined document changed.
std::optional<Update> SourceManager::Combine(const std::string& source) {
  std::shared_ptr<const model::TopologySpec> topology;
  model::JobsSpec jobs;
  std::set<std::string> job_ids;
  ChakraProfiles chakra;
  auto telemetry = std::make_shared<std::vector<InterfaceTelemetry>>();
  for (size_t i = 0; i < configs_.size(); ++i) {
    const State& s = *states_[i];
    if (!s.data) continue;
    if (s.data->topology && !topology) topology = std::make_shared<const model::TopologySpec>(*s.data->topology);
    if (s.data->jobs) {
      for (const auto& j : s.data->jobs->jobs) {
        if (job_ids.insert(j.id).second) jobs.jobs.push_back(j);
      }
    }
    if (s.data->chakra) chakra.emplace(configs_[i].chakra_profile, *s.data->chakra);
    if (s.rates) telemetry->insert(telemetry->end(), s.rates->begin(), s.rates->end());
  }
  ApplyProfiles(jobs, options_.profiles, chakra);

  uint64_t th = topology ? internal::Fnv1a64(codec::TopologySpecToJson(*topology).dump()) : 0;
  uint64_t jh = internal::Fnv1a64(codec::JobsSpecToJson(jobs).dump());
  uint64_t eh = HashTelemetry(*telemetry);
  Update u;
  u.source = source;
  u.topology_changed = !published_hashes_.count("topology") || published_hashes_["topology"] != th;
  u.jobs_changed = !published_hashes_.count("jobs") || published_hashes_["jobs"] != jh;
  u.telemetry_changed = !published_hashes_.count("telemetry") || published_hashes_["telemetry"] != eh;
  // Nothing to report before any document of that kind exists.
  if (!topology) u.topology_changed = false;
  bool any_jobs_source = false, any_telemetry_source = false;
  for (size_t i = 0; i < configs_.size(); ++i) {
    if (!states_[i]->data) continue;
    any_jobs_source = any_jobs_source || states_[i]->data->jobs || states_[i]->data->chakra;
    any_telemetry_source = any_telemetry_source || states_[i]->data->counters;
  }
  if (!any_jobs_source) u.jobs_changed = false;
  if (!any_telemetry_source) u.telemetry_changed = false;
  if (!u.topology_changed && !u.jobs_changed && !u.telemetry_changed) return std::nullopt;
  published_hashes_["topology"] = th;
  published_hashes_["jobs"] = jh;
  published_hashes_["telemetry"] = eh;
  // Unchanged documents keep their pointer, so a consumer can compare them.
  u.topology = u.topology_changed || !current_.topology ? topology : current_.topology;
  u.jobs = u.jobs_changed || !current_.jobs ? std::make_shared<const model::JobsSpec>(std::move(jobs)) : current_.jobs;
  u.telemetry = u.telemetry_changed || !current_.telemetry ? std::move(telemetry) : current_.telemetry;
  u.version = current_.version + 1;
  current_ = u;
  return u;
}

std::vector<SourceStatus> SourceManager::Statuses() const {
  std::lock_guard lock(state_mutex_);
  std::vector<SourceStatus> out;
  for (const auto& s : states_) out.push_back(s->status);
  return out;
}

bool SourceManager::Ready() const {
  std::lock_guard lock(state_mutex_);
  for (const auto& s : states_) {
    if (!s->status.has_data) return false;
  }
  return true;
}

Update SourceManager::Current() const {
  std::lock_guard lock(state_mutex_);
  return current_;
}

}  // namespace drainwise::connectors
