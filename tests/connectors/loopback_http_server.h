// A tiny HTTP/1.1 server on 127.0.0.1 with an ephemeral port, for connector
// tests only. Routes map an exact request target ("/api/dcim/devices/?limit=2")
// to a status and body and can be changed while it runs. Every request's
// target and headers are recorded. One connection at a time, Connection: close.
// With a certificate and key (PEM files) it speaks HTTPS instead.
#pragma once

#include <sys/socket.h>
#include <sys/time.h>

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "test_data.h"

namespace drainwise::connectors::loopback {

class LoopbackHttpServer {
 public:
  struct Response {
    int status = 200;
    std::string body;
    std::string content_type = "application/json";
  };
  struct Request {
    std::string target;
    std::map<std::string, std::string> headers;
  };

  LoopbackHttpServer() : acceptor_(ioc_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
    Accept();
    thread_ = std::thread([this] { ioc_.run(); });
  }
  LoopbackHttpServer(const std::string& cert_pem_file, const std::string& key_pem_file)
      : acceptor_(ioc_, {boost::asio::ip::make_address("127.0.0.1"), 0}),
        tls_(std::in_place, boost::asio::ssl::context::tls_server) {
    tls_->use_certificate_chain_file(cert_pem_file);
    tls_->use_private_key_file(key_pem_file, boost::asio::ssl::context::pem);
    Accept();
    thread_ = std::thread([this] { ioc_.run(); });
  }
  ~LoopbackHttpServer() {
    ioc_.stop();
    thread_.join();
  }

  unsigned short port() const { return acceptor_.local_endpoint().port(); }
  std::string base_url() const {
    return std::string(tls_ ? "https" : "http") + "://127.0.0.1:" + std::to_string(port());
  }

  void Set(const std::string& target, Response r) {
    std::lock_guard lock(mutex_);
    routes_[target] = std::move(r);
  }
  // Answers targets no Set() route matches (a fake that computes its answer
  // from the query, e.g. Prometheus' query_range); nullopt = 404.
  void SetFallback(std::function<std::optional<Response>(const std::string& target)> fn) {
    std::lock_guard lock(mutex_);
    fallback_ = std::move(fn);
  }
  std::vector<Request> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }

 private:
  void Accept() {
    acceptor_.async_accept([this](boost::system::error_code ec, boost::asio::ip::tcp::socket socket) {
      if (!ec) {
        timeval tv{2, 0};
        setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        if (tls_) {
          boost::asio::ssl::stream<boost::asio::ip::tcp::socket&> stream(socket, *tls_);
          boost::system::error_code hec;
          stream.handshake(boost::asio::ssl::stream_base::server, hec);
          if (!hec) Serve(stream);
          stream.shutdown(hec);
        } else {
          Serve(socket);
        }
        socket.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
      }
      Accept();
    });
  }

  // Synchronous on the server's only thread: fine for tests, and a receive
  // timeout keeps a silent client from wedging it.
  template <class Stream>
  void Serve(Stream& socket) {
    namespace http = boost::beast::http;
    boost::beast::flat_buffer buffer;
    http::request<http::string_body> req;
    boost::system::error_code ec;
    http::read(socket, buffer, req, ec);
    if (ec) return;
    Response r{404, "not found", "text/plain"};
    {
      std::lock_guard lock(mutex_);
      Request rec;
      rec.target = std::string(req.target());
      for (const auto& f : req) rec.headers[std::string(f.name_string())] = std::string(f.value());
      requests_.push_back(std::move(rec));
      auto it = routes_.find(std::string(req.target()));
      if (it != routes_.end()) {
        r = it->second;
      } else if (fallback_) {
        if (auto f = fallback_(std::string(req.target()))) r = *f;
      }
    }
    http::response<http::string_body> res{static_cast<http::status>(r.status), 11};
    res.set(http::field::content_type, r.content_type);
    res.set(http::field::connection, "close");
    res.body() = r.body;
    res.prepare_payload();
    http::write(socket, res, ec);
  }

  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::optional<boost::asio::ssl::context> tls_;
  std::thread thread_;
  mutable std::mutex mutex_;
  std::map<std::string, Response> routes_;
  std::function<std::optional<Response>(const std::string&)> fallback_;
  std::vector<Request> requests_;
};

// The paged NetBox 4.x fixtures (page size 2; `next` names the host a proxy
// would advertise), as the NetBox connector asks for them.
inline void ServeNetboxPages(LoopbackHttpServer& server) {
  using testdata::ReadText;
  server.Set("/api/dcim/devices/?limit=2", {200, ReadText("connectors/netbox_v4_devices_p1.json")});
  server.Set("/api/dcim/devices/?limit=2&offset=2", {200, ReadText("connectors/netbox_v4_devices_p2.json")});
  server.Set("/api/dcim/devices/?limit=2&offset=4", {200, ReadText("connectors/netbox_v4_devices_p3.json")});
  server.Set("/api/dcim/interfaces/?limit=2&cabled=true", {200, ReadText("connectors/netbox_v4_interfaces_p1.json")});
  server.Set("/api/dcim/interfaces/?cabled=true&limit=2&offset=2",
             {200, ReadText("connectors/netbox_v4_interfaces_p2.json")});
  server.Set("/api/dcim/interfaces/?cabled=true&limit=2&offset=4",
             {200, ReadText("connectors/netbox_v4_interfaces_p3.json")});
  server.Set("/api/dcim/cables/?limit=2", {200, ReadText("connectors/netbox_v4_cables_p1.json")});
  server.Set("/api/dcim/cables/?limit=2&offset=2", {200, ReadText("connectors/netbox_v4_cables_p2.json")});
}

}  // namespace drainwise::connectors::loopback
