// The database path unusable: the daemon must say which path and why, exit 1
// (so systemd's restart limit stops a loop, with the reason in the journal),
// never crash. CI runs as root, and root ignores permission bits, so the
// cases use failures that hold for root too: a missing parent directory, a
// parent that is a regular file, a path that is a directory, and the
// immutable attribute (chattr +i; skipped where the file system or the
// capabilities do not allow it).
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "testing/daemon.h"

using namespace drainwise;

namespace {

struct Run {
  int exit_code = -1;  // 124: still running after the bound (it should not be)
  std::string err;
  double seconds = 0;
};

// `drainwise serve --db db`, bounded to 30 s by timeout(1).
Run Serve(const std::string& dir, const std::string& db) {
  std::string cmd = std::string("timeout -s KILL 30 '") + DRAINWISE_BINARY + "' serve --listen 127.0.0.1:0 --db '" +
                    db + "' >/dev/null 2>'" + dir + "/err'";
  auto t0 = std::chrono::steady_clock::now();
  int rc = std::system(cmd.c_str());
  Run r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.exit_code = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
  std::ifstream in(dir + "/err");
  std::stringstream ss;
  ss << in.rdbuf();
  r.err = ss.str();
  return r;
}

bool Chattr(const std::string& flag, const std::string& path) {
  return std::system(("chattr " + flag + " '" + path + "' 2>/dev/null").c_str()) == 0;
}

}  // namespace

TEST_CASE("an unusable database path: exit 1 with the path named, at once") {
  std::string dir = testing::MakeTempDir();
  std::ofstream(dir + "/plain-file") << "x";
  std::filesystem::create_directory(dir + "/a-directory");
  struct Case {
    const char* what;
    std::string db;
  } cases[] = {
      {"parent directory removed", dir + "/removed/d.db"},
      {"parent is a regular file", dir + "/plain-file/d.db"},
      {"the path is a directory", dir + "/a-directory"},
  };
  for (const auto& c : cases) {
    INFO(c.what << ": " << c.db);
    auto r = Serve(dir, c.db);
    CHECK(r.exit_code == 1);
    CHECK(r.err.find(c.db) != std::string::npos);
    CHECK(r.err.find("error") != std::string::npos);
    CHECK(r.seconds < 10);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("a read-only (immutable) database: refused at start, 5xx while running, recovered after") {
  std::string dir = testing::MakeTempDir();
  std::string db_dir = dir + "/state";
  std::filesystem::create_directory(db_dir);
  if (!Chattr("+i", db_dir)) {
    MESSAGE("chattr +i is not available here (file system or capability): skipped");
    std::filesystem::remove_all(dir);
    return;
  }
  // A new database in an immutable directory cannot be created.
  auto r = Serve(dir, db_dir + "/d.db");
  CHECK(r.exit_code == 1);
  CHECK(r.err.find(db_dir + "/d.db") != std::string::npos);
  REQUIRE(Chattr("-i", db_dir));

  {
    // Running, then the database becomes immutable: writes fail with a
    // problem that names the database, reads and health go on, and writes
    // work again once the attribute is gone.
    testing::Daemon d({}, db_dir);
    REQUIRE_MESSAGE(d.started(), d.log());
    REQUIRE(d.Call("POST", "/v1/drains", R"({"drain":{"switches":["p0-spine1"]}})").status == 201);
    REQUIRE(Chattr("+i", d.db_path()));
    REQUIRE(Chattr("+i", d.db_path() + "-wal"));
    auto w = d.Call("POST", "/v1/drains", R"({"drain":{"switches":["p0-spine2"]}})");
    // The background write probe (every 2 s) notices on its own, with no
    // request needed: it says so once, and /readyz says not ready (from the
    // probe's last result: it never waits on the store).
    bool noticed = testing::Eventually(
        [&] { return d.log().find("database " + d.db_path() + ": write probe") != std::string::npos; },
        std::chrono::seconds(10));
    auto not_ready = d.Get("/readyz");
    Chattr("-i", d.db_path());
    Chattr("-i", d.db_path() + "-wal");
    CHECK(w.status >= 500);
    CHECK(w.headers["content-type"] == "application/problem+json");
    CHECK(noticed);
    CHECK(not_ready.status == 503);
    CHECK(not_ready.Json().value("detail", "").find("the store cannot write") != std::string::npos);
    CHECK(not_ready.Json().value("detail", "").find(d.db_path()) != std::string::npos);
    CHECK(d.Get("/healthz").status == 200);
    CHECK(d.Get("/v1/drains").status == 200);
    CHECK(d.Call("POST", "/v1/drains", R"({"drain":{"switches":["p0-spine3"]}})").status == 201);
    CHECK(testing::Eventually([&] { return d.log().find("database writable again") != std::string::npos; },
                              std::chrono::seconds(10)));
    CHECK(d.Get("/readyz").status == 200);
    CHECK(d.Stop() == 0);
  }
  // An existing database made immutable: refused at start with its path.
  REQUIRE(Chattr("+i", db_dir + "/d.db"));
  REQUIRE(Chattr("+i", db_dir));
  r = Serve(dir, db_dir + "/d.db");
  Chattr("-i", db_dir);
  Chattr("-i", db_dir + "/d.db");
  CHECK(r.exit_code == 1);
  CHECK(r.err.find(db_dir + "/d.db") != std::string::npos);
  std::filesystem::remove_all(dir);
}
