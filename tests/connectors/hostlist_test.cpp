#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <fmt/format.h>

#include "connectors/hostlist.h"
#include "connectors/slurm.h"
#include "test_data.h"

namespace drainwise::connectors {
namespace {

using Hosts = std::vector<std::string>;

TEST_CASE("hostlist expansion follows Slurm's table") {
  struct Case {
    const char* input;
    Hosts expected;
  };
  // The first seven rows are the fixtures README table (from Slurm's hostlist.c).
  const Case cases[] = {
      {"gpu[001-004,010]", {"gpu001", "gpu002", "gpu003", "gpu004", "gpu010"}},
      {"node[8-11]", {"node8", "node9", "node10", "node11"}},
      {"node[08-11]", {"node08", "node09", "node10", "node11"}},
      {"rack[0-1]_gpu[1-2]", {"rack0_gpu1", "rack0_gpu2", "rack1_gpu1", "rack1_gpu2"}},
      {"gpu01,gpu02 gpu03", {"gpu01", "gpu02", "gpu03"}},
      {"gpu01\tgpu02", {"gpu01", "gpu02"}},
      {"single", {"single"}},
      {"", {}},
      {"a[1],b[2-3]", {"a1", "b2", "b3"}},
      {"n[098-101]", {"n098", "n099", "n100", "n101"}},  // width stays from the lower bound
      {"leaf-a[01-02]", {"leaf-a01", "leaf-a02"}},
      {"x[5]", {"x5"}},
      {"gpu[1-2],,gpu3", {"gpu1", "gpu2", "gpu3"}},  // empty items are skipped
  };
  for (const auto& c : cases) {
    CAPTURE(c.input);
    auto hosts = ExpandHostlist(c.input);
    REQUIRE(hosts.has_value());
    CHECK(*hosts == c.expected);
  }
}

TEST_CASE("hostlist rejects what Slurm rejects, naming the problem") {
  struct Case {
    const char* input;
    const char* message_part;
  };
  const Case cases[] = {
      {"gpu[01-02]-ib", "after the last ']'"},
      {"gpu[5-1]", "reversed range '5-1'"},
      {"gpu[1-2", "'[' without ']'"},
      {"gpu1-2]", "']' without '['"},
      {"gpu[]", "bad range ''"},
      {"gpu[a-b]", "bad range 'a-b'"},
      {"gpu[1-2-3]", "bad range"},
      {"gpu[1,[2]]", "nested"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.input);
    auto hosts = ExpandHostlist(c.input);
    REQUIRE_FALSE(hosts.has_value());
    CHECK(hosts.error().code == ErrorCode::kInvalidArgument);
    CHECK(hosts.error().message.find(c.message_part) != std::string::npos);
    CHECK(hosts.error().message.find(c.input) != std::string::npos);
  }
}

bool Mentions(const Result<std::vector<std::string>>& r, const std::string& part) {
  return !r.has_value() && r.error().code == ErrorCode::kInvalidArgument &&
         r.error().message.find(part) != std::string::npos;
}

TEST_CASE("hostlist bounds the expansion") {
  CHECK(ExpandHostlist("n[1-10]", 10).has_value());
  auto big = ExpandHostlist("n[1-10]", 9);
  CHECK(Mentions(big, "more than 9 hosts (the limit for one expression)"));
  // Earlier items of the expression count: 5 + 5 = 10 fits, 5 + 6 does not.
  CHECK(ExpandHostlist("a[1-5],b[1-5]", 10).has_value());
  CHECK(Mentions(ExpandHostlist("a[1-5],b[1-6]", 10), "'b[1-6]': expands to more than 10 hosts"));
  // Multiplying groups counts too: 256 x 256 = 65,536 is the default bound, 256 x 257 is past it.
  auto square = ExpandHostlist("a[0-255]b[0-255]");
  REQUIRE(square.has_value());
  CHECK(square->size() == kMaxHostlistHosts);
  CHECK(square->back() == "a255b255");
  CHECK(Mentions(ExpandHostlist("a[0-255]b[0-256]"), "expands to more than 65536 hosts"));
}

TEST_CASE("hostlist refuses a range Slurm refuses: more than 64K hosts") {
  // 0-65535 is 65,536 hosts (Slurm's MAX_RANGE): allowed.
  CHECK(ExpandHostlist("n[0-65535]", kMaxHostlistRange).has_value());
  CHECK(Mentions(ExpandHostlist("n[0-65536]"), "range '0-65536' has 65537 hosts, more than 65536"));
  // The range is refused before any product is formed, even with a large expression bound.
  CHECK(Mentions(ExpandHostlist("n[1-999999999]", 1u << 30), "range '1-999999999' has 999999999 hosts"));
}

TEST_CASE("hostlist bounds host names to the longest DNS name") {
  std::string name(kMaxHostNameLength, 'a');
  CHECK(ExpandHostlist(name).has_value());
  CHECK(Mentions(ExpandHostlist(name + "b"), "host name longer than 253 characters"));
  // With brackets: prefix 250 + width 3 = 253 fits; the value 1000 has 4 digits.
  std::string prefix(250, 'p');
  CHECK(ExpandHostlist(prefix + "[998-999]").has_value());
  CHECK(Mentions(ExpandHostlist(prefix + "[998-1000]"), "host names longer than 253 characters"));
  // Messages clip a long item instead of repeating it whole.
  auto r = ExpandHostlist(std::string(5000, 'x'));
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().message.size() < 300);
  CHECK(r.error().message.find("(5000 characters)") != std::string::npos);
}

TEST_CASE("hostlist budget bounds a whole document") {
  HostlistBudget doc{100, 0};
  CHECK(ExpandHostlist("a[1-60]", doc).has_value());
  CHECK(doc.used == 60);
  CHECK(ExpandHostlist("b[1-40]", doc).has_value());  // exactly 100
  CHECK(doc.used == 100);
  auto over = ExpandHostlist("c1", doc);
  CHECK(Mentions(over, "hostlist 'c1': the document's hostlists expand to more than 100 hosts in all"));
  CHECK(doc.used == 100);  // a refused expression uses nothing
  // The default budget: four expressions of 65,536 hosts fill it, a fifth host is refused.
  HostlistBudget full;
  for (const char* e : {"a[0-65535]", "b[0-65535]", "c[0-65535]", "d[0-65535]"}) REQUIRE(ExpandHostlist(e, full));
  CHECK(full.used == kMaxHostlistDocumentHosts);
  CHECK(Mentions(ExpandHostlist("e0", full), "more than 262144 hosts in all"));
}

// Issue 13: this topology.conf line (found by the slurm-topology fuzz target)
// expanded to 810,918 host names of ~60 bytes (13 s, 1.6 GB under the
// fuzzer). Its first range alone, 0-90100, is past Slurm's 64K bound.
TEST_CASE("topology.conf: the exploding Nodes= line of issue 13 is refused, naming the line") {
  auto t =
      ParseSlurmTopologyConf(testdata::ReadText("fuzz-regressions/slurm-topology/timeout-hostlist-explosion-issue13"));
  REQUIRE_FALSE(t.has_value());
  CHECK(t.error().code == ErrorCode::kInvalidArgument);
  CHECK(t.error().message.rfind("topology.conf line 2: Nodes: hostlist 'gp", 0) == 0);
  CHECK(t.error().message.find("range '0-90100' has 90101 hosts, more than 65536") != std::string::npos);
}

TEST_CASE("topology.conf: all Nodes= and Switches= of one file share the document bound") {
  // Four leaves of 65,536 hosts fill the 262,144 budget; the fifth line is refused by number.
  std::string conf;
  for (int i = 0; i < 5; ++i) conf += fmt::format("SwitchName=leaf{} Nodes=r{}n[0-65535]\n", i, i);
  auto t = ParseSlurmTopologyConf(conf);
  REQUIRE_FALSE(t.has_value());
  CHECK(t.error().message ==
        "topology.conf line 5: Nodes: hostlist 'r4n[0-65535]': the document's hostlists expand to more than "
        "262144 hosts in all");
}

TEST_CASE("slurm jobs: the nodes of all jobs of one reply share the document bound") {
  nlohmann::json doc = {{"jobs", nlohmann::json::array()}};
  for (int i = 0; i < 5; ++i) {
    doc["jobs"].push_back({{"job_id", i + 1}, {"job_state", "RUNNING"}, {"nodes", fmt::format("j{}n[0-65535]", i)}});
  }
  // The job past the bound is skipped and named; the four before it apply.
  Diagnostics diag;
  auto jobs = ParseSlurmJobs(doc, {}, &diag);
  REQUIRE(jobs.has_value());
  CHECK(jobs->jobs.size() == 4);
  REQUIRE(diag.skipped.size() == 1);
  CHECK(diag.skipped[0].item == "job 5");
  CHECK(diag.skipped[0].reason.find("jobs[4].nodes: hostlist 'j4n[0-65535]': the document's hostlists expand") !=
        std::string::npos);
}

}  // namespace
}  // namespace drainwise::connectors
