// One daemon per database: Store::Open takes an exclusive lock on
// "<db>.lock"; a second Open fails naming the database and the holder.
// flock locks belong to the open file, so two Opens in one process
// conflict just as two processes do.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>

#include "store/store.h"
#include "testing/daemon.h"

using namespace drainwise;

TEST_CASE("a second Open of a file database is refused, naming the database and the holder") {
  std::string dir = testing::MakeTempDir();
  std::string path = dir + "/s.db";
  auto first = store::Store::Open(path, {.listen_address = "127.0.0.1:8080"});
  REQUIRE(first.has_value());
  CHECK(testing::ReadFile(store::LockPath(path)) ==
        "pid " + std::to_string(getpid()) + ", listening on 127.0.0.1:8080\n");

  auto second = store::Store::Open(path, {.listen_address = "127.0.0.1:9090"});
  REQUIRE_FALSE(second.has_value());
  CHECK(second.error().code == ErrorCode::kConflict);
  const auto& msg = second.error().message;
  CHECK(msg.find(path) != std::string::npos);
  CHECK(msg.find("pid " + std::to_string(getpid())) != std::string::npos);
  CHECK(msg.find("listening on 127.0.0.1:8080") != std::string::npos);

  // The address actually bound (port 0 resolved) replaces the configured one.
  REQUIRE((*first)->SetListenAddress("127.0.0.1:41234").has_value());
  second = store::Store::Open(path);
  REQUIRE_FALSE(second.has_value());
  CHECK(second.error().message.find("listening on 127.0.0.1:41234") != std::string::npos);

  // The first is unaffected.
  store::DocumentInfo info;
  CHECK((*first)->PutDocument(info, "{}").has_value());

  // Closed, the lock is free again (the file stays: removing it would race).
  first->reset();
  auto third = store::Store::Open(path);
  REQUIRE(third.has_value());
  CHECK((*third)->LatestDocument(store::DocKind::kTopology)->has_value());
  CHECK(std::filesystem::exists(store::LockPath(path)));
  third->reset();
  std::filesystem::remove_all(dir);
}

TEST_CASE("in-memory databases take no lock") {
  auto a = store::Store::Open(":memory:");
  auto b = store::Store::Open(":memory:");
  CHECK(a.has_value());
  CHECK(b.has_value());
  CHECK((*a)->SetListenAddress("x:1").has_value());
}

TEST_CASE("a lock file that cannot be created is an error naming the database") {
  std::string dir = testing::MakeTempDir();
  std::string path = dir + "/missing/s.db";
  auto s = store::Store::Open(path);
  REQUIRE_FALSE(s.has_value());
  CHECK(s.error().code == ErrorCode::kIo);
  CHECK(s.error().message.find(path) != std::string::npos);
  std::filesystem::remove_all(dir);
}
