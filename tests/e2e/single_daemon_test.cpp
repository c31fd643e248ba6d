// One daemon per database: a second `drainwise serve` on a database another
// daemon holds exits 1 at once, naming the database and the running daemon
// (pid and address); the first keeps serving, and once it stops the
// database can be served again.
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <regex>

#include "testing/daemon.h"

using namespace drainwise;

namespace {

struct Run {
  int exit_code = -1;
  std::string err;
  double seconds = 0;
};

// `drainwise serve` on `db`, bounded to 30 s by timeout(1): a second daemon
// that wrongly starts is killed (exit 137) instead of hanging the test.
Run Serve(const std::string& dir, const std::string& db) {
  std::string cmd = std::string("timeout -s KILL 30 '") + DRAINWISE_BINARY + "' serve --listen 127.0.0.1:0 --db '" +
                    db + "' >/dev/null 2>'" + dir + "/second.err'";
  auto t0 = std::chrono::steady_clock::now();
  int rc = std::system(cmd.c_str());
  Run r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.exit_code = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
  r.err = testing::ReadFile(dir + "/second.err");
  return r;
}

}  // namespace

TEST_CASE("a second serve on the same database is refused; the first keeps serving") {
  std::string dir = testing::MakeTempDir();
  {
    testing::Daemon first({}, dir);
    REQUIRE_MESSAGE(first.started(), first.log());
    REQUIRE(first.Call("POST", "/v1/drains", R"({"drain":{"switches":["p0-spine1"]}})").status == 201);

    auto second = Serve(dir, first.db_path());
    INFO(second.err);
    CHECK(second.exit_code == 1);
    CHECK(second.seconds < 10);
    CHECK(second.err.find(first.db_path()) != std::string::npos);
    CHECK(second.err.find("in use by another drainwise serve") != std::string::npos);
    // The running daemon, by the address it really listens on...
    CHECK(second.err.find("listening on 127.0.0.1:" + std::to_string(first.port())) != std::string::npos);
    // ...and by a pid that is a live drainwise serve.
    std::smatch m;
    REQUIRE(std::regex_search(second.err, m, std::regex("pid ([0-9]+)")));
    std::string cmdline = testing::ReadFile("/proc/" + m[1].str() + "/cmdline");
    CHECK(cmdline.find("serve") != std::string::npos);
    CHECK(cmdline.find(first.db_path()) != std::string::npos);

    // The first one is untouched: it answers, reads and writes.
    CHECK(first.Get("/healthz").status == 200);
    CHECK(first.Get("/v1/drains").Json()["drains"].size() == 1);
    CHECK(first.Call("POST", "/v1/drains", R"({"drain":{"switches":["p0-spine2"]}})").status == 201);
    CHECK(first.Stop() == 0);
  }
  // Stopped, the database is free: a new daemon serves both drains.
  testing::Daemon again({}, dir);
  REQUIRE_MESSAGE(again.started(), again.log());
  CHECK(again.Get("/v1/drains").Json()["drains"].size() == 2);
  CHECK(again.Stop() == 0);
  std::filesystem::remove_all(dir);
}
