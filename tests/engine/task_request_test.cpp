// The task-level request document (engine/task_request.h).
#include "engine/task_request.h"

#include <doctest/doctest.h>

#include "testing/fabrics.h"

namespace drainwise::engine {
namespace {

using nlohmann::json;

TEST_CASE("durations: d, h, m, s or seconds; anything else is refused by field") {
  CHECK(*ParseDurationSeconds("365d", "horizon") == 365 * 86400.0);
  CHECK(*ParseDurationSeconds("1.5h", "horizon") == 5400.0);
  CHECK(*ParseDurationSeconds("90m", "horizon") == 5400.0);
  CHECK(*ParseDurationSeconds("42s", "horizon") == 42.0);
  CHECK(*ParseDurationSeconds("42", "horizon") == 42.0);
  CHECK(*ParseDurationSeconds(json(3600), "horizon") == 3600.0);
  CHECK(ParseDurationSeconds("0d", "horizon").error().message == "horizon: must be > 0");
  CHECK(ParseDurationSeconds("1w", "x").error().message ==
        "x: '1w' is not a duration (a number followed by d, h, m or s, e.g. \"365d\")");
  CHECK(!ParseDurationSeconds(json::array(), "x"));
}

TEST_CASE("a request maps onto the simulator's options") {
  const model::Topology topo = testing::TopologyFromJson(testing::TwoByTwo());
  json r = json::parse(R"({
    "mode": "task", "horizon": "10d", "seed": 9, "sample_interval": "12h",
    "reliability": {"spine": {"mtbf_h": 100, "mttr_h": 2}, "host": {"mtbf_h": 0}},
    "min_nics_up": 1, "comm_fraction": 0.3, "backfill_depth": 5,
    "drains": [{"start": "1d", "end": "26h", "switches": ["spine0"], "migrate": false, "label": "LC swap"}],
    "trace": {"synthetic": {"seed": 4, "load": 0.5, "max_hosts": 2}}})");
  auto run = ParseTaskRequest(r, topo);
  REQUIRE(run);
  const sim::TaskOptions& o = run->options;
  CHECK(o.horizon_s == 10 * 86400.0);
  CHECK(o.sample_interval_s == 12 * 3600.0);
  CHECK(o.seed == 9);
  CHECK(o.reliability.at("spine").mtbf_h == 100);
  CHECK(o.reliability.at("spine").mttr_h == 2);
  CHECK(o.reliability.at("host").mtbf_h == 0);  // never fails
  CHECK(o.comm_fraction == 0.3);
  CHECK(o.backfill_depth == 5);
  REQUIRE(o.drains.size() == 1);
  CHECK(o.drains[0].start_s == 86400.0);
  CHECK(o.drains[0].end_s == 26 * 3600.0);
  CHECK(o.drains[0].drain.switches == std::vector<model::NodeId>{*topo.FindNode("spine0")});
  CHECK(!o.drains[0].migrate);
  CHECK(run->trace_source.rfind("synthetic (seed 4, load 0.5", 0) == 0);
  for (const auto& j : run->trace) CHECK(j.hosts <= 1);  // max_hosts 2, capped at 4 hosts / 4 = 1
}

TEST_CASE("request errors name the field and the rule") {
  const model::Topology topo = testing::TopologyFromJson(testing::TwoByTwo());
  struct Case {
    const char* body;
    const char* message;
  };
  for (Case c : {
           Case{R"({"mode":"flow"})", "mode: must be \"task\" here"},
           Case{R"({"seed":-1})", "seed: must be a non-negative integer"},
           Case{R"({"reliability":{"spine":{"mtbf":1}}})", "reliability.spine.mtbf: unknown field"},
           Case{R"({"comm_fraction":"half"})", "comm_fraction: must be a number"},
           Case{R"({"min_nics_up":1.5})", "min_nics_up: must be an integer >= 0"},
           Case{R"({"drains":[{"start":"2d","end":"1d","switches":["spine0"]}]})",
                "drains[0]: end must be after start"},
           Case{R"({"drains":[{"start":"1d","end":"2d"}]})", "drains[0]: drains nothing (give switches or links)"},
           Case{R"({"trace":{"csv":"x"}})",
                "trace: must be {\"synthetic\": {...}} or {\"sacct\": <sacct --json output>}"},
           Case{R"({"trace":{"sacct":{"nodes":[]}}})",
                "trace.sacct: sacct --json: no \"jobs\" list (is this the output of sacct --json?)"},
           Case{R"({"horizon":"365d","sample_interval":"1s"})", "sample_interval: at most 100,000 steps per horizon"},
           Case{R"({"horizon":"36501d"})", "horizon: at most 36500d (100 years)"},
       }) {
    CAPTURE(c.body);
    auto run = ParseTaskRequest(json::parse(c.body), topo);
    REQUIRE(!run);
    CHECK(run.error().code == ErrorCode::kInvalidArgument);
    CHECK(run.error().message == c.message);
  }
}

TEST_CASE("sacct records as a trace: times from the first submission, elapsed as work") {
  std::vector<connectors::SacctJob> jobs(3);
  jobs[0] = {"10", "a", "COMPLETED", 1000, 1100, 1700, 600, 1200, 2, 16, "n[1-2]"};
  jobs[1] = {"11", "b", "RUNNING", 400, 500, 0, 300, 0, 1, 8, "n3"};
  jobs[2] = {"12", "c", "CANCELLED", 300, 350, 350, 0, 60, 1, 8, "n4"};
  connectors::Diagnostics diag;
  auto trace = TraceFromSacct(jobs, &diag);
  REQUIRE(trace.size() == 2);
  CHECK(trace[0].id == "11");  // submitted first: t = 0
  CHECK(trace[0].submit_s == 0);
  CHECK(trace[0].work_s == 300);
  CHECK(trace[0].limit_s == 300);  // no limit: its run time
  CHECK(trace[1].submit_s == 600);
  CHECK(trace[1].hosts == 2);
  CHECK(trace[1].limit_s == 1200);
  REQUIRE(diag.skipped.size() == 1);
  CHECK(diag.skipped[0].item == "job 12");
}

}  // namespace
}  // namespace drainwise::engine

namespace drainwise::engine {
namespace {

TEST_CASE("the configuration's task section: defaults under each request, reliability merged by kind") {
  const json defaults = json::parse(R"({"reliability":{"spine":{"mtbf_h":100,"mttr_h":2},"host":{"mtbf_h":0}},
                                        "comm_fraction":0.4,"horizon":"30d"})");
  CHECK(CheckTaskDefaults(defaults));
  const json merged = ApplyTaskDefaults(defaults, json::parse(R"({"mode":"task","horizon":"2d",
                                                                  "reliability":{"spine":{"mtbf_h":50,"mttr_h":1}}})"));
  CHECK(merged["horizon"] == "2d");                       // the request wins
  CHECK(merged["comm_fraction"] == 0.4);                  // the default fills in
  CHECK(merged["reliability"]["spine"]["mtbf_h"] == 50);  // by kind: the request's spine
  CHECK(merged["reliability"]["host"]["mtbf_h"] == 0);    // and the default's host
  CHECK(ApplyTaskDefaults(json::object(), json{{"mode", "task"}}) == json{{"mode", "task"}});

  CHECK(CheckTaskDefaults(json::parse(R"({"drains":[]})")).error().message ==
        "task.drains: not a default: give it in each request");
  CHECK(CheckTaskDefaults(json::parse(R"({"reliability":{"leaf":{"mtbf_h":10,"mttr_h":0}}})")).error().message ==
        "task.reliability.leaf: mttr_h must be > 0 when mtbf_h is");
  CHECK(CheckTaskDefaults(json::parse(R"({"comm_fraction":"x"})")).error().message ==
        "task: comm_fraction: must be a number");
}

}  // namespace
}  // namespace drainwise::engine

namespace drainwise::engine {
namespace {

TEST_CASE("a synthetic trace too large for memory is refused before it is generated") {
  // 32k-sized fabric stand-in is not needed: the bound scales with hosts x horizon / job size.
  const model::Topology topo = testing::TopologyFromJson(testing::TwoByTwo());
  // 4 hosts, 1-host jobs of mean (72 h - 0.25 h) / ln(288) = 12.7 h at load 2:
  // 0.63 arrivals per hour, 5,500 a year: 100 years is 550,000, under the
  // bound; with 1-minute jobs it is far over.
  auto ok = ParseTaskRequest(json::parse(R"({"horizon":"36500d","trace":{"synthetic":{"load":2}}})"), topo);
  REQUIRE(ok);
  CHECK(ok->trace.size() > 500000);
  auto big = ParseTaskRequest(
      json::parse(R"({"horizon":"36500d","trace":{"synthetic":{"load":2,"min_work_s":60,"max_work_s":60}}})"), topo);
  REQUIRE(!big);
  CHECK(big.error().message.rfind("trace.synthetic: about ", 0) == 0);
  CHECK(big.error().message.find("more than the limit of 1,000,000") != std::string::npos);
}

}  // namespace
}  // namespace drainwise::engine
