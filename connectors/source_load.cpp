// Loading one source: fetch its bytes (URL with its credentials, file or
// command), parse them as the source's kind, and check that a topology
// builds. All or nothing: any failure is an error naming the source.
#include "connectors/source.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "codec/native.h"
#include "connectors/util.h"

namespace drainwise::connectors {
namespace {

using internal::json;

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
    if (c.kind == "netbox")
      scheme = token.rfind("nbt_", 0) == 0 ? "bearer" : "token";
    else if (c.kind == "slurm")
      scheme = "slurm";
    else
      scheme = "bearer";
  }
  if (scheme == "token")
    headers.push_back({"Authorization", "Token " + token});
  else if (scheme == "slurm")
    headers.push_back({"X-SLURM-USER-TOKEN", token});
  else
    headers.push_back({"Authorization", "Bearer " + token});
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

// Every report was bad: say how many and the first reason.
std::string NoUsableReport(const Diagnostics& diag) {
  size_t reports = 0;
  const DiagnosticItem* first = nullptr;
  for (const auto& s : diag.skipped) {
    if (s.item.rfind("report ", 0) != 0) continue;
    if (!first) first = &s;
    ++reports;
  }
  if (!first) return "no lldp report";
  return fmt::format("none of the {} lldp reports could be read; first: {}: {}", reports, first->item, first->reason);
}

Status CheckTopology(const model::TopologySpec& spec) {
  auto built = model::BuildTopology(spec);
  if (!built) return tl::unexpected(built.error().Wrap("topology does not build"));
  if (built->node_count() == 0) return InvalidArgument("topology is empty");
  return {};
}

}  // namespace

Result<SourceData> ParseSourceDocument(const SourceConfig& c, std::string_view body, double now_s) {
  SourceData d;
  auto wrap = [&](const Error& e) { return tl::unexpected(e.Wrap(fmt::format("source {}", c.name))); };
  if (c.kind == "slurm-topology") {
    auto t = ParseSlurmTopologyConf(body, c.slurm_topology, &d.diagnostics);
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
      if (doc && doc->is_object() &&
          (doc->contains("openconfig-interfaces:interfaces") || doc->contains("interfaces"))) {
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
        auto n = ParseLldpctl(*doc, &d.diagnostics);
        if (!n) return wrap(n.error());
        reports[c.lldp_local_system] = std::move(*n);
      } else if (doc->is_object()) {
        // One bad host's report is skipped and named; the others apply.
        for (const auto& [system, report] : doc->items()) {
          auto n = ParseLldpctl(report, &d.diagnostics);
          if (!n) {
            d.diagnostics.Skip(fmt::format("report {}", system), n.error().message);
            continue;
          }
          reports[system] = std::move(*n);
        }
      } else {
        return wrap(Error{ErrorCode::kInvalidArgument, "expected an lldpctl report or a {system: report} object"});
      }
      if (reports.empty()) return wrap(Error{ErrorCode::kInvalidArgument, NoUsableReport(d.diagnostics)});
      auto t = MergeLldpReports(reports, c.lldp, &d.diagnostics);
      if (!t) return wrap(t.error());
      for (const auto& [system, _] : reports) d.observed_systems.insert(NormaliseSystemName(system, c.lldp));
      d.topology = std::move(*t);
    } else if (c.kind == "slurm") {
      auto j = ParseSlurmJobs(*doc, c.slurm, &d.diagnostics);
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
    SourceData d;
    std::map<std::string, std::vector<LldpNeighbor>> reports;
    // One unreadable or truncated report is skipped and named; the other
    // hosts' reports apply.
    for (const auto& f : files) {
      std::string item = fmt::format("report {}", f.filename().string());
      auto body = ReadFileLimited(f.string(), c.max_bytes);
      if (!body) {
        d.diagnostics.Skip(item, body.error().message);
        continue;
      }
      auto doc = JsonBody(*body, f.filename().string());
      if (!doc) {
        d.diagnostics.Skip(item, doc.error().message);
        continue;
      }
      auto n = ParseLldpctl(*doc, &d.diagnostics);
      if (!n) {
        d.diagnostics.Skip(item, n.error().message);
        continue;
      }
      reports[f.stem().string()] = std::move(*n);
    }
    if (reports.empty()) {
      return MakeError(ErrorCode::kInvalidArgument,
                       fmt::format("source {}: {}", c.name,
                                   files.empty() ? fmt::format("{}: no *.json report in the directory", c.path)
                                                 : NoUsableReport(d.diagnostics)));
    }
    auto t = MergeLldpReports(reports, c.lldp, &d.diagnostics);
    if (!t) return tl::unexpected(t.error().Wrap(fmt::format("source {}", c.name)));
    auto ok = CheckTopology(*t);
    if (!ok) return tl::unexpected(ok.error().Wrap(fmt::format("source {}", c.name)));
    for (const auto& [system, _] : reports) d.observed_systems.insert(NormaliseSystemName(system, c.lldp));
    d.topology = std::move(*t);
    return d;
  }
  auto body = FetchBody(c);
  if (!body) return tl::unexpected(body.error().Wrap(fmt::format("source {}", c.name)));
  return ParseSourceDocument(c, *body, now_s);
}

}  // namespace drainwise::connectors
