// Admission against the real daemon (demo fabric): bulk reads and
// simulations queue apart, so readers cannot make assessments fail; out of
// file descriptors, the accept loop backs off instead of flooding the log,
// and the daemon answers again once connections close.
#include <doctest/doctest.h>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <utility>  // before Boost 1.74's asio: awaitable.hpp uses std::exchange
#include <vector>

#include <boost/asio.hpp>

#include "testing/daemon.h"

using namespace drainwise;
using nlohmann::json;

namespace {

// The pid of the `drainwise serve` whose database is `db` (from /proc).
int DaemonPid(const std::string& db) {
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = testing::ReadFile(e.path() / "cmdline");
    for (char& c : cmdline) {
      if (c == '\0') c = ' ';
    }
    if (cmdline.find(" serve ") != std::string::npos && cmdline.find(" " + db + " ") != std::string::npos) {
      return std::stoi(name);
    }
  }
  return -1;
}

size_t CountLines(const std::string& text) { return static_cast<size_t>(std::count(text.begin(), text.end(), '\n')); }

}  // namespace

TEST_CASE("24 topology readers and 4 assessment clients: no assessment gets 503") {
  // Small queues make the test sharp: with one shared queue of 4, the readers
  // alone fill it and assessments are refused. Simulations have their own.
  std::string dir = testing::MakeTempDir();
  std::ofstream(dir + "/config.json")
      << R"({"server":{"workers":1,"queue_limit":4,"read_workers":1,"read_queue_limit":4}})";
  testing::Daemon d({"--config", dir + "/config.json"}, dir);
  REQUIRE_MESSAGE(d.started(), d.log());
  std::atomic<bool> done{false};
  std::atomic<int> reads_ok{0}, reads_refused{0}, reads_other{0};
  std::vector<std::thread> readers;
  for (int i = 0; i < 24; ++i) {
    readers.emplace_back([&] {
      // Bounded: until the assessments are done, at most 200 requests each.
      for (int n = 0; n < 200 && !done; ++n) {
        auto r = d.Get("/v1/topology");
        if (r.status == 200) {
          ++reads_ok;
        } else if (r.status == 503 && r.headers["retry-after"] == "1") {
          ++reads_refused;
        } else {
          ++reads_other;
        }
      }
    });
  }
  std::vector<std::future<std::vector<int>>> assessors;
  for (int i = 0; i < 4; ++i) {
    assessors.push_back(std::async(std::launch::async, [&, i] {
      std::vector<int> statuses;
      for (int n = 0; n < 8; ++n) {
        std::string spine = "p" + std::to_string(i % 2) + "-spine" + std::to_string(n % 4);
        auto r = d.Call("POST", "/v1/assessments", json{{"drain", {{"switches", {spine}}}}, {"modes", {"job"}}}.dump());
        statuses.push_back(r.status);
      }
      return statuses;
    }));
  }
  std::vector<int> all;
  for (auto& a : assessors) {
    auto s = a.get();
    all.insert(all.end(), s.begin(), s.end());
  }
  done = true;
  for (auto& t : readers) t.join();
  CHECK(all.size() == 32);
  for (int s : all) CHECK(s == 201);
  CHECK(reads_ok > 0);
  CHECK(reads_other == 0);
  MESSAGE("topology reads: " << reads_ok.load() << " answered, " << reads_refused.load() << " refused with 503");
  CHECK(d.Stop() == 0);
  std::filesystem::remove_all(dir);
}

// Under the clang ASan + UBSan build the daemon aborts here: when accept()
// fails with EMFILE, UBSan reports an invalid vptr while the failed peer
// socket's strand is released inside Boost 1.74's
// reactive_socket_move_accept_op (tried: the strand as any_io_executor, same
// report). Not seen in the release build, where this test runs; the cause is
// open (docs/reliability.md).

TEST_CASE("out of file descriptors: the accept loop backs off, the log stays small, health answers after") {
  if (testing::kSanitizerBuild) {
    MESSAGE("skipped in the sanitizer build: see the comment above this test");
    return;
  }
  testing::Daemon d;
  REQUIRE_MESSAGE(d.started(), d.log());
  int pid = DaemonPid(d.db_path());
  REQUIRE(pid > 0);
  // `ulimit -n 256` on the running daemon.
  rlimit lim{256, 256};
  REQUIRE(prlimit(pid, RLIMIT_NOFILE, &lim, nullptr) == 0);
  // This process needs more than 400 descriptors of its own.
  rlimit mine{};
  getrlimit(RLIMIT_NOFILE, &mine);
  if (mine.rlim_cur < 1024) {
    mine.rlim_cur = std::min<rlim_t>(1024, mine.rlim_max);
    setrlimit(RLIMIT_NOFILE, &mine);
  }
  REQUIRE(mine.rlim_cur >= 500);

  size_t lines_before = CountLines(d.log());
  boost::asio::io_context ioc;
  std::vector<std::unique_ptr<boost::asio::ip::tcp::socket>> idle;
  for (int i = 0; i < 400; ++i) {
    auto s = std::make_unique<boost::asio::ip::tcp::socket>(ioc);
    boost::system::error_code ec;
    s->connect({boost::asio::ip::make_address("127.0.0.1"), d.port()}, ec);
    if (!ec) idle.push_back(std::move(s));
  }
  CHECK(idle.size() == 400);  // the kernel's backlog holds those the daemon cannot accept
  // 3 s of exhaustion: at most one accept line a second, plus slack.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  std::string log = d.log();
  size_t grown = CountLines(log) - lines_before;
  MESSAGE("log lines in 3 s out of descriptors: " << grown);
  CHECK(log.find("Too many open files") != std::string::npos);  // the limit was reached
  CHECK(grown <= 8);
  idle.clear();  // the clients go away
  auto t0 = std::chrono::steady_clock::now();
  CHECK(testing::Eventually([&] { return d.Get("/healthz").status == 200; }, std::chrono::seconds(20)));
  MESSAGE("healthz answered " << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()
                              << " s after the idle clients closed");
  // Accepting works normally again.
  for (int i = 0; i < 20; ++i) CHECK(d.Get("/healthz").status == 200);
  CHECK(d.Stop() == 0);
}

TEST_CASE("config: the admission and body-memory options, their defaults and their rules") {
  std::string dir = testing::MakeTempDir();
  std::string out, err;
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name) << text;
    return dir + "/" + name;
  };
  // Defaults (docs/configuration.md).
  REQUIRE(testing::RunDrainwise({"config", "show", write("empty.json", "{}")}, &out, &err) == 0);
  CHECK(out.find("\"read_workers\": 2") != std::string::npos);
  CHECK(out.find("\"read_queue_limit\": 32") != std::string::npos);
  CHECK(out.find("\"body_memory_limit_bytes\": 268435456") != std::string::npos);
  // Unset, the cap grows with a larger body limit (one largest body always fits).
  REQUIRE(testing::RunDrainwise({"config", "show", write("big.json", R"({"server":{"body_limit_bytes":500000000}})")},
                                &out, &err) == 0);
  CHECK(out.find("\"body_memory_limit_bytes\": 500000000") != std::string::npos);
  // Set below the body limit: refused, naming the field and the rule.
  auto small = write("small.json", R"({"server":{"body_limit_bytes":100000,"body_memory_limit_bytes":50000}})");
  CHECK(testing::RunDrainwise({"config", "check", small}, &out, &err) == 1);
  CHECK(err.find("server.body_memory_limit_bytes") != std::string::npos);
  CHECK(err.find("body_limit_bytes") != std::string::npos);
  auto zero = write("zero.json", R"({"server":{"read_workers":0}})");
  CHECK(testing::RunDrainwise({"config", "check", zero}, &out, &err) == 1);
  CHECK(err.find("server.read_workers") != std::string::npos);
  std::filesystem::remove_all(dir);
}
