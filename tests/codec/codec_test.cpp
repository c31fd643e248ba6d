#include <doctest/doctest.h>

#include <algorithm>

#include "codec/json_reader.h"
#include "codec/native.h"
#include "fabric/generator.h"
#include "model/jobs.h"
#include "model/topology.h"

using namespace drainwise;

TEST_CASE("RFC 3339 timestamps") {
  CHECK(codec::ParseRfc3339("1970-01-01T00:00:00Z") == 0);
  CHECK(codec::ParseRfc3339("2026-12-01T00:00:00Z") == 1796083200);
  // +02:00 is two hours ahead of UTC: the same instant is 2 h earlier in UTC.
  CHECK(codec::ParseRfc3339("2026-12-01T02:00:00+02:00") == 1796083200);
  CHECK(codec::ParseRfc3339("2026-12-01T00:00:00.123Z") == 1796083200);
  CHECK_FALSE(codec::ParseRfc3339("2026-12-01 00:00").has_value());
  CHECK_FALSE(codec::ParseRfc3339("2026-13-01T00:00:00Z").has_value());
  CHECK_FALSE(codec::ParseRfc3339("2026-12-01T00:00:00").has_value());
  CHECK(codec::FormatRfc3339(1796083200) == "2026-12-01T00:00:00Z");
}

TEST_CASE("malformed JSON names the byte offset") {
  auto r = codec::ParseJsonText("{\"a\": [1, 2,, 3]}");
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().message.rfind("malformed JSON at byte 13", 0) == 0);
}

TEST_CASE("topology and jobs documents round-trip") {
  auto preset = *fabric::FindPreset("demo");
  auto topo = fabric::GenerateFabric(preset.fabric);
  auto jobs = fabric::GenerateJobs(topo, preset.fabric, preset.jobs);
  auto tj = codec::TopologySpecToJson(topo);
  auto parsed = codec::ParseTopology(tj);
  REQUIRE(parsed.has_value());
  CHECK(codec::TopologySpecToJson(*parsed) == tj);
  auto built = model::BuildTopology(*parsed);
  REQUIRE(built.has_value());
  CHECK(codec::TopologyToJson(*built) == tj);

  auto jj = codec::JobsSpecToJson(jobs);
  auto pj = codec::ParseJobs(jj);
  REQUIRE(pj.has_value());
  CHECK(codec::JobsSpecToJson(*pj) == jj);
  CHECK(model::ResolveJobs(*pj, *built).has_value());
}

TEST_CASE("drain documents") {
  auto d = codec::ParseDrain(
      {{"switches", {"spine-1"}}, {"links", {{{"a", "leaf-1"}, {"b", "spine-2"}, {"a_port", "up3"}}}}});
  REQUIRE(d.has_value());
  CHECK(d->switches == std::vector<std::string>{"spine-1"});
  CHECK(d->links[0].a_port == "up3");
  CHECK(codec::ParseDrain({{"switch", {"x"}}}).error().message == "drain.switch: unknown field");
  CHECK(codec::ParseDrain({{"switches", "x"}}).error().message == "drain.switches: expected an array, got string");
}

TEST_CASE("generator: same seed, same bytes; another seed, another mix") {
  auto preset = *fabric::FindPreset("demo");
  auto t1 = fabric::GenerateFabric(preset.fabric);
  auto t2 = fabric::GenerateFabric(preset.fabric);
  CHECK(codec::TopologySpecToJson(t1).dump() == codec::TopologySpecToJson(t2).dump());
  auto j1 = codec::JobsSpecToJson(fabric::GenerateJobs(t1, preset.fabric, preset.jobs)).dump();
  auto j2 = codec::JobsSpecToJson(fabric::GenerateJobs(t2, preset.fabric, preset.jobs)).dump();
  CHECK(j1 == j2);
  auto other = preset.jobs;
  other.seed += 1;
  CHECK(codec::JobsSpecToJson(fabric::GenerateJobs(t1, preset.fabric, other)).dump() != j1);
}

TEST_CASE("generator: demo preset shape") {
  auto preset = *fabric::FindPreset("demo");
  auto spec = fabric::GenerateFabric(preset.fabric);
  auto topo = model::BuildTopology(spec);
  REQUIRE(topo.has_value());
  // 2 pods x 64 hosts x 8 GPUs.
  CHECK(topo->hosts().size() == 128);
  CHECK(topo->total_gpus() == 1024);
  CHECK(topo->max_level() == 3);
  // Leaves: 2 pods x 4 groups x 4 rails; spines: 2 x 4; superspines: 4 planes x 2.
  int leaves = 0, spines = 0, supers = 0;
  for (auto s : topo->switches()) {
    int l = topo->node(s).level;
    leaves += l == 1;
    spines += l == 2;
    supers += l == 3;
  }
  CHECK(leaves == 32);
  CHECK(spines == 8);
  CHECK(supers == 8);
  // Two single-homed hosts per pod have exactly one NIC; the others four.
  int single = 0;
  for (auto h : topo->hosts()) {
    auto n = topo->neighbors(h).size();
    CHECK((n == 1 || n == 4));
    single += n == 1;
  }
  CHECK(single == 4);
  auto jobs = fabric::GenerateJobs(spec, preset.fabric, preset.jobs);
  CHECK(jobs.jobs.size() == 15);
  auto resolved = model::ResolveJobs(jobs, *topo);
  REQUIRE(resolved.has_value());
  // Some hosts stay free for migrations.
  int free_hosts = 0;
  for (auto h : topo->hosts()) free_hosts += resolved->HostIsFree(h);
  CHECK(free_hosts >= 8);
  // The inference service sits on the single-homed hosts of pod 0.
  auto inf = std::find_if(jobs.jobs.begin(), jobs.jobs.end(), [](auto& j) { return j.name == "inference-frontend"; });
  REQUIRE(inf != jobs.jobs.end());
  CHECK(inf->hosts.size() == 2);
  CHECK(inf->priority == 100);
}

TEST_CASE("generator: 32k preset") {
  auto preset = *fabric::FindPreset("32k");
  auto spec = fabric::GenerateFabric(preset.fabric);
  auto topo = model::BuildTopology(spec);
  REQUIRE(topo.has_value());
  CHECK(topo->hosts().size() == 4096);
  CHECK(topo->total_gpus() == 32768);
  auto jobs = fabric::GenerateJobs(spec, preset.fabric, preset.jobs);
  CHECK(jobs.jobs.size() == 1000);
  size_t largest = 0;
  for (const auto& j : jobs.jobs) largest = std::max(largest, j.hosts.size());
  CHECK(largest == 1024);
  CHECK(model::ResolveJobs(jobs, *topo).has_value());
}
