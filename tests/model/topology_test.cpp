#include <doctest/doctest.h>

#include "codec/native.h"
#include "model/drain.h"
#include "model/jobs.h"
#include "model/topology.h"
#include "testing/fabrics.h"

using nlohmann::json;
using namespace drainwise;

namespace {

json Topo(json nodes, json links) {
  return {{"format", "drainwise.topology/v1"}, {"name", "t"}, {"nodes", nodes}, {"links", links}};
}

const json kLeaf = {{"id", "leaf-3"}, {"kind", "switch"}, {"tier", "leaf"}};
const json kSpine = {{"id", "spine-1"}, {"kind", "switch"}, {"tier", "spine"}};
const json kHost = {{"id", "gpu001"}, {"kind", "host"}, {"gpus", 8}};

std::string LoadError(const json& doc) {
  auto t = codec::LoadTopology(doc);
  REQUIRE_FALSE(t.has_value());
  CHECK(t.error().code == ErrorCode::kInvalidArgument);
  return t.error().message;
}

}  // namespace

TEST_CASE("topology validation names the offending item") {
  struct Case {
    const char* what;
    json doc;
    const char* message;
  };
  // json::array({kLeaf}), not {kLeaf}: clang takes a one-element brace list of a
  // json as a copy of that json (an object here), GCC as a one-element array.
  const Case cases[] = {
      {"unknown endpoint", Topo(json::array({kLeaf}), {{{"a", "leaf-3"}, {"b", "spine-9"}, {"gbps", 100}}}),
       "link 0 (leaf-3 -> spine-9): unknown node 'spine-9'"},
      {"duplicate id", Topo({kLeaf, kLeaf}, json::array()), "node 1 ('leaf-3'): duplicate node id"},
      {"self loop", Topo(json::array({kLeaf}), {{{"a", "leaf-3"}, {"b", "leaf-3"}, {"gbps", 100}}}),
       "link 0 (leaf-3 -> leaf-3): link from a node to itself"},
      {"zero capacity", Topo({kLeaf, kSpine}, {{{"a", "leaf-3"}, {"b", "spine-1"}, {"gbps", 0}}}),
       "links[0].gbps: must be > 0"},
      {"bad kind", Topo({{{"id", "r1"}, {"kind", "router"}}}, json::array()),
       "nodes[0].kind: expected 'switch' or 'host', got 'router'"},
      {"switch without tier", Topo({{{"id", "s"}, {"kind", "switch"}}}, json::array()), "nodes[0].tier: required"},
      {"custom tier without level", Topo({{{"id", "s"}, {"kind", "switch"}, {"tier", "agg"}}}, json::array()),
       "node 0 ('s'): tier 'agg' is not leaf, spine or superspine: give its numeric level"},
      {"host to host",
       Topo({kHost, {{"id", "gpu002"}, {"kind", "host"}}}, {{{"a", "gpu001"}, {"b", "gpu002"}, {"gbps", 100}}}),
       "link 0 (gpu001 -> gpu002): links between two hosts are not supported"},
      {"gbps as string", Topo({kLeaf, kSpine}, {{{"a", "leaf-3"}, {"b", "spine-1"}, {"gbps", "100"}}}),
       "links[0].gbps: expected a number, got string"},
      {"typo field", Topo({{{"id", "s"}, {"kind", "switch"}, {"tier", "leaf"}, {"teir", "x"}}}, json::array()),
       "nodes[0].teir: unknown field"},
      {"wrong format", json{{"format", "drainwise.topology/v2"}, {"nodes", json::array()}, {"links", json::array()}},
       "format: expected 'drainwise.topology/v1', got 'drainwise.topology/v2'"},
      {"missing links", json{{"format", "drainwise.topology/v1"}, {"nodes", json::array()}}, "links: required"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    CHECK(LoadError(c.doc) == c.message);
  }
}

TEST_CASE("topology builds CSR adjacency in declaration order, parallel links kept") {
  json doc = Topo({kLeaf, kSpine, kHost}, {{{"a", "leaf-3"}, {"b", "spine-1"}, {"gbps", 400}, {"a_port", "up0"}},
                                           {{"a", "leaf-3"}, {"b", "spine-1"}, {"gbps", 400}, {"a_port", "up1"}},
                                           {{"a", "gpu001"}, {"b", "leaf-3"}, {"gbps", 200}}});
  auto t = testing::TopologyFromJson(doc);
  auto leaf = *t.FindNode("leaf-3");
  auto host = *t.FindNode("gpu001");
  REQUIRE(t.neighbors(leaf).size() == 3);
  CHECK(t.neighbors(leaf)[0].link.value == 0);
  CHECK(t.neighbors(leaf)[1].link.value == 1);
  CHECK(t.neighbors(host).size() == 1);
  CHECK(t.link(model::LinkId(2)).capacity_bps == doctest::Approx(200e9));
  CHECK(t.node(leaf).level == model::kLeafLevel);
  CHECK(t.total_gpus() == 8);
  CHECK(t.hosts().size() == 1);
  CHECK(t.switches().size() == 2);
  CHECK(t.LinkName(model::LinkId(0)) == "leaf-3:up0 -> spine-1");
}

TEST_CASE("drains resolve by name and report unknown elements") {
  auto t = testing::TopologyFromJson(testing::TwoByTwo());
  SUBCASE("switch and link") {
    model::DrainSpec spec{{"spine0"}, {{"leaf1", "spine1", ""}}};
    auto d = model::ResolveDrain(spec, t);
    REQUIRE(d.has_value());
    CHECK(d->switches.size() == 1);
    CHECK(d->links.size() == 1);
    model::DrainMask mask(t, *d);
    // spine0 has two links, plus leaf1-spine1.
    CHECK(mask.down_links().size() == 3);
    CHECK(mask.node_down(*t.FindNode("spine0")));
    CHECK_FALSE(mask.node_down(*t.FindNode("spine1")));
    CHECK_FALSE(mask.empty());
    CHECK(model::DrainMask().empty());
    CHECK(model::DrainMask(t, model::Drain{}).empty());
  }
  SUBCASE("errors") {
    CHECK(model::ResolveDrain({{"spine7"}, {}}, t).error().message == "switches[0]: unknown switch 'spine7'");
    CHECK(model::ResolveDrain({{"h0"}, {}}, t).error().message ==
          "switches[0]: 'h0' is a host; drain its links instead");
    CHECK(model::ResolveDrain({{}, {{"leaf0", "leaf1", ""}}}, t).error().message ==
          "links[0]: no link between 'leaf0' and 'leaf1'");
    CHECK(model::ResolveDrain({{}, {{"leaf0", "spine0", "up9"}}}, t).error().message ==
          "links[0]: no link leaf0:up9 -> spine0");
  }
  SUBCASE("merge is a sorted union") {
    auto a = *model::ResolveDrain({{"spine1"}, {}}, t);
    auto b = *model::ResolveDrain({{"spine0", "spine1"}, {}}, t);
    auto m = a.Merge(b);
    CHECK(m.switches.size() == 2);
    CHECK(m.switches[0] < m.switches[1]);
  }
}

TEST_CASE("jobs validation names the job and field") {
  auto t = testing::TopologyFromJson(testing::TwoByTwo());
  auto resolve = [&](json jobs) {
    auto spec = codec::ParseJobs({{"format", "drainwise.jobs/v1"}, {"jobs", jobs}});
    if (!spec) return spec.error().message;
    auto r = model::ResolveJobs(*spec, t);
    return r ? std::string("ok") : r.error().message;
  };
  CHECK(resolve({{{"id", "j1"}, {"hosts", {"h0", "h9"}}}}) == "jobs[0] ('j1'): hosts[1]: unknown host 'h9'");
  CHECK(resolve({{{"id", "j1"}, {"hosts", {"h0", "leaf0"}}}}) ==
        "jobs[0] ('j1'): hosts[1]: 'leaf0' is a switch, not a host");
  CHECK(resolve({{{"id", "j1"}, {"hosts", {"h0", "h0"}}}}) == "jobs[0] ('j1'): hosts[1]: host 'h0' listed twice");
  CHECK(resolve({{{"id", "j1"}, {"hosts", {"h0"}}}, {{"id", "j1"}, {"hosts", {"h1"}}}}) ==
        "jobs[1] ('j1'): duplicate job id");
  CHECK(resolve({{{"id", "j1"}, {"hosts", {"h0"}}}, {{"id", "j2"}, {"hosts", {"h0"}}}}) ==
        "job 'j2': host 'h0' has 1 GPUs but jobs place 2 on it");
  CHECK(resolve({{{"id", "j1"}, {"hosts", {"h0"}}, {"iteration", {{"overlap", 1.5}}}}}) ==
        "jobs[0].iteration.overlap: must be within [0, 1]");
  CHECK(resolve({{{"id", "j1"}, {"hosts", {"h0"}}, {"iteration", {{"collectives", {{{"kind", "allreduce"}}}}}}}}) ==
        "jobs[0].iteration.collectives[0].bytes: required");
  CHECK(resolve(
            {{{"id", "j1"}, {"hosts", {"h0"}}, {"iteration", {{"collectives", {{{"kind", "allsum"}, {"bytes", 1}}}}}}}})
            .rfind("jobs[0].iteration.collectives[0].kind: unknown collective 'allsum'", 0) == 0);
  CHECK(
      resolve(
          {{{"id", "j1"},
            {"hosts", {"h0", "h1"}},
            {"iteration",
             {{"collectives", {{{"kind", "flows"}, {"flows", {{{"src", "h0"}, {"dst", "h2"}, {"bytes", 5}}}}}}}}}}}) ==
      "jobs[0] ('j1'): iteration.collectives[0].flows[0].dst: 'h2' is not a host of this job");
  CHECK(resolve({{{"id", "j1"}, {"hosts", {"h0"}}, {"started_at", "yesterday"}}}) ==
        "jobs[0].started_at: 'yesterday' is not an RFC 3339 time");
  CHECK(resolve({{{"id", "j1"}, {"hosts", {"h0", "h1"}}, {"priority", 10}}}) == "ok");
}

TEST_CASE("jobs index hosts and tolerate a topology change leniently") {
  auto t = testing::TopologyFromJson(testing::TwoByTwo());
  auto spec =
      *codec::ParseJobs({{"format", "drainwise.jobs/v1"},
                         {"jobs", {{{"id", "a"}, {"hosts", {"h0", "h1"}}}, {{"id", "b"}, {"hosts", {"h2", "hX"}}}}}});
  auto lenient = model::ResolveJobsLenient(spec, t);
  CHECK(lenient.jobs.size() == 1);
  REQUIRE(lenient.dropped.size() == 1);
  CHECK(lenient.dropped[0] == "jobs[1] ('b'): hosts[1]: unknown host 'hX'");
  auto h0 = *t.FindNode("h0");
  auto h3 = *t.FindNode("h3");
  CHECK(lenient.jobs.JobsOnHost(h0).size() == 1);
  CHECK(lenient.jobs.HostIsFree(h3));
}
