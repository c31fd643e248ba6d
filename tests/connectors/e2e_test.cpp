// End to end over real sockets: a loopback HTTP server plays NetBox (paged)
// and slurmrestd; a SourceManager polls both on its own threads and delivers
// a full topology and job list; then the server breaks and the manager keeps
// the last good documents and reports the sources stale.
#include <doctest/doctest.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>

#include "connectors/source.h"
#include "loopback_http_server.h"
#include "model/jobs.h"
#include "model/topology.h"
#include "test_data.h"

namespace drainwise::connectors {
namespace {

using nlohmann::json;
using testdata::ReadText;

std::string SqueueOnTheseHosts() {
  // The fixture's running job, moved onto the hosts this NetBox knows.
  json doc = json::parse(ReadText("fixtures/squeue.json"));
  doc["jobs"][0]["nodes"] = "gpu[001-002]";
  return doc.dump();
}

struct Collector {
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<Update> updates;

  void Add(const Update& u) {
    std::lock_guard lock(mutex);
    updates.push_back(u);
    cv.notify_all();
  }
  // Waits (bounded) until `pred(updates)` holds.
  template <class Pred>
  bool WaitFor(Pred pred, std::chrono::seconds limit = std::chrono::seconds(15)) {
    std::unique_lock lock(mutex);
    return cv.wait_for(lock, limit, [&] { return pred(updates); });
  }
};

template <class Pred>
bool Eventually(Pred pred, std::chrono::seconds limit = std::chrono::seconds(15)) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return pred();
}

TEST_CASE("e2e: NetBox pages and slurmrestd over loopback HTTP -> topology + jobs; garbage -> stale, last good kept") {
  loopback::LoopbackHttpServer server;
  loopback::ServeNetboxPages(server);
  server.Set("/slurm/v0.0.42/jobs", {200, SqueueOnTheseHosts()});
  setenv("DRAINWISE_TEST_NETBOX_TOKEN", "0123456789abcdef", 1);
  setenv("DRAINWISE_TEST_SLURM_JWT", "eyJhbGciOi.test", 1);

  auto configs = ParseSourceConfigs(json::array({
      {{"name", "netbox"},
       {"kind", "netbox"},
       {"url", server.base_url() + "/"},
       {"refresh_s", 0.2},
       {"timeout_s", 5},
       {"token_env", "DRAINWISE_TEST_NETBOX_TOKEN"},
       {"options", {{"page_size", 2}}}},
      {{"name", "slurm"},
       {"kind", "slurm"},
       {"url", server.base_url() + "/slurm/v0.0.42/jobs"},
       {"refresh_s", 0.2},
       {"timeout_s", 5},
       {"token_env", "DRAINWISE_TEST_SLURM_JWT"},
       {"options", {{"user", "drainwise"}, {"id_prefix", "slurm:"}}}},
  }));
  REQUIRE_MESSAGE(configs.has_value(), (configs ? "" : configs.error().message));

  Collector got;
  SourceManager manager(*configs, {}, [&](const Update& u) { got.Add(u); });
  manager.Start();

  bool full = got.WaitFor([](const std::vector<Update>& us) {
    return !us.empty() && us.back().topology && us.back().jobs && !us.back().jobs->jobs.empty();
  });
  REQUIRE(full);
  Update u = manager.Current();
  REQUIRE(u.topology);
  REQUIRE(u.jobs);

  // Topology: gpu003 has no cable and is left out; gpu002's link is the
  // lower of 400G (leaf swp10, from its type) and 200G (gpu002 eth1 speed).
  auto topo = model::BuildTopology(*u.topology);
  REQUIRE_MESSAGE(topo.has_value(), (topo ? "" : topo.error().message));
  CHECK(topo->node_count() == 4);
  CHECK(topo->link_count() == 3);
  CHECK_FALSE(topo->FindNode("gpu003").has_value());
  auto gpu002 = topo->FindNode("gpu002");
  REQUIRE(gpu002.has_value());
  REQUIRE(topo->neighbors(*gpu002).size() == 1);
  CHECK(topo->link(topo->neighbors(*gpu002)[0].link).capacity_bps == doctest::Approx(200e9));
  CHECK(topo->node(*topo->FindNode("spine-01")).tier == "spine");

  // Jobs: the running job, placed on the NetBox hosts, with a default profile.
  REQUIRE(u.jobs->jobs.size() == 1);
  CHECK(u.jobs->jobs[0].id == "slurm:481516");
  CHECK(u.jobs->jobs[0].profile_source == "default");
  auto resolved = model::ResolveJobs(*u.jobs, *topo);
  CHECK_MESSAGE(resolved.has_value(), (resolved ? "" : resolved.error().message));

  // Credentials went out as the right headers.
  bool netbox_auth = false, slurm_auth = false;
  for (const auto& r : server.requests()) {
    if (r.target.rfind("/api/dcim/", 0) == 0) {
      netbox_auth = r.headers.count("Authorization") && r.headers.at("Authorization") == "Token 0123456789abcdef";
    }
    if (r.target == "/slurm/v0.0.42/jobs") {
      slurm_auth = r.headers.count("X-SLURM-USER-TOKEN") && r.headers.at("X-SLURM-USER-TOKEN") == "eyJhbGciOi.test" &&
                   r.headers.at("X-SLURM-USER-NAME") == "drainwise";
    }
  }
  CHECK(netbox_auth);
  CHECK(slurm_auth);

  // Unchanged refreshes publish nothing: wait for several more polls.
  size_t published = 0;
  {
    std::lock_guard lock(got.mutex);
    published = got.updates.size();
  }
  auto polls_before = manager.Statuses()[1].attempts;
  REQUIRE(Eventually([&] { return manager.Statuses()[1].attempts >= polls_before + 3; }));
  {
    std::lock_guard lock(got.mutex);
    CHECK(got.updates.size() == published);
  }
  for (const auto& s : manager.Statuses()) {
    CHECK_FALSE(s.stale);
    CHECK(s.versions == 1);
    CHECK(s.location.find("0123456789abcdef") == std::string::npos);
  }

  // Break both: slurmrestd answers garbage, NetBox's second device page fails.
  server.Set("/slurm/v0.0.42/jobs", {200, "<html>502 Bad Gateway</html>", "text/html"});
  server.Set("/api/dcim/devices/?limit=2&offset=2", {500, "oops", "text/plain"});
  REQUIRE(Eventually([&] {
    auto st = manager.Statuses();
    return st[0].stale && st[1].stale;
  }));
  auto st = manager.Statuses();
  CHECK(st[0].last_error.find("HTTP 500") != std::string::npos);
  CHECK(st[0].last_error.find("source netbox") == 0);
  CHECK(st[1].last_error.find("malformed JSON") != std::string::npos);
  CHECK(st[0].has_data);
  CHECK(st[1].has_data);
  CHECK(manager.Ready());
  for (const auto& s : st) CHECK(s.last_error.find("0123456789abcdef") == std::string::npos);

  // The last good documents stay; nothing half-applied was published.
  Update after = manager.Current();
  CHECK(after.version == u.version);
  CHECK(after.topology == u.topology);
  CHECK(after.jobs == u.jobs);
  {
    std::lock_guard lock(got.mutex);
    CHECK(got.updates.size() == published);
  }

  // Recovery with a change: the job moves; one new version with jobs_changed only.
  json moved = json::parse(SqueueOnTheseHosts());
  moved["jobs"][0]["nodes"] = "gpu001";
  server.Set("/slurm/v0.0.42/jobs", {200, moved.dump()});
  REQUIRE(got.WaitFor([&](const std::vector<Update>& us) { return us.size() > published; }));
  manager.Stop();
  std::lock_guard lock(got.mutex);
  const Update& last = got.updates[published];
  CHECK(last.source == "slurm");
  CHECK(last.jobs_changed);
  CHECK_FALSE(last.topology_changed);
  CHECK(last.jobs->jobs[0].hosts == std::vector<std::string>{"gpu001"});
  CHECK(last.topology == u.topology);  // NetBox is still stale: its last good topology
  CHECK(manager.Statuses()[0].stale);
  CHECK_FALSE(manager.Statuses()[1].stale);
}

TEST_CASE("http fetch: statuses, timeouts and limits over loopback") {
  loopback::LoopbackHttpServer server;
  server.Set("/ok", {200, "hello"});
  server.Set("/auth", {401, "no"});
  server.Set("/big", {200, std::string(5000, 'x')});
  FetchLimits limits;
  limits.timeout_s = 5;
  auto ok = HttpGet(server.base_url() + "/ok", {{"Authorization", "Bearer secret-token"}}, limits);
  REQUIRE(ok.has_value());
  CHECK(*ok == "hello");
  CHECK(server.requests().back().headers.at("Authorization") == "Bearer secret-token");
  auto auth = HttpGet(server.base_url() + "/auth", {{"Authorization", "Bearer secret-token"}}, limits);
  REQUIRE_FALSE(auth.has_value());
  CHECK(auth.error().code == ErrorCode::kUnauthenticated);
  CHECK(auth.error().message.find("secret-token") == std::string::npos);
  CHECK(HttpGet(server.base_url() + "/missing", {}, limits).error().code == ErrorCode::kNotFound);
  limits.max_bytes = 1000;
  auto big = HttpGet(server.base_url() + "/big", {}, limits);
  REQUIRE_FALSE(big.has_value());
  CHECK(big.error().code == ErrorCode::kTooLarge);
  // Nothing listens on the port after the server is gone: connection refused.
  std::string dead_url;
  {
    loopback::LoopbackHttpServer gone;
    dead_url = gone.base_url() + "/x";
  }
  auto refused = HttpGet(dead_url, {}, limits);
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().code == ErrorCode::kUnavailable);
}

}  // namespace
}  // namespace drainwise::connectors

namespace drainwise::connectors {
namespace {

TEST_CASE("https fetch over loopback: verified with the CA file, refused without, allowed when told to skip") {
  // A self-signed test certificate for 127.0.0.1 (tests/data/connectors/tls_test_*.pem).
  std::string cert = ::drainwise::testing::TestDataPath("connectors/tls_test_cert.pem");
  std::string key = ::drainwise::testing::TestDataPath("connectors/tls_test_key.pem");
  loopback::LoopbackHttpServer server(cert, key);
  server.Set("/api/v1/pods", {200, R"({"items": []})"});
  REQUIRE(server.base_url().rfind("https://127.0.0.1:", 0) == 0);

  FetchLimits limits;
  limits.timeout_s = 5;
  limits.ca_file = cert;
  auto ok = HttpGet(server.base_url() + "/api/v1/pods", {{"Authorization", "Bearer k8s-token"}}, limits);
  REQUIRE_MESSAGE(ok.has_value(), (ok ? "" : ok.error().message));
  CHECK(*ok == R"({"items": []})");
  CHECK(server.requests().back().headers.at("Authorization") == "Bearer k8s-token");

  limits.ca_file.clear();  // system CAs do not know the test certificate
  auto refused = HttpGet(server.base_url() + "/api/v1/pods", {}, limits);
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().code == ErrorCode::kUnavailable);
  CHECK(refused.error().message.find("TLS handshake") != std::string::npos);

  limits.insecure_skip_verify = true;
  auto skipped = HttpGet(server.base_url() + "/api/v1/pods", {}, limits);
  CHECK(skipped.has_value());

  // Through a kubernetes source end to end.
  auto config = ParseSourceConfig(json{{"name", "k8s"},
                                       {"kind", "kubernetes"},
                                       {"url", server.base_url() + "/api/v1/pods"},
                                       {"ca_file", cert},
                                       {"timeout_s", 5}});
  REQUIRE(config.has_value());
  server.Set("/api/v1/pods", {200, ReadText("fixtures/k8s_pods.json")});
  auto data = LoadSource(*config, 0);
  REQUIRE_MESSAGE(data.has_value(), (data ? "" : data.error().message));
  CHECK(data->jobs->jobs.size() == 2);
}

}  // namespace
}  // namespace drainwise::connectors
