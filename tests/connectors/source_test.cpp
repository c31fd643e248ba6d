#include <doctest/doctest.h>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include "codec/native.h"
#include "connectors/fetch.h"
#include "connectors/source.h"
#include "test_data.h"
#include "testing/fabrics.h"

namespace drainwise::connectors {
namespace {

using nlohmann::json;
using testdata::ReadJson;
using testdata::ReadText;

SourceConfig Config(const json& j) {
  auto c = ParseSourceConfig(j);
  REQUIRE_MESSAGE(c.has_value(), (c ? "" : c.error().message));
  return *c;
}

TEST_CASE("source config: fields, defaults, kind options") {
  auto c = Config(
      {{"name", "nb"},
       {"kind", "netbox"},
       {"url", "https://netbox.example.net"},
       {"refresh_s", 30},
       {"token_env", "NETBOX_TOKEN"},
       {"options",
        {{"role_tiers", {{"tor", "leaf"}, {"spine", "spine"}}}, {"filter", "site=dc1"}, {"default_gbps", 100}}}});
  CHECK(c.name == "nb");
  CHECK(c.kind == "netbox");
  CHECK(c.refresh_s == 30);
  CHECK(c.timeout_s == 10);
  CHECK(c.token_env == "NETBOX_TOKEN");
  CHECK(c.netbox.role_tiers.size() == 2);
  CHECK(c.netbox.role_tiers.at("tor") == "leaf");
  CHECK(c.netbox.default_gbps == 100);
  CHECK(c.netbox.name == "nb");
  CHECK(c.netbox_filter == "site=dc1");
  CHECK(c.Location() == "url https://netbox.example.net");

  auto k = Config({{"name", "k8s"},
                   {"kind", "kubernetes"},
                   {"command", "kubectl get pods -A -o json"},
                   {"options", {{"job_labels", {"app.kubernetes.io/instance"}}}}});
  CHECK(k.kubernetes.job_labels == std::vector<std::string>{"app.kubernetes.io/instance"});
  CHECK(k.refresh_s == 60);
  CHECK(k.Location() == "command kubectl ...");
  auto q = Config({{"name", "p"}, {"kind", "prometheus"}, {"url", "http://prom:9090/api/v1/query?query=up"}});
  CHECK(q.Location() == "url http://prom:9090/api/v1/query");
  auto ch = Config({{"name", "trace"}, {"kind", "chakra"}, {"path", "/var/lib/traces/llama.json"}});
  CHECK(ch.chakra_profile == "trace");
}

TEST_CASE("source config errors name the field") {
  struct Case {
    json j;
    const char* message;
  };
  const Case cases[] = {
      {{{"name", "a"}, {"kind", "netbox"}}, "source: exactly one of url, path, command is required"},
      {{{"name", "a"}, {"kind", "netbox"}, {"url", "http://x"}, {"path", "/y"}},
       "source: exactly one of url, path, command is required"},
      {{{"name", "a"}, {"kind", "ldap"}, {"path", "/y"}},
       "source.kind: unknown kind 'ldap' (netbox, lldp, slurm-topology, slurm, kubernetes, prometheus, gnmi, chakra, "
       "native, "
       "containerlab, networkx, batfish)"},
      {{{"name", "a"}, {"kind", "slurm"}, {"url", "ftp://x"}},
       "source.url: url 'ftp://x': expected http:// or https://"},
      {{{"name", "a"}, {"kind", "slurm"}, {"path", "/x"}, {"refresh_s", 0}}, "source.refresh_s: must be > 0"},
      {{{"name", "a"}, {"kind", "slurm"}, {"path", "/x"}, {"options", {{"bogus", 1}}}},
       "source.options.bogus: unknown field"},
      {{{"name", "a"}, {"kind", "netbox"}, {"path", "/x"}, {"options", {{"role_tiers", {{"leaf", {1}}}}}}},
       "source.options.role_tiers.leaf: expected a string"},
      {{{"name", "a b"}, {"kind", "slurm"}, {"path", "/x"}},
       "source.name: 'a b': use letters, digits, '-', '_' and '.'"},
      {{{"name", "a"}, {"kind", "slurm"}, {"path", "/x"}, {"token_env", "A"}, {"token_file", "/t"}},
       "source.token_file: give token_env or token_file, not both"},
      {{{"name", "a"}, {"kind", "slurm"}, {"path", "/x"}, {"urll", "x"}}, "source.urll: unknown field"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.j.dump());
    auto r = ParseSourceConfig(c.j);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().message == c.message);
  }
  auto dup = ParseSourceConfigs(json::array(
      {{{"name", "a"}, {"kind", "slurm"}, {"path", "/x"}}, {{"name", "a"}, {"kind", "native"}, {"path", "/y"}}}));
  REQUIRE_FALSE(dup.has_value());
  CHECK(dup.error().message == "sources[1].name: 'a' used twice");
  auto second = ParseSourceConfigs(
      json::array({{{"name", "a"}, {"kind", "slurm"}, {"path", "/x"}}, {{"name", "b"}, {"kind", "slurm"}}}));
  REQUIRE_FALSE(second.has_value());
  CHECK(second.error().message == "sources[1]: exactly one of url, path, command is required");
}

TEST_CASE("documents of every kind through the source entry point") {
  auto topo = ParseSourceDocument(Config({{"name", "st"}, {"kind", "slurm-topology"}, {"path", "x"}}),
                                  ReadText("fixtures/topology.conf"), 0);
  REQUIRE(topo.has_value());
  CHECK(topo->topology->nodes.size() == 12);
  CHECK(topo->topology->name == "st");
  CHECK_FALSE(topo->jobs.has_value());

  auto nb = ParseSourceDocument(Config({{"name", "nb"}, {"kind", "netbox"}, {"path", "x"}}),
                                ReadText("connectors/netbox_v3_bundle.json"), 0);
  REQUIRE(nb.has_value());
  CHECK(nb->topology->links.size() == 4);

  auto lldp_single = ParseSourceDocument(Config({{"name", "l"}, {"kind", "lldp"}, {"path", "x"}}),
                                         ReadText("fixtures/lldpctl_single.json"), 0);
  REQUIRE_FALSE(lldp_single.has_value());  // who is the local system?
  CHECK(lldp_single.error().message.find("options.local_system") != std::string::npos);
  auto lldp_named = ParseSourceDocument(
      Config({{"name", "l"}, {"kind", "lldp"}, {"path", "x"}, {"options", {{"local_system", "gpu001"}}}}),
      ReadText("fixtures/lldpctl_single.json"), 0);
  REQUIRE(lldp_named.has_value());
  CHECK(lldp_named->topology->links.size() == 1);
  json map = {{"gpu001", ReadJson("fixtures/lldpctl_single.json")},
              {"leaf-a01", ReadJson("connectors/lldp_leaf-a01.json")}};
  auto lldp_map = ParseSourceDocument(Config({{"name", "l"}, {"kind", "lldp"}, {"path", "x"}}), map.dump(), 0);
  REQUIRE(lldp_map.has_value());
  CHECK(lldp_map->topology->links.size() == 2);

  auto sq = ParseSourceDocument(Config({{"name", "sq"}, {"kind", "slurm"}, {"path", "x"}}),
                                ReadText("fixtures/squeue.json"), 0);
  REQUIRE(sq.has_value());
  CHECK(sq->jobs->jobs.size() == 1);
  auto k8s = ParseSourceDocument(Config({{"name", "k"}, {"kind", "kubernetes"}, {"path", "x"}}),
                                 ReadText("fixtures/k8s_pods.json"), 0);
  REQUIRE(k8s.has_value());
  CHECK(k8s->jobs->jobs.size() == 2);

  auto prom = ParseSourceDocument(Config({{"name", "p"}, {"kind", "prometheus"}, {"path", "x"}}),
                                  ReadText("fixtures/node_exporter.prom"), 42);
  REQUIRE(prom.has_value());
  CHECK(prom->counters->interfaces.size() == 1);
  CHECK(prom->counters->time_s == 42);
  auto prom_api = ParseSourceDocument(
      Config(
          {{"name", "p"}, {"kind", "prometheus"}, {"path", "x"}, {"options", {{"strip_suffix", ".dc1.example.net"}}}}),
      ReadText("connectors/prometheus_query_vector.json"), 0);
  REQUIRE(prom_api.has_value());
  CHECK(prom_api->counters->interfaces[0].device == "leaf-a01");

  auto gnmic = ParseSourceDocument(Config({{"name", "g"}, {"kind", "gnmi"}, {"path", "x"}}),
                                   ReadText("fixtures/gnmic_events.json"), 0);
  REQUIRE(gnmic.has_value());
  CHECK(gnmic->counters->interfaces[0].device == "leaf-a01");
  auto ietf = ParseSourceDocument(
      Config({{"name", "g"}, {"kind", "gnmi"}, {"path", "x"}, {"options", {{"device", "leaf-a01"}}}}),
      ReadText("fixtures/openconfig_if_counters_json_ietf.json"), 0);
  REQUIRE(ietf.has_value());
  CHECK(*ietf->counters->interfaces[0].oper_up);

  auto ch = ParseSourceDocument(Config({{"name", "c"}, {"kind", "chakra"}, {"path", "x"}}),
                                ReadText("fixtures/chakra_jsonizer.0.json"), 0);
  REQUIRE(ch.has_value());
  CHECK(ch->chakra->collectives.size() == 1);

  auto nx = ParseSourceDocument(
      Config({{"name", "nx"}, {"kind", "networkx"}, {"path", "x"}, {"options", {{"gpus_per_host", 4}}}}),
      ReadText("fixtures/nx_node_link.json"), 0);
  REQUIRE(nx.has_value());
  CHECK(nx->topology->links.size() == 3);
  CHECK(nx->topology->nodes[2].gpus == 4);
  auto clab = ParseSourceDocument(Config({{"name", "lab"}, {"kind", "containerlab"}, {"path", "x"}}),
                                  ReadText("fixtures/clab_topology-data.json"), 0);
  REQUIRE(clab.has_value());
  CHECK(clab->topology->links.size() == 1);
  auto bf = ParseSourceDocument(
      Config({{"name", "bf"}, {"kind", "batfish"}, {"path", "x"}, {"options", {{"default_gbps", 100}}}}),
      ReadText("fixtures/batfish_layer1_topology.json"), 0);
  REQUIRE(bf.has_value());
  CHECK(bf->topology->links[0].gbps == 100);

  auto native_topo =
      ParseSourceDocument(Config({{"name", "n"}, {"kind", "native"}, {"path", "x"}}), testing::TwoByTwo().dump(), 0);
  REQUIRE(native_topo.has_value());
  CHECK(native_topo->topology->nodes.size() == 8);
  auto native_jobs =
      ParseSourceDocument(Config({{"name", "n"}, {"kind", "native"}, {"path", "x"}}),
                          R"({"format": "drainwise.jobs/v1", "jobs": [{"id": "j1", "hosts": ["h0", "h2"]}]})", 0);
  REQUIRE(native_jobs.has_value());
  CHECK(native_jobs->jobs->jobs[0].id == "j1");
  auto native_bad =
      ParseSourceDocument(Config({{"name", "n"}, {"kind", "native"}, {"path", "x"}}), R"({"format": "x"})", 0);
  REQUIRE_FALSE(native_bad.has_value());
  CHECK(native_bad.error().message == "source n: format: expected drainwise.topology/v1 or drainwise.jobs/v1");

  // A topology that parses but does not build is refused whole.
  auto unbuildable =
      ParseSourceDocument(Config({{"name", "nb"},
                                  {"kind", "netbox"},
                                  {"path", "x"},
                                  {"options", {{"role_tiers", {{"leaf", "edge"}, {"spine", "spine"}}}}}}),
                          ReadText("connectors/netbox_v3_bundle.json"), 0);
  REQUIRE_FALSE(unbuildable.has_value());  // tier "edge" has no level
  CHECK(unbuildable.error().message.find("source nb: topology does not build: ") == 0);
  auto empty = ParseSourceDocument(Config({{"name", "nb"}, {"kind", "netbox"}, {"path", "x"}}),
                                   R"({"devices": [], "interfaces": [], "cables": []})", 0);
  REQUIRE_FALSE(empty.has_value());
  CHECK(empty.error().message ==
        "source nb: netbox: 0 of 0 cable terminations gave a fabric link: NetBox returned no cables");
  auto garbage =
      ParseSourceDocument(Config({{"name", "sq"}, {"kind", "slurm"}, {"path", "x"}}), "<html>oops</html>", 0);
  REQUIRE_FALSE(garbage.has_value());
  CHECK(garbage.error().message.find("source sq: slurm: malformed JSON at byte") == 0);
}

TEST_CASE("fetch: files and commands are bounded") {
  std::string fixture = testing::TestDataPath("fixtures/squeue.json");
  auto f = ReadFileLimited(fixture, 1 << 20);
  REQUIRE(f.has_value());
  CHECK(f->size() == ReadText("fixtures/squeue.json").size());
  auto small = ReadFileLimited(fixture, 100);
  REQUIRE_FALSE(small.has_value());
  CHECK(small.error().code == ErrorCode::kTooLarge);
  auto missing = ReadFileLimited("/nonexistent/drainwise", 100);
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().code == ErrorCode::kIo);

  FetchLimits limits;
  limits.timeout_s = 5;
  auto out = RunCommand("cat '" + fixture + "'", limits);
  REQUIRE(out.has_value());
  CHECK(*out == *f);
  auto failed = RunCommand("echo nope >&2; exit 3", limits);
  REQUIRE_FALSE(failed.has_value());
  CHECK(failed.error().message == "command exited with 3: nope");
  limits.max_bytes = 1000;
  auto big = RunCommand("head -c 100000 /dev/zero", limits);
  REQUIRE_FALSE(big.has_value());
  CHECK(big.error().code == ErrorCode::kTooLarge);
  limits.timeout_s = 0.3;
  auto t0 = std::chrono::steady_clock::now();
  auto slow = RunCommand("sleep 5; echo late", limits);
  auto took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE_FALSE(slow.has_value());
  CHECK(slow.error().code == ErrorCode::kDeadlineExceeded);
  CHECK(took < 3.0);  // killed, not waited for
}

TEST_CASE("url parsing") {
  auto u = ParseUrl("https://nb.example.net/api/?limit=1");
  REQUIRE(u.has_value());
  CHECK(u->tls);
  CHECK(u->host == "nb.example.net");
  CHECK(u->port == "443");
  CHECK(u->target == "/api/?limit=1");
  auto v6 = ParseUrl("http://[::1]:8080");
  REQUIRE(v6.has_value());
  CHECK(v6->host == "::1");
  CHECK(v6->port == "8080");
  CHECK(v6->target == "/");
  CHECK_FALSE(ParseUrl("http://user:pw@host/").has_value());
  CHECK_FALSE(ParseUrl("http://host:http/").has_value());
  CHECK_FALSE(ParseUrl("file:///etc/passwd").has_value());
}

TEST_CASE("lldp source from a directory of per-system reports") {
  auto dir = std::filesystem::temp_directory_path() / ("drainwise-lldp-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "gpu001.json") << ReadText("fixtures/lldpctl_single.json");
  std::ofstream(dir / "leaf-a01.json") << ReadText("connectors/lldp_leaf-a01.json");
  std::ofstream(dir / "README.txt") << "not a report";
  auto d = LoadSource(Config({{"name", "l"}, {"kind", "lldp"}, {"path", dir.string()}}), 0);
  std::filesystem::remove_all(dir);
  REQUIRE_MESSAGE(d.has_value(), (d ? "" : d.error().message));
  CHECK(d->topology->links.size() == 2);
  CHECK(d->topology->nodes.size() == 3);
  CHECK(d->observed_systems == std::set<std::string>{"gpu001", "leaf-a01"});
}

TEST_CASE("lldp directory: one truncated report is skipped and named, the others apply") {
  auto dir = std::filesystem::temp_directory_path() / ("drainwise-lldp-bad-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "gpu001.json") << ReadText("fixtures/lldpctl_single.json");
  std::ofstream(dir / "gpu002.json") << ReadText("fixtures/lldpctl_multi.json");
  std::string truncated = ReadText("fixtures/lldpctl_multi.json");
  std::ofstream(dir / "gpu003.json") << truncated.substr(0, truncated.size() / 2);
  auto d = LoadSource(Config({{"name", "l"}, {"kind", "lldp"}, {"path", dir.string()}}), 0);
  std::ofstream(dir / "gpu001.json", std::ios::trunc) << "{";
  std::ofstream(dir / "gpu002.json", std::ios::trunc) << "";
  auto none = LoadSource(Config({{"name", "l"}, {"kind", "lldp"}, {"path", dir.string()}}), 0);
  std::filesystem::remove_all(dir);
  REQUIRE_MESSAGE(d.has_value(), (d ? "" : d.error().message));
  // gpu001 -> leaf-a01:Ethernet8, gpu002 -> leaf-a02:Ethernet8; gpu002's
  // claim on leaf-a01:Ethernet8 (the fixtures share that port) is refused and
  // listed, as is the truncated report.
  CHECK(d->topology->links.size() == 2);
  REQUIRE(d->diagnostics.skipped.size() == 2);
  CHECK(d->diagnostics.skipped[0].item == "report gpu003.json");
  CHECK(d->diagnostics.skipped[0].reason.find("gpu003.json") != std::string::npos);
  CHECK(d->diagnostics.skipped[1].reason == "the port already links to another neighbour (first report wins)");
  CHECK(d->observed_systems == std::set<std::string>{"gpu001", "gpu002"});
  // Every report bad: an error naming how many and the first reason.
  REQUIRE_FALSE(none.has_value());
  CHECK(none.error().message.rfind("source l: none of the 3 lldp reports could be read; first: report gpu001.json: ",
                                   0) == 0);
}

TEST_CASE("source config: authority, LLDP naming and fabric ports, Slurm cpu_jobs, telemetry aliases") {
  CHECK(Config({{"name", "nb"}, {"kind", "netbox"}, {"url", "https://nb"}}).authority == TopologyAuthority::kIntent);
  CHECK(Config({{"name", "l"}, {"kind", "lldp"}, {"path", "x"}}).authority == TopologyAuthority::kObservation);
  CHECK(Config({{"name", "n"}, {"kind", "native"}, {"path", "x"}}).authority == TopologyAuthority::kAll);
  CHECK(Config({{"name", "n"}, {"kind", "native"}, {"path", "x"}, {"authority", "intent"}}).authority ==
        TopologyAuthority::kIntent);
  auto l = Config(
      {{"name", "l"},
       {"kind", "lldp"},
       {"path", "x"},
       {"options", {{"fabric_ports", {"ens1?np0"}}, {"aliases", {{"10.0.0.1", "leaf1"}}}, {"strip_domain", false}}}});
  CHECK(l.lldp.fabric_ports == std::vector<std::string>{"ens1?np0"});
  CHECK(l.lldp.aliases.at("10.0.0.1") == "leaf1");
  CHECK_FALSE(l.lldp.strip_domain);
  CHECK(Config({{"name", "s"}, {"kind", "slurm"}, {"path", "x"}, {"options", {{"cpu_jobs", "mark"}}}}).slurm.cpu_jobs ==
        "mark");
  auto g = Config(
      {{"name", "g"}, {"kind", "gnmi"}, {"path", "x"}, {"options", {{"device_aliases", {{"10.0.0.11", "leaf-a01"}}}}}});
  CHECK(g.telemetry_names.aliases.at("10.0.0.11") == "leaf-a01");

  auto bad = ParseSourceConfig(json{{"name", "s"}, {"kind", "slurm"}, {"path", "x"}, {"authority", "intent"}});
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().message == "source.authority: only topology sources have one, not slurm");
  bad = ParseSourceConfig(json{{"name", "n"}, {"kind", "native"}, {"path", "x"}, {"authority", "truth"}});
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().message == "source.authority: authority 'truth': expected intent, observation or all");
  bad = ParseSourceConfig(json{{"name", "s"}, {"kind", "slurm"}, {"path", "x"}, {"options", {{"cpu_jobs", "drop"}}}});
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().message == "source.options.cpu_jobs: 'drop': expected skip or mark");
}

// --- the manager, with a scripted loader -----------------------------------

struct Script {
  std::mutex mutex;
  std::map<std::string, std::vector<Result<SourceData>>> queue;  // popped front per poll; last one repeats
  Result<SourceData> Next(const std::string& name) {
    std::lock_guard lock(mutex);
    auto& q = queue[name];
    REQUIRE(!q.empty());
    auto r = q.front();
    if (q.size() > 1) q.erase(q.begin());
    return r;
  }
};

SourceData TopologyData(double uplink_gbps) {
  SourceData d;
  auto spec = codec::ParseTopology(testing::TwoByTwo(uplink_gbps));
  REQUIRE(spec.has_value());
  d.topology = *spec;
  return d;
}

SourceData JobsData(std::vector<std::string> ids) {
  SourceData d;
  d.jobs.emplace();
  for (const auto& id : ids) {
    model::JobSpec j;
    j.id = id;
    j.hosts = {"h0", "h2"};
    j.profile_source = "default";
    j.labels["partition"] = "h100";
    d.jobs->jobs.push_back(j);
  }
  return d;
}

SourceData CountersData(double rx_bytes) {
  SourceData d;
  d.counters.emplace();
  InterfaceCounters c;
  c.device = "h0";
  c.interface = "eth0";
  c.rx_bytes = rx_bytes;
  d.counters->interfaces.push_back(c);
  return d;
}

TEST_CASE("source manager: versions, no-change refreshes, stale with last good kept, combination") {
  std::vector<SourceConfig> configs = {
      Config({{"name", "topo"}, {"kind", "native"}, {"path", "t"}}),
      Config({{"name", "jobs-a"}, {"kind", "slurm"}, {"path", "a"}}),
      Config({{"name", "jobs-b"}, {"kind", "kubernetes"}, {"path", "b"}}),
      Config({{"name", "tel"}, {"kind", "prometheus"}, {"path", "p"}}),
  };
  Script script;
  script.queue["topo"] = {TopologyData(100), TopologyData(100), InvalidArgument("malformed JSON at byte 3"),
                          TopologyData(200)};
  script.queue["jobs-a"] = {JobsData({"s1", "dup"})};
  script.queue["jobs-b"] = {JobsData({"dup", "k1"})};
  script.queue["tel"] = {CountersData(1000), CountersData(1000 + 125e6)};
  double now = 1000;
  SourceManagerOptions options;
  options.loader = [&](const SourceConfig& c, double t) {
    auto r = script.Next(c.name);
    if (r && r->counters) r->counters->time_s = t;  // as a real scrape is stamped
    return r;
  };
  options.clock = [&] { return now; };
  options.profiles.rules.push_back({"h100", {{"partition", "h1*"}}, "", IterationSpec{0.1, 0, {}}});
  options.profiles.rules[0].iteration->collectives.push_back(
      {model::CollectiveKind::kAllGather, "ring", 64, 0, 0, 1, {}});
  std::vector<Update> updates;
  SourceManager m(configs, options, [&](const Update& u) { updates.push_back(u); });

  CHECK_FALSE(m.Ready());
  CHECK(m.Statuses()[0].stale);
  CHECK(m.Statuses()[0].last_error == "not fetched yet");
  CHECK(m.Current().version == 0);

  CHECK(m.RefreshAll() == 0);
  CHECK(m.Ready());
  // topo, jobs-a, jobs-b, tel each changed something.
  REQUIRE(updates.size() == 4);
  CHECK(updates[0].version == 1);
  CHECK(updates[0].source == "topo");
  CHECK(updates[0].topology_changed);
  CHECK_FALSE(updates[0].jobs_changed);
  REQUIRE(updates[0].topology);
  CHECK(updates[0].topology->links[0].gbps == 100);
  CHECK(updates[1].jobs_changed);
  CHECK_FALSE(updates[1].topology_changed);
  const Update& u = updates[3];
  CHECK(u.version == 4);
  REQUIRE(u.jobs);
  // jobs-a first, then jobs-b without its duplicate "dup".
  REQUIRE(u.jobs->jobs.size() == 3);
  CHECK(u.jobs->jobs[0].id == "s1");
  CHECK(u.jobs->jobs[1].id == "dup");
  CHECK(u.jobs->jobs[2].id == "k1");
  CHECK(u.jobs->jobs[2].profile_source == "rule");
  CHECK(u.jobs->jobs[2].iteration.collectives[0].bytes == 64);
  CHECK(u.telemetry_changed);
  REQUIRE(u.telemetry->size() == 1);
  CHECK_FALSE((*u.telemetry)[0].has_rates);  // one sample so far

  // Second round: topo and jobs unchanged -> nothing; telemetry 10 s later.
  now = 1010;
  CHECK(m.RefreshNow("topo").has_value());
  CHECK(m.RefreshNow("jobs-a").has_value());
  CHECK(updates.size() == 4);
  CHECK(m.Statuses()[0].versions == 1);
  CHECK(m.Statuses()[0].attempts == 2);
  CHECK(*m.Statuses()[0].last_success == 1010);
  CHECK(*m.Statuses()[0].last_change == 1000);
  CHECK(m.RefreshNow("tel").has_value());
  REQUIRE(updates.size() == 5);
  CHECK(updates[4].telemetry_changed);
  CHECK_FALSE(updates[4].topology_changed);
  CHECK((*updates[4].telemetry)[0].rx_bps == doctest::Approx(1e8));  // 125e6 bytes / 10 s * 8

  // Third: the topology source breaks. Stale, error kept, last good kept, no update.
  now = 1020;
  auto failed = m.RefreshNow("topo");
  REQUIRE_FALSE(failed.has_value());
  CHECK(updates.size() == 5);
  auto st = m.Statuses()[0];
  CHECK(st.stale);
  CHECK(st.has_data);
  CHECK(st.last_error == "malformed JSON at byte 3");
  CHECK(st.failures == 1);
  CHECK(*st.last_success == 1010);
  CHECK(m.Ready());  // still holds data
  CHECK(m.Current().topology->links[0].gbps == 100);

  // Fourth: it recovers with new content.
  now = 1030;
  CHECK(m.RefreshNow("topo").has_value());
  REQUIRE(updates.size() == 6);
  CHECK(updates[5].topology_changed);
  CHECK(updates[5].topology->links[0].gbps == 200);
  CHECK_FALSE(m.Statuses()[0].stale);
  CHECK(m.Statuses()[0].last_error.empty());
  CHECK(m.Statuses()[0].versions == 2);
  CHECK(m.Current().version == 6);

  CHECK(m.RefreshNow("nope").error().code == ErrorCode::kNotFound);
}

// Intent from a topology.conf-like source, observation from LLDP: both are
// used (merged, with provenance and drift), not just the first, and the
// merged topology does not swap wholesale when one source fails.
TEST_CASE("source manager: several topology sources merge; drift and skipped items are reported") {
  std::vector<SourceConfig> configs = {
      Config({{"name", "plan"}, {"kind", "native"}, {"path", "t"}, {"authority", "intent"}}),
      Config({{"name", "lldp"}, {"kind", "lldp"}, {"path", "l"}}),
  };
  SourceData plan = TopologyData(100);  // TwoByTwo: hosts h0..h3, leaves, spines
  SourceData seen;
  seen.topology.emplace();
  // LLDP from h0 sees its cable to l0 and an extra one to l1 nobody planned.
  std::string h0_leaf;
  for (const auto& link : plan.topology->links) {
    if (link.a == "h0" || link.b == "h0") h0_leaf = link.a == "h0" ? link.b : link.a;
  }
  REQUIRE_FALSE(h0_leaf.empty());
  std::string other_leaf;
  for (const auto& n : plan.topology->nodes) {
    if (n.kind == model::NodeKind::kSwitch && n.tier == "leaf" && n.id != h0_leaf) other_leaf = n.id;
  }
  seen.topology->nodes = plan.topology->nodes;
  seen.topology->links = {{"h0", h0_leaf, 100, "", ""}, {"h0", other_leaf, 100, "eth9", "p9"}};
  seen.observed_systems = {"h0"};
  seen.diagnostics.Skip("report h7.json", "malformed JSON at byte 12");
  Script script;
  script.queue["plan"] = {plan, InvalidArgument("source plan: unreachable")};
  script.queue["lldp"] = {seen};
  SourceManagerOptions options;
  options.loader = [&](const SourceConfig& c, double) { return script.Next(c.name); };
  options.clock = [] { return 1000.0; };
  std::vector<Update> updates;
  SourceManager m(configs, options, [&](const Update& u) { updates.push_back(u); });
  REQUIRE(m.RefreshAll() == 0);
  auto u = m.Current();
  REQUIRE(u.topology);
  REQUIRE(u.merged);
  // The planned links plus the extra cable.
  CHECK(u.topology->links.size() == plan.topology->links.size() + 1);
  REQUIRE(u.merged->drift.size() == 1);
  CHECK(u.merged->drift[0].kind == "cable_not_intended");
  CHECK(u.merged->drift[0].sources == std::vector<std::string>{"lldp"});
  auto statuses = m.Statuses();
  CHECK(statuses[1].diagnostics.skipped.size() == 1);
  json status = SourceStatusToJson(statuses[1]);
  CHECK(status["skipped"]["count"] == 1);
  CHECK(status["skipped"]["first"][0]["item"] == "report h7.json");

  // The plan source fails: it keeps its last good contribution; nothing swaps.
  CHECK_FALSE(m.RefreshNow("plan").has_value());
  CHECK(m.Current().topology->links.size() == plan.topology->links.size() + 1);
  CHECK(m.Statuses()[0].stale);
}

TEST_CASE("source manager: background threads poll on their timers and stop promptly") {
  std::vector<SourceConfig> configs = {
      Config({{"name", "topo"}, {"kind", "native"}, {"path", "t"}, {"refresh_s", 0.05}}),
      Config({{"name", "slow"}, {"kind", "native"}, {"path", "s"}, {"refresh_s", 3600}})};
  std::atomic<int> topo_polls{0}, slow_polls{0};
  SourceManagerOptions options;
  options.loader = [&](const SourceConfig& c, double) -> Result<SourceData> {
    if (c.name == "slow") {
      ++slow_polls;
      return TopologyData(50);
    }
    int n = ++topo_polls;
    return TopologyData(n < 3 ? 100 : 300);  // changes once, on the third poll
  };
  std::mutex mu;
  std::vector<Update> updates;
  SourceManager m(configs, options, [&](const Update& u) {
    std::lock_guard lock(mu);
    updates.push_back(u);
  });
  m.Start();
  m.Start();  // no second set of threads
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (topo_polls < 5 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  auto t0 = std::chrono::steady_clock::now();
  m.Stop();
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 2.0);
  CHECK(topo_polls >= 5);
  CHECK(slow_polls == 1);  // polled once at start, then waits its hour
  std::lock_guard lock(mu);
  // First topology (whichever source came first), then the change to 300 G
  // only if "topo" is the first topology source, which it is (config order).
  REQUIRE(updates.size() >= 2);
  CHECK(updates.back().topology->links[0].gbps == 300);
  for (size_t i = 1; i < updates.size(); ++i) CHECK(updates[i].version == updates[i - 1].version + 1);
  int polls_after_stop = topo_polls;
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  CHECK(topo_polls == polls_after_stop);
}

TEST_CASE("source manager: may_poll false skips the polls (another daemon holds the lease), true resumes them") {
  // refresh_s 3600: after the first poll, only a lease retry could poll again
  // within the test, and the retry (0.05 s) is what turns it on.
  std::vector<SourceConfig> configs = {
      Config({{"name", "topo"}, {"kind", "native"}, {"path", "t"}, {"refresh_s", 3600}})};
  std::atomic<int> polls{0}, asked{0};
  std::atomic<bool> lease{false};
  SourceManagerOptions options;
  options.loader = [&](const SourceConfig&, double) -> Result<SourceData> {
    ++polls;
    return TopologyData(100);
  };
  options.may_poll = [&] {
    ++asked;
    return lease.load();
  };
  options.may_poll_retry_s = 0.05;
  SourceManager m(configs, options, [](const Update&) {});
  m.Start();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (asked < 4 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CHECK(asked >= 4);  // asked again every retry period
  CHECK(polls == 0);  // and never polled without the lease
  lease = true;
  while (polls == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CHECK(polls == 1);  // taken over within one retry period, then the hour's wait
  m.Stop();
  CHECK(m.Statuses()[0].attempts == 1);
}

}  // namespace
}  // namespace drainwise::connectors

namespace drainwise::connectors {
namespace {

TEST_CASE("connectors config section and status JSON") {
  auto cfg = ParseConnectorsConfig(nlohmann::json::parse(R"({
    "listen": "127.0.0.1:8080",
    "sources": [{"name": "sq", "kind": "slurm", "command": "squeue --json"}],
    "profiles": {"rules": [{"match": {"partition": "a100"}, "iteration": {"collectives": [{"kind": "allreduce", "bytes": 8}]}}]}
  })"));
  REQUIRE(cfg.has_value());
  REQUIRE(cfg->sources.size() == 1);
  CHECK(cfg->sources[0].command == "squeue --json");
  REQUIRE(cfg->profiles.rules.size() == 1);
  CHECK(cfg->profiles.rules[0].match.at("partition") == "a100");
  auto none = ParseConnectorsConfig(nlohmann::json::object());
  REQUIRE(none.has_value());
  CHECK(none->sources.empty());
  auto bad = ParseConnectorsConfig(nlohmann::json::parse(R"({"sources": [{"name": "x", "kind": "slurm"}]})"));
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().message == "sources[0]: exactly one of url, path, command is required");

  SourceStatus st;
  st.name = "sq";
  st.kind = "slurm";
  st.location = "command squeue --json";
  st.last_success = 1780000000;
  st.last_error = "source sq: command exited with 1";
  st.versions = 3;
  auto j = SourceStatusToJson(st);
  CHECK(j["last_success"] == "2026-05-28T20:26:40Z");
  CHECK(j["last_attempt"].is_null());
  CHECK(j["stale"] == true);
  CHECK(j["versions"] == 3);
  CHECK(j["last_error"] == "source sq: command exited with 1");
}

}  // namespace
}  // namespace drainwise::connectors
