#include <doctest/doctest.h>

#include "connectors/profiles.h"
#include "test_data.h"

namespace drainwise::connectors {
namespace {

using model::CollectiveKind;
using nlohmann::json;

model::JobSpec Job(const std::string& id, std::map<std::string, std::string> labels) {
  model::JobSpec j;
  j.id = id;
  j.labels = std::move(labels);
  j.hosts = {"h0"};
  j.profile_source = "default";
  return j;
}

TEST_CASE("profiles: declared, chakra by job, rule by label or partition, default") {
  auto rules = ParseProfileRules(json::parse(R"({
    "rules": [
      {"name": "moe", "match": {"partition": "h100", "slurm_job_name": "moe-*"}, "chakra": "moe-trace"},
      {"name": "missing-trace", "match": {"team": "nlp"}, "chakra": "not-loaded"},
      {"name": "h100", "match": {"partition": "h100"},
       "iteration": {"compute_ms": 250, "overlap": 0.5,
                     "collectives": [{"kind": "allreduce", "bytes": 2147483648}, {"kind": "alltoall", "bytes": 1048576, "count": 4}]}}
    ],
    "chakra_jobs": {"slurm:4815*": "llama-trace"},
    "default": {"compute_ms": 500, "collectives": [{"kind": "allgather", "bytes": 1024}]}
  })"));
  REQUIRE(rules.has_value());
  REQUIRE(rules->rules.size() == 3);

  ChakraProfiles chakra;
  ChakraProfile llama;
  llama.collectives.push_back({CollectiveKind::kAllReduce, "ring", 268435456.0, 0, 0, 3, {}});
  llama.compute_s = 0.8;
  chakra["llama-trace"] = llama;
  ChakraProfile moe;
  moe.collectives.push_back({CollectiveKind::kAllToAll, "direct", 1e6, 0, 0, 1, {}});
  chakra["moe-trace"] = moe;

  model::JobsSpec jobs;
  auto declared = Job("native-1", {{"partition", "h100"}});
  declared.profile_source = "declared";
  declared.iteration.collectives.push_back({CollectiveKind::kReduceScatter, "ring", 5, 0, 0, 1, {}});
  jobs.jobs.push_back(declared);
  jobs.jobs.push_back(Job("slurm:481516", {{"partition", "h100"}}));
  jobs.jobs.push_back(Job("slurm:9", {{"partition", "h100"}, {"slurm_job_name", "moe-train"}}));
  jobs.jobs.push_back(Job("slurm:10", {{"partition", "h100"}, {"team", "nlp"}}));
  jobs.jobs.push_back(Job("k8s:vision/x", {{"namespace", "vision"}}));

  ApplyProfiles(jobs, *rules, chakra);
  const auto& j = jobs.jobs;
  CHECK(j[0].profile_source == "declared");
  REQUIRE(j[0].iteration.collectives.size() == 1);
  CHECK(j[0].iteration.collectives[0].kind == CollectiveKind::kReduceScatter);

  CHECK(j[1].profile_source == "chakra");  // chakra_jobs glob beats the partition rule
  REQUIRE(j[1].iteration.collectives.size() == 1);
  CHECK(j[1].iteration.collectives[0].count == 3);
  CHECK(j[1].iteration.compute_s == doctest::Approx(0.8));

  CHECK(j[2].profile_source == "chakra");  // rule "moe" names a loaded trace
  CHECK(j[2].iteration.collectives[0].kind == CollectiveKind::kAllToAll);

  // "missing-trace" matches but its trace is not loaded and it has no
  // iteration: the next rule (partition h100) applies.
  CHECK(j[3].profile_source == "rule");
  REQUIRE(j[3].iteration.collectives.size() == 2);
  CHECK(j[3].iteration.collectives[0].bytes == 2147483648.0);
  CHECK(j[3].iteration.collectives[1].count == 4);
  CHECK(j[3].iteration.compute_s == doctest::Approx(0.25));
  CHECK(j[3].iteration.overlap == doctest::Approx(0.5));

  CHECK(j[4].profile_source == "default");  // the configured default
  REQUIRE(j[4].iteration.collectives.size() == 1);
  CHECK(j[4].iteration.collectives[0].kind == CollectiveKind::kAllGather);
  CHECK(j[4].iteration.compute_s == doctest::Approx(0.5));
}

// Chakra's converter output as a job's workload: what the trace held beyond
// the model's kinds travels with the job, never a silent default.
TEST_CASE("profiles: a Chakra feeder trace becomes the job's workload, with what was not mapped named") {
  auto trace = ParseChakra(testdata::ReadText("connectors/chakra_feeder_converter.json"));
  REQUIRE(trace.has_value());
  ProfileRules rules;
  rules.chakra_jobs = {{"train-*", "trace"}};
  model::JobsSpec jobs;
  model::JobSpec j;
  j.id = "train-1";
  j.hosts = {"h0", "h1"};
  j.profile_source = "default";
  jobs.jobs.push_back(j);
  ChakraProfiles profiles;
  profiles.emplace("trace", *trace);
  ApplyProfiles(jobs, rules, profiles);
  const auto& out = jobs.jobs[0];
  CHECK(out.profile_source == "chakra");
  REQUIRE(out.iteration.collectives.size() == 2);
  CHECK(out.labels.at("profile_detail") ==
        "2 × BROADCAST as allgather; not mapped: 1 × COMM_COLL 'record_param_comms' (no comm_type, and the name does "
        "not say), 1 × BARRIER, 1 × SEND, 1 × RECV");
}

TEST_CASE("profiles: the built-in default is documented and marked") {
  model::JobsSpec jobs;
  jobs.jobs.push_back(Job("x", {}));
  ApplyProfiles(jobs, ProfileRules{}, {});
  CHECK(jobs.jobs[0].profile_source == "default");
  REQUIRE(jobs.jobs[0].iteration.collectives.size() == 1);
  CHECK(jobs.jobs[0].iteration.collectives[0].kind == CollectiveKind::kAllReduce);
  CHECK(jobs.jobs[0].iteration.collectives[0].bytes == 1073741824.0);  // 1 GiB
  CHECK(jobs.jobs[0].iteration.compute_s == 1.0);
}

TEST_CASE("profile rule errors name the field") {
  auto bad_kind = ParseProfileRules(json::parse(
      R"({"rules": [{"match": {"partition": "x"}, "iteration": {"collectives": [{"kind": "allsum", "bytes": 1}]}}]})"));
  REQUIRE_FALSE(bad_kind.has_value());
  CHECK(bad_kind.error().message.find("profiles.rules[0].iteration.collectives[0].kind: unknown collective 'allsum'") ==
        0);
  auto empty_rule = ParseProfileRules(json::parse(R"({"rules": [{"match": {"a": "b"}}]})"));
  REQUIRE_FALSE(empty_rule.has_value());
  CHECK(empty_rule.error().message == "profiles.rules[0]: needs \"chakra\" or \"iteration\"");
  auto typo = ParseProfileRules(json::parse(R"({"rulez": []})"));
  REQUIRE_FALSE(typo.has_value());
  CHECK(typo.error().message == "profiles.rulez: unknown field");
}

}  // namespace
}  // namespace drainwise::connectors
