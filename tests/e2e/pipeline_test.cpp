// HTTP/1.1 on one connection against the real daemon (demo fabric):
// pipelined requests each get their answer, in order, whether they run on the
// I/O thread or a worker pool; HEAD answers carry the GET's Content-Length and
// no body; request bodies held at once are capped server-wide.
#include <doctest/doctest.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <utility>  // before Boost 1.74's asio: awaitable.hpp uses std::exchange
#include <vector>

#include <boost/asio.hpp>
#include <boost/beast.hpp>

#include "testing/daemon.h"

using namespace drainwise;
using nlohmann::json;
namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

namespace {

struct Conn {
  net::io_context ioc;
  beast::tcp_stream stream{ioc};
  beast::flat_buffer buffer;

  explicit Conn(unsigned short port) {
    stream.expires_after(std::chrono::seconds(60));
    stream.connect({net::ip::make_address("127.0.0.1"), port});
  }
  void Send(const std::string& bytes) { net::write(stream, net::buffer(bytes)); }
  // The next response on the connection; `head` = the answer to a HEAD
  // (Beast must not expect the body its Content-Length announces).
  http::response<http::string_body> Read(bool head = false, int timeout_s = 60) {
    http::response_parser<http::string_body> p;
    p.body_limit(1ull << 30);
    if (head) p.skip(true);
    stream.expires_after(std::chrono::seconds(timeout_s));
    http::read(stream, buffer, p);
    return p.release();
  }
};

std::string Request(const std::string& method, const std::string& target, const std::string& body = "") {
  std::string r = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  if (!body.empty() || method == "POST") {
    r += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  return r + "\r\n" + body;
}

}  // namespace

TEST_CASE("10 pipelined requests get 10 answers, in order") {
  testing::Daemon d;
  REQUIRE_MESSAGE(d.started(), d.log());
  const std::string assess = R"({"drain":{"switches":["p0-spine0"]},"modes":["job"]})";
  // Inline (health, 404s), bulk reads (topology, jobs) and a simulation,
  // interleaved, all written before any answer is read.
  struct Step {
    std::string method, target, body;
    int status;
    std::string expect;  // in the body
  };
  const std::vector<Step> steps = {
      {"GET", "/healthz", "", 200, "ok"},
      {"GET", "/v1/topology", "", 200, "drainwise.topology/v1"},
      {"GET", "/v1/no-such-1", "", 404, "/v1/no-such-1"},
      {"POST", "/v1/assessments", assess, 201, "p0-spine0"},
      {"GET", "/v1/no-such-2", "", 404, "/v1/no-such-2"},
      {"GET", "/v1/jobs", "", 200, "drainwise.jobs/v1"},
      {"GET", "/v1/no-such-3", "", 404, "/v1/no-such-3"},
      {"GET", "/v1/snapshots", "", 200, "topology"},
      {"GET", "/v1/no-such-4", "", 404, "/v1/no-such-4"},
      {"GET", "/readyz", "", 200, ""},
  };
  Conn c(d.port());
  std::string all;
  for (const auto& s : steps) all += Request(s.method, s.target, s.body);
  c.Send(all);
  for (size_t i = 0; i < steps.size(); ++i) {
    CAPTURE(i);
    auto res = c.Read();
    CHECK(res.result_int() == steps[i].status);
    CHECK(res.body().find(steps[i].expect) != std::string::npos);
    CHECK(res.keep_alive());
  }
  // The connection is still usable afterwards.
  c.Send(Request("GET", "/healthz"));
  CHECK(c.Read().result_int() == 200);
}

TEST_CASE("more pipelined requests than the read-ahead bound are all answered") {
  testing::Daemon d;
  REQUIRE_MESSAGE(d.started(), d.log());
  Conn c(d.port());
  std::string all;
  for (int i = 0; i < 40; ++i) all += Request("GET", i % 2 ? "/v1/topology" : "/v1/no-such-" + std::to_string(i));
  c.Send(all);
  for (int i = 0; i < 40; ++i) {
    CAPTURE(i);
    auto res = c.Read();
    if (i % 2) {
      CHECK(res.result_int() == 200);
    } else {
      CHECK(res.result_int() == 404);
      CHECK(res.body().find("/v1/no-such-" + std::to_string(i)) != std::string::npos);
    }
  }
}

TEST_CASE("HEAD answers have the GET's headers and no body") {
  testing::Daemon d;
  REQUIRE_MESSAGE(d.started(), d.log());
  for (std::string target : {"/healthz", "/v1/topology", "/v1/no-such"}) {
    CAPTURE(target);
    auto get = d.Get(target);
    REQUIRE(get.status > 0);
    Conn c(d.port());
    // HEAD then GET /healthz on one connection: if the HEAD answer carried
    // any body, the second answer would not start where the first ends.
    c.Send(Request("HEAD", target) + Request("GET", "/healthz"));
    auto head = c.Read(/*head=*/true);
    CHECK(head.result_int() == get.status);
    CHECK(head[http::field::content_length] == std::to_string(get.body.size()));
    CHECK(head[http::field::content_type] == get.headers["content-type"]);
    CHECK(head.body().empty());
    auto next = c.Read();
    CHECK(next.result_int() == 200);
    CHECK(next.body().find("ok") != std::string::npos);
    // Nothing but the two answers came back.
    CHECK(c.buffer.size() == 0);
  }
  // HEAD with the connection closed after it: the bytes end with the header.
  net::io_context ioc;
  net::ip::tcp::socket sock(ioc);
  sock.connect({net::ip::make_address("127.0.0.1"), d.port()});
  net::write(sock, net::buffer(std::string("HEAD /v1/topology HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")));
  std::string raw;
  boost::system::error_code ec;
  char buf[65536];
  for (int i = 0; i < 1000 && !ec; ++i) {
    size_t n = sock.read_some(net::buffer(buf), ec);
    raw.append(buf, n);
  }
  CHECK(raw.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(raw.size() == raw.find("\r\n\r\n") + 4);
}

TEST_CASE("request bodies held at once are capped: 503 with Retry-After past body_memory_limit_bytes") {
  std::string dir = testing::MakeTempDir();
  std::ofstream(dir + "/config.json") << R"({"server":{"body_limit_bytes":90000,"body_memory_limit_bytes":100000}})";
  testing::Daemon d({"--config", dir + "/config.json"}, dir);
  REQUIRE_MESSAGE(d.started(), d.log());
  // A announces 80,000 bytes and sends a few: they count until its answer.
  Conn a(d.port());
  std::string body(80000, ' ');
  body.front() = '{';
  body.back() = '}';
  std::string head =
      "POST /v1/assessments HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Content-Length: 80000\r\n\r\n";
  a.Send(head + body.substr(0, 10));
  // B's 50,000 would make 130,000 > 100,000: refused from its header alone.
  // (Give the daemon a moment to read A's header first; a B that is not
  // refused waits for its body and times out after 10 s.)
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  {
    Conn b(d.port());
    b.Send(
        "POST /v1/assessments HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Content-Length: 50000\r\n\r\n");
    http::response<http::string_body> r;
    CHECK_NOTHROW(r = b.Read(false, 10));
    CHECK(r.result_int() == 503);
    CHECK(r[http::field::retry_after] == "1");
    CHECK(r.body().find("100000") != std::string::npos);
    CHECK(!r.keep_alive());
  }
  // Small requests without a body go on.
  CHECK(d.Get("/healthz").status == 200);
  // A completes (an empty drain: 400) and gives its bytes back; B's size fits again.
  a.Send(body.substr(10));
  CHECK(a.Read().result_int() == 400);
  std::string fits(50000, ' ');
  fits.front() = '{';
  fits.back() = '}';
  CHECK(d.Call("POST", "/v1/assessments", fits).status == 400);
  // A chunked body's size is unknown until read: it counts as
  // body_limit_bytes (90,000), so 50,000 more do not fit beside it.
  Conn chunked(d.port());
  chunked.Send(
      "POST /v1/assessments HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Transfer-Encoding: chunked\r\n\r\n1\r\n{\r\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(d.Call("POST", "/v1/assessments", fits).status == 503);
  chunked.Send("1\r\n}\r\n0\r\n\r\n");
  CHECK(chunked.Read().result_int() == 400);
  CHECK(d.Call("POST", "/v1/assessments", fits).status == 400);
  CHECK(d.Stop() == 0);
}
