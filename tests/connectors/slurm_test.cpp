#include <doctest/doctest.h>

#include <map>
#include <set>

#include "connectors/slurm.h"
#include "model/topology.h"
#include "test_data.h"

namespace drainwise::connectors {
namespace {

using nlohmann::json;
using testdata::ReadJson;
using testdata::ReadText;

int CountLinks(const model::TopologySpec& t, const std::string& sw) {
  int n = 0;
  for (const auto& l : t.links) n += (l.a == sw || l.b == sw);
  return n;
}

TEST_CASE("topology.conf fixture: leaves, spine, hosts from hostlists") {
  auto t = ParseSlurmTopologyConf(ReadText("fixtures/topology.conf"));
  REQUIRE(t.has_value());
  // 3 switches + gpu001-004 + gpu005-008 + gpu010 = 12 nodes.
  REQUIRE(t->nodes.size() == 12);
  CHECK(t->nodes[0].id == "leaf-a01");
  CHECK(t->nodes[0].tier == "leaf");
  CHECK(t->nodes[0].level == 1);
  CHECK(t->nodes[2].id == "spine-01");
  CHECK(t->nodes[2].tier == "spine");
  CHECK(t->nodes[2].level == 2);
  CHECK(t->nodes[3].id == "gpu001");
  CHECK(t->nodes[3].kind == model::NodeKind::kHost);
  CHECK(t->nodes[3].gpus == 8);
  // 2 leaf uplinks + 4 + 5 host links.
  CHECK(t->links.size() == 11);
  CHECK(CountLinks(*t, "leaf-a01") == 5);
  CHECK(CountLinks(*t, "leaf-a02") == 6);
  CHECK(CountLinks(*t, "spine-01") == 2);
  for (const auto& l : t->links) CHECK(l.gbps == doctest::Approx(400));
  CHECK(model::BuildTopology(*t).has_value());
}

TEST_CASE("topology.conf variants: LinkSpeed, continuation, case, three levels") {
  const char* conf =
      "# three levels\n"
      "switchname=s1 nodes=h[1-2] linkspeed=100\n"
      "SwitchName=s2 Nodes=h3 \\\n"
      "   LinkSpeed=200\n"
      "SwitchName=sp1 Switches=s[1-2]   # spine\n"
      "\n"
      "SwitchName=top Switches=sp1 LinkSpeed=800\n";
  auto t = ParseSlurmTopologyConf(conf);
  REQUIRE(t.has_value());
  REQUIRE(t->nodes.size() == 7);
  CHECK(t->nodes[3].id == "top");
  CHECK(t->nodes[3].tier == "superspine");
  CHECK(t->nodes[3].level == 3);
  // s1's links are 100, s2's 200, sp1 has no LinkSpeed (default), top's 800.
  for (const auto& l : t->links) {
    if (l.b == "s1") CHECK(l.gbps == doctest::Approx(100));
    if (l.b == "s2") CHECK(l.gbps == doctest::Approx(200));
    if (l.b == "sp1") CHECK(l.gbps == doctest::Approx(400));
    if (l.b == "top") CHECK(l.gbps == doctest::Approx(800));
  }
  CHECK(model::BuildTopology(*t).has_value());

  SlurmTopologyOptions o;
  o.link_speed_unit_gbps = 0;  // ignore LinkSpeed
  o.default_gbps = 50;
  auto t2 = ParseSlurmTopologyConf(conf, o);
  REQUIRE(t2.has_value());
  for (const auto& l : t2->links) CHECK(l.gbps == doctest::Approx(50));
}

TEST_CASE("topology.conf errors name the line") {
  struct Case {
    const char* conf;
    const char* message;
  };
  const Case cases[] = {
      {"SwitchName=s1 Nodes=h[1-2]\nSwitchName=sp Switches=s[1-2]\n",
       "topology.conf line 2: switch 'sp' lists undefined switch 's2'"},
      {"SwitchName=a Switches=b\nSwitchName=b Switches=a\n", "topology.conf line 1: switch 'a' is part of a cycle"},
      {"SwitchName=s1 Nodes=h1 Color=red\n",
       "topology.conf line 1: unknown key 'Color' (SwitchName, Switches, Nodes, LinkSpeed; BlockName, BlockSizes)"},
      {"\n\nSwitchName=s1 Nodes=gpu[01-02]-ib\n",
       "topology.conf line 3: Nodes: hostlist 'gpu[01-02]-ib': text '-ib' after the last ']'"},
      {"SwitchName=s1 Nodes=h1\nSwitchName=s1 Nodes=h2\n", "topology.conf line 2: switch 's1' defined twice"},
      {"Nodes=h1\n", "topology.conf line 1: SwitchName= (or BlockName=) required"},
      {"BlockName=b1 Nodes=h1\nSwitchName=s1 Nodes=h2\n",
       "topology.conf line 1: BlockName= (topology/block) and SwitchName= (topology/tree, line 2) in one file"},
      {"BlockName=b1 Nodes=h[1-3]\nBlockSizes=2,4\n",
       "topology.conf line 1: block 'b1' has 3 nodes, more than the base block size 2 (BlockSizes, line 2)"},
      {"BlockName=b1 Nodes=h1\nBlockSizes=4,2\n",
       "topology.conf line 2: BlockSizes: 2 does not grow after 4 (sizes must increase)"},
      {"BlockName=b1 Nodes=h1\nBlockName=b2 Nodes=h1\n", "topology.conf line 2: node 'h1' is in two blocks"},
      {"SwitchName=no-topology Nodes=h[1-2]\n",
       "topology.conf: every node (2) is under no-topology; no switch to build a fabric from"},
      {"SwitchName=s1\n", "topology.conf line 1: switch 's1' has neither Switches= nor Nodes="},
      {"SwitchName=s1 Nodes=h1 LinkSpeed=fast\n", "topology.conf line 1: LinkSpeed 'fast' is not a positive number"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.conf);
    auto t = ParseSlurmTopologyConf(c.conf);
    REQUIRE_FALSE(t.has_value());
    CHECK(t.error().message == c.message);
  }
}

TEST_CASE("squeue --json (24.11, data_parser v0.0.42): only running jobs, number objects") {
  auto jobs = ParseSlurmJobs(ReadJson("fixtures/squeue.json"));
  REQUIRE(jobs.has_value());
  REQUIRE(jobs->jobs.size() == 1);  // 481600 is PENDING
  const auto& j = jobs->jobs[0];
  CHECK(j.id == "481516");
  CHECK(j.name == "llama-70b-pretrain");
  CHECK(j.tenant == "llm-research");
  CHECK(j.hosts == std::vector<std::string>{"gpu001", "gpu002", "gpu003", "gpu004", "gpu010"});
  CHECK(j.gpus_per_host == 8);  // gres/gpu:8
  REQUIRE(j.started_at.has_value());
  CHECK(*j.started_at == 1718012345);
  REQUIRE(j.expected_end.has_value());
  CHECK(*j.expected_end == 1718617145);
  CHECK(j.labels.at("partition") == "h100");
  CHECK(j.labels.at("user") == "alice");
  CHECK(j.labels.at("account") == "llm-research");
  CHECK(j.priority == 0);  // Slurm's scheduling priority is not mapped
  CHECK(j.iteration.collectives.empty());
  CHECK(j.profile_source == "default");
}

TEST_CASE("squeue --json (23.02, v0.0.38): job_state as a string, plain numbers, several brackets") {
  SlurmJobsOptions o;
  o.id_prefix = "c1:";
  auto jobs = ParseSlurmJobs(ReadJson("connectors/squeue_v0038.json"), o);
  REQUIRE(jobs.has_value());
  REQUIRE(jobs->jobs.size() == 2);  // 77002 pending, 77003 completing
  const auto& a = jobs->jobs[0];
  CHECK(a.id == "c1:77001");
  CHECK(a.hosts == std::vector<std::string>{"rack0_gpu1", "rack0_gpu2", "rack1_gpu1", "rack1_gpu2"});
  CHECK(a.gpus_per_host == 4);  // gres:gpu:a100:4
  CHECK(*a.started_at == 1718000000);
  CHECK_FALSE(a.expected_end.has_value());  // end_time 0
  CHECK(a.labels.at("qos") == "normal");
  const auto& b = jobs->jobs[1];
  CHECK(b.id == "c1:77004");  // ["RUNNING", "COMPLETING"]
  CHECK(b.hosts == std::vector<std::string>{"gpu005", "gpu006", "gpu007", "gpu008", "gpu010"});
  CHECK(*b.started_at == 1718001000);
  CHECK_FALSE(b.expected_end.has_value());  // set: false
  CHECK(b.gpus_per_host == 0);
}

TEST_CASE("slurm jobs errors: in-band slurmrestd errors, bad fields") {
  auto err = ParseSlurmJobs(ReadJson("connectors/slurmrestd_error.json"));
  REQUIRE_FALSE(err.has_value());
  CHECK(err.error().message == "slurm jobs: errors[0]: slurm reported: Unable to query jobs");

  // One job that cannot be read is skipped and named; the others apply.
  auto skipped_one = [](const json& doc, const char* message) {
    CAPTURE(message);
    Diagnostics diag;
    auto jobs = ParseSlurmJobs(doc, {}, &diag);
    REQUIRE(jobs.has_value());
    CHECK(jobs->jobs.empty());  // the fixture's only running job
    REQUIRE(diag.skipped.size() == 1);
    CHECK(diag.skipped[0].reason == message);
  };
  json doc = ReadJson("fixtures/squeue.json");
  doc["jobs"][0]["job_state"] = 3;
  skipped_one(doc, "jobs[0].job_state: expected a string or a list, got number");
  doc = ReadJson("fixtures/squeue.json");
  doc["jobs"][0]["nodes"] = "gpu[4-1]";
  skipped_one(doc, "jobs[0].nodes: hostlist 'gpu[4-1]': reversed range '4-1'");
  doc = ReadJson("fixtures/squeue.json");
  doc["jobs"][0]["start_time"] = json{{"set", true}, {"infinite", false}};
  skipped_one(doc, "jobs[0].start_time.number: required");

  auto no_jobs = ParseSlurmJobs(json::parse(R"({"meta": {}})"));
  REQUIRE_FALSE(no_jobs.has_value());
  CHECK(no_jobs.error().message == "slurm jobs: jobs: required");
}

TEST_CASE("slurm jobs: one bad hostlist skips that job only") {
  json doc = ReadJson("connectors/slurmrestd_v0041_mixed.json");
  doc["jobs"][0]["nodes"] = "gpu[4-1]";
  Diagnostics diag;
  auto jobs = ParseSlurmJobs(doc, {}, &diag);
  REQUIRE(jobs.has_value());
  CHECK(jobs->jobs.size() == 1);      // 90002 still applies
  REQUIRE(diag.skipped.size() == 2);  // 90001 (hostlist) and 90003 (CPU-only)
  CHECK(diag.skipped[0].item == "job 90001");
  CHECK(diag.skipped[0].reason == "jobs[0].nodes: hostlist 'gpu[4-1]': reversed range '4-1'");
}

TEST_CASE("slurm jobs: an id or a time that is not a whole number from 0 to 2^53 skips that job, naming the field") {
  // The fuzzer's find: a start_time of 1.8e114 was cast to int64_t
  // (undefined; tests/data/fuzz-regressions/slurm/crash-start-time-1e114).
  struct Bad {
    const char* field;
    json value;
    const char* reason;
  };
  for (const Bad& b : {Bad{"start_time", json::parse("1.8e114"),
                           "job 90001: jobs[0].start_time: expected a whole number from 0 to 2^53, got 1.8e+114"},
                       Bad{"end_time", json::parse(R"({"set": true, "infinite": false, "number": 1.5})"),
                           "job 90001: jobs[0].end_time: expected a whole number from 0 to 2^53, got 1.5"},
                       Bad{"job_id", json::parse("-3"), "jobs[0]: jobs[0].job_id: expected a whole number from 0 to 2^53, got -3"}}) {
    CAPTURE(b.field);
    json doc = ReadJson("connectors/slurmrestd_v0041_mixed.json");
    doc["jobs"][0][b.field] = b.value;
    Diagnostics diag;
    auto jobs = ParseSlurmJobs(doc, {}, &diag);
    REQUIRE(jobs.has_value());
    CHECK(jobs->jobs.size() == 1);  // 90002 still applies
    REQUIRE(diag.skipped.size() == 2);
    CHECK(diag.skipped[0].item + ": " + diag.skipped[0].reason == b.reason);
  }
}

// slurmrestd 24.05 (data_parser v0.0.41) shapes as real clusters emit them: a
// GPU job with tres_per_node "gres:gpu:8", a GPU job whose GPUs show only in
// tres_alloc_str (gres/gpu=4 repeated as gres/gpu:l40s=4), and a CPU-only job
// with empty tres_per_* and "cpu=1,mem=15737M,node=1,billing=1"
// (tests/data/connectors/README.md says where the shapes come from).
TEST_CASE("slurm jobs: CPU-only jobs are skipped by default, or kept and marked") {
  auto doc = ReadJson("connectors/slurmrestd_v0041_mixed.json");
  Diagnostics diag;
  auto jobs = ParseSlurmJobs(doc, {}, &diag);
  REQUIRE(jobs.has_value());
  REQUIRE(jobs->jobs.size() == 2);
  CHECK(jobs->jobs[0].id == "90001");
  CHECK(jobs->jobs[0].gpus_per_host == 8);  // gres:gpu:8 per node
  CHECK(jobs->jobs[1].id == "90002");
  CHECK(jobs->jobs[1].gpus_per_host == 2);  // gres/gpu=4 over 2 hosts
  REQUIRE(diag.skipped.size() == 1);
  CHECK(diag.skipped[0].item == "job 90003");
  CHECK(diag.skipped[0].reason.find("CPU-only") == 0);

  SlurmJobsOptions mark;
  mark.cpu_jobs = "mark";
  Diagnostics none;
  auto marked = ParseSlurmJobs(doc, mark, &none);
  REQUIRE(marked.has_value());
  REQUIRE(marked->jobs.size() == 3);
  CHECK(marked->jobs[2].labels.at("cpu_only") == "true");
  CHECK(none.skipped.empty());

  SlurmJobsOptions bad;
  bad.cpu_jobs = "drop";
  auto refused = ParseSlurmJobs(doc, bad);
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().message == "slurm jobs: cpu_jobs 'drop': expected skip or mark");
}

// NVIDIA topograph's topology/block output (the form of its engine tests):
// blocks of NVLink domains, "# blockNNN=<domain>" comments, a BlockSizes line.
TEST_CASE("topology.conf topology/block: blocks are leaves under one spine, pods from BlockSizes") {
  auto t = ParseSlurmTopologyConf(ReadText("connectors/topograph_block.conf"));
  REQUIRE(t.has_value());
  // 1 spine + 4 blocks + 4 x 2 nodes.
  REQUIRE(t->nodes.size() == 13);
  CHECK(t->nodes[0].id == "block-fabric");
  CHECK(t->nodes[0].tier == "spine");
  CHECK(t->nodes[1].id == "block001");
  CHECK(t->nodes[1].tier == "leaf");
  CHECK(CountLinks(*t, "block001") == 3);  // 2 nodes + the spine
  CHECK(CountLinks(*t, "block-fabric") == 4);
  // BlockSizes=2,4: base blocks of 2 nodes aggregate in pairs at 4, so blocks
  // 1-2 share pod 0 and blocks 3-4 pod 1.
  std::map<std::string, std::string> pod_of;
  for (const auto& n : t->nodes) pod_of[n.id] = n.pod;
  CHECK(pod_of.at("block001") == "block-pod-0");
  CHECK(pod_of.at("node11") == "block-pod-0");
  CHECK(pod_of.at("node22") == "block-pod-0");
  CHECK(pod_of.at("node31") == "block-pod-1");
  CHECK(pod_of.at("node42") == "block-pod-1");
  CHECK(model::BuildTopology(*t).has_value());
}

// topograph's tree output puts the nodes it could not place under a switch
// named no-topology: not a fabric, so they are left out and named.
TEST_CASE("topology.conf: topograph's no-topology bucket is not a switch") {
  Diagnostics diag;
  auto t = ParseSlurmTopologyConf(ReadText("connectors/topograph_tree.conf"), {}, &diag);
  REQUIRE(t.has_value());
  std::set<std::string> ids;
  for (const auto& n : t->nodes) ids.insert(n.id);
  CHECK(ids.count("no-topology") == 0);
  CHECK(ids.count("node13") == 0);
  CHECK(ids.count("node11") == 1);
  REQUIRE(diag.skipped.size() == 2);
  CHECK(diag.skipped[0].item == "node node13");
  CHECK(diag.skipped[0].reason.find("no-topology") != std::string::npos);
  CHECK(model::BuildTopology(*t).has_value());
}

}  // namespace
}  // namespace drainwise::connectors
