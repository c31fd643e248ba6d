// The API side of the IETF Idempotency-Key draft
// (draft-ietf-httpapi-idempotency-key-header): a key is scoped to the
// authenticated principal and bound to the fingerprint of the request that
// first used it. The same key with the same fingerprint replays the stored
// result (Idempotent-Replayed: true) without simulating again; with another
// fingerprint it is refused with 422; while the first request is still
// running, a second one with the key gets 409. The store keeps the entries
// and expires them (StoreOptions::idempotency_ttl_s).
#pragma once

#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "model/error.h"
#include "server/api.h"

namespace drainwise::server::routing {

struct IdempotencyKey {
  std::string key;
  std::string fingerprint;  // hex SHA-256 of method, normalised path and body
};

// The request's Idempotency-Key header: the draft's structured-field string
// ("…") or the same characters unquoted; 1 to 255 printable ASCII characters.
// Nothing when the header is absent. Errors: kInvalidArgument naming the header.
Result<std::optional<IdempotencyKey>> ReadIdempotencyKey(const RoutedRequest& rr);

// Hex SHA-256 of `method`, the normalised `path` and `body`, each length-prefixed
// so no two different requests share the input.
std::string RequestFingerprint(std::string_view method, std::string_view path, std::string_view body);

// 422: `key` was first used for another request.
ApiResponse KeyReused(const std::string& key, const std::string& path);
// 409: a request with `key` is still being processed.
ApiResponse KeyInFlight(const std::string& key, const std::string& path);

// The (principal, key) pairs whose first request is running, so a concurrent
// retry is told to wait (409) instead of simulating a second time.
class KeysInFlight {
 public:
  class Hold {
   public:
    Hold() = default;
    Hold(KeysInFlight* owner, std::pair<std::string, std::string> entry) : owner_(owner), entry_(std::move(entry)) {}
    Hold(Hold&& other) noexcept : owner_(std::exchange(other.owner_, nullptr)), entry_(std::move(other.entry_)) {}
    Hold& operator=(Hold&&) = delete;
    ~Hold();
    explicit operator bool() const { return owner_ != nullptr; }

   private:
    KeysInFlight* owner_ = nullptr;
    std::pair<std::string, std::string> entry_;
  };
  // An empty Hold when the pair is already held.
  Hold Acquire(const std::string& principal, const std::string& key);

 private:
  std::mutex mu_;
  std::set<std::pair<std::string, std::string>> held_;
};

}  // namespace drainwise::server::routing
