// The route table over the wire, against the real daemon on the 32k preset
// (issue 12): a percent-encoded POST /v1/%61ssessments or /v1/%70lans is
// admitted exactly like the plain path, so it runs on the worker pool with
// the deadline and is cancelled when its client goes away, while /healthz on
// the single I/O thread stays quick; 405 says so in its body and Allow.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>
#include <utility>  // before Boost 1.74's asio: awaitable.hpp uses std::exchange

#include <boost/asio.hpp>

#include "testing/daemon.h"

using namespace drainwise;
using nlohmann::json;

namespace {

// Every spine of the 32k fabric (8 pods × 32): a plan over them runs
// hundreds of simulations, seconds of work; as one assessment's drain, a
// flow simulation of the fabric with a quarter of its spines gone.
json AllSpines() {
  json switches = json::array();
  for (int p = 0; p < 8; ++p) {
    for (int s = 0; s < 32; ++s) switches.push_back("p" + std::to_string(p) + "-spine" + std::to_string(s));
  }
  return switches;
}

std::string SlowPlan() { return json{{"switches", AllSpines()}, {"modes", {"job", "flow"}}}.dump(); }

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// Sends `method target` with `body` on a raw connection and closes it
// before any answer: the client that goes away.
void SendAndHangUp(unsigned short port, const std::string& method, const std::string& target, const std::string& body) {
  boost::asio::io_context ioc;
  boost::asio::ip::tcp::socket sock(ioc);
  sock.connect({boost::asio::ip::make_address("127.0.0.1"), port});
  std::string req = method + " " + target + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
                    "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  boost::asio::write(sock, boost::asio::buffer(req));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  sock.close();
}

}  // namespace

TEST_CASE("percent-encoded simulation routes get the worker pool, the deadline and cancellation") {
  std::string dir = testing::MakeTempDir();
  REQUIRE(testing::RunDrainwise({"fabric", "--preset", "32k", "--out", dir}, nullptr) == 0);
  // One I/O thread: a simulation run inline would hold /healthz until it ended.
  std::ofstream(dir + "/config.json") << R"({"server":{"body_limit_bytes":16000000,"assessment_deadline_s":1,)"
                                      << R"("queue_limit":4,"workers":1,"io_threads":1}})";
  testing::Daemon d({"--config", dir + "/config.json"}, dir);
  REQUIRE_MESSAGE(d.started(), d.log());
  REQUIRE(d.Call("PUT", "/v1/topology", testing::ReadFile(dir + "/topology.json")).status == 201);
  REQUIRE(d.Call("PUT", "/v1/jobs", testing::ReadFile(dir + "/jobs.json")).status == 201);

  SUBCASE("POST /v1/%70lans past the deadline: 504 while /healthz answers at once") {
    auto start = std::chrono::steady_clock::now();
    auto plan = std::async(std::launch::async, [&] { return d.Call("POST", "/v1/%70lans", SlowPlan()); });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the plan is running by now
    double worst = 0;
    for (int i = 0; i < 5; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      CHECK(d.Get("/healthz").status == 200);
      worst = std::max(worst, Seconds(t0));
    }
    CHECK(worst < 0.5);
    MESSAGE("worst /healthz while the encoded plan ran: " << worst * 1e3 << " ms");
    auto r = plan.get();
    CHECK(r.status == 504);
    CHECK(r.headers["content-type"] == "application/problem+json");
    CHECK(r.Json()["status"] == 504);
    CHECK(r.Json()["detail"].get<std::string>().find("deadline") != std::string::npos);
    CHECK(Seconds(start) < 30);
    // Counted under the route it matched, not under its spelling.
    auto metrics = d.Get("/metrics").body;
    CHECK(metrics.find(R"(drainwise_http_requests_total{route="POST /v1/plans",method="POST",status="504"} 1)") !=
          std::string::npos);
  }
  SUBCASE("POST /v1/%61ssessments: the same admission as the plain path, deadline included") {
    json heavy = {{"drain", {{"switches", AllSpines()}}}, {"modes", {"job", "flow"}}};
    auto start = std::chrono::steady_clock::now();
    auto plain = d.Call("POST", "/v1/assessments", heavy.dump());
    double plain_s = Seconds(start);
    start = std::chrono::steady_clock::now();
    auto encoded = d.Call("POST", "/v1/%61ssessments", heavy.dump());
    double encoded_s = Seconds(start);
    MESSAGE("plain " << plain.status << " in " << plain_s << " s, encoded " << encoded.status << " in " << encoded_s
                     << " s");
    CHECK(encoded.status == plain.status);
    CHECK(encoded.status == 504);
    CHECK(encoded.Json()["status"] == 504);
    CHECK(encoded_s < 30);
  }
  SUBCASE("a client that hangs up on POST /v1/%61ssessments has its simulation cancelled") {
    json heavy = {{"drain", {{"switches", AllSpines()}}}, {"modes", {"job", "flow"}}};
    SendAndHangUp(d.port(), "POST", "/v1/%61ssessments", heavy.dump());
    CHECK(testing::Eventually([&] { return d.log().find("went away: cancelling its simulation") != std::string::npos; },
                              std::chrono::seconds(5)));
    CHECK(d.Get("/healthz").status == 200);
  }
  d.Stop();
  std::filesystem::remove_all(dir);
}

TEST_CASE("405 over the wire: the status in the body and an Allow header; a broken target is 400") {
  testing::Daemon d;
  REQUIRE_MESSAGE(d.started(), d.log());
  auto r = d.Call("DELETE", "/v1/%74opology");
  CHECK(r.status == 405);
  CHECK(r.headers["allow"] == "GET, HEAD, PUT");
  CHECK(r.headers["content-type"] == "application/problem+json");
  CHECK(r.Json()["status"] == 405);
  auto bad = d.Get("/v1/jobs/a%2Fb");
  CHECK(bad.status == 400);
  CHECK(bad.Json()["status"] == 400);
  CHECK(bad.Json()["detail"].get<std::string>().find("%2F") != std::string::npos);
  CHECK(d.Get("/v1/%74opology").status == 200);
  d.Stop();
}

TEST_CASE("/readyz is 503 while the store cannot write; odd methods share one metrics series") {
  testing::Daemon d;
  REQUIRE_MESSAGE(d.started(), d.log());
  CHECK(d.Get("/readyz").status == 200);
  // Methods Beast knows (WebDAV) and the table does not: 405, no label of their own.
  for (const char* method : {"PROPFIND", "PURGE", "PROPFIND"}) CHECK(d.Call(method, "/v1/topology").status == 405);
  auto metrics = d.Get("/metrics").body;
  CHECK(metrics.find(R"(drainwise_http_requests_total{route="unmatched",method="other",status="405"} 3)") !=
        std::string::npos);
  CHECK(metrics.find("PROPFIND") == std::string::npos);

  auto chattr = [](const std::string& flag, const std::string& path) {
    return std::system(("chattr " + flag + " '" + path + "' 2>/dev/null").c_str()) == 0;
  };
  if (!chattr("+i", d.db_path())) {
    MESSAGE("chattr +i is not available here (file system or capability): readiness part skipped");
    d.Stop();
    return;
  }
  chattr("+i", d.db_path() + "-wal");
  // The store prober writes every 2 s; /readyz reads its last result and never waits for the store.
  testing::HttpReply ready;
  bool not_ready = testing::Eventually(
      [&] {
        ready = d.Get("/readyz");
        return ready.status == 503;
      },
      std::chrono::seconds(10));
  chattr("-i", d.db_path());
  chattr("-i", d.db_path() + "-wal");
  CHECK(not_ready);
  CHECK(ready.Json()["status"] == 503);
  CHECK(ready.Json()["detail"].get<std::string>().rfind("the store cannot write: ", 0) == 0);
  CHECK(ready.headers["retry-after"] == "1");
  CHECK(d.Get("/healthz").status == 200);
  CHECK(testing::Eventually([&] { return d.Get("/readyz").status == 200; }, std::chrono::seconds(10)));
  d.Stop();
}
