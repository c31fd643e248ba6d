// The daemon's configuration file (JSON), mapped to per-module options with
// one documented default per field. ParseConfig() is the only place that
// validates it; errors name the field ("limits.queue: must be >= 1").
// Sections owned by other modules (sources, simulation) are kept as JSON and
// validated by those modules at start-up.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "model/error.h"

namespace drainwise::config {

struct ServerOptions {
  std::string listen = "127.0.0.1:8080";        // loopback unless configured otherwise
  int io_threads = 1;                           // Beast I/O threads
  int workers = 2;                              // simulation worker threads
  int64_t body_limit_bytes = 64 << 20;          // larger requests get 413
  int read_timeout_s = 30;                      // header + body read deadline
  int queue_limit = 16;                         // simulations waiting or running; more get 503
  int read_workers = 2;                         // threads rendering bulk reads (documents, listings)
  int read_queue_limit = 32;                    // bulk reads waiting or running; more get 503
  int64_t body_memory_limit_bytes = 256 << 20;  // request bodies held at once, all connections; more get 503
  int assessment_deadline_s = 60;               // per simulation request; past it 504
  std::string tokens_file;                      // empty = no authentication
  std::string tls_cert;                         // both set = HTTPS
  std::string tls_key;
};

// The database's retention and idempotency settings (docs/configuration.md).
struct StoreSettings {
  int64_t keep_versions = 1000;       // newest versions kept per document kind, besides referenced ones; 0 = all
  int64_t idempotency_ttl_s = 86400;  // an Idempotency-Key is honoured this long (1 s to 10 years)
  // PostgreSQL (db = "postgresql://…", or store.url): the password from a
  // file (first line) or an environment variable, never the config itself;
  // TLS as libpq's sslmode / sslrootcert / sslcert / sslkey.
  std::string password_file;
  std::string password_env;
  std::string sslmode;
  std::string sslrootcert;
  std::string sslcert;
  std::string sslkey;
  int connect_timeout_s = 5;
};

struct Config {
  ServerOptions server;
  StoreSettings store;
  std::string db_path = "drainwise.db";                  // SQLite file (the audit trail)
  std::string policy_file;                               // empty = the built-in default policy
  std::string log_level = "info";                        // trace, debug, info, warn, error
  nlohmann::json sources = nlohmann::json::array();      // connectors' section
  nlohmann::json profiles = nlohmann::json::object();    // workload profile rules for jobs without one
  nlohmann::json telemetry = nlohmann::json::object();   // degraded-link thresholds
  nlohmann::json simulation = nlohmann::json::object();  // flow-level defaults
  nlohmann::json advisor = nlohmann::json::object();     // advisor defaults
  nlohmann::json task = nlohmann::json::object();        // task-level defaults (engine/task_request.h)
  nlohmann::json link_health;  // null = off; app/link_health_monitor.h (docs/link-health.md)
};

Result<Config> ParseConfig(const nlohmann::json& doc);
Result<Config> LoadConfigFile(const std::string& path);
nlohmann::json ConfigToJson(const Config& config);

}  // namespace drainwise::config
