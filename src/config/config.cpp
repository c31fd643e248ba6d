#include "config/config.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "codec/json_reader.h"
#include "codec/native.h"

namespace drainwise::config {

using codec::FieldError;
using codec::ObjectReader;

namespace {

int PositiveInt(const ObjectReader& r, std::string_view key, int fallback) {
  int64_t v = r.IntOr(key, fallback);
  if (v < 1 || v > 1'000'000) throw FieldError(r.Child(key), "must be between 1 and 1000000");
  return static_cast<int>(v);
}

}  // namespace

Result<Config> ParseConfig(const nlohmann::json& doc) {
  try {
    Config c;
    ObjectReader r(doc, "");
    r.RejectUnknown({"listen", "db", "policy_file", "log_level", "server", "sources", "profiles", "telemetry",
                     "simulation", "advisor", "store", "task", "link_health", "$schema", "comment"});
    auto& s = c.server;
    s.listen = r.StringOr("listen", s.listen);
    c.db_path = r.StringOr("db", c.db_path);
    c.policy_file = r.StringOr("policy_file", "");
    c.log_level = r.StringOr("log_level", c.log_level);
    if (c.log_level != "trace" && c.log_level != "debug" && c.log_level != "info" && c.log_level != "warn" &&
        c.log_level != "error") {
      throw FieldError("log_level", "expected trace, debug, info, warn or error");
    }
    if (r.Has("server")) {
      ObjectReader sr(r.Raw("server"), "server");
      sr.RejectUnknown({"io_threads", "workers", "body_limit_bytes", "read_timeout_s", "queue_limit",
                        "assessment_deadline_s", "tokens_file", "tls_cert", "tls_key", "read_workers",
                        "read_queue_limit", "body_memory_limit_bytes"});
      s.io_threads = PositiveInt(sr, "io_threads", s.io_threads);
      s.workers = PositiveInt(sr, "workers", s.workers);
      int64_t body = sr.IntOr("body_limit_bytes", s.body_limit_bytes);
      if (body < 1024) throw FieldError(sr.Child("body_limit_bytes"), "must be >= 1024");
      s.body_limit_bytes = body;
      s.read_timeout_s = PositiveInt(sr, "read_timeout_s", s.read_timeout_s);
      s.queue_limit = PositiveInt(sr, "queue_limit", s.queue_limit);
      s.read_workers = PositiveInt(sr, "read_workers", s.read_workers);
      s.read_queue_limit = PositiveInt(sr, "read_queue_limit", s.read_queue_limit);
      // Unset, it grows with body_limit_bytes, so one largest body always fits.
      int64_t held = sr.IntOr("body_memory_limit_bytes", std::max(s.body_memory_limit_bytes, s.body_limit_bytes));
      if (held < s.body_limit_bytes) {
        throw FieldError(sr.Child("body_memory_limit_bytes"), "must be >= server.body_limit_bytes");
      }
      s.body_memory_limit_bytes = held;
      s.assessment_deadline_s = PositiveInt(sr, "assessment_deadline_s", s.assessment_deadline_s);
      s.tokens_file = sr.StringOr("tokens_file", "");
      s.tls_cert = sr.StringOr("tls_cert", "");
      s.tls_key = sr.StringOr("tls_key", "");
      if (s.tls_cert.empty() != s.tls_key.empty()) {
        throw FieldError(s.tls_cert.empty() ? "server.tls_cert" : "server.tls_key", "tls_cert and tls_key go together");
      }
    }
    if (s.listen.find(':') == std::string::npos) throw FieldError("listen", "expected HOST:PORT");
    if (r.Has("store")) {
      ObjectReader sr(r.Raw("store"), "store");
      sr.RejectUnknown({"keep_versions", "idempotency_ttl_s", "url", "password_file", "password_env", "sslmode",
                        "sslrootcert", "sslcert", "sslkey", "connect_timeout_s"});
      c.db_path = sr.StringOr("url", c.db_path);  // the same as "db"
      c.store.password_file = sr.StringOr("password_file", "");
      c.store.password_env = sr.StringOr("password_env", "");
      if (!c.store.password_file.empty() && !c.store.password_env.empty()) {
        throw FieldError(sr.Child("password_env"), "give password_file or password_env, not both");
      }
      c.store.sslmode = sr.StringOr("sslmode", "");
      static const std::set<std::string> kModes = {"",        "disable",   "allow",      "prefer",
                                                   "require", "verify-ca", "verify-full"};
      if (!kModes.count(c.store.sslmode)) {
        throw FieldError(sr.Child("sslmode"), "expected disable, allow, prefer, require, verify-ca or verify-full");
      }
      c.store.sslrootcert = sr.StringOr("sslrootcert", "");
      c.store.sslcert = sr.StringOr("sslcert", "");
      c.store.sslkey = sr.StringOr("sslkey", "");
      c.store.connect_timeout_s = static_cast<int>(sr.IntOr("connect_timeout_s", c.store.connect_timeout_s));
      if (c.store.connect_timeout_s < 2 || c.store.connect_timeout_s > 300) {
        throw FieldError(sr.Child("connect_timeout_s"), "must be between 2 and 300 seconds");
      }
      c.store.keep_versions = sr.IntOr("keep_versions", c.store.keep_versions);
      if (c.store.keep_versions < 0) {
        throw FieldError(sr.Child("keep_versions"), "must be >= 0 (0 keeps every version)");
      }
      c.store.idempotency_ttl_s = sr.IntOr("idempotency_ttl_s", c.store.idempotency_ttl_s);
      if (c.store.idempotency_ttl_s < 1 || c.store.idempotency_ttl_s > 315'360'000) {
        throw FieldError(sr.Child("idempotency_ttl_s"), "must be between 1 and 315360000 seconds (10 years)");
      }
    }
    if (r.Has("sources")) {
      if (!r.Raw("sources").is_array()) throw FieldError("sources", "expected an array");
      c.sources = r.Raw("sources");
    }
    if (r.Has("profiles")) {
      if (!r.Raw("profiles").is_object()) throw FieldError("profiles", "expected an object");
      c.profiles = r.Raw("profiles");
    }
    if (r.Has("telemetry")) {
      ObjectReader tr(r.Raw("telemetry"), "telemetry");
      tr.RejectUnknown({"max_errors_per_s", "max_discards_per_s", "max_utilization"});
      for (auto key : {"max_errors_per_s", "max_discards_per_s", "max_utilization"}) {
        if (tr.Has(key) && tr.Number(key) < 0) throw FieldError(tr.Child(key), "must be >= 0");
      }
      c.telemetry = r.Raw("telemetry");
    }
    if (r.Has("simulation")) {
      if (!r.Raw("simulation").is_object()) throw FieldError("simulation", "expected an object");
      c.simulation = r.Raw("simulation");
    }
    if (r.Has("advisor")) {
      if (!r.Raw("advisor").is_object()) throw FieldError("advisor", "expected an object");
      c.advisor = r.Raw("advisor");
    }
    if (r.Has("task")) {
      if (!r.Raw("task").is_object()) throw FieldError("task", "expected an object");
      c.task = r.Raw("task");
    }
    if (r.Has("link_health")) {
      if (!r.Raw("link_health").is_object()) throw FieldError("link_health", "expected an object");
      c.link_health = r.Raw("link_health");
    }
    return c;
  } catch (const FieldError& e) {
    return InvalidArgument(std::string("config: ") + e.what());
  }
}

Result<Config> LoadConfigFile(const std::string& path) {
  auto doc = codec::ReadJsonFile(path);
  if (!doc) return tl::unexpected(doc.error());
  auto c = ParseConfig(*doc);
  if (!c) return tl::unexpected(c.error().Wrap(path));
  return c;
}

nlohmann::json ConfigToJson(const Config& c) {
  const auto& s = c.server;
  nlohmann::json out = {{"listen", s.listen},
                        {"db", c.db_path},
                        {"policy_file", c.policy_file},
                        {"log_level", c.log_level},
                        {"server",
                         {{"io_threads", s.io_threads},
                          {"workers", s.workers},
                          {"body_limit_bytes", s.body_limit_bytes},
                          {"read_timeout_s", s.read_timeout_s},
                          {"queue_limit", s.queue_limit},
                          {"read_workers", s.read_workers},
                          {"read_queue_limit", s.read_queue_limit},
                          {"body_memory_limit_bytes", s.body_memory_limit_bytes},
                          {"assessment_deadline_s", s.assessment_deadline_s},
                          {"tokens_file", s.tokens_file},
                          {"tls_cert", s.tls_cert},
                          {"tls_key", s.tls_key}}},
                        {"store",
                         {{"keep_versions", c.store.keep_versions},
                          {"idempotency_ttl_s", c.store.idempotency_ttl_s},
                          {"password_file", c.store.password_file},
                          {"password_env", c.store.password_env},
                          {"sslmode", c.store.sslmode},
                          {"sslrootcert", c.store.sslrootcert},
                          {"sslcert", c.store.sslcert},
                          {"sslkey", c.store.sslkey},
                          {"connect_timeout_s", c.store.connect_timeout_s}}},
                        {"sources", c.sources},
                        {"profiles", c.profiles},
                        {"telemetry", c.telemetry},
                        {"simulation", c.simulation},
                        {"advisor", c.advisor},
                        {"task", c.task}};
  if (!c.link_health.is_null()) out["link_health"] = c.link_health;
  return out;
}

}  // namespace drainwise::config
