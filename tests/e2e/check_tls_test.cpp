// `drainwise check` and `drainwise calibrate` through the CLI's one HTTP
// client: https with a CA file, host name verification, bearer tokens from a
// file or the environment, against the real daemon with TLS and tokens on.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "testing/daemon.h"

using namespace drainwise;

namespace {

// Runs `cmd` with its own redirections intact; what is left goes nowhere.
int Sh(const std::string& cmd) { return std::system(("{ " + cmd + "; } >/dev/null 2>&1").c_str()); }

// A test CA, a server certificate it signs for IP 127.0.0.1 only (so the name
// "localhost" does not match it), and an unrelated self-signed certificate.
// EC keys: quick to generate. False when the openssl CLI is missing.
bool MakeCertificates(const std::string& dir) {
  const std::string ec = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  {
    std::ofstream ext(dir + "/ext.cnf");
    ext << "subjectAltName=IP:127.0.0.1\n";
  }
  return Sh("openssl req -x509" + ec + " -keyout " + dir + "/ca.key -out " + dir +
            "/ca.pem -days 1 -subj /CN=drainwise-test-ca") == 0 &&
         Sh("openssl req" + ec + " -keyout " + dir + "/key.pem -out " + dir + "/server.csr -subj /CN=drainwise-test") ==
             0 &&
         Sh("openssl x509 -req -in " + dir + "/server.csr -CA " + dir + "/ca.pem -CAkey " + dir +
            "/ca.key -CAcreateserial -days 1 -out " + dir + "/cert.pem -extfile " + dir + "/ext.cnf") == 0 &&
         Sh("openssl req -x509" + ec + " -keyout " + dir + "/other.key -out " + dir +
            "/other.pem -days 1 -subj /CN=someone-else") == 0;
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

// Restores (unsets) DRAINWISE_TOKEN when the test case ends, whatever happens.
struct TokenEnv {
  explicit TokenEnv(const std::string& value) { setenv("DRAINWISE_TOKEN", value.c_str(), 1); }
  ~TokenEnv() { unsetenv("DRAINWISE_TOKEN"); }
};

}  // namespace

TEST_CASE("check and calibrate reach a daemon with TLS and tokens on") {
  std::string dir = testing::MakeTempDir();
  if (!MakeCertificates(dir)) {
    MESSAGE("openssl CLI missing: skipped");
    return;
  }
  // The tokens file holds the hash that `drainwise hash-token` prints.
  const std::string token = "check-tls-operator-token-0123456789";
  WriteFile(dir + "/token", token + "\n");
  REQUIRE(Sh(std::string("'") + DRAINWISE_BINARY + "' hash-token --role operator --name ci < " + dir + "/token > " +
             dir + "/tokens") == 0);
  WriteFile(dir + "/config.json", R"({"server":{"tls_cert":")" + dir + R"(/cert.pem","tls_key":")" + dir +
                                      R"(/key.pem","tokens_file":")" + dir + R"(/tokens"}})");
  testing::Daemon d({"--config", dir + "/config.json"}, dir);
  REQUIRE_MESSAGE(d.started(), d.log());
  const std::string port = std::to_string(d.port());
  const std::string server = "https://127.0.0.1:" + port;
  const std::vector<std::string> spine = {"--switch", "p1-spine0", "--retries", "0"};
  auto check = [&](std::vector<std::string> extra, std::string* out, std::string* err) {
    std::vector<std::string> args = {"check"};
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), spine.begin(), spine.end());
    return testing::RunDrainwise(args, out, err);
  };
  std::string out, err;
  // One daemon for every case (no SUBCASE: each would start it again).

  {
    INFO("a token from a file");
    CHECK(check({"--server", server, "--ca-file", dir + "/ca.pem", "--token-file", dir + "/token"}, &out, &err) == 0);
    CHECK_MESSAGE(out.rfind("ALLOW", 0) == 0, out, err);  // the text table, fetched over TLS too
    // A leaf with a priority job behind it: deny is 1, over TLS as over HTTP.
    CHECK(testing::RunDrainwise({"check", "--server", server, "--ca-file", dir + "/ca.pem", "--token-file",
                                 dir + "/token", "--switch", "p0-leaf3-r0"},
                                &out, &err) == 1);
    CHECK(out.rfind("DENY", 0) == 0);
  }
  {
    INFO("a token from the environment");
    TokenEnv env(token);
    CHECK(check({"--server", server, "--ca-file", dir + "/ca.pem", "--format", "json"}, &out, &err) == 0);
    auto j = nlohmann::json::parse(out, nullptr, false);
    REQUIRE_MESSAGE(j.is_object(), out, err);
    CHECK(j["verdict"] == "allow");
  }
  {
    INFO("no token, or a wrong one: 401, named, exit 2");
    CHECK(check({"--server", server, "--ca-file", dir + "/ca.pem"}, &out, &err) == 2);
    CHECK_MESSAGE(err.find("401") != std::string::npos, err);
    CHECK(err.find("--token-file") != std::string::npos);
    TokenEnv env("not-the-token-at-all-0000000000");
    CHECK(check({"--server", server, "--ca-file", dir + "/ca.pem"}, &out, &err) == 2);
    CHECK_MESSAGE(err.find("401") != std::string::npos, err);
  }
  {
    INFO("a token file that cannot be read is named");
    CHECK(check({"--server", server, "--ca-file", dir + "/ca.pem", "--token-file", dir + "/missing"}, &out, &err) == 2);
    CHECK_MESSAGE(err.find(dir + "/missing") != std::string::npos, err);
  }
  {
    INFO("a CA that did not sign the daemon's certificate: refused, said so, exit 2");
    CHECK(check({"--server", server, "--ca-file", dir + "/other.pem", "--token-file", dir + "/token"}, &out, &err) ==
          2);
    CHECK_MESSAGE(err.find("certificate is not trusted") != std::string::npos, err);
    CHECK(err.find("TLS handshake") != std::string::npos);
    // Without --ca-file the system store does not know the test CA either.
    CHECK(check({"--server", server, "--token-file", dir + "/token"}, &out, &err) == 2);
    CHECK_MESSAGE(err.find("certificate is not trusted") != std::string::npos, err);
  }
  {
    INFO("the certificate must name the host in the URL");
    // The certificate is for 127.0.0.1 only; "localhost" reaches the same
    // daemon under a name the certificate does not carry.
    CHECK(check({"--server", "https://localhost:" + port, "--ca-file", dir + "/ca.pem", "--token-file", dir + "/token"},
                &out, &err) == 2);
    CHECK_MESSAGE(err.find("not for 'localhost'") != std::string::npos, err);
  }
  {
    INFO("usage errors name the option");
    CHECK(check({"--server", "http://127.0.0.1:" + port, "--ca-file", dir + "/ca.pem"}, &out, &err) == 2);
    CHECK_MESSAGE(err.find("--ca-file") != std::string::npos, err);
    CHECK(check({"--server", server, "--ca-file", dir + "/nope.pem"}, &out, &err) == 2);
    CHECK_MESSAGE(err.find(dir + "/nope.pem") != std::string::npos, err);
    CHECK(check({"--server", "https://127.0.0.1:x"}, &out, &err) == 2);
    CHECK_MESSAGE(err.find("--server") != std::string::npos, err);
    // Plain http to the TLS port gets no HTTP answer: an error, not a verdict.
    CHECK(check({"--server", "http://127.0.0.1:" + port, "--token-file", dir + "/token", "--timeout", "10"}, &out,
                &err) == 2);
    CHECK_MESSAGE(err.find("does the daemon serve https?") != std::string::npos, err);
  }
  {
    INFO("calibrate uses the same client");
    CHECK(testing::RunDrainwise({"calibrate", "--server", server, "--ca-file", dir + "/ca.pem"}, &out, &err) == 1);
    CHECK_MESSAGE(err.find("401") != std::string::npos, err);
    // With the token the request reaches the daemon over TLS and is judged
    // there: fitting the calibration needs the admin role (as replacing it
    // does), so an operator token gets the daemon's 403, not a transport error.
    int rc = testing::RunDrainwise(
        {"calibrate", "--server", server, "--ca-file", dir + "/ca.pem", "--token-file", dir + "/token"}, &out, &err);
    CHECK_MESSAGE(rc == 1, err);
    CHECK_MESSAGE(err.find("403") != std::string::npos, err);
    CHECK_MESSAGE(err.find("admin") != std::string::npos, err);
    CHECK(err.find("401") == std::string::npos);
    CHECK(testing::RunDrainwise({"calibrate", "--server", server, "--ca-file", dir + "/other.pem"}, &out, &err) == 2);
    CHECK_MESSAGE(err.find("certificate is not trusted") != std::string::npos, err);
  }
  d.Stop();
  std::filesystem::remove_all(dir);
}
