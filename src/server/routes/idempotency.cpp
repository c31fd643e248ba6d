#include "server/routes/idempotency.h"

#include <algorithm>

#include <fmt/format.h>

#include "server/auth.h"
#include "server/routes/common.h"

namespace drainwise::server::routing {

Result<std::optional<IdempotencyKey>> ReadIdempotencyKey(const RoutedRequest& rr) {
  auto it = rr.request.headers.find("idempotency-key");
  if (it == rr.request.headers.end()) return std::optional<IdempotencyKey>();
  std::string_view value = it->second;
  if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
  bool printable = std::all_of(value.begin(), value.end(), [](char c) { return c >= 0x21 && c <= 0x7e; });
  if (value.empty() || value.size() > 255 || !printable || value.find('"') != std::string_view::npos) {
    return InvalidArgument(
        "Idempotency-Key: expected 1 to 255 printable ASCII characters without spaces, optionally in double quotes");
  }
  IdempotencyKey k;
  k.key = std::string(value);
  k.fingerprint = RequestFingerprint(rr.request.method, rr.path, rr.request.body);
  return std::optional<IdempotencyKey>(std::move(k));
}

std::string RequestFingerprint(std::string_view method, std::string_view path, std::string_view body) {
  return Sha256Hex(fmt::format("{}:{}\n{}:{}\n{}:{}", method.size(), method, path.size(), path, body.size(), body));
}

ApiResponse KeyReused(const std::string& key, const std::string& path) {
  return ProblemResponse(422, "idempotency-key-reused", "Idempotency-Key reused",
                         fmt::format("Idempotency-Key '{}' was first used for a different request (method, path or "
                                     "body differ); use a new key for a new request",
                                     key),
                         path);
}

ApiResponse KeyInFlight(const std::string& key, const std::string& path) {
  auto r = ProblemResponse(
      409, "idempotency-key-in-flight", "Request in progress",
      fmt::format("a request with Idempotency-Key '{}' is still being processed; retry later", key), path);
  r.headers.emplace_back("Retry-After", "1");
  return r;
}

KeysInFlight::Hold::~Hold() {
  if (!owner_) return;
  std::lock_guard lock(owner_->mu_);
  owner_->held_.erase(entry_);
}

KeysInFlight::Hold KeysInFlight::Acquire(const std::string& principal, const std::string& key) {
  std::lock_guard lock(mu_);
  auto entry = std::make_pair(principal, key);
  if (!held_.insert(entry).second) return Hold();
  return Hold(this, std::move(entry));
}

}  // namespace drainwise::server::routing
