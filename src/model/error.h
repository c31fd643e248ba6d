// One error type for the whole project (LevelDB's Status, as tl::expected).
//
// A Result<T> either holds a T or an Error whose message names the offending
// thing ("link 17 (leaf-3 -> spine-9): unknown node 'spine-9'"). Exceptions
// from third-party libraries are caught at module boundaries and turned into
// an Error; bad input never ends the process. A policy denial or a cut-off
// job is a *result*, never an Error.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include <tl/expected.hpp>

namespace drainwise {

enum class ErrorCode {
  kInvalidArgument,   // malformed or inconsistent input (HTTP 400)
  kNotFound,          // unknown id (404)
  kConflict,          // valid but contradicts current state (409)
  kTooLarge,          // request or document exceeds a limit (413)
  kUnavailable,       // not ready, queue full, source down (503)
  kDeadlineExceeded,  // took longer than allowed (504)
  kCancelled,         // the caller went away
  kUnauthenticated,   // 401
  kPermissionDenied,  // 403
  kIo,                // file system or database failure (500)
  kInternal,          // a bug (500)
};

std::string_view ErrorCodeName(ErrorCode code);

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;

  // "message" prefixed by "context: ", for adding the outer location.
  [[nodiscard]] Error Wrap(std::string_view context) const {
    return Error{code, std::string(context) + ": " + message};
  }
};

template <class T>
using Result = tl::expected<T, Error>;

using Status = tl::expected<void, Error>;

inline tl::unexpected<Error> MakeError(ErrorCode code, std::string message) {
  return tl::unexpected<Error>(Error{code, std::move(message)});
}
inline tl::unexpected<Error> InvalidArgument(std::string message) {
  return MakeError(ErrorCode::kInvalidArgument, std::move(message));
}
inline tl::unexpected<Error> NotFound(std::string message) {
  return MakeError(ErrorCode::kNotFound, std::move(message));
}

}  // namespace drainwise
