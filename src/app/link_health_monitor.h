// The daemon's link health (issue 16, docs/link-health.md): health signals
// per link end from Prometheus range queries (Prometheus keeps the
// history) and from the connectors' telemetry (gNMI, files, scrapes: kept
// here, bounded, in store::LinkHistory), evaluated by advisor/link_trends.h
// and mapped onto the topology in force.
//
// One thread of its own polls Prometheus every refresh_s and re-evaluates
// after each poll or new connector reading; requests read the last report
// (a shared_ptr to an immutable value), re-mapped when the topology changed.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "advisor/link_trends.h"
#include "connectors/link_health.h"
#include "connectors/telemetry.h"
#include "model/error.h"
#include "model/snapshot.h"
#include "store/link_history.h"

namespace drainwise::app {

struct PrometheusHealthQuery {
  std::string signal;  // advisor::HealthSignalName
  std::string query;   // PromQL; "$step" is replaced by the step ("3600s")
};

struct LinkHealthOptions {
  bool enabled = false;  // the "link_health" section is present
  // Prometheus (empty url = none): range queries over the window.
  std::string prometheus_url;  // "http://prometheus:9090"
  double window_s = 14 * 86400.0;
  double step_s = 3600;
  double refresh_s = 300;
  double timeout_s = 10;
  std::string token_file;                 // bearer token for Prometheus, when it needs one
  std::string device_label = "instance";  // ":port" stripped
  std::vector<std::string> interface_labels = {"ifName", "ifDescr", "interface_name", "interface", "device"};
  std::vector<PrometheusHealthQuery> queries;  // default: DefaultPrometheusQueries()
  connectors::NameOptions names;
  // gnmic file output (`--format event`) read every refresh_s: FEC, optical
  // power, carrier transitions, ... into the history (device: the events'
  // `source` tag). Readings not newer than the last of their series are skipped.
  std::vector<std::string> gnmic_files;
  // History of connector telemetry; history.path empty = <db>.link-history.
  store::LinkHistoryOptions history;
  advisor::TrendOptions trends;
  int max_points = 200;  // per series before trend fitting (averaged down); bounds Theil–Sen's n^2
};

// node_exporter and snmp_exporter queries for every signal they export.
std::vector<PrometheusHealthQuery> DefaultPrometheusQueries();

// The "link_health" section. Errors name the field ("link_health.prometheus.step_s: ...").
Result<LinkHealthOptions> ParseLinkHealthOptions(const nlohmann::json& section, const std::string& db_path);

// One link's health: the worse of its two ends.
struct LinkHealthItem {
  model::LinkId link;
  std::string end;  // "device:interface" of the worse end
  advisor::LinkEndHealth health;
  std::vector<std::pair<std::string, advisor::LinkEndHealth>> ends;  // every end with data
  std::optional<double> speed_bps;                                   // lowest latest operational speed
};

struct LinkHealthReport {
  int64_t topology_version = -1;
  double computed_at_s = 0;
  double window_s = 0;
  std::vector<LinkHealthItem> links;   // every link with data, riskiest first
  std::vector<std::string> unmatched;  // "device:interface" matching no link
  std::string source;                  // "prometheus" | "history" | "prometheus+history"
  std::string last_error;              // of the last Prometheus poll; "" when it succeeded

  const LinkHealthItem* Find(model::LinkId link) const;
};

class LinkHealthMonitor {
 public:
  // Opens the history. Errors: kInvalidArgument / kIo from LinkHistory::Open.
  static Result<std::unique_ptr<LinkHealthMonitor>> Create(LinkHealthOptions options,
                                                           std::function<model::SnapshotPtr()> snapshot);
  ~LinkHealthMonitor();

  // Starts the polling thread (idempotent); the destructor stops it.
  void Start();
  // Called after every re-evaluation, on the monitor's thread.
  void OnReport(std::function<void(const std::shared_ptr<const LinkHealthReport>&)> fn);

  // Connector telemetry (rates of one poll) into the history.
  void RecordInterfaces(const std::vector<connectors::InterfaceTelemetry>& interfaces, double now_s);
  // Health samples (gnmic events); cumulative ones become rates against the previous reading.
  void RecordSamples(const std::vector<connectors::HealthSample>& samples);

  // The report for `snapshot`'s topology, evaluated now if the last one is
  // of another topology version. Null without a snapshot.
  std::shared_ptr<const LinkHealthReport> Report(const model::SnapshotPtr& snapshot);
  // The series (downsampled) of one link's ends, for charts: signal -> points.
  std::map<std::string, std::map<std::string, std::vector<advisor::TimePoint>>> History(const model::Topology& topology,
                                                                                        model::LinkId link) const;

  const LinkHealthOptions& options() const { return options_; }
  // Polls Prometheus once and re-evaluates (the thread does this every refresh_s).
  void RefreshNow();

 private:
  using EndKey = std::pair<std::string, std::string>;  // device, interface
  using EndSeries = std::map<EndKey, std::map<advisor::HealthSignal, std::vector<advisor::TimePoint>>>;

  LinkHealthMonitor(LinkHealthOptions options, std::function<model::SnapshotPtr()> snapshot)
      : options_(std::move(options)), snapshot_(std::move(snapshot)) {}
  void Run(std::stop_token stop);
  Status PollPrometheus();
  Status ReadGnmicFiles();
  EndSeries Collect() const;  // Prometheus series + history
  std::shared_ptr<const LinkHealthReport> Evaluate(const model::SnapshotPtr& snapshot);

  LinkHealthOptions options_;
  std::function<model::SnapshotPtr()> snapshot_;
  std::unique_ptr<store::LinkHistory> history_;

  mutable std::mutex mu_;
  std::condition_variable_any wake_;
  bool dirty_ = true;
  EndSeries prometheus_;  // of the last successful poll
  std::string last_error_;
  std::map<std::pair<EndKey, std::string>, std::pair<double, double>> last_counter_;  // (t, value) per counter
  std::shared_ptr<const LinkHealthReport> report_;
  std::function<void(const std::shared_ptr<const LinkHealthReport>&)> on_report_;
  std::jthread thread_;
};

// JSON of one link's health (the API's shape, docs/openapi.yaml LinkHealth).
nlohmann::json LinkHealthJson(const model::Topology& topology, const LinkHealthItem& item);
// Compact form for path listings: score, severity, the worst finding's kind and explanation.
nlohmann::json LinkHealthSummaryJson(const LinkHealthItem& item);

}  // namespace drainwise::app
