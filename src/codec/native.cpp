#include "codec/native.h"

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "codec/json_reader.h"

namespace drainwise::codec {

namespace {

using model::CollectiveKind;

void CheckFormat(const ObjectReader& r, std::string_view expected) {
  std::string f = r.String("format");
  if (f != expected) {
    throw FieldError("format", fmt::format("expected '{}', got '{}'", expected, f));
  }
}

model::NodeSpec ParseNode(const ObjectReader& r) {
  r.RejectUnknown({"id", "kind", "tier", "level", "pod", "plane", "domains", "gpus", "rack"});
  model::NodeSpec n;
  n.id = r.String("id");
  std::string kind = r.String("kind");
  if (kind == "switch") {
    n.kind = model::NodeKind::kSwitch;
    n.tier = r.String("tier");
    n.level = static_cast<int>(r.IntOr("level", 0));
    if (n.level < 0) throw FieldError(r.Child("level"), "must be >= 1");
  } else if (kind == "host") {
    n.kind = model::NodeKind::kHost;
    n.gpus = static_cast<int>(r.IntOr("gpus", 0));
    if (r.Has("tier")) throw FieldError(r.Child("tier"), "hosts have no tier");
  } else {
    throw FieldError(r.Child("kind"), fmt::format("expected 'switch' or 'host', got '{}'", kind));
  }
  n.pod = r.StringOr("pod", "");
  n.plane = r.StringOr("plane", "");
  n.domains = r.StringMap("domains");
  if (r.Has("rack")) n.domains["rack"] = r.String("rack");
  return n;
}

model::LinkSpec ParseLink(const ObjectReader& r) {
  r.RejectUnknown({"a", "b", "gbps", "a_port", "b_port"});
  model::LinkSpec l;
  l.a = r.String("a");
  l.b = r.String("b");
  l.gbps = r.Number("gbps");
  if (!(l.gbps > 0)) throw FieldError(r.Child("gbps"), "must be > 0");
  l.a_port = r.StringOr("a_port", "");
  l.b_port = r.StringOr("b_port", "");
  return l;
}

// "load_balancing": {"mode": "hash", "rehash": false, "hash_seeds": 8}. The
// mode names are sim::ParseFlowRouting's (tests/codec check they agree).
model::LoadBalancing ParseLoadBalancing(const json& j) {
  ObjectReader r(j, "load_balancing");
  r.RejectUnknown({"mode", "rehash", "hash_seeds"});
  const std::string mode = r.String("mode");
  model::LoadBalancing lb;
  const bool hash = mode == "hash" || mode == "hash-rehash";
  if (!hash && mode != "spray" && mode != "spray-path" && mode != "adaptive") {
    throw FieldError(r.Child("mode"),
                     fmt::format("unknown mode '{}' (spray, spray-path, hash, hash-rehash, adaptive)", mode));
  }
  if (!hash && (r.Has("rehash") || r.Has("hash_seeds"))) {
    throw FieldError(r.Has("rehash") ? r.Child("rehash") : r.Child("hash_seeds"), "only with mode 'hash'");
  }
  lb.routing = mode;
  if (mode == "hash" && r.BoolOr("rehash", false)) lb.routing = "hash-rehash";
  if (r.Has("hash_seeds")) {
    const int64_t seeds = r.Int("hash_seeds");
    if (seeds < 1 || seeds > 1024) throw FieldError(r.Child("hash_seeds"), "must be 1..1024");
    lb.hash_seeds = static_cast<int>(seeds);
  }
  return lb;
}

json LoadBalancingToJson(const model::LoadBalancing& lb) {
  const bool rehash = lb.routing == "hash-rehash";
  json o = {{"mode", rehash ? "hash" : lb.routing}};
  if (rehash || lb.routing == "hash") o["rehash"] = rehash;
  if (lb.hash_seeds > 0) o["hash_seeds"] = lb.hash_seeds;
  return o;
}

std::optional<int64_t> OptTime(const ObjectReader& r, std::string_view key) {
  if (!r.Has(key)) return std::nullopt;
  std::string s = r.String(key);
  auto t = ParseRfc3339(s);
  if (!t) throw FieldError(r.Child(key), fmt::format("'{}' is not an RFC 3339 time", s));
  return t;
}

model::CollectiveSpec ParseCollective(const ObjectReader& r) {
  r.RejectUnknown({"kind", "algorithm", "bytes", "group_size", "stages", "count", "flows"});
  model::CollectiveSpec c;
  std::string kind = r.String("kind");
  auto k = model::ParseCollectiveKind(kind);
  if (!k) {
    throw FieldError(r.Child("kind"), fmt::format("unknown collective '{}' (allreduce, allgather, reducescatter, "
                                                  "alltoall, sendrecv, flows)",
                                                  kind));
  }
  c.kind = *k;
  c.algorithm = r.StringOr("algorithm", c.kind == CollectiveKind::kAllToAll ? "direct" : "ring");
  c.count = static_cast<int>(r.IntOr("count", 1));
  if (c.kind == CollectiveKind::kFlows) {
    for (const auto& f : r.Objects("flows")) {
      f.RejectUnknown({"src", "dst", "bytes"});
      double bytes = f.Number("bytes");
      if (bytes < 0) throw FieldError(f.Child("bytes"), "must be >= 0");
      c.flows.push_back({f.String("src"), f.String("dst"), bytes});
    }
    if (!r.Has("flows")) throw FieldError(r.Child("flows"), "required for kind 'flows'");
  } else {
    c.bytes = r.Number("bytes");
    if (c.bytes < 0) throw FieldError(r.Child("bytes"), "must be >= 0");
    c.group_size = static_cast<int>(r.IntOr("group_size", 0));
    c.stages = static_cast<int>(r.IntOr("stages", 0));
    if (c.group_size < 0) throw FieldError(r.Child("group_size"), "must be >= 0");
    if (c.stages < 0) throw FieldError(r.Child("stages"), "must be >= 0");
  }
  if (c.count < 1) throw FieldError(r.Child("count"), "must be >= 1");
  return c;
}

model::JobSpec ParseJob(const ObjectReader& r) {
  r.RejectUnknown({"id", "name", "tenant", "priority", "labels", "hosts", "gpus_per_host", "started_at", "expected_end",
                   "checkpoint", "iteration", "profile_source"});
  model::JobSpec j;
  j.id = r.String("id");
  j.name = r.StringOr("name", "");
  j.tenant = r.StringOr("tenant", "");
  j.priority = static_cast<int>(r.IntOr("priority", 0));
  j.labels = r.StringMap("labels");
  j.hosts = r.StringList("hosts");
  if (!r.Has("hosts")) throw FieldError(r.Child("hosts"), "required");
  j.gpus_per_host = static_cast<int>(r.IntOr("gpus_per_host", 0));
  if (j.gpus_per_host < 0) throw FieldError(r.Child("gpus_per_host"), "must be >= 0");
  j.started_at = OptTime(r, "started_at");
  j.expected_end = OptTime(r, "expected_end");
  j.profile_source = r.StringOr("profile_source", "declared");
  if (j.profile_source != "declared" && j.profile_source != "chakra" && j.profile_source != "rule" &&
      j.profile_source != "default") {
    throw FieldError(r.Child("profile_source"), "expected declared, chakra, rule or default");
  }
  if (r.Has("checkpoint")) {
    ObjectReader c(r.Raw("checkpoint"), r.Child("checkpoint"));
    c.RejectUnknown({"interval_s", "restart_cost_s"});
    model::Checkpoint cp;
    cp.interval_s = c.NumberOr("interval_s", 0);
    cp.restart_cost_s = c.NumberOr("restart_cost_s", 0);
    if (cp.interval_s < 0) throw FieldError(c.Child("interval_s"), "must be >= 0");
    if (cp.restart_cost_s < 0) throw FieldError(c.Child("restart_cost_s"), "must be >= 0");
    j.checkpoint = cp;
  }
  if (r.Has("iteration")) {
    ObjectReader it(r.Raw("iteration"), r.Child("iteration"));
    it.RejectUnknown({"compute_ms", "overlap", "collectives"});
    j.iteration.compute_s = it.NumberOr("compute_ms", 0) / 1e3;
    if (j.iteration.compute_s < 0) throw FieldError(it.Child("compute_ms"), "must be >= 0");
    j.iteration.overlap = it.NumberOr("overlap", 0);
    if (j.iteration.overlap < 0 || j.iteration.overlap > 1) {
      throw FieldError(it.Child("overlap"), "must be within [0, 1]");
    }
    for (const auto& c : it.Objects("collectives")) j.iteration.collectives.push_back(ParseCollective(c));
  }
  return j;
}

template <class Fn>
auto Guard(Fn&& fn) -> Result<decltype(fn())> {
  try {
    return fn();
  } catch (const FieldError& e) {
    return InvalidArgument(e.what());
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgument(e.what());
  }
}

}  // namespace

Result<model::TopologySpec> ParseTopology(const json& doc) {
  return Guard([&] {
    ObjectReader r(doc, "");
    r.RejectUnknown({"format", "name", "nodes", "links", "load_balancing"});
    CheckFormat(r, kTopologyFormat);
    model::TopologySpec spec;
    spec.name = r.StringOr("name", "");
    if (r.Has("load_balancing")) spec.load_balancing = ParseLoadBalancing(r.Raw("load_balancing"));
    r.Array("nodes");
    r.Array("links");
    for (const auto& n : r.Objects("nodes")) spec.nodes.push_back(ParseNode(n));
    for (const auto& l : r.Objects("links")) spec.links.push_back(ParseLink(l));
    return spec;
  });
}

Result<model::JobsSpec> ParseJobs(const json& doc) {
  return Guard([&] {
    ObjectReader r(doc, "");
    r.RejectUnknown({"format", "jobs"});
    CheckFormat(r, kJobsFormat);
    r.Array("jobs");
    model::JobsSpec spec;
    for (const auto& j : r.Objects("jobs")) spec.jobs.push_back(ParseJob(j));
    return spec;
  });
}

Result<model::DrainSpec> ParseDrain(const json& doc) {
  return Guard([&] {
    ObjectReader r(doc, "drain");
    r.RejectUnknown({"switches", "links"});
    model::DrainSpec d;
    d.switches = r.StringList("switches");
    for (const auto& l : r.Objects("links")) {
      l.RejectUnknown({"a", "b", "a_port"});
      d.links.push_back({l.String("a"), l.String("b"), l.StringOr("a_port", "")});
    }
    return d;
  });
}

json TopologySpecToJson(const model::TopologySpec& spec) {
  json nodes = json::array();
  for (const auto& n : spec.nodes) {
    json o = {{"id", n.id}, {"kind", n.kind == model::NodeKind::kHost ? "host" : "switch"}};
    if (n.kind == model::NodeKind::kSwitch) {
      o["tier"] = n.tier;
      if (n.level > 0 && model::LevelForTier(n.tier) != n.level) o["level"] = n.level;
    } else {
      o["gpus"] = n.gpus;
    }
    if (!n.pod.empty()) o["pod"] = n.pod;
    if (!n.plane.empty()) o["plane"] = n.plane;
    if (!n.domains.empty()) o["domains"] = n.domains;
    nodes.push_back(std::move(o));
  }
  json links = json::array();
  for (const auto& l : spec.links) {
    json o = {{"a", l.a}, {"b", l.b}, {"gbps", l.gbps}};
    if (!l.a_port.empty()) o["a_port"] = l.a_port;
    if (!l.b_port.empty()) o["b_port"] = l.b_port;
    links.push_back(std::move(o));
  }
  json out{{"format", kTopologyFormat}, {"name", spec.name}, {"nodes", std::move(nodes)}, {"links", std::move(links)}};
  if (spec.load_balancing.declared()) out["load_balancing"] = LoadBalancingToJson(spec.load_balancing);
  return out;
}

json TopologyToJson(const model::Topology& t) {
  model::TopologySpec spec;
  spec.name = t.name();
  spec.load_balancing = t.load_balancing();
  for (const auto& n : t.nodes()) {
    spec.nodes.push_back({n.name, n.kind, n.tier, n.level, n.pod, n.plane, n.domains, n.gpus});
  }
  for (const auto& l : t.links()) {
    spec.links.push_back({t.node(l.a).name, t.node(l.b).name, l.capacity_bps / 1e9, l.a_port, l.b_port});
  }
  return TopologySpecToJson(spec);
}

namespace {
template <class HostRef, class NameOf>
json JobToJsonImpl(const model::BasicJob<HostRef>& j, NameOf name_of) {
  json o = {{"id", j.id}};
  if (!j.name.empty()) o["name"] = j.name;
  if (!j.tenant.empty()) o["tenant"] = j.tenant;
  o["priority"] = j.priority;
  if (!j.labels.empty()) o["labels"] = j.labels;
  json hosts = json::array();
  for (const auto& h : j.hosts) hosts.push_back(name_of(h));
  o["hosts"] = std::move(hosts);
  if (j.gpus_per_host > 0) o["gpus_per_host"] = j.gpus_per_host;
  if (j.started_at) o["started_at"] = FormatRfc3339(*j.started_at);
  if (j.expected_end) o["expected_end"] = FormatRfc3339(*j.expected_end);
  if (j.checkpoint) {
    o["checkpoint"] = {{"interval_s", j.checkpoint->interval_s}, {"restart_cost_s", j.checkpoint->restart_cost_s}};
  }
  json cols = json::array();
  for (const auto& c : j.iteration.collectives) {
    json co = {{"kind", model::CollectiveKindName(c.kind)}};
    if (c.kind == model::CollectiveKind::kFlows) {
      json flows = json::array();
      for (const auto& f : c.flows) {
        flows.push_back({{"src", name_of(f.src)}, {"dst", name_of(f.dst)}, {"bytes", f.bytes}});
      }
      co["flows"] = std::move(flows);
    } else {
      co["algorithm"] = c.algorithm;
      co["bytes"] = c.bytes;
      if (c.group_size > 0) co["group_size"] = c.group_size;
      if (c.stages > 0) co["stages"] = c.stages;
    }
    if (c.count != 1) co["count"] = c.count;
    cols.push_back(std::move(co));
  }
  o["iteration"] = {
      {"compute_ms", j.iteration.compute_s * 1e3}, {"overlap", j.iteration.overlap}, {"collectives", std::move(cols)}};
  o["profile_source"] = j.profile_source;
  return o;
}
}  // namespace

json JobsSpecToJson(const model::JobsSpec& spec) {
  json jobs = json::array();
  for (const auto& j : spec.jobs) jobs.push_back(JobToJsonImpl(j, [](const std::string& h) { return h; }));
  return json{{"format", kJobsFormat}, {"jobs", std::move(jobs)}};
}

json JobToJson(const model::Job& job, const model::Topology& t) {
  return JobToJsonImpl(job, [&](model::NodeId h) { return t.node(h).name; });
}

json DrainSpecToJson(const model::DrainSpec& spec) {
  json links = json::array();
  for (const auto& l : spec.links) {
    json o = {{"a", l.a}, {"b", l.b}};
    if (!l.a_port.empty()) o["a_port"] = l.a_port;
    links.push_back(std::move(o));
  }
  return json{{"switches", spec.switches}, {"links", std::move(links)}};
}

Result<model::Topology> LoadTopology(const json& doc) {
  auto spec = ParseTopology(doc);
  if (!spec) return tl::unexpected(spec.error());
  return model::BuildTopology(*spec);
}

Result<json> ReadJsonFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return MakeError(ErrorCode::kIo, fmt::format("{}: cannot open", path));
  std::stringstream ss;
  ss << in.rdbuf();
  auto j = ParseJsonText(ss.str());
  if (!j) return tl::unexpected(j.error().Wrap(path));
  return j;
}

Result<model::TopologySpec> ReadTopologySpecFile(const std::string& path) {
  auto j = ReadJsonFile(path);
  if (!j) return tl::unexpected(j.error());
  auto s = ParseTopology(*j);
  if (!s) return tl::unexpected(s.error().Wrap(path));
  return s;
}

Result<model::JobsSpec> ReadJobsSpecFile(const std::string& path) {
  auto j = ReadJsonFile(path);
  if (!j) return tl::unexpected(j.error());
  auto s = ParseJobs(*j);
  if (!s) return tl::unexpected(s.error().Wrap(path));
  return s;
}

Result<model::DrainSpec> ReadDrainSpecFile(const std::string& path) {
  auto j = ReadJsonFile(path);
  if (!j) return tl::unexpected(j.error());
  auto s = ParseDrain(*j);
  if (!s) return tl::unexpected(s.error().Wrap(path));
  return s;
}

}  // namespace drainwise::codec
