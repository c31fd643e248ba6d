// Store health: ProbeWrite makes a tiny write with a short timeout, and
// StoreProber keeps the last result where /readyz can read it without
// waiting. "Cannot write" is produced for real: another connection holds
// SQLite's write lock (BEGIN EXCLUSIVE), as a stuck writer would.
#include <doctest/doctest.h>

#include <sqlite3.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <vector>

#include "store/prober.h"
#include "store/store.h"
#include "testing/daemon.h"

using namespace drainwise;
using namespace std::chrono_literals;

namespace {

// A second connection that holds the database's write lock while alive.
struct WriteLockHolder {
  sqlite3* db = nullptr;
  explicit WriteLockHolder(const std::string& path) {
    REQUIRE(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "BEGIN EXCLUSIVE;", nullptr, nullptr, nullptr) == SQLITE_OK);
  }
  void Release() {
    if (!db) return;
    sqlite3_exec(db, "COMMIT;", nullptr, nullptr, nullptr);
    sqlite3_close(db);
    db = nullptr;
  }
  ~WriteLockHolder() { Release(); }
};

}  // namespace

TEST_CASE("ProbeWrite succeeds on a healthy store and times out while another writer holds the lock") {
  std::string dir = testing::MakeTempDir();
  std::string path = dir + "/s.db";
  auto s = store::Store::Open(path, {.probe_timeout_ms = 100});
  REQUIRE(s.has_value());
  CHECK((*s)->ProbeWrite().has_value());
  {
    WriteLockHolder holder(path);
    auto t0 = std::chrono::steady_clock::now();
    auto st = (*s)->ProbeWrite();
    double waited_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    REQUIRE_FALSE(st.has_value());
    CHECK(st.error().code == ErrorCode::kUnavailable);
    CHECK(st.error().message.find(path) != std::string::npos);
    CHECK(waited_ms >= 90);   // it did wait for its timeout...
    CHECK(waited_ms < 2000);  // ...and no longer
  }
  CHECK((*s)->ProbeWrite().has_value());
  auto mem = store::Store::Open(":memory:");
  CHECK((*mem)->ProbeWrite().has_value());
  s->reset();
  std::filesystem::remove_all(dir);
}

TEST_CASE("the prober reports not writable while the store cannot write, and recovers") {
  std::string dir = testing::MakeTempDir();
  std::string path = dir + "/s.db";
  auto s = store::Store::Open(path, {.probe_timeout_ms = 50});
  REQUIRE(s.has_value());
  std::mutex mu;
  std::vector<std::string> changes;  // what on_change saw, in order
  {
    store::ProberOptions options{.interval = 20ms, .stall_after = 5000ms};
    options.on_change = [&](bool writable, const std::string& why) {
      std::lock_guard lock(mu);
      changes.push_back(writable ? "writable" : "not writable: " + why);
    };
    store::StoreProber prober(s->get(), options);
    CHECK(testing::Eventually([&] { return prober.probes() >= 1; }, 5s));
    std::string why;
    CHECK(prober.Writable(&why));
    auto holder = std::make_unique<WriteLockHolder>(path);
    CHECK(testing::Eventually([&] { return !prober.Writable(&why); }, 5s));
    CHECK(why.find(path) != std::string::npos);
    CHECK(why.find("busy") != std::string::npos);
    CHECK(prober.failures() >= 1);
    holder.reset();
    CHECK(testing::Eventually([&] { return prober.Writable(); }, 5s));
  }
  // One change each way, however many probes failed in between.
  REQUIRE(changes.size() == 2);
  CHECK(changes[0].rfind("not writable: database " + path, 0) == 0);
  CHECK(changes[1] == "writable");
  s->reset();
  std::filesystem::remove_all(dir);
}

TEST_CASE("a probe that does not return counts as not writable, and Writable never waits for it") {
  std::string dir = testing::MakeTempDir();
  std::string path = dir + "/s.db";
  {
    // The probe waits up to 3 s for the lock; after 100 ms it counts as stalled.
    auto s = store::Store::Open(path, {.probe_timeout_ms = 3000});
    REQUIRE(s.has_value());
    WriteLockHolder holder(path);
    store::StoreProber prober(s->get(), {.interval = 20ms, .stall_after = 100ms});
    std::string why;
    CHECK(testing::Eventually([&] { return !prober.Writable(&why); }, 2s));
    CHECK(why.find("has not returned") != std::string::npos);
    CHECK(prober.probes() == 0);  // the first probe is still blocked
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 1000; ++i) (void)prober.Writable(&why);
    CHECK(std::chrono::steady_clock::now() - t0 < 100ms);
    holder.Release();  // the probe returns; the prober's destructor can join
    CHECK(testing::Eventually([&] { return prober.Writable(); }, 5s));
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("an unwritable (immutable) database: the probe fails naming it; writable again after") {
  std::string dir = testing::MakeTempDir();
  std::string path = dir + "/s.db";
  auto chattr = [](const std::string& flag, const std::string& p) {
    return std::system(("chattr " + flag + " '" + p + "' 2>/dev/null").c_str()) == 0;
  };
  {
    auto s = store::Store::Open(path, {.probe_timeout_ms = 100});
    REQUIRE(s.has_value());
    REQUIRE((*s)->ProbeWrite().has_value());  // the WAL file exists from here
    if (!chattr("+i", path)) {
      MESSAGE("chattr +i is not available here (file system or capability): skipped");
    } else {
      REQUIRE(chattr("+i", path + "-wal"));
      store::StoreProber prober(s->get(), {.interval = 20ms, .stall_after = 5000ms});
      std::string why;
      bool failed = testing::Eventually([&] { return !prober.Writable(&why); }, 5s);
      chattr("-i", path);
      chattr("-i", path + "-wal");
      CHECK(failed);
      CHECK(why.find(path) != std::string::npos);
      CHECK(testing::Eventually([&] { return prober.Writable(); }, 5s));
    }
  }
  std::filesystem::remove_all(dir);
}
