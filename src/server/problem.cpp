#include "server/problem.h"

namespace drainwise::server {

int HttpStatusFor(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return 400;
    case ErrorCode::kUnauthenticated:
      return 401;
    case ErrorCode::kPermissionDenied:
      return 403;
    case ErrorCode::kNotFound:
      return 404;
    case ErrorCode::kConflict:
      return 409;
    case ErrorCode::kTooLarge:
      return 413;
    case ErrorCode::kCancelled:
      return 499;
    case ErrorCode::kUnavailable:
      return 503;
    case ErrorCode::kDeadlineExceeded:
      return 504;
    case ErrorCode::kIo:
    case ErrorCode::kInternal:
      return 500;
  }
  return 500;
}

namespace {
std::string_view TitleFor(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "Invalid request";
    case ErrorCode::kUnauthenticated:
      return "Authentication required";
    case ErrorCode::kPermissionDenied:
      return "Not allowed";
    case ErrorCode::kNotFound:
      return "Not found";
    case ErrorCode::kConflict:
      return "Conflict";
    case ErrorCode::kTooLarge:
      return "Request too large";
    case ErrorCode::kCancelled:
      return "Cancelled";
    case ErrorCode::kUnavailable:
      return "Unavailable";
    case ErrorCode::kDeadlineExceeded:
      return "Deadline exceeded";
    case ErrorCode::kIo:
      return "Storage error";
    case ErrorCode::kInternal:
      return "Internal error";
  }
  return "Internal error";
}
}  // namespace

nlohmann::json ProblemJson(const Error& error, std::string_view instance) {
  nlohmann::json j = {
      {"type", "https://drainwise.dev/problems/" + std::string(ErrorCodeName(error.code))},
      {"title", TitleFor(error.code)},
      {"status", HttpStatusFor(error.code)},
      {"detail", error.message},
  };
  if (!instance.empty()) j["instance"] = instance;
  return j;
}

nlohmann::json ProblemJson(int status, std::string_view slug, std::string_view title, std::string_view detail,
                           std::string_view instance) {
  nlohmann::json j = {
      {"type", "https://drainwise.dev/problems/" + std::string(slug)},
      {"title", title},
      {"status", status},
      {"detail", detail},
  };
  if (!instance.empty()) j["instance"] = instance;
  return j;
}

}  // namespace drainwise::server
