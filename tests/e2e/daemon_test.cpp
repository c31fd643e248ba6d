// End to end: the real `drainwise serve` binary on 127.0.0.1, an ephemeral
// port and a throw-away database.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "testing/daemon.h"
#include "testing/fabrics.h"

using namespace drainwise;
using nlohmann::json;

TEST_CASE("an empty database starts on the demo fabric") {
  testing::Daemon d;
  REQUIRE_MESSAGE(d.started(), d.log());
  CHECK(d.Get("/healthz").status == 200);
  auto ready = d.Get("/readyz");
  CHECK(ready.status == 200);
  auto topo = d.Get("/v1/topology");
  REQUIRE(topo.status == 200);
  auto t = topo.Json();
  CHECK(t["format"] == "drainwise.topology/v1");
  CHECK(t["name"] == "demo");
  CHECK(topo.headers["drainwise-topology-version"] == "1");
  auto jobs = d.Get("/v1/jobs").Json();
  CHECK(jobs["jobs"].size() == 15);
  // One log line per request, with method, path and status.
  CHECK(d.log().find("GET /v1/topology 200") != std::string::npos);
  auto metrics = d.Get("/metrics");
  CHECK(metrics.status == 200);
  CHECK(metrics.headers["content-type"].rfind("text/plain; version=0.0.4", 0) == 0);
  CHECK(
      metrics.body.find("drainwise_http_requests_total{route=\"GET /v1/topology\",method=\"GET\",status=\"200\"} 1") !=
      std::string::npos);
  CHECK(metrics.body.find("drainwise_snapshot_version{kind=\"topology\"} 1") != std::string::npos);
}

TEST_CASE("a rejected PUT changes nothing, and a restart serves the last accepted versions") {
  std::string dir = testing::MakeTempDir();
  json small = testing::TwoByTwo();
  {
    testing::Daemon d({}, dir);
    REQUIRE_MESSAGE(d.started(), d.log());
    auto put = d.Call("PUT", "/v1/topology", small.dump());
    CHECK(put.status == 201);
    CHECK(put.Json()["version"] == 2);  // the demo was version 1
    json bad = small;
    bad["links"].push_back({{"a", "leaf0"}, {"b", "spine-9"}, {"gbps", 100}});
    auto rejected = d.Call("PUT", "/v1/topology", bad.dump());
    CHECK(rejected.status == 400);
    CHECK(rejected.headers["content-type"] == "application/problem+json");
    CHECK(rejected.Json()["detail"].get<std::string>().find("spine-9") != std::string::npos);
    CHECK(d.Get("/v1/topology").Json()["name"] == "2x2");
    json jobs = {{"format", "drainwise.jobs/v1"}, {"jobs", {{{"id", "train-1"}, {"hosts", {"h0", "h3"}}}}}};
    CHECK(d.Call("PUT", "/v1/jobs", jobs.dump()).status == 201);
    CHECK(d.Stop() == 0);
  }
  {
    testing::Daemon d({}, dir);
    REQUIRE_MESSAGE(d.started(), d.log());
    auto topo = d.Get("/v1/topology");
    CHECK(topo.Json()["name"] == "2x2");
    CHECK(topo.headers["drainwise-topology-version"] == "2");
    auto jobs = d.Get("/v1/jobs").Json();
    REQUIRE(jobs["jobs"].size() == 1);
    CHECK(jobs["jobs"][0]["id"] == "train-1");
    auto snaps = d.Get("/v1/snapshots").Json();
    CHECK(snaps["current"]["topology_version"] == 2);
    CHECK(snaps["current"]["jobs_version"] == 2);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("the 32k preset is generated in seconds and accepted by the daemon") {
  std::string dir = testing::MakeTempDir();
  std::string out;
  auto start = std::chrono::steady_clock::now();
  REQUIRE(testing::RunDrainwise({"fabric", "--preset", "32k", "--out", dir}, &out) == 0);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MESSAGE("drainwise fabric --preset 32k: " << seconds << " s: " << out);
  CHECK(seconds < 30);  // generous for sanitizer builds; ~0.5 s optimised
  testing::Daemon d;
  REQUIRE_MESSAGE(d.started(), d.log());
  auto put = d.Call("PUT", "/v1/topology", testing::ReadFile(dir + "/topology.json"));
  CHECK(put.status == 201);
  CHECK(put.Json()["nodes"] == 5632);
  auto jobs = d.Call("PUT", "/v1/jobs", testing::ReadFile(dir + "/jobs.json"));
  CHECK(jobs.status == 201);
  CHECK(d.Get("/v1/snapshots").Json()["current"]["gpus"] == 32768);
  std::filesystem::remove_all(dir);
}

TEST_CASE("bad command lines exit 2; an unusable database exits 1 with its path") {
  std::string out, err;
  CHECK(testing::RunDrainwise({"frobnicate"}, &out, &err) == 2);
  CHECK(testing::RunDrainwise({"serve", "--db", "/nonexistent-dir/x.db", "--listen", "127.0.0.1:0"}, &out, &err) == 1);
  CHECK(err.find("/nonexistent-dir/x.db") != std::string::npos);
  CHECK(testing::RunDrainwise({"--version"}, &out, &err) == 0);
  CHECK(out.find("drainwise ") == 0);
}

namespace {
// The daemon's environment as it runs, from /proc.
std::string EnvironOf(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ");
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::replace(all.begin(), all.end(), '\0', '\n');
  return "\n" + all;
}

// Whether `env` (EnvironOf) has GLIBC_TUNABLES=`value`. glibc 2.36 parses
// the variable in place, ending each tunable with a NUL where its ':' was:
// /proc then shows one entry per tunable.
bool HasTunables(const std::string& env, std::string value) {
  if (env.find("\nGLIBC_TUNABLES=" + value + "\n") != std::string::npos) return true;
  std::replace(value.begin(), value.end(), ':', '\n');
  return env.find("\nGLIBC_TUNABLES=" + value + "\n") != std::string::npos;
}

// GLIBC_TUNABLES as src/process/malloc_tunables.h makes it from `before`:
// each of its tunables that `before` does not name, appended in order.
std::string WithMallocTunables(std::string before) {
  for (const char* t :
       {"glibc.malloc.mmap_threshold=33554432", "glibc.malloc.top_pad=16777216", "glibc.malloc.arena_max=1"}) {
    const std::string tunable(t);
    if (before.find(tunable.substr(0, tunable.find('='))) != std::string::npos) continue;
    before += (before.empty() ? "" : ":") + tunable;
  }
  return before;
}
}  // namespace

TEST_CASE("the daemon runs with glibc's malloc tuned, unless told not to") {
  // src/process/malloc_tunables.h: main() re-executes itself once with
  // two thresholds and one arena added to GLIBC_TUNABLES (same pid),
  // leaving any the environment already names as
  // they are.
  const char* ours = std::getenv("GLIBC_TUNABLES");
  const std::string before = ours ? ours : "";
  {
    testing::Daemon d;
    REQUIRE_MESSAGE(d.started(), d.log());
    CHECK(HasTunables(EnvironOf(d.pid()), WithMallocTunables(before)));
    CHECK(d.Get("/healthz").status == 200);
  }
  if (before.empty()) {
    // An operator's own value of one of them is kept, the others added.
    ::setenv("GLIBC_TUNABLES", "glibc.malloc.top_pad=0", 1);
    testing::Daemon d;
    ::unsetenv("GLIBC_TUNABLES");
    REQUIRE_MESSAGE(d.started(), d.log());
    CHECK(HasTunables(EnvironOf(d.pid()),
                      "glibc.malloc.top_pad=0:glibc.malloc.mmap_threshold=33554432:glibc.malloc.arena_max=1"));
  }
  ::setenv("DRAINWISE_MALLOC_TUNABLES", "0", 1);
  {
    testing::Daemon d;
    ::unsetenv("DRAINWISE_MALLOC_TUNABLES");
    REQUIRE_MESSAGE(d.started(), d.log());
    const std::string env = EnvironOf(d.pid());
    const bool as_before = ours ? HasTunables(env, before) : env.find("\nGLIBC_TUNABLES=") == std::string::npos;
    CHECK(as_before);
  }
}
