#include "app/http_client.h"

#include <utility>  // before Boost 1.74: asio/awaitable.hpp uses std::exchange

#include <chrono>

#include <boost/asio.hpp>
#include <boost/beast.hpp>
#include <fmt/format.h>

namespace drainwise::app {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;

Result<HttpTarget> ParseServerUrl(const std::string& url) {
  std::string rest = url;
  if (rest.rfind("http://", 0) == 0) {
    rest = rest.substr(7);
  } else if (rest.find("://") != std::string::npos) {
    return InvalidArgument(fmt::format("server '{}': expected http://HOST[:PORT][/PREFIX]", url));
  }
  HttpTarget t;
  size_t slash = rest.find('/');
  std::string hostport = rest.substr(0, slash);
  t.base = slash == std::string::npos ? "" : rest.substr(slash);
  while (!t.base.empty() && t.base.back() == '/') t.base.pop_back();
  if (!hostport.empty() && hostport.front() == '[') {
    size_t close = hostport.find(']');
    if (close == std::string::npos) return InvalidArgument(fmt::format("server '{}': unclosed '['", url));
    t.host = hostport.substr(1, close - 1);
    if (close + 1 < hostport.size() && hostport[close + 1] == ':') t.port = hostport.substr(close + 2);
  } else {
    size_t colon = hostport.rfind(':');
    t.host = hostport.substr(0, colon);
    if (colon != std::string::npos) t.port = hostport.substr(colon + 1);
  }
  if (t.host.empty()) return InvalidArgument(fmt::format("server '{}': no host", url));
  return t;
}

Result<HttpReply> HttpRequest(const HttpTarget& target, const std::string& method, const std::string& path,
                              const std::string& body, const std::string& token, int timeout_s,
                              const std::string& accept) {
  try {
    net::io_context ioc;
    net::ip::tcp::resolver resolver(ioc);
    beast::tcp_stream stream(ioc);
    stream.expires_after(std::chrono::seconds(timeout_s));
    stream.connect(resolver.resolve(target.host, target.port));
    http::request<http::string_body> req{http::string_to_verb(method), target.base + path, 11};
    req.set(http::field::host, target.host);
    req.set(http::field::accept, accept);
    if (!token.empty()) req.set(http::field::authorization, "Bearer " + token);
    if (!body.empty()) {
      req.set(http::field::content_type, "application/json");
      req.body() = body;
    }
    req.prepare_payload();
    http::write(stream, req);
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(1ull << 30);
    http::read(stream, buffer, parser);
    auto res = parser.release();
    beast::error_code ec;
    stream.socket().shutdown(net::ip::tcp::socket::shutdown_both, ec);
    return HttpReply{static_cast<int>(res.result_int()), std::string(res.reason()), std::move(res.body())};
  } catch (const std::exception& e) {
    return MakeError(ErrorCode::kUnavailable, fmt::format("{}:{}: {}", target.host, target.port, e.what()));
  }
}

}  // namespace drainwise::app
