// Sources: where topology, jobs, telemetry and workload profiles come from,
// and the engine that keeps them fresh.
//
// A SourceConfig names one location (http(s) URL, file path or command) and a
// kind (the format). LoadSource() fetches and parses it in one step, all or
// nothing. A SourceManager polls every source on its own timer, keeps each
// source's last good data, marks a source stale with its error when a fetch or
// parse fails, publishes nothing when a refresh changes nothing, and combines
// the sources into one topology spec, one jobs spec and one telemetry list,
// delivered through a callback. See docs/connectors.md.
//
// Implemented in three files: source_config.cpp (parsing the configuration),
// source_load.cpp (fetching and parsing one source) and source_manager.cpp
// (polling, status and combining).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "connectors/chakra.h"
#include "connectors/diagnostics.h"
#include "connectors/fetch.h"
#include "connectors/gnmi.h"
#include "connectors/graph_formats.h"
#include "connectors/kubernetes.h"
#include "connectors/lldp.h"
#include "connectors/netbox.h"
#include "connectors/profiles.h"
#include "connectors/prometheus.h"
#include "connectors/slurm.h"
#include "connectors/telemetry.h"
#include "connectors/topology_merge.h"
#include "model/error.h"
#include "model/jobs.h"
#include "model/topology.h"

namespace drainwise::connectors {

// The kinds, as written in the config.
inline constexpr const char* kSourceKinds[] = {"netbox",     "lldp",         "slurm-topology", "slurm",
                                               "kubernetes", "prometheus",   "gnmi",           "chakra",
                                               "native",     "containerlab", "networkx",       "batfish"};

struct SourceConfig {
  std::string name;  // unique, [A-Za-z0-9_.-]+
  std::string kind;  // one of kSourceKinds
  // Exactly one location. For netbox the URL is the base ("https://nb.example"):
  // /api/dcim/{devices,interfaces,cables}/ are appended. For lldp a path may
  // be a directory of <system>.json reports.
  std::string url;
  std::string path;
  std::string command;
  double refresh_s = 60;  // > 0; also the retry interval after a failure
  double timeout_s = 10;  // per fetch (per page for netbox)
  size_t max_bytes = 64 << 20;
  // Credential, read at each fetch (rotation-friendly), never logged.
  std::string token_env;
  std::string token_file;
  // "token" (Authorization: Token ...), "bearer" (Authorization: Bearer ...),
  // "slurm" (X-SLURM-USER-TOKEN); default: token for netbox (bearer for
  // NetBox 4.5 "nbt_" tokens), slurm for slurm, bearer otherwise.
  std::string auth_scheme;
  std::string ca_file;                // https
  bool insecure_skip_verify = false;  // https

  // Kind-specific options ("options" object in the config).
  NetboxOptions netbox;
  std::string netbox_filter;  // extra query for all three endpoints, e.g. "site=dc1"
  int netbox_page_size = 1000;
  LldpOptions lldp;
  std::string lldp_local_system;  // for a single lldpctl report
  // What a topology source is authoritative for when several are merged
  // (topology_merge.h); default by kind: netbox and slurm-topology intent,
  // lldp observation, the rest all.
  TopologyAuthority authority = TopologyAuthority::kAll;
  // Telemetry: how the exporter's device keys map to topology names.
  NameOptions telemetry_names;
  SlurmTopologyOptions slurm_topology;
  SlurmJobsOptions slurm;
  std::string slurm_user;  // X-SLURM-USER-NAME
  KubernetesOptions kubernetes;
  PrometheusTelemetryOptions prometheus;
  GnmiOptions gnmi;
  std::string chakra_profile;  // profile name for rules; default: the source name
  GraphOptions graph;          // containerlab, networkx, batfish

  // "url <url without query>", "path <path>" or "command <program> ...": for
  // status pages; no credential, no query string, no command arguments.
  std::string Location() const;
};

// One source object. Errors name the field ("sources[2].options.role_tiers.leaf:
// expected a string"). `path` is the prefix for those names.
Result<SourceConfig> ParseSourceConfig(const nlohmann::json& j, const std::string& path = "source");
// The "sources" array; also rejects duplicate names.
Result<std::vector<SourceConfig>> ParseSourceConfigs(const nlohmann::json& array, const std::string& path = "sources");

// What one source yields; which fields are set depends on the kind.
struct SourceData {
  std::optional<model::TopologySpec> topology;  // netbox, lldp, slurm-topology, containerlab, networkx, batfish, native
  std::optional<model::JobsSpec> jobs;          // slurm, kubernetes, native
  std::optional<CounterSample> counters;        // prometheus, gnmi
  std::optional<ChakraProfile> chakra;          // chakra
  // Items skipped (the rest applied) and warnings, for /v1/sources.
  Diagnostics diagnostics;
  // lldp: the systems whose own reports were read (what the observation covers).
  std::set<std::string> observed_systems;
};

// Parses one fetched document of `config.kind` (everything but a netbox URL
// or an lldp directory, which LoadSource assembles first). Pure.
Result<SourceData> ParseSourceDocument(const SourceConfig& config, std::string_view body, double now_s);

// Fetches and parses. Topologies are checked with model::BuildTopology so a
// document that would not build is an error, never applied.
Result<SourceData> LoadSource(const SourceConfig& config, double now_s);

struct SourceStatus {
  std::string name;
  std::string kind;
  std::string location;                 // from Location(): no credentials
  std::optional<int64_t> last_attempt;  // unix seconds
  std::optional<int64_t> last_success;  // unix seconds of the last good fetch (changed or not)
  std::optional<int64_t> last_change;   // unix seconds of the last accepted new content
  std::string last_error;               // of the last attempt, "" when it succeeded
  bool stale = true;                    // no data yet, or the last attempt failed
  bool has_data = false;                // a good document is held (possibly stale)
  uint64_t versions = 0;                // distinct contents accepted so far
  uint64_t attempts = 0;
  uint64_t failures = 0;
  std::string content_hash;  // hex, of the content held
  // From the last good document: items skipped (the rest applied) and
  // warnings (applied, but worth a look), each with its reason.
  Diagnostics diagnostics;
};

// The combined state handed to the server.
struct Update {
  std::string source;    // the source whose refresh caused this update
  uint64_t version = 0;  // increases by one per published update
  bool topology_changed = false;
  bool jobs_changed = false;
  bool telemetry_changed = false;
  // Every topology source holding data, merged (MergeTopologies, config
  // order); null when none has any. A failing source keeps its last good
  // contribution (and is stale).
  std::shared_ptr<const model::TopologySpec> topology;
  // The merge behind `topology`: provenance and drift (same version).
  std::shared_ptr<const MergedTopology> merged;
  // Jobs of every job source (first source wins a duplicate id), profiles
  // applied (ApplyProfiles with the chakra sources' profiles).
  std::shared_ptr<const model::JobsSpec> jobs;
  // Interface rates of every telemetry source (needs two samples per source).
  std::shared_ptr<const std::vector<InterfaceTelemetry>> telemetry;
};

using UpdateCallback = std::function<void(const Update&)>;

struct SourceManagerOptions {
  ProfileRules profiles;
  // Replaces LoadSource (tests, or a caller with its own transport).
  std::function<Result<SourceData>(const SourceConfig&, double now_s)> loader;
  // Unix time in seconds; default the system clock.
  std::function<double()> clock;
  // Called after a good poll whose skipped items or warnings differ from the
  // source's previous ones (the daemon logs them, naming each item). Runs on
  // the polling thread with no lock held.
  std::function<void(const SourceConfig&, const Diagnostics&)> on_diagnostics;
  // Several daemons on one database: asked before each scheduled poll; when
  // false the poll is skipped (another daemon polls and publishes) and asked
  // again after min(refresh_s, may_poll_retry_s). Null = always poll.
  std::function<bool()> may_poll;
  double may_poll_retry_s = 1.0;
};

// The connector part of the daemon's config file: the optional "sources"
// array and "profiles" object of `root` (other keys are not looked at).
struct ConnectorsConfig {
  std::vector<SourceConfig> sources;
  ProfileRules profiles;
};
Result<ConnectorsConfig> ParseConnectorsConfig(const nlohmann::json& root);

// {"name","kind","location","stale","has_data","last_error","last_attempt",
//  "last_success","last_change" (RFC 3339 or null),"versions","attempts",
//  "failures","content_hash","skipped": {"count","first":[{"item","reason"}]},
//  "warnings": {"count","first":[...]}} (at most 10 of each listed): the
//  element of GET /v1/sources.
nlohmann::json SourceStatusToJson(const SourceStatus& status);

// Thread safety: every public method may be called from any thread. The
// callback runs on a polling thread (or the caller of RefreshNow), one call at
// a time, in version order; it may call Statuses()/Current() but must not call
// Stop() or RefreshNow(), and should not throw (an exception is swallowed).
// Telemetry rates of a stale source stay as last computed: check Statuses().
class SourceManager {
 public:
  SourceManager(std::vector<SourceConfig> sources, SourceManagerOptions options, UpdateCallback on_update);
  ~SourceManager();  // Stop()
  SourceManager(const SourceManager&) = delete;
  SourceManager& operator=(const SourceManager&) = delete;

  // Starts one polling thread per source; each polls at once, then every
  // refresh_s. Calling Start twice does nothing.
  void Start();
  // Asks the threads to stop and joins them (a fetch in flight finishes
  // within its timeout). Idempotent.
  void Stop();

  // Polls one source now on the calling thread. Error: kNotFound for an
  // unknown name; otherwise the fetch/parse error (also recorded as stale).
  Status RefreshNow(const std::string& name);
  // RefreshNow for every source, in config order; returns how many failed.
  int RefreshAll();

  std::vector<SourceStatus> Statuses() const;  // config order
  // True when every source holds data (for /readyz).
  bool Ready() const;
  // The last published update (version 0 and null documents before the first).
  Update Current() const;

 private:
  struct State;
  Status Poll(size_t index);
  void Run(std::stop_token stop, size_t index);
  std::optional<Update> Combine(const std::string& source);

  std::vector<SourceConfig> configs_;
  SourceManagerOptions options_;
  UpdateCallback on_update_;

  mutable std::mutex state_mutex_;  // guards states_ and current_
  std::vector<std::unique_ptr<State>> states_;
  Update current_;
  std::map<std::string, uint64_t> published_hashes_;  // "topology"/"jobs"/"telemetry" -> hash

  std::mutex publish_mutex_;  // one poll-and-publish at a time: versions in order
  std::mutex run_mutex_;
  std::condition_variable_any wake_;
  std::vector<std::jthread> threads_;
};

}  // namespace drainwise::connectors
