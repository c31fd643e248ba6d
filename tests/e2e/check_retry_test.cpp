// `drainwise check` against a busy daemon: a small loopback fake answers 503
// with Retry-After as scripted, and records when each request came and with
// which Idempotency-Key. check must wait what it is told, repeat the same
// request, and stop at its bounds (--retries, --max-retry-wait, --timeout).
#include <doctest/doctest.h>

#include <utility>  // before Boost 1.74: asio/awaitable.hpp uses std::exchange

#include <atomic>
#include <chrono>
#include <ctime>
#include <fstream>
#include <mutex>
#include <thread>

#include <boost/asio.hpp>
#include <boost/beast.hpp>

#include "testing/daemon.h"

using namespace drainwise;

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using Clock = std::chrono::steady_clock;

struct Scripted {
  int status = 503;         // 0: accept, never read nor answer (the connection stays open)
  std::string retry_after;  // "" = no header
  std::string body = R"({"type":"about:blank","title":"Service Unavailable","status":503,"detail":"queue full"})";
};

struct Seen {
  Clock::time_point at;
  std::string method;
  std::string target;
  std::string idempotency_key;
};

// Answers the i-th request with script[i] (the last entry once the script
// runs out), one request per connection, on 127.0.0.1 and an ephemeral port.
class FakeDaemon {
 public:
  explicit FakeDaemon(std::vector<Scripted> script) : script_(std::move(script)), acceptor_(ioc_) {
    net::ip::tcp::endpoint ep(net::ip::make_address("127.0.0.1"), 0);
    acceptor_.open(ep.protocol());
    acceptor_.bind(ep);
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
    Accept();
    thread_ = std::thread([this] { ioc_.run(); });
  }
  ~FakeDaemon() {
    ioc_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<Seen> seen() {
    std::lock_guard lock(mu_);
    return seen_;
  }

 private:
  void Accept() {
    acceptor_.async_accept([this](beast::error_code ec, net::ip::tcp::socket socket) {
      if (ec) return;
      Serve(std::move(socket));
      Accept();
    });
  }
  // Blocking is fine here: check sends one request per connection.
  void Serve(net::ip::tcp::socket socket) {
    {
      std::lock_guard lock(mu_);
      if (script_[std::min(seen_.size() + 1, script_.size()) - 1].status == 0) {
        seen_.push_back({Clock::now(), "", "", ""});
        silent_.push_back(std::move(socket));
        return;
      }
    }
    beast::error_code ec;
    beast::flat_buffer buffer;
    http::request<http::string_body> req;
    http::read(socket, buffer, req, ec);
    if (ec) return;
    Scripted s;
    {
      std::lock_guard lock(mu_);
      seen_.push_back({Clock::now(), std::string(req.method_string()), std::string(req.target()),
                       std::string(req["Idempotency-Key"])});
      s = script_[std::min(seen_.size(), script_.size()) - 1];
    }
    http::response<http::string_body> res{static_cast<http::status>(s.status), 11};
    res.set(http::field::content_type, s.status >= 400 ? "application/problem+json" : "application/json");
    if (!s.retry_after.empty()) res.set(http::field::retry_after, s.retry_after);
    res.body() = s.body;
    res.prepare_payload();
    http::write(socket, res, ec);
    socket.shutdown(net::ip::tcp::socket::shutdown_both, ec);
  }

  std::vector<Scripted> script_;
  net::io_context ioc_;
  net::ip::tcp::acceptor acceptor_;
  unsigned short port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<Seen> seen_;
  std::vector<net::ip::tcp::socket> silent_;  // connections never answered
};

const Scripted kAllow{201, "", R"({"id":"a-1","verdict":"allow"})"};
const Scripted kSilent{0, "", ""};

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

std::string HttpDate(std::time_t t) {
  char buf[64];
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  return buf;
}

}  // namespace

TEST_CASE("check waits out 503 + Retry-After and repeats the same request") {
  FakeDaemon fake({{503, "1"}, {503, "1"}, kAllow});
  std::string out, err;
  auto t0 = Clock::now();
  int rc = testing::RunDrainwise({"check", "--server", fake.url(), "--switch", "s1", "--format", "json"}, &out, &err);
  double took = Seconds(Clock::now() - t0);
  CHECK_MESSAGE(rc == 0, err);
  CHECK(nlohmann::json::parse(out, nullptr, false).value("verdict", "") == "allow");
  auto seen = fake.seen();
  REQUIRE(seen.size() == 3);
  for (const auto& s : seen) {
    CHECK(s.method == "POST");
    CHECK(s.target == "/v1/assessments");
    CHECK(s.idempotency_key.rfind("drainwise-check-", 0) == 0);
    CHECK(s.idempotency_key == seen[0].idempotency_key);  // one key: a repeat can never record twice
  }
  // Retry-After: 1 is honoured (never earlier), with at most half of it
  // again as jitter.
  for (int i : {1, 2}) {
    CHECK(Seconds(seen[i].at - seen[i - 1].at) >= 0.95);
    CHECK(Seconds(seen[i].at - seen[i - 1].at) < 2.5);
  }
  CHECK(took < 10);
  CHECK_MESSAGE(err.find("503 Service Unavailable, Retry-After 1; retry 1 of 5 in 1.") != std::string::npos, err);
  CHECK(err.find("retry 2 of 5 in 1.") != std::string::npos);

  // Another run is another key.
  FakeDaemon again({kAllow});
  CHECK(testing::RunDrainwise({"check", "--server", again.url(), "--switch", "s1", "--format", "json"}, &out, &err) ==
        0);
  REQUIRE(again.seen().size() == 1);
  CHECK(again.seen()[0].idempotency_key != seen[0].idempotency_key);
}

TEST_CASE("check gives up after --retries, and exits 2 naming the 503") {
  FakeDaemon fake({{503, "0"}});
  std::string out, err;
  CHECK(testing::RunDrainwise({"check", "--server", fake.url(), "--switch", "s1", "--retries", "2"}, &out, &err) == 2);
  CHECK(fake.seen().size() == 3);  // the first attempt and two retries
  CHECK_MESSAGE(err.find("503 Service Unavailable: queue full") != std::string::npos, err);
  CHECK(err.find("gave up after 3 attempts") != std::string::npos);
  CHECK(out.empty());

  // --retries 0: one attempt only.
  FakeDaemon once({{503, "0"}});
  CHECK(testing::RunDrainwise({"check", "--server", once.url(), "--switch", "s1", "--retries", "0"}, &out, &err) == 2);
  CHECK(once.seen().size() == 1);
  // The bound is bounded: more than 10 retries is a usage error.
  CHECK(testing::RunDrainwise({"check", "--server", once.url(), "--switch", "s1", "--retries", "11"}, &out, &err) == 2);
  CHECK(once.seen().size() == 1);
}

TEST_CASE("check does not wait longer than --max-retry-wait or past --timeout") {
  std::string out, err;
  // An hour's Retry-After: no wait at all, the reason said.
  FakeDaemon hour({{503, "3600"}});
  auto t0 = Clock::now();
  CHECK(testing::RunDrainwise({"check", "--server", hour.url(), "--switch", "s1"}, &out, &err) == 2);
  CHECK(Seconds(Clock::now() - t0) < 5);
  CHECK(hour.seen().size() == 1);
  CHECK_MESSAGE(err.find("more than --max-retry-wait 30 s") != std::string::npos, err);

  // Retry-After 2 within --timeout 3: one wait fits, the second would not.
  FakeDaemon slow({{503, "2"}});
  t0 = Clock::now();
  CHECK(testing::RunDrainwise({"check", "--server", slow.url(), "--switch", "s1", "--timeout", "3"}, &out, &err) == 2);
  double took = Seconds(Clock::now() - t0);
  CHECK(slow.seen().size() == 2);
  CHECK(took >= 1.95);
  // One 2 s wait and the process's start and exit (1.5 s seen under the
  // sanitizers on a loaded machine); a second wait would end past 4 s.
  CHECK(took < 3.9);
  CHECK_MESSAGE(err.find("would pass --timeout 3 s") != std::string::npos, err);
}

TEST_CASE("check honours a Retry-After given as an HTTP-date") {
  // Whole seconds: a date 3 s ahead asks for a wait of 2 to 3 s once check
  // has started (a slow start under a sanitizer leaves at least 1 s), plus
  // at most half of it as jitter.
  FakeDaemon fake({{503, HttpDate(std::time(nullptr) + 3)}, kAllow});
  std::string out, err;
  CHECK(testing::RunDrainwise({"check", "--server", fake.url(), "--switch", "s1", "--format", "json"}, &out, &err) ==
        0);
  auto seen = fake.seen();
  REQUIRE(seen.size() == 2);
  CHECK(Seconds(seen[1].at - seen[0].at) >= 0.9);
  CHECK(Seconds(seen[1].at - seen[0].at) < 5.5);
}

TEST_CASE("check retries a refused connection with a doubling wait, then gives up") {
  // A port that was free a moment ago: nothing listens there.
  unsigned short port;
  {
    net::io_context ioc;
    net::ip::tcp::acceptor a(ioc, {net::ip::make_address("127.0.0.1"), 0});
    port = a.local_endpoint().port();
  }
  std::string out, err;
  auto t0 = Clock::now();
  CHECK(testing::RunDrainwise(
            {"check", "--server", "http://127.0.0.1:" + std::to_string(port), "--switch", "s1", "--retries", "2"}, &out,
            &err) == 2);
  double took = Seconds(Clock::now() - t0);
  CHECK_MESSAGE(err.find("connection refused; retry 1 of 2 in 1.") != std::string::npos, err);
  CHECK(err.find("connection refused; retry 2 of 2 in ") != std::string::npos);
  CHECK(err.find("gave up after 3 attempts") != std::string::npos);
  CHECK(took >= 2.9);  // 1 s + 2 s, and at most half again as jitter
  CHECK(took < 8);
}

TEST_CASE("no retry on answers other than 503") {
  FakeDaemon fake({{400, "", R"({"status":400,"title":"Bad Request","detail":"drain: unknown switch 's1'"})"}});
  std::string out, err;
  CHECK(testing::RunDrainwise({"check", "--server", fake.url(), "--switch", "s1"}, &out, &err) == 2);
  CHECK(fake.seen().size() == 1);
  CHECK_MESSAGE(err.find("400 Bad Request: drain: unknown switch 's1'") != std::string::npos, err);
}

TEST_CASE("concurrent checks against a daemon with one worker and a queue of one all get their verdict") {
  // The real daemon turns away what its queue cannot take (503 +
  // Retry-After: 1); eight checks at once, with the default retries, must
  // all end with a verdict, none with exit 2.
  std::string dir = testing::MakeTempDir();
  {
    std::ofstream cfg(dir + "/config.json");
    cfg << R"({"server":{"workers":1,"queue_limit":1}})";
  }
  testing::Daemon d({"--config", dir + "/config.json"}, dir);
  REQUIRE_MESSAGE(d.started(), d.log());
  const std::string server = "http://127.0.0.1:" + std::to_string(d.port());
  const char* spines[] = {"p0-spine0", "p0-spine1", "p1-spine0", "p1-spine1"};
  std::vector<int> rcs(8, -1);
  std::vector<std::string> errs(8);
  std::vector<std::thread> clients;
  for (int i = 0; i < 8; ++i) {
    clients.emplace_back([&, i] {
      std::string out;
      rcs[i] = testing::RunDrainwise({"check", "--server", server, "--switch", spines[i % 4], "--format", "json"}, &out,
                                     &errs[i]);
    });
  }
  for (auto& t : clients) t.join();
  int retried = 0;
  for (int i = 0; i < 8; ++i) {
    CHECK_MESSAGE(rcs[i] == 0, errs[i]);  // one spine of a plane: allow
    if (errs[i].find("503 Service Unavailable") != std::string::npos) ++retried;
  }
  // Whether the daemon turned any away depends on timing; say how many.
  MESSAGE(retried << " of 8 checks were turned away at least once and retried");
  auto list = d.Get("/v1/assessments").Json();
  REQUIRE(list.is_object());
  CHECK(list["assessments"].size() == 8);  // one each: retries recorded nothing twice
}

TEST_CASE("a daemon that never answers: check stops at its timeouts and does not retry") {
  std::string out, err;
  // Plain http: the request goes out, no answer comes; --timeout ends it.
  FakeDaemon mute({kSilent});
  auto t0 = Clock::now();
  CHECK(testing::RunDrainwise({"check", "--server", mute.url(), "--switch", "s1", "--timeout", "2"}, &out, &err) == 2);
  double took = Seconds(Clock::now() - t0);
  CHECK(took >= 1.9);
  CHECK(took < 5);
  CHECK_MESSAGE(err.find("no answer within 2 s") != std::string::npos, err);
  CHECK(mute.seen().size() == 1);

  // https to a server that never speaks TLS: the handshake is part of
  // connecting, so --connect-timeout ends it long before --timeout.
  FakeDaemon silent({kSilent});
  std::string https = "https://127.0.0.1:" + silent.url().substr(silent.url().rfind(':') + 1);
  t0 = Clock::now();
  CHECK(testing::RunDrainwise(
            {"check", "--server", https, "--switch", "s1", "--connect-timeout", "1", "--timeout", "60"}, &out, &err) ==
        2);
  took = Seconds(Clock::now() - t0);
  CHECK(took >= 0.9);
  CHECK(took < 5);
  CHECK_MESSAGE(err.find("TLS handshake timed out after 1 s") != std::string::npos, err);
  CHECK(silent.seen().size() == 1);
}
