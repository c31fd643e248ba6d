// HTTPS: the daemon with a certificate answers TLS and refuses plain HTTP.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "testing/daemon.h"

using namespace drainwise;

namespace {
std::string Run(const std::string& cmd, int* rc) {
  std::string out = testing::MakeTempDir() + "/out";
  *rc = std::system((cmd + " >" + out + " 2>/dev/null").c_str());
  std::ifstream in(out);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

TEST_CASE("TLS with a configured certificate") {
  std::string dir = testing::MakeTempDir();
  int rc = 0;
  Run("openssl req -x509 -newkey rsa:2048 -nodes -keyout " + dir + "/key.pem -out " + dir +
          "/cert.pem -days 1 -subj /CN=localhost",
      &rc);
  if (rc != 0) {
    MESSAGE("openssl CLI missing: skipped");
    return;
  }
  {
    std::ofstream cfg(dir + "/config.json");
    cfg << R"({"server":{"tls_cert":")" << dir << R"(/cert.pem","tls_key":")" << dir << R"(/key.pem"}})";
  }
  testing::Daemon d({"--config", dir + "/config.json"}, dir);
  REQUIRE_MESSAGE(d.started(), d.log());
  std::string base = "127.0.0.1:" + std::to_string(d.port());
  auto body = Run("curl -sk --max-time 20 https://" + base + "/healthz", &rc);
  CHECK(rc == 0);
  CHECK(body.find("\"ok\"") != std::string::npos);
  // Plain HTTP on the TLS port gets no HTTP answer.
  auto plain = d.Get("/healthz");
  CHECK(plain.status != 200);
  d.Stop();
  std::filesystem::remove_all(dir);
}

TEST_CASE("a bad certificate path stops the daemon with the path named") {
  std::string dir = testing::MakeTempDir();
  {
    std::ofstream cfg(dir + "/config.json");
    cfg << R"({"server":{"tls_cert":"/nonexistent/cert.pem","tls_key":"/nonexistent/key.pem"}})";
  }
  std::string out, err;
  CHECK(testing::RunDrainwise(
            {"serve", "--config", dir + "/config.json", "--listen", "127.0.0.1:0", "--db", dir + "/d.db"}, &out,
            &err) == 1);
  CHECK(err.find("/nonexistent/cert.pem") != std::string::npos);
  std::filesystem::remove_all(dir);
}
