// Signals against the real daemon: SIGTERM during a long plan cancels it and
// the daemon exits within 10 s (systemd's stop timeout is 30 s); SIGHUP
// reloads the policy file and leaves the daemon serving, also when the new
// file is bad.
#include <doctest/doctest.h>

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>

#include "testing/daemon.h"

using namespace drainwise;
using nlohmann::json;

namespace {
void WritePolicy(const std::string& path, const std::string& name) {
  std::ofstream(path + ".tmp") << json{{"format", "drainwise.policy/v1"}, {"name", name}}.dump();
  std::filesystem::rename(path + ".tmp", path);
}
}  // namespace

TEST_CASE("SIGHUP reloads the policy file, logs it, and never ends the daemon") {
  std::string dir = testing::MakeTempDir();
  std::string policy = dir + "/policy.json";
  WritePolicy(policy, "first");
  std::ofstream(dir + "/config.json") << json{{"policy_file", policy}}.dump();
  testing::Daemon d({"--config", dir + "/config.json", "--demo"}, dir);
  REQUIRE_MESSAGE(d.started(), d.log());
  CHECK(d.Get("/v1/policy").Json()["name"] == "first");

  WritePolicy(policy, "second");
  REQUIRE(kill(d.pid(), SIGHUP) == 0);
  CHECK_MESSAGE(
      testing::Eventually([&] { return d.Get("/v1/policy").Json()["name"] == "second"; }, std::chrono::seconds(10)),
      d.log());
  CHECK(d.log().find("SIGHUP: reloaded policy 'second' from " + policy) != std::string::npos);
  // Assessments use the new policy at once.
  auto a = d.Call("POST", "/v1/assessments", R"({"drain":{"switches":["p0-spine1"]},"modes":["job"]})");
  CHECK(a.status == 201);

  // A broken file: logged, the running policy stays, the daemon serves on.
  std::ofstream(policy) << R"({"format":"drainwise.policy/v1","nmae":"typo"})";
  REQUIRE(kill(d.pid(), SIGHUP) == 0);
  CHECK(testing::Eventually([&] { return d.log().find("SIGHUP: configuration not reloaded") != std::string::npos; },
                            std::chrono::seconds(10)));
  CHECK(d.log().find("nmae") != std::string::npos);
  CHECK(d.Get("/healthz").status == 200);
  CHECK(d.Get("/v1/policy").Json()["name"] == "second");

  // And again (the handler re-arms): a third policy.
  WritePolicy(policy, "third");
  REQUIRE(kill(d.pid(), SIGHUP) == 0);
  CHECK(testing::Eventually([&] { return d.Get("/v1/policy").Json()["name"] == "third"; }, std::chrono::seconds(10)));
  CHECK(d.Stop() == 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("SIGTERM during a long plan on the 32k preset: the daemon exits within 10 s") {
  std::string dir = testing::MakeTempDir();
  std::string out;
  REQUIRE(testing::RunDrainwise({"fabric", "--preset", "32k", "--out", dir}, &out) == 0);
  testing::Daemon d;
  REQUIRE_MESSAGE(d.started(), d.log());
  REQUIRE(d.Call("PUT", "/v1/topology", testing::ReadFile(dir + "/topology.json")).status == 201);
  REQUIRE(d.Call("PUT", "/v1/jobs", testing::ReadFile(dir + "/jobs.json")).status == 201);
  json topo = json::parse(testing::ReadFile(dir + "/topology.json"));
  json switches = json::array();
  for (const auto& n : topo["nodes"]) {
    if (n.value("kind", "") == "switch" && n.value("tier", "") != "leaf" && switches.size() < 120) {
      switches.push_back(n["id"]);
    }
  }
  REQUIRE(switches.size() == 120);
  unsigned short port = d.port();
  auto plan = std::async(std::launch::async, [port, switches] {
    json request = {{"switches", switches}, {"modes", {"job", "flow"}}};
    return testing::HttpCall(port, "POST", "/v1/plans", request.dump());
  });
  // Let the plan get going (it takes tens of seconds uninterrupted).
  REQUIRE(plan.wait_for(std::chrono::seconds(2)) == std::future_status::timeout);
  auto start = std::chrono::steady_clock::now();
  int rc = d.Stop();  // SIGTERM, then SIGKILL (rc -1) after 10 s
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MESSAGE("exit " << rc << " " << seconds << " s after SIGTERM");
  CHECK_MESSAGE(rc != -1, d.log());
  CHECK(seconds < 10);
  CHECK(d.log().find("shutting down") != std::string::npos);
  auto reply = plan.get();
  CHECK(reply.status != 201);  // cancelled or cut off, never a stored plan after the stop
  std::filesystem::remove_all(dir);
}
