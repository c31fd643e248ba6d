// A bounded, downsampled history of link health signals for sources that
// keep none themselves (gNMI, files, instant scrapes), in SQLite: its own
// file, its own table (link_history) and its own bound; the audit store
// (store.h) is not touched. Where Prometheus is the source, its range
// queries are the history and nothing is kept here.
//
// Downsampling: readings of one series (device, interface, signal) are
// averaged into buckets of `bucket_s` (min and max kept too). Bound, applied
// after every write: buckets older than `retention_s` before the newest
// reading are dropped, a series keeps at most `max_buckets_per_series`
// buckets (the newest), and at most `max_series` series are kept (the most
// recently written). So the table never holds more than max_series x
// max_buckets_per_series rows, whatever the feed (docs/link-health.md).
//
// Thread safety: every method may be called from any thread (one
// connection behind a mutex).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "model/error.h"

struct sqlite3;

namespace drainwise::store {

struct LinkHistoryOptions {
  std::string path;                       // SQLite file; ":memory:" for tests
  double bucket_s = 300;                  // 5 minutes
  double retention_s = 14 * 86400.0;      // two weeks
  int64_t max_buckets_per_series = 4032;  // 14 days of 5-minute buckets
  int64_t max_series = 20000;             // e.g. 2000 link ends x 10 signals
};

struct HistoryReading {
  std::string device;
  std::string interface;
  std::string signal;
  double time_s = 0;
  double value = 0;
};

struct HistoryBucket {
  double start_s = 0;  // bucket start (unix s)
  double mean = 0, min = 0, max = 0;
  int64_t count = 0;
};

struct HistorySeries {
  std::string device, interface, signal;
  std::vector<HistoryBucket> buckets;  // oldest first
};

class LinkHistory {
 public:
  // Creates the file and table when missing. Errors: kInvalidArgument for
  // options out of range (naming the field), kIo when SQLite cannot open it.
  static Result<std::unique_ptr<LinkHistory>> Open(const LinkHistoryOptions& options);
  ~LinkHistory();

  // Adds readings (non-finite values are skipped), then enforces the bound.
  Status Record(const std::vector<HistoryReading>& readings);
  // Every series with its buckets, or those of one device when `device` is
  // non-empty.
  Result<std::vector<HistorySeries>> Read(const std::string& device = "") const;
  // Rows and series held now.
  Result<int64_t> RowCount() const;
  Result<int64_t> SeriesCount() const;
  const LinkHistoryOptions& options() const { return options_; }

 private:
  explicit LinkHistory(LinkHistoryOptions options) : options_(std::move(options)) {}
  Status Exec(const char* sql) const;
  Status Prune(double newest_s);

  LinkHistoryOptions options_;
  mutable std::mutex mu_;
  sqlite3* db_ = nullptr;
};

}  // namespace drainwise::store
