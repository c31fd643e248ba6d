// End to end: background simulations on the real daemon (POST
// /v1/simulations -> 202 + Location, progress, result, cancel), on the
// embedded demo fabric.
#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include "testing/daemon.h"

using namespace drainwise;
using nlohmann::json;

namespace {

// A run long enough to be seen running and cancelled: 100 years of the demo
// fabric with hosts failing every 50 h (millions of events) and a light
// trace (about 8,000 jobs), progress reported once per simulated year.
const char* kLongRun =
    R"({"mode":"task","horizon":"36500d","sample_interval":"365d","seed":1,
        "reliability":{"host":{"mtbf_h":50,"mttr_h":5}},"trace":{"synthetic":{"load":0.01}}})";

json TaskStatus(testing::Daemon& d, const std::string& location) { return d.Get(location).Json(); }

}  // namespace

TEST_CASE("a task-level run in the background: 202, progress, result, same seed same bytes") {
  testing::Daemon d;
  REQUIRE_MESSAGE(d.started(), d.log());
  const std::string body =
      R"({"mode":"task","horizon":"30d","seed":3,"reliability":{"host":{"mtbf_h":500,"mttr_h":12}}})";
  auto started = d.Call("POST", "/v1/simulations", body);
  REQUIRE_MESSAGE(started.status == 202, started.body);
  const std::string location = started.headers["location"];
  REQUIRE(location.rfind("/v1/simulations/sim-", 0) == 0);
  CHECK(started.Json()["mode"] == "task");
  CHECK(started.Json()["id"] == location.substr(std::string("/v1/simulations/").size()));

  json done;
  CHECK(testing::Eventually([&] {
    done = TaskStatus(d, location);
    return done.value("state", "") != "running";
  }));
  REQUIRE_MESSAGE(done["state"] == "done", done.dump());
  CHECK(done["progress"] == 1.0);
  const json& result = done["result"];
  CHECK(result["kind"] == "task");
  CHECK(result["horizon_h"] == 720.0);
  // GPU-hours of the fabric over 30 days, and every one accounted for.
  const double gpus = result["fabric"]["gpus"].get<double>();
  CHECK(result["gpus"]["total_gpu_h"].get<double>() == doctest::Approx(gpus * 720));
  CHECK(result["fabric"]["host_failures"].get<int>() > 0);
  CHECK(result["series"].size() == 30);
  CHECK(result["trace"]["source"].get<std::string>().rfind("synthetic (seed 3", 0) == 0);

  auto csv = d.Get(location + "?format=csv");
  CHECK(csv.status == 200);
  CHECK(csv.headers["content-type"].rfind("text/csv", 0) == 0);
  CHECK(std::count(csv.body.begin(), csv.body.end(), '\n') == 31);  // header + 30 days
  auto text = d.Get(location + "?format=text");
  CHECK(text.status == 200);
  CHECK(text.body.find("Task-level simulation: 720 h") != std::string::npos);

  // The same request again: the same result, byte for byte.
  auto again = d.Call("POST", "/v1/simulations", body);
  REQUIRE(again.status == 202);
  json second;
  CHECK(testing::Eventually([&] {
    second = TaskStatus(d, again.headers["location"]);
    return second.value("state", "") != "running";
  }));
  CHECK(second["result"].dump() == result.dump());

  auto list = d.Get("/v1/simulations").Json();
  CHECK(list["simulations"].size() == 2);
  CHECK(!list["simulations"][0].contains("result"));
  // Progress and timings are logged.
  CHECK(d.log().find("task run: 100 % simulated") != std::string::npos);
}

TEST_CASE("a background run reports progress and stops when cancelled; at most two at once") {
  testing::Daemon d;
  REQUIRE_MESSAGE(d.started(), d.log());
  auto a = d.Call("POST", "/v1/simulations", kLongRun);
  REQUIRE_MESSAGE(a.status == 202, a.body);
  const std::string location = a.headers["location"];
  json s;
  CHECK(testing::Eventually([&] {
    s = TaskStatus(d, location);
    return s.value("progress", 0.0) > 0;
  }));
  CHECK(s["state"] == "running");
  CHECK(s["progress"].get<double>() < 1);

  auto b = d.Call("POST", "/v1/simulations", kLongRun);
  REQUIRE(b.status == 202);
  auto c = d.Call("POST", "/v1/simulations", kLongRun);
  CHECK(c.status == 503);
  CHECK(c.headers.count("retry-after") == 1);
  CHECK(c.Json()["detail"].get<std::string>().find("background runs are running already") != std::string::npos);

  // No result before it is done.
  CHECK(d.Get(location + "?format=csv").status == 409);

  for (const std::string& loc : {location, b.headers["location"]}) {
    auto del = d.Call("DELETE", loc);
    CHECK(del.status == 202);
    CHECK(del.Json()["cancel_requested"] == true);
    CHECK(testing::Eventually([&] { return TaskStatus(d, loc).value("state", "") == "cancelled"; }));
  }
  s = TaskStatus(d, location);
  CHECK(s["error"]["code"] == "cancelled");
  CHECK(!s.contains("result"));
  // A finished run is forgotten by a second DELETE.
  CHECK(d.Call("DELETE", location).status == 204);
  CHECK(d.Get(location).status == 404);
  CHECK(d.Call("DELETE", location).status == 404);
  // Slots are free again.
  auto e = d.Call("POST", "/v1/simulations", R"({"mode":"task","horizon":"1d"})");
  CHECK(e.status == 202);
}

TEST_CASE("a bad simulation request names the field") {
  testing::Daemon d;
  REQUIRE_MESSAGE(d.started(), d.log());
  auto r = d.Call("POST", "/v1/simulations", R"({"mode":"quantum"})");
  CHECK(r.status == 400);
  CHECK(r.Json()["detail"] == "mode: 'quantum' is not one of: task, packet");
  r = d.Call("POST", "/v1/simulations", R"({"mode":"task","horizon":"a year"})");
  CHECK(r.status == 400);
  CHECK(r.Json()["detail"].get<std::string>().rfind("horizon: 'a year' is not a duration", 0) == 0);
  r = d.Call("POST", "/v1/simulations", R"({"mode":"task","horizn":"1d"})");
  CHECK(r.status == 400);
  CHECK(r.Json()["detail"] == "horizn: unknown field");
  r = d.Call("POST", "/v1/simulations", R"({"mode":"task","drains":[{"start":"1d","end":"2d","switches":["nope"]}]})");
  CHECK(r.status == 400);
  CHECK(r.Json()["detail"].get<std::string>().rfind("drains[0]: ", 0) == 0);
  CHECK(d.Get("/v1/simulations/sim-0-none").status == 404);
}

TEST_CASE("the configuration's task section sets the defaults of every run; a bad one stops the start") {
  const std::string dir = testing::MakeTempDir();
  {
    std::ofstream(dir + "/config.json") << R"({"task":{"reliability":{"host":{"mtbf_h":0},"link":{"mtbf_h":0},
                                               "switch":{"mtbf_h":0}}}})";
  }
  testing::Daemon d({"--config", dir + "/config.json"}, dir);
  REQUIRE_MESSAGE(d.started(), d.log());
  // Nothing fails under this configuration, unless a request says otherwise (merged by kind).
  auto quiet = d.Call("POST", "/v1/simulations", R"({"mode":"task","horizon":"30d"})");
  auto hosts = d.Call("POST", "/v1/simulations",
                      R"({"mode":"task","horizon":"30d","reliability":{"host":{"mtbf_h":100,"mttr_h":5}}})");
  REQUIRE(quiet.status == 202);
  REQUIRE(hosts.status == 202);
  json a, b;
  CHECK(testing::Eventually([&] {
    a = TaskStatus(d, quiet.headers["location"]);
    b = TaskStatus(d, hosts.headers["location"]);
    return a.value("state", "") == "done" && b.value("state", "") == "done";
  }));
  CHECK(a["result"]["fabric"]["host_failures"] == 0);
  CHECK(a["result"]["fabric"]["link_failures"] == 0);
  CHECK(a["result"]["fabric"]["switch_availability"].get<double>() == doctest::Approx(1.0));
  CHECK(a["result"]["lost"]["failure"]["interruptions"] == 0);
  CHECK(b["result"]["fabric"]["host_failures"].get<int>() > 0);
  CHECK(b["result"]["fabric"]["link_failures"] == 0);

  { std::ofstream(dir + "/bad.json") << R"({"task":{"reliability":{"spine":{"mtbf_h":10,"mttr_h":0}}}})"; }
  std::string out, err;
  CHECK(testing::RunDrainwise({"config", "check", dir + "/bad.json"}, &out, &err) != 0);
  CHECK(err.find("task.reliability.spine: mttr_h must be > 0 when mtbf_h is") != std::string::npos);
}
