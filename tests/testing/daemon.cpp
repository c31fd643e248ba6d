#include "testing/daemon.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <boost/asio.hpp>
#include <boost/beast.hpp>

namespace drainwise::testing {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;

nlohmann::json HttpReply::Json() const { return nlohmann::json::parse(body, nullptr, false); }

HttpReply HttpCall(unsigned short port, const std::string& method, const std::string& target, const std::string& body,
                   const std::map<std::string, std::string>& headers) {
  HttpReply reply;
  try {
    net::io_context ioc;
    beast::tcp_stream stream(ioc);
    stream.expires_after(std::chrono::seconds(60));
    stream.connect(net::ip::tcp::endpoint(net::ip::make_address("127.0.0.1"), port));
    http::request<http::string_body> req{http::string_to_verb(method), target, 11};
    req.set(http::field::host, "127.0.0.1");
    for (const auto& [k, v] : headers) req.set(k, v);
    if (!body.empty()) {
      req.body() = body;
      if (!headers.count("Content-Type")) req.set(http::field::content_type, "application/json");
    }
    req.prepare_payload();
    http::write(stream, req);
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(1ull << 30);
    http::read(stream, buffer, parser);
    auto res = parser.release();
    reply.status = static_cast<int>(res.result_int());
    reply.body = std::move(res.body());
    for (const auto& f : res) {
      std::string name(f.name_string());
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      reply.headers[name] = std::string(f.value());
    }
    beast::error_code ec;
    stream.socket().shutdown(net::ip::tcp::socket::shutdown_both, ec);
  } catch (const std::exception& e) {
    reply.status = -1;
    reply.body = e.what();
  }
  return reply;
}

std::string MakeTempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "drainwise-test-XXXXXX").string();
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) throw std::runtime_error("mkdtemp failed");
  return buf.data();
}

namespace {
std::string WithoutLeakCheck() {
  const char* current = std::getenv("ASAN_OPTIONS");
  std::string options = current ? current : "";
  return options + (options.empty() ? "" : ":") + "detect_leaks=0";
}
}  // namespace

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool Eventually(const std::function<bool()>& pred, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return pred();
}

Daemon::Daemon(std::vector<std::string> args, std::string dir) : dir_(std::move(dir)) {
  if (dir_.empty()) {
    dir_ = MakeTempDir();
    own_dir_ = true;
  }
  std::string port_file = dir_ + "/port";
  std::filesystem::remove(port_file);
  std::vector<std::string> argv = {DRAINWISE_BINARY, "serve", "--listen", "127.0.0.1:0", "--port-file", port_file};
  // A "--db" among `args` (a PostgreSQL URL) replaces the default SQLite file.
  if (std::find(args.begin(), args.end(), "--db") == args.end()) {
    argv.push_back("--db");
    argv.push_back(db_path());
  }
  argv.insert(argv.end(), args.begin(), args.end());
  pid_ = fork();
  if (pid_ == 0) {
    int fd = open((dir_ + "/stderr.log").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, 2);
      dup2(fd, 1);
    }
    // Under ASan the daemon's exit-time leak report would turn a clean stop
    // into an unrelated test's failure; leak checking stays with the
    // in-process suites. Address and UB errors still abort the child.
    setenv("ASAN_OPTIONS", WithoutLeakCheck().c_str(), 1);
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    execv(cargv[0], cargv.data());
    _exit(127);
  }
  // Wait (bounded) for the port file.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(port_file);
    unsigned p = 0;
    if (in >> p && p > 0) {
      port_ = static_cast<unsigned short>(p);
      break;
    }
    int status;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

Daemon::~Daemon() {
  Stop();
  if (own_dir_) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

std::string Daemon::log() const { return ReadFile(dir_ + "/stderr.log"); }

int Daemon::Stop() {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  int status = 0;
  for (int i = 0; i < 1000; ++i) {
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      port_ = 0;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Kill();
  return -1;
}

void Daemon::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  int status;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  port_ = 0;
}

int RunDrainwise(const std::vector<std::string>& args, std::string* out, std::string* err) {
  std::string dir = MakeTempDir();
  std::string cmd = "ASAN_OPTIONS='" + WithoutLeakCheck() + "' '" + DRAINWISE_BINARY + "'";
  for (const auto& a : args) cmd += " '" + a + "'";
  cmd += " >" + dir + "/out 2>" + dir + "/err";
  int rc = std::system(cmd.c_str());
  if (out) *out = ReadFile(dir + "/out");
  if (err) *err = ReadFile(dir + "/err");
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

}  // namespace drainwise::testing
