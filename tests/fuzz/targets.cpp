#include "targets.h"

#include <map>
#include <memory>
#include <set>
#include <string_view>

#include <nlohmann/json.hpp>

#include "codec/json_reader.h"
#include "codec/native.h"
#include "config/config.h"
#include "connectors/hostlist.h"
#include "connectors/source.h"
#include "model/drain.h"
#include "policies/policy.h"
#include "server/api.h"
#include "server/state.h"
#include "store/store.h"

namespace drainwise::fuzz {

namespace {

using nlohmann::json;

std::string_view Text(const uint8_t* data, size_t size) { return {reinterpret_cast<const char*>(data), size}; }

// The parsers take JSON the way the daemon gets it: through codec's parser
// (which never throws and bounds nesting), then the typed reader.
bool ParseJson(const uint8_t* data, size_t size, json* out) {
  auto j = codec::ParseJsonText(Text(data, size));
  if (!j) return false;
  *out = std::move(*j);
  return true;
}

// 2 leaves x 2 spines, 4 hosts, one job: enough for drains and the API to
// resolve names against.
json SmallTopology() {
  json nodes = json::array(), links = json::array();
  for (auto s : {"spine0", "spine1"}) nodes.push_back({{"id", s}, {"kind", "switch"}, {"tier", "spine"}});
  for (auto l : {"leaf0", "leaf1"}) {
    nodes.push_back({{"id", l}, {"kind", "switch"}, {"tier", "leaf"}});
    for (auto s : {"spine0", "spine1"}) links.push_back({{"a", l}, {"b", s}, {"gbps", 100}});
  }
  for (int h = 0; h < 4; ++h) {
    std::string id = "h" + std::to_string(h);
    nodes.push_back({{"id", id}, {"kind", "host"}, {"gpus", 1}});
    links.push_back({{"a", id}, {"b", h < 2 ? "leaf0" : "leaf1"}, {"gbps", 100}});
  }
  return {{"format", "drainwise.topology/v1"}, {"name", "fuzz"}, {"nodes", nodes}, {"links", links}};
}

json SmallJobs() {
  return {{"format", "drainwise.jobs/v1"}, {"jobs", {{{"id", "j1"}, {"hosts", {"h0", "h2"}}, {"priority", 50}}}}};
}

const model::Topology& FixedTopology() {
  static const model::Topology t = *codec::LoadTopology(SmallTopology());
  return t;
}

void Topology(const uint8_t* data, size_t size) {
  json doc;
  if (!ParseJson(data, size, &doc)) return;
  auto spec = codec::ParseTopology(doc);
  if (!spec) return;
  // Round trip: what parsed must serialise, and build (or be refused).
  auto back = codec::TopologySpecToJson(*spec);
  (void)codec::LoadTopology(back);
}

void Jobs(const uint8_t* data, size_t size) {
  json doc;
  if (!ParseJson(data, size, &doc)) return;
  auto spec = codec::ParseJobs(doc);
  if (!spec) return;
  (void)codec::JobsSpecToJson(*spec);
  (void)model::ResolveJobs(*spec, FixedTopology());
}

void Drain(const uint8_t* data, size_t size) {
  json doc;
  if (!ParseJson(data, size, &doc)) return;
  auto spec = codec::ParseDrain(doc);
  if (!spec) return;
  (void)codec::DrainSpecToJson(*spec);
  auto d = model::ResolveDrain(*spec, FixedTopology());
  if (d) (void)model::DescribeDrain(*d, FixedTopology());
}

void Policy(const uint8_t* data, size_t size) { (void)policies::ParsePolicyText(Text(data, size)); }

void Config(const uint8_t* data, size_t size) {
  json doc;
  if (!ParseJson(data, size, &doc)) return;
  auto c = config::ParseConfig(doc);
  if (c) (void)config::ConfigToJson(*c);
  (void)connectors::ParseConnectorsConfig(doc);
}

void Hostlist(const uint8_t* data, size_t size) { (void)connectors::ExpandHostlist(Text(data, size), 4096); }

// One source kind's document parser, as a source of that kind configured
// with its defaults would run it.
void Source(const std::string& kind, std::string_view body) {
  json cfg = {{"name", "fuzz"}, {"kind", kind}, {"path", "/dev/null"}};
  if (kind == "lldp") cfg["options"] = {{"local_system", "fuzz-host"}};
  static std::map<std::string, connectors::SourceConfig> configs;
  auto it = configs.find(kind);
  if (it == configs.end()) {
    auto c = connectors::ParseSourceConfig(cfg);
    if (!c) return;  // a kind this build does not know
    it = configs.emplace(kind, std::move(*c)).first;
  }
  (void)connectors::ParseSourceDocument(it->second, body, 1.7e9);
}

template <const char* kKind>
void SourceOf(const uint8_t* data, size_t size) {
  Source(kKind, Text(data, size));
}

// The kinds without a target of their own: the first byte picks one.
void SourceOther(const uint8_t* data, size_t size) {
  static const char* kinds[] = {"lldp", "native", "containerlab", "networkx", "batfish"};
  if (size == 0) return;
  Source(kinds[data[0] % 5], Text(data + 1, size - 1));
}

// The REST router on a fresh in-memory store with a small fabric loaded.
// Input: "METHOD TARGET\n", then "name: value\n" header lines, an empty line,
// and the body. Routes that would call the simulation engine are skipped
// (the engine is null): the router, validation, the state and the store are
// what is fuzzed here; the engine's own parsers have targets above.
void Api(const uint8_t* data, size_t size) {
  std::string_view in = Text(data, size);
  size_t eol = in.find('\n');
  std::string_view line = in.substr(0, eol);
  size_t sp = line.find(' ');
  if (sp == std::string_view::npos) return;
  server::ApiRequest req;
  req.method = std::string(line.substr(0, sp));
  req.target = std::string(line.substr(sp + 1));
  if (req.target.empty() || req.target[0] != '/') return;
  std::string_view rest = eol == std::string_view::npos ? std::string_view() : in.substr(eol + 1);
  while (!rest.empty()) {
    size_t e = rest.find('\n');
    std::string_view h = rest.substr(0, e);
    rest = e == std::string_view::npos ? std::string_view() : rest.substr(e + 1);
    if (h.empty()) break;
    size_t colon = h.find(':');
    if (colon == std::string_view::npos) continue;
    std::string name(h.substr(0, colon));
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string_view value = h.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    req.headers[name] = std::string(value);
  }
  req.body = std::string(rest);
  req.peer = "127.0.0.1";

  std::string route = server::Api(nullptr, nullptr).Route(req).RouteName();
  static const std::set<std::string> kNeedEngine = {
      "POST /v1/assessments", "GET /v1/assessments/{id}", "GET /v1/drain-candidates", "POST /v1/plans",
      "GET /v1/policy",       "PUT /v1/policy",           "POST /v1/observations",    "GET /v1/calibration",
      "POST /v1/calibration", "PUT /v1/calibration"};
  if (kNeedEngine.count(route)) return;

  auto db = store::Store::Open(":memory:");
  if (!db) return;
  server::State state(db->get());
  if (!state.PutBoth(SmallTopology(), SmallJobs(), "fuzz")) return;
  server::Api api(&state, nullptr);
  auto r = api.Handle(req);
  (void)api.Route(req).admission;
  // Every answer is a status the server can write, and errors are problem+json.
  if (r.status < 200 || r.status > 599) __builtin_trap();
  if (r.status >= 400 && r.content_type != "application/problem+json") __builtin_trap();
}

constexpr char kNetbox[] = "netbox";
constexpr char kSlurm[] = "slurm";
constexpr char kSlurmTopology[] = "slurm-topology";
constexpr char kKubernetes[] = "kubernetes";
constexpr char kPrometheus[] = "prometheus";
constexpr char kGnmi[] = "gnmi";
constexpr char kChakra[] = "chakra";

}  // namespace

const std::vector<Target>& Targets() {
  static const std::vector<Target> targets = {
      {"topology", Topology},
      {"jobs", Jobs},
      {"drain", Drain},
      {"policy", Policy},
      {"config", Config},
      {"api", Api},
      {"hostlist", Hostlist},
      {"netbox", SourceOf<kNetbox>},
      {"slurm", SourceOf<kSlurm>},
      {"slurm-topology", SourceOf<kSlurmTopology>},
      {"kubernetes", SourceOf<kKubernetes>},
      {"prometheus", SourceOf<kPrometheus>},
      {"gnmi", SourceOf<kGnmi>},
      {"chakra", SourceOf<kChakra>},
      {"source-other", SourceOther},
  };
  return targets;
}

const Target* FindTarget(const std::string& name) {
  for (const auto& t : Targets()) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

}  // namespace drainwise::fuzz
