// End to end: `drainwise simulate --mode task` (the real binary).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "testing/daemon.h"
#include "testing/fabrics.h"

using namespace drainwise;

TEST_CASE("simulate --mode task: same seed, same bytes, in json, text and csv") {
  const std::vector<std::string> base = {"simulate", "--mode", "task", "--preset", "small", "--horizon", "60d"};
  auto run = [&](std::vector<std::string> extra, std::string* out) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    std::string err;
    int code = testing::RunDrainwise(args, out, &err);
    INFO(err);
    return code;
  };
  std::string a, b, c;
  REQUIRE(run({"--seed", "4", "--format", "json"}, &a) == 0);
  REQUIRE(run({"--seed", "4", "--format", "json"}, &b) == 0);
  REQUIRE(run({"--seed", "5", "--format", "json"}, &c) == 0);
  CHECK(a == b);
  CHECK(a != c);
  auto doc = nlohmann::json::parse(a);
  CHECK(doc["kind"] == "task");
  CHECK(doc["horizon_h"] == 1440.0);
  CHECK(doc["seed"] == 4);
  std::string csv;
  REQUIRE(run({"--seed", "4", "--format", "csv"}, &csv) == 0);
  CHECK(std::count(csv.begin(), csv.end(), '\n') == 61);  // header + 60 days
  CHECK(csv.rfind("start_h,end_h,switch_availability,gpu_availability,", 0) == 0);
  std::string text;
  REQUIRE(run({"--seed", "4", "--format", "text"}, &text) == 0);
  CHECK(text.find("GPUs available") != std::string::npos);
}

TEST_CASE("simulate --mode task --trace replays sacct --json") {
  std::string out, err;
  int code = testing::RunDrainwise({"simulate", "--mode", "task", "--preset", "small", "--horizon", "2d", "--trace",
                                    testing::TestDataPath("connectors/sacct_v0040_mixed.json"), "--format", "json"},
                                   &out, &err);
  REQUIRE_MESSAGE(code == 0, err);
  // Three jobs ran; the pending one is named on stderr as left out.
  CHECK(err.find("trace: job 1004 left out: never ran (state PENDING") != std::string::npos);
  auto doc = nlohmann::json::parse(out);
  CHECK(doc["jobs"]["submitted"] == 3);
  CHECK(doc["jobs"]["started"] == 3);
}

TEST_CASE("simulate --mode task refuses what it cannot run, naming it") {
  std::string out, err;
  CHECK(testing::RunDrainwise({"simulate", "--mode", "task", "--horizon", "1d"}, &out, &err) == 2);
  CHECK(err.find("give --topology FILE or --preset NAME") != std::string::npos);
  CHECK(testing::RunDrainwise({"simulate", "--mode", "task", "--preset", "small", "--horizon", "soon"}, &out, &err) ==
        2);
  CHECK(err.find("horizon: 'soon' is not a duration") != std::string::npos);
  CHECK(testing::RunDrainwise({"simulate", "--mode", "task", "--preset", "small", "--trace",
                               testing::TestDataPath("connectors/README.md")},
                              &out, &err) == 2);
  CHECK(err.find("expected sacct --json output") != std::string::npos);
}
