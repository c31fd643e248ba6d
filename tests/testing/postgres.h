// A throw-away PostgreSQL cluster for tests: initdb in a temporary
// directory, a free loopback port, password authentication over TCP
// (scram-sha-256), run as `nobody` when the tests run as root (the server
// refuses root), stopped and removed when the test binary exits. One cluster
// per test binary (initdb takes seconds); each test takes a fresh database.
//
// The server binaries are looked for in $DRAINWISE_PG_BIN, then
// /usr/lib/postgresql/<newest>/bin, then $PATH. Only when they are missing
// does Shared() return null (the caller skips, saying why); a cluster that
// fails to start is an error with its log.
#pragma once

#include <string>
#include <vector>

namespace drainwise::testing {

class PostgresCluster {
 public:
  // The cluster of this test binary, started on first use. Null when the
  // server binaries are not installed or the cluster did not start; `*why`
  // says which, and `*missing` is true only in the first case.
  static PostgresCluster* Shared(std::string* why, bool* missing = nullptr);
  ~PostgresCluster();
  PostgresCluster(const PostgresCluster&) = delete;
  PostgresCluster& operator=(const PostgresCluster&) = delete;

  // A new, empty database; returns its URL with the password in it.
  std::string NewDatabase();
  // postgresql://drainwise[:password]@127.0.0.1:<port>/<db>
  std::string Url(const std::string& db, bool with_password = true) const;
  const std::string& password() const { return password_; }
  // A file holding the password (for store.password_file).
  const std::string& password_file() const { return password_file_; }
  unsigned short port() const { return port_; }

  // pg_ctl stop -m fast / start on the same port (the database-down tests).
  bool Stop();
  bool Start();
  std::string log() const;

 private:
  PostgresCluster() = default;
  bool Init(std::string* why);
  int Run(const std::string& command) const;  // as the cluster's user

  std::string bin_;
  std::string dir_;
  std::string password_ = "drainwise-test-pw";
  std::string password_file_;
  unsigned short port_ = 0;
  bool as_nobody_ = false;
  int databases_ = 0;
};

// The store backends a parametrised store test runs on: "sqlite" always,
// "postgresql" when the server binaries are installed (otherwise a message
// says the PostgreSQL half is skipped and why).
struct StoreBackend {
  std::string name;
  // A fresh database for Store::Open: ":memory:" or a file in `dir` (when
  // given) for SQLite, a new database's URL for PostgreSQL.
  std::string NewDatabase(const std::string& dir = "") const;
};
std::vector<StoreBackend> StoreBackends();

}  // namespace drainwise::testing

// Runs the enclosing test case once per backend, as a doctest subcase each:
//   FOR_EACH_STORE_BACKEND(backend) { auto s = Store::Open(backend.NewDatabase()); … }
#define FOR_EACH_STORE_BACKEND(b) \
  for (const auto& b : ::drainwise::testing::StoreBackends()) SUBCASE(b.name.c_str())
