// Limits and backpressure against the real daemon on the 32k preset, where
// a plan over many switches takes seconds: an oversized body gets 413, a
// simulation past its deadline 504, a full queue 503 with Retry-After, and a
// client that hangs up has its simulation cancelled. Health is answered
// throughout.
#include <doctest/doctest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>
#include <utility>  // before Boost 1.74's asio: awaitable.hpp uses std::exchange
#include <vector>

#include <boost/asio.hpp>

#include "testing/daemon.h"

using namespace drainwise;
using nlohmann::json;

namespace {

// A plan over every spine of the 32k fabric: 256 single-switch simulations
// and more, seconds of work.
std::string SlowPlan() {
  json switches = json::array();
  for (int p = 0; p < 8; ++p) {
    for (int s = 0; s < 32; ++s) switches.push_back("p" + std::to_string(p) + "-spine" + std::to_string(s));
  }
  return json{{"switches", switches}, {"modes", {"job", "flow"}}}.dump();
}

}  // namespace

TEST_CASE("413, 504, 503 and cancellation on hang-up") {
  std::string dir = testing::MakeTempDir();
  REQUIRE(testing::RunDrainwise({"fabric", "--preset", "32k", "--out", dir}, nullptr) == 0);
  std::ofstream(dir + "/config.json")
      << R"({"server":{"body_limit_bytes":16000000,"assessment_deadline_s":1,"queue_limit":1,"workers":1}})";
  testing::Daemon d({"--config", dir + "/config.json"}, dir);
  REQUIRE_MESSAGE(d.started(), d.log());
  REQUIRE(d.Call("PUT", "/v1/topology", testing::ReadFile(dir + "/topology.json")).status == 201);
  REQUIRE(d.Call("PUT", "/v1/jobs", testing::ReadFile(dir + "/jobs.json")).status == 201);

  SUBCASE("an oversized body is refused with 413 as soon as its length is known") {
    // Announce 17 MB, send none of it: the answer comes from the header.
    boost::asio::io_context ioc;
    boost::asio::ip::tcp::socket sock(ioc);
    sock.connect({boost::asio::ip::make_address("127.0.0.1"), d.port()});
    std::string req =
        "PUT /v1/topology HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Content-Length: 17000000\r\n\r\n{";
    boost::asio::write(sock, boost::asio::buffer(req));
    std::string answer;
    boost::system::error_code ec;
    char buf[4096];
    for (int i = 0; i < 100 && answer.find("\r\n\r\n") == std::string::npos; ++i) {
      size_t n = sock.read_some(boost::asio::buffer(buf), ec);
      if (ec) break;
      answer.append(buf, n);
    }
    CHECK(answer.rfind("HTTP/1.1 413", 0) == 0);
    CHECK(d.Get("/healthz").status == 200);
  }
  SUBCASE("past the deadline: 504, and the daemon carries on") {
    auto start = std::chrono::steady_clock::now();
    auto r = d.Call("POST", "/v1/plans", SlowPlan());
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CHECK(r.status == 504);
    CHECK(r.headers["content-type"] == "application/problem+json");
    CHECK(s < 30);
    CHECK(d.Get("/healthz").status == 200);
  }
  SUBCASE("a full queue answers 503 with Retry-After while health stays quick") {
    auto slow = std::async(std::launch::async, [&] { return d.Call("POST", "/v1/plans", SlowPlan()); });
    // Wait until the slow plan occupies the single queue slot.
    bool refused = false;
    for (int i = 0; i < 100 && !refused; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      auto r = d.Call("POST", "/v1/assessments", R"({"drain":{"switches":["p0-spine0"]}})");
      if (r.status == 503) {
        refused = true;
        CHECK(r.headers["retry-after"] == "1");
      }
    }
    CHECK(refused);
    auto t0 = std::chrono::steady_clock::now();
    CHECK(d.Get("/healthz").status == 200);
    CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 1.0);
    CHECK(slow.get().status == 504);
  }
  SUBCASE("a client that hangs up has its simulation cancelled") {
    {
      boost::asio::io_context ioc;
      boost::asio::ip::tcp::socket sock(ioc);
      sock.connect({boost::asio::ip::make_address("127.0.0.1"), d.port()});
      std::string body = SlowPlan();
      std::string req = "POST /v1/plans HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
                        std::to_string(body.size()) + "\r\n\r\n" + body;
      boost::asio::write(sock, boost::asio::buffer(req));
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      sock.close();  // gone before the answer
    }
    bool cancelled = false;
    for (int i = 0; i < 100 && !cancelled; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      cancelled = d.log().find("went away: cancelling its simulation") != std::string::npos;
    }
    CHECK(cancelled);
    CHECK(d.Get("/healthz").status == 200);
  }
  SUBCASE("a client that asked to close and hangs up has its simulation cancelled too") {
    {
      boost::asio::io_context ioc;
      boost::asio::ip::tcp::socket sock(ioc);
      sock.connect({boost::asio::ip::make_address("127.0.0.1"), d.port()});
      std::string body = SlowPlan();
      std::string req =
          "POST /v1/plans HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
          "Content-Type: application/json\r\nContent-Length: " +
          std::to_string(body.size()) + "\r\n\r\n" + body;
      boost::asio::write(sock, boost::asio::buffer(req));
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      sock.close();  // gone before the answer
    }
    bool cancelled = false;
    for (int i = 0; i < 100 && !cancelled; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      cancelled = d.log().find("went away: cancelling its simulation") != std::string::npos;
    }
    CHECK(cancelled);
    CHECK(d.Get("/healthz").status == 200);
  }
  d.Stop();
  std::filesystem::remove_all(dir);
}

TEST_CASE("a pooled request whose deadline passes while it waits is answered 504 without running") {
  std::string dir = testing::MakeTempDir();
  REQUIRE(testing::RunDrainwise({"fabric", "--preset", "32k", "--out", dir}, nullptr) == 0);
  // One read thread and a 1 s deadline. Rendering the 32k topology (12 MB)
  // does not look at the stop token: the 504s are requests answered when
  // their deadline passed while they waited, not after.
  std::ofstream(dir + "/config.json")
      << R"({"server":{"assessment_deadline_s":1,"read_workers":1,"read_queue_limit":32}})";
  testing::Daemon d({"--config", dir + "/config.json"}, dir);
  REQUIRE_MESSAGE(d.started(), d.log());
  REQUIRE(d.Call("PUT", "/v1/topology", testing::ReadFile(dir + "/topology.json")).status == 201);
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::future<testing::HttpReply>> readers;
  for (int i = 0; i < 16; ++i) {
    readers.push_back(std::async(std::launch::async, [&] { return d.Get("/v1/topology"); }));
  }
  int ok = 0, late = 0;
  for (auto& r : readers) {
    auto reply = r.get();
    if (reply.status == 200) {
      ++ok;
    } else {
      CHECK(reply.status == 504);
      CHECK(reply.Json()["detail"].get<std::string>().find("waited past the 1 s deadline") != std::string::npos);
      ++late;
    }
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  MESSAGE("16 topology reads on one thread, 1 s deadline: " << ok << " answered, " << late << " 504, in " << s << " s");
  CHECK(ok >= 1);
  CHECK(late >= 1);
  CHECK(d.Get("/healthz").status == 200);
  CHECK(d.Stop() == 0);
  std::filesystem::remove_all(dir);
}

namespace {

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(p * static_cast<double>(v.size() - 1))];
}

// The 1-minute load average divided by the number of cores.
double MachineLoadPerCore() {
  double one = 0;
  std::ifstream("/proc/loadavg") >> one;
  return one / std::max(1u, std::thread::hardware_concurrency());
}

// The latency the daemon logged for each request line containing `what`
// ("127.0.0.1 GET /healthz 200 16B 0.1ms").
std::vector<double> LoggedMs(const std::string& log, const std::string& what) {
  std::vector<double> out;
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find(what) == std::string::npos || line.size() < 3 || line.compare(line.size() - 2, 2, "ms") != 0) {
      continue;
    }
    out.push_back(std::stod(line.substr(line.rfind(' ') + 1)));
  }
  return out;
}

}  // namespace

TEST_CASE("32k: /healthz p99 < 10 ms while a 120-switch plan runs; SIGTERM cancels it and exits within 10 s") {
  std::string dir = testing::MakeTempDir();
  REQUIRE(testing::RunDrainwise({"fabric", "--preset", "32k", "--out", dir}, nullptr) == 0);
  testing::Daemon d({}, dir);
  REQUIRE_MESSAGE(d.started(), d.log());
  REQUIRE(d.Call("PUT", "/v1/topology", testing::ReadFile(dir + "/topology.json")).status == 201);
  REQUIRE(d.Call("PUT", "/v1/jobs", testing::ReadFile(dir + "/jobs.json")).status == 201);
  // 120 spines (15 in each of the 8 pods), job and flow level: tens of
  // seconds of simulation, far past this test's probing window.
  json switches = json::array();
  for (int p = 0; p < 8; ++p) {
    for (int s = 0; s < 15; ++s) switches.push_back("p" + std::to_string(p) + "-spine" + std::to_string(s));
  }
  std::string plan = json{{"switches", switches}, {"modes", {"job", "flow"}}}.dump();
  auto running = [&] { return d.Get("/metrics").body.find("\ndrainwise_simulations_queued 1") != std::string::npos; };
  auto slow = std::async(std::launch::async, [&] { return d.Call("POST", "/v1/plans", plan); });
  REQUIRE(testing::Eventually(running, std::chrono::seconds(10)));
  // One probe every 20 ms for 4 s, on a fresh connection each (what a
  // liveness check does).
  std::vector<double> ms;
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(4);
  while (std::chrono::steady_clock::now() < until) {
    auto t0 = std::chrono::steady_clock::now();
    auto r = d.Get("/healthz");
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    CHECK(r.status == 200);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  CHECK(running());  // the plan was running throughout
  double p99 = Percentile(ms, 0.99);
  double load = MachineLoadPerCore();
  MESSAGE(ms.size() << " health probes during the plan: p50 " << Percentile(ms, 0.5) << " ms, p99 " << p99
                    << " ms, max " << Percentile(ms, 1.0) << " ms; load average per core " << load);
  // What the client sees includes waiting for a CPU, which no server
  // controls: the 10 ms bound holds on a machine that is not overloaded; on
  // one with more than 2 runnable tasks per core the test still catches a
  // health check that waits for the plan (seconds, before) with 100 ms.
  // The sanitizer build, 2-3x slower, is held to 20 ms (seen there with the
  // test alone on 2 cores: p50 1.6 ms, p99 10.1 ms); the release pass holds
  // the 10 ms.
  if (load <= 2.0) {
    CHECK(p99 < (testing::kSanitizerBuild ? 20.0 : 10.0));
  } else {
    CHECK(p99 < 100.0);
  }
  // Inside the daemon the health handler never waits: its own timing, from
  // the request log, stays under a millisecond for most probes (the median). The
  // slowest one may still be preempted by the plan's workers for a few ms
  // (seen: 4.2 ms under ASan with another suite on the second core), so the
  // bound on it is 50 ms: far below the seconds a handler that waited for the
  // plan took, and independent of the machine's load.
  std::vector<double> inside = LoggedMs(d.log(), "GET /healthz 200");
  CHECK(inside.size() >= ms.size());
  CHECK(Percentile(inside, 0.5) < 1.0);
  CHECK(Percentile(inside, 1.0) < 50.0);
  // SIGTERM mid-plan: the plan's stop token fires, the daemon exits 0 in time.
  auto t0 = std::chrono::steady_clock::now();
  CHECK(d.Stop() == 0);
  double stop_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  MESSAGE("stopped " << stop_s << " s after SIGTERM");
  CHECK(stop_s < 10.0);
  auto answer = slow.get();
  // Either the 503 of a cancelled simulation or the connection closed under it.
  CHECK((answer.status == 503 || answer.status == -1));
  std::filesystem::remove_all(dir);
}
