// drainwise config check FILE: what the systemd unit's ExecStartPre and
// packaging/deb-test.sh rely on. 0 valid, 1 invalid (naming the fault), 2 usage.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "testing/daemon.h"

using namespace drainwise;

namespace {
std::string Write(const std::string& dir, const std::string& name, const std::string& text) {
  std::string path = dir + "/" + name;
  std::ofstream(path) << text;
  return path;
}
}  // namespace

TEST_CASE("config check: valid, invalid field, missing policy file, bad policy, usage") {
  std::string dir = testing::MakeTempDir();
  std::string policy = Write(dir, "policy.json", R"({"format":"drainwise.policy/v1","name":"p1"})");
  std::string out, err;

  auto good = Write(dir, "good.json",
                    R"({"listen":"127.0.0.1:9","db":")" + dir + R"(/x.db","policy_file":")" + policy + R"("})");
  CHECK(testing::RunDrainwise({"config", "check", good}, &out, &err) == 0);
  CHECK(out.find("valid (listen 127.0.0.1:9") != std::string::npos);
  CHECK(out.find("policy 'p1' from " + policy) != std::string::npos);
  // check opens no database: a dry run must not create one.
  CHECK(!std::filesystem::exists(dir + "/x.db"));

  auto unknown = Write(dir, "unknown.json", R"({"server":{"queue_limt":3}})");
  CHECK(testing::RunDrainwise({"config", "check", unknown}, &out, &err) == 1);
  CHECK(err.find("queue_limt") != std::string::npos);

  auto missing = Write(dir, "missing.json", R"({"policy_file":")" + dir + R"(/nope.json"})");
  CHECK(testing::RunDrainwise({"config", "check", missing}, &out, &err) == 1);
  CHECK(err.find(dir + "/nope.json") != std::string::npos);

  std::string bad_policy = Write(dir, "bad-policy.json", R"({"format":"drainwise.policy/v1","nmae":"x"})");
  auto with_bad = Write(dir, "with-bad.json", R"({"policy_file":")" + bad_policy + R"("})");
  CHECK(testing::RunDrainwise({"config", "check", with_bad}, &out, &err) == 1);
  CHECK(err.find("nmae") != std::string::npos);

  auto tls_half = Write(dir, "tls.json", R"({"server":{"tls_cert":")" + policy + R"("}})");
  CHECK(testing::RunDrainwise({"config", "check", tls_half}, &out, &err) == 1);
  CHECK(err.find("tls_key") != std::string::npos);

  CHECK(testing::RunDrainwise({"config", "check"}, &out, &err) == 2);
  CHECK(testing::RunDrainwise({"config", "show", good}, &out, &err) == 0);
  CHECK(out.find("\"queue_limit\": 16") != std::string::npos);  // defaults filled in
  std::filesystem::remove_all(dir);
}

TEST_CASE("config check validates sources with the message serve gives") {
  std::string dir = testing::MakeTempDir();
  std::string out, err, serve_out, serve_err;
  auto bad = Write(dir, "bad-sources.json",
                   R"({"sources":[{"name":"nb","kind":"netbox","url":"http://127.0.0.1:9/","refresh_s":-1}]})");
  CHECK(testing::RunDrainwise({"config", "check", bad}, &out, &err) == 1);
  CHECK(err.find("refresh_s") != std::string::npos);
  std::string message = err.substr(0, err.find('\n'));
  REQUIRE(!message.empty());
  CHECK(testing::RunDrainwise({"serve", "--config", bad, "--db", dir + "/d.db", "--listen", "127.0.0.1:0"}, &serve_out,
                              &serve_err) == 1);
  CHECK_MESSAGE(serve_err.find(message) != std::string::npos, "serve said: " << serve_err);

  auto kind = Write(dir, "bad-kind.json", R"({"sources":[{"name":"x","kind":"nosuch","path":"/nonexistent"}]})");
  CHECK(testing::RunDrainwise({"config", "check", kind}, &out, &err) == 1);
  CHECK(err.find("nosuch") != std::string::npos);
  message = err.substr(0, err.find('\n'));
  CHECK(testing::RunDrainwise({"serve", "--config", kind, "--db", dir + "/d.db", "--listen", "127.0.0.1:0"}, &serve_out,
                              &serve_err) == 1);
  CHECK_MESSAGE(serve_err.find(message) != std::string::npos, "serve said: " << serve_err);

  auto good = Write(dir, "good-sources.json",
                    R"({"sources":[{"name":"t","kind":"native","path":")" + dir + R"(/topology.json"}]})");
  CHECK(testing::RunDrainwise({"config", "check", good}, &out, &err) == 0);
  CHECK(out.find("1 sources") != std::string::npos);
  std::filesystem::remove_all(dir);
}
