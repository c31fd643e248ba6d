#include "server/routes/common.h"

#include <chrono>
#include <random>

#include <fmt/format.h>

#include "codec/json_reader.h"
#include "codec/native.h"
#include "server/problem.h"

namespace drainwise::server::routing {

int64_t NowSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string NewId(std::string_view prefix, std::atomic<uint64_t>& seq) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string t = codec::FormatRfc3339(NowSeconds());
  std::string compact;
  for (char c : t) {
    if (c != '-' && c != ':' && c != 'Z') compact.push_back(c);
  }
  return fmt::format("{}-{}-{:04x}{:04x}", prefix, compact, seq.fetch_add(1) & 0xffff, rng() & 0xffff);
}

Result<nlohmann::json> ParseBody(const ApiRequest& req) {
  if (req.body.empty()) return InvalidArgument("request body: expected a JSON document, got nothing");
  auto j = codec::ParseJsonText(req.body);
  if (!j) return tl::unexpected(j.error().Wrap("request body"));
  return j;
}

ApiResponse ProblemResponse(int status, std::string_view slug, std::string_view title, std::string detail,
                            std::string_view instance) {
  ApiResponse r;
  r.status = status;
  r.content_type = std::string(kProblemContentType);
  r.body =
      ProblemJson(status, slug, title, detail, instance).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) +
      "\n";
  return r;
}

std::string EscapeControl(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    auto u = static_cast<unsigned char>(c);
    // C1 controls in UTF-8 (U+0080..U+009F, e.g. U+0085 NEL, U+009B CSI).
    if (u == 0xc2 && i + 1 < text.size()) {
      auto next = static_cast<unsigned char>(text[i + 1]);
      if (next >= 0x80 && next <= 0x9f) {
        out += fmt::format("\\u{:04x}", next);
        ++i;
        continue;
      }
    }
    switch (c) {
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\\':
        out += "\\\\";
        break;
      default:
        if (u < 0x20 || u == 0x7f)
          out += fmt::format("\\x{:02x}", u);
        else
          out.push_back(c);
    }
  }
  return out;
}

std::string Cell(std::string_view text) { return text.empty() ? "-" : EscapeControl(text); }

std::string ApiSource(const ApiRequest& req) { return "api" + (req.peer.empty() ? "" : ":" + req.peer); }

}  // namespace drainwise::server::routing
