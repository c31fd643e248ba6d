#include "testing/postgres.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>

#include <doctest/doctest.h>

#include "testing/daemon.h"

namespace drainwise::testing {

namespace fs = std::filesystem;

namespace {

std::string FindBinaries() {
  if (const char* env = std::getenv("DRAINWISE_PG_BIN"); env && *env) {
    return fs::exists(fs::path(env) / "initdb") ? env : "";
  }
  std::string best;
  int best_major = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    int major = std::atoi(e.path().filename().c_str());
    if (major > best_major && fs::exists(e.path() / "bin" / "postgres") && fs::exists(e.path() / "bin" / "initdb")) {
      best_major = major;
      best = (e.path() / "bin").string();
    }
  }
  if (!best.empty()) return best;
  if (const char* path = std::getenv("PATH")) {
    std::string p = path;
    size_t start = 0;
    while (start <= p.size()) {
      size_t end = p.find(':', start);
      std::string d = p.substr(start, end == std::string::npos ? std::string::npos : end - start);
      if (!d.empty() && fs::exists(fs::path(d) / "initdb") && fs::exists(fs::path(d) / "pg_ctl")) return d;
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  return "";
}

unsigned short FreeLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  unsigned short port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  ::close(fd);
  return port;
}

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::mutex g_mu;
std::unique_ptr<PostgresCluster> g_cluster;
std::string g_why;
bool g_tried = false;
bool g_missing = false;

}  // namespace

PostgresCluster* PostgresCluster::Shared(std::string* why, bool* missing) {
  std::lock_guard lock(g_mu);
  if (!g_tried) {
    g_tried = true;
    std::unique_ptr<PostgresCluster> c(new PostgresCluster());
    c->bin_ = FindBinaries();
    if (c->bin_.empty()) {
      g_missing = true;
      g_why =
          "PostgreSQL server binaries (initdb, pg_ctl, postgres) not found: install postgresql-15 "
          "(packaging/install-deps.sh) or set DRAINWISE_PG_BIN";
    } else if (c->Init(&g_why)) {
      g_cluster = std::move(c);
    } else {
      g_cluster.reset();
      c.reset();  // stops what started and removes the directory
    }
  }
  if (why) *why = g_why;
  if (missing) *missing = g_missing;
  return g_cluster.get();
}

int PostgresCluster::Run(const std::string& command) const {
  std::string cmd = as_nobody_ ? "runuser -u nobody -- " + command : command;
  int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

bool PostgresCluster::Init(std::string* why) {
  dir_ = MakeTempDir();
  as_nobody_ = ::geteuid() == 0;
  password_file_ = dir_ + "/password";
  { std::ofstream(password_file_) << password_ << "\n"; }
  if (as_nobody_) {
    // The server refuses to run as root: the cluster belongs to nobody.
    std::string chown = "chown -R nobody " + Quote(dir_);
    if (std::system(chown.c_str()) != 0) {
      *why = "cannot chown " + dir_ + " to nobody";
      return false;
    }
  }
  std::string data = dir_ + "/data";
  if (Run(Quote(bin_ + "/initdb") + " -D " + Quote(data) + " -U drainwise --pwfile=" + Quote(password_file_) +
          " --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --no-sync >" + Quote(dir_ + "/initdb.log") +
          " 2>&1") != 0) {
    *why = "initdb failed: " + ReadFile(dir_ + "/initdb.log");
    return false;
  }
  for (int attempt = 0; attempt < 3; ++attempt) {
    port_ = FreeLoopbackPort();
    {
      // Tests only: no fsync (the server is never crashed by the tests, the
      // daemons are); loopback TCP and a socket in our directory.
      std::ofstream conf(data + "/postgresql.auto.conf", std::ios::trunc);
      conf << "listen_addresses = '127.0.0.1'\n"
           << "port = " << port_ << "\n"
           << "unix_socket_directories = '" << dir_ << "'\n"
           << "fsync = off\nfull_page_writes = off\nmax_connections = 200\nshared_buffers = 16MB\n";
    }
    if (as_nobody_) (void)std::system(("chown nobody " + Quote(data + "/postgresql.auto.conf")).c_str());
    if (Start()) {
      // A test binary killed before its destructors run (a ctest timeout)
      // must not leave the cluster behind: a watchdog shell stops and
      // removes it once this process is gone.
      std::string stop = (as_nobody_ ? "runuser -u nobody -- " : "") + Quote(bin_ + "/pg_ctl") + " -D " +
                         Quote(dir_ + "/data") + " -m immediate -w stop";
      std::string inner = "while kill -0 " + std::to_string(::getpid()) + " 2>/dev/null; do sleep 1; done; " + stop +
                          "; rm -rf " + Quote(dir_);
      // setsid: out of this process group, which a test runner may kill whole.
      std::string watchdog = "setsid sh -c " + Quote(inner) + " >/dev/null 2>&1 </dev/null &";
      (void)std::system(watchdog.c_str());
      return true;
    }
  }
  *why = "the PostgreSQL cluster did not start: " + log();
  return false;
}

PostgresCluster::~PostgresCluster() {
  if (!dir_.empty()) {
    Run(Quote(bin_ + "/pg_ctl") + " -D " + Quote(dir_ + "/data") + " -m immediate -w stop >/dev/null 2>&1");
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
}

bool PostgresCluster::Start() {
  return Run(Quote(bin_ + "/pg_ctl") + " -D " + Quote(dir_ + "/data") + " -l " + Quote(dir_ + "/server.log") +
             " -w -t 60 start >/dev/null 2>&1") == 0;
}

bool PostgresCluster::Stop() {
  return Run(Quote(bin_ + "/pg_ctl") + " -D " + Quote(dir_ + "/data") + " -m fast -w -t 60 stop >/dev/null 2>&1") == 0;
}

std::string PostgresCluster::log() const { return ReadFile(dir_ + "/server.log"); }

std::string PostgresCluster::Url(const std::string& db, bool with_password) const {
  return "postgresql://drainwise" + (with_password ? ":" + password_ : std::string()) +
         "@127.0.0.1:" + std::to_string(port_) + "/" + db;
}

std::string PostgresCluster::NewDatabase() {
  std::string name;
  {
    std::lock_guard lock(g_mu);
    name = "t" + std::to_string(::getpid()) + "_" + std::to_string(++databases_);
  }
  // Over the cluster's own socket, as its owner: no password needed.
  int rc = Run(Quote(bin_ + "/createdb") + " -h " + Quote(dir_) + " -p " + std::to_string(port_) +
               " -U drainwise -S file_copy " + name + " >>" + Quote(dir_ + "/createdb.log") + " 2>&1");
  if (rc != 0) return "";
  return Url(name);
}

std::string StoreBackend::NewDatabase(const std::string& dir) const {
  if (name == "postgresql") {
    auto* pg = PostgresCluster::Shared(nullptr);
    std::string url = pg ? pg->NewDatabase() : "";
    REQUIRE_MESSAGE(!url.empty(), "createdb failed");
    return url;
  }
  return dir.empty() ? ":memory:" : dir + "/s.db";
}

std::vector<StoreBackend> StoreBackends() {
  std::vector<StoreBackend> out = {{"sqlite"}};
  std::string why;
  bool missing = false;
  if (PostgresCluster::Shared(&why, &missing)) {
    out.push_back({"postgresql"});
  } else if (missing) {
    static std::once_flag said;
    std::call_once(said, [&] { MESSAGE("PostgreSQL half of the store tests skipped: " << why); });
  } else {
    FAIL_CHECK("PostgreSQL cluster for the tests: " << why);
  }
  return out;
}

}  // namespace drainwise::testing
