// The link health history: downsampling and its bound under a long feed.
#include <doctest/doctest.h>

#include <filesystem>

#include "store/link_history.h"
#include "testing/daemon.h"

using namespace drainwise;

TEST_CASE("readings are averaged into buckets") {
  store::LinkHistoryOptions o;
  o.path = ":memory:";
  o.bucket_s = 60;
  auto h = store::LinkHistory::Open(o);
  REQUIRE(h);
  // 120 s and 150 s fall in bucket [120, 180): mean 2, min 1, max 3; 200 s in the next.
  REQUIRE((*h)->Record({{"leaf-1", "swp1", "in_errors", 120, 1},
                        {"leaf-1", "swp1", "in_errors", 150, 3},
                        {"leaf-1", "swp1", "in_errors", 200, 7}}));
  auto all = (*h)->Read();
  REQUIRE(all);
  REQUIRE(all->size() == 1);
  REQUIRE((*all)[0].buckets.size() == 2);
  CHECK((*all)[0].buckets[0].start_s == 120);
  CHECK((*all)[0].buckets[0].mean == doctest::Approx(2));
  CHECK((*all)[0].buckets[0].min == 1);
  CHECK((*all)[0].buckets[0].max == 3);
  CHECK((*all)[0].buckets[0].count == 2);
  CHECK((*all)[0].buckets[1].mean == 7);
  CHECK(store::LinkHistory::Open({":memory:", 0}).error().message.find("bucket_s") != std::string::npos);
}

TEST_CASE("a long synthetic feed stays within the documented bound") {
  // 60 days of one reading per series every hour, 40 series (10 link
  // ends x 4 signals) on a file. Options: 1-hour buckets, 7 days retention,
  // at most 100 buckets per series, at most 50 series. Bound: 50 x 100 =
  // 5000 rows, whatever the feed; here 40 x 100 = 4000: retention alone
  // would allow 7 x 24 + 1 = 169 buckets per series, so the per-series cap
  // (100) is what binds.
  std::string dir = testing::MakeTempDir();
  store::LinkHistoryOptions o;
  o.path = dir + "/history.db";
  o.bucket_s = 3600;
  o.retention_s = 7 * 86400;
  o.max_buckets_per_series = 100;
  o.max_series = 50;
  auto h = store::LinkHistory::Open(o);
  REQUIRE(h);
  const char* signals[] = {"in_errors", "fec_corrected", "carrier_transitions", "rx_power_dbm"};
  int64_t max_rows = 0;
  // 240 writes of 6 hours x 40 readings (one transaction each: fsyncs are what cost).
  for (int write = 0; write < 60 * 4; ++write) {
    std::vector<store::HistoryReading> batch;
    for (int step = write * 6; step < write * 6 + 6; ++step) {
      double t = 1.7e9 + step * 3600.0;
      for (int end = 0; end < 10; ++end) {
        for (const char* s : signals) batch.push_back({"leaf-" + std::to_string(end), "swp1", s, t, step * 1.0});
      }
    }
    REQUIRE((*h)->Record(batch));
    max_rows = std::max(max_rows, *(*h)->RowCount());
  }
  max_rows = std::max(max_rows, *(*h)->RowCount());
  CHECK(max_rows <= 4000);
  CHECK(*(*h)->SeriesCount() == 40);
  CHECK(*(*h)->RowCount() == 40 * 100);
  auto all = (*h)->Read();
  REQUIRE(all);
  for (const auto& s : *all) CHECK(s.buckets.size() == 100);
  // The newest buckets are the ones kept: the last bucket holds the last readings.
  CHECK(all->front().buckets.back().max == 60 * 24 - 1);
  h->reset();
  // Reopened, the bound still holds and nothing was lost.
  auto again = store::LinkHistory::Open(o);
  REQUIRE(again);
  CHECK(*(*again)->RowCount() == 4000);
  std::filesystem::remove_all(dir);
}

TEST_CASE("retention drops old buckets relative to the newest reading") {
  store::LinkHistoryOptions o;
  o.path = ":memory:";
  o.bucket_s = 3600;
  o.retention_s = 2 * 3600;
  auto h = store::LinkHistory::Open(o);
  REQUIRE(h);
  REQUIRE((*h)->Record({{"d", "i", "in_errors", 0, 1}}));
  REQUIRE((*h)->Record({{"d", "i", "in_errors", 10 * 3600, 1}}));
  // Bucket 0 is 10 h older than the newest: gone; bucket 10 stays.
  CHECK(*(*h)->RowCount() == 1);
}

TEST_CASE("more series than max_series: the least recently written go") {
  // 40 series written in turn, one each, bound 30: the last 30 stay.
  store::LinkHistoryOptions o;
  o.path = ":memory:";
  o.max_series = 30;
  auto h = store::LinkHistory::Open(o);
  REQUIRE(h);
  for (int i = 0; i < 40; ++i) REQUIRE((*h)->Record({{"d" + std::to_string(i), "i", "in_errors", 1000.0 + i, 1}}));
  CHECK(*(*h)->SeriesCount() == 30);
  CHECK(*(*h)->RowCount() == 30);
  auto all = (*h)->Read();
  REQUIRE(all);
  for (const auto& s : *all) CHECK(std::stoi(s.device.substr(1)) >= 10);
}
