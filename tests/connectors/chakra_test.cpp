#include <doctest/doctest.h>

#include "connectors/chakra.h"
#include "test_data.h"

namespace drainwise::connectors {
namespace {

using model::CollectiveKind;
using nlohmann::json;
using testdata::ReadJson;
using testdata::ReadText;

TEST_CASE("chakra_jsonizer fixture: metadata, a compute node, one allreduce") {
  auto p = ParseChakraJsonizer(ReadText("fixtures/chakra_jsonizer.0.json"));
  REQUIRE(p.has_value());
  REQUIRE(p->collectives.size() == 1);
  CHECK(p->collectives[0].kind == CollectiveKind::kAllReduce);
  CHECK(p->collectives[0].bytes == 268435456.0);  // "268435456" as a string
  CHECK(p->collectives[0].count == 1);
  CHECK(p->collectives[0].algorithm == "ring");
  CHECK(p->compute_s == doctest::Approx(842e-6));
  CHECK(p->ignored.empty());
}

TEST_CASE("chakra feeder fixture gives the same profile") {
  auto p = ParseChakraFeeder(ReadJson("fixtures/chakra_feeder.json"));
  REQUIRE(p.has_value());
  REQUIRE(p->collectives.size() == 1);
  CHECK(p->collectives[0].kind == CollectiveKind::kAllReduce);
  CHECK(p->collectives[0].bytes == 268435456.0);
  CHECK(p->compute_s == doctest::Approx(842e-6));
  // ParseChakra tells the forms apart.
  auto auto_feeder = ParseChakra(ReadText("fixtures/chakra_feeder.json"));
  REQUIRE(auto_feeder.has_value());
  CHECK(auto_feeder->collectives.size() == 1);
  auto auto_jsonizer = ParseChakra(ReadText("fixtures/chakra_jsonizer.0.json"));
  REQUIRE(auto_jsonizer.has_value());
  CHECK(auto_jsonizer->collectives.size() == 1);
}

TEST_CASE("chakra: kinds mapped, identical collectives counted, the rest listed as ignored") {
  auto p = ParseChakraJsonizer(ReadText("connectors/chakra_jsonizer_mixed.json"));
  REQUIRE(p.has_value());
  REQUIRE(p->collectives.size() == 3);
  CHECK(p->collectives[0].kind == CollectiveKind::kAllGather);
  CHECK(p->collectives[0].bytes == 8589934592.0);  // 8 GiB, above 2^32
  CHECK(p->collectives[0].count == 2);
  CHECK(p->collectives[1].kind == CollectiveKind::kReduceScatter);
  CHECK(p->collectives[1].count == 1);
  CHECK(p->collectives[2].kind == CollectiveKind::kAllToAll);
  CHECK(p->collectives[2].algorithm == "direct");
  CHECK(p->collectives[2].bytes == 134217728.0);
  CHECK(p->ignored == std::vector<std::string>{"BROADCAST"});
  CHECK(p->compute_s == doctest::Approx(0.004));  // 1000 + 3000 us

  CHECK(*CollectiveKindFromChakra(8) == CollectiveKind::kReduceScatter);
  CHECK_FALSE(CollectiveKindFromChakra(9).has_value());
  CHECK(ChakraCommTypeName(9) == "BARRIER");
}

TEST_CASE("chakra errors name the node") {
  auto missing = ParseChakraJsonizer(
      R"({"id": "13", "type": "COMM_COLL_NODE", "attr": [{"name": "comm_type", "int64Val": "0"}]})");
  REQUIRE_FALSE(missing.has_value());
  CHECK(missing.error().message == "chakra: node 13: attr comm_size: required");
  auto bad_type = ParseChakraJsonizer(
      R"({"id": "14", "type": "COMM_COLL_NODE", "attr": [{"name": "comm_type", "int64Val": "42"}, {"name": "comm_size", "int64Val": "1"}]})");
  REQUIRE_FALSE(bad_type.has_value());
  CHECK(bad_type.error().message == "chakra: node 14.attr[0].int64Val: unknown comm_type \"42\"");
  auto feeder = ParseChakraFeeder(json::parse(R"({"workload_graph": [{"Id": 1, "NodeType": 7, "comm_type": 0}]})"));
  REQUIRE_FALSE(feeder.has_value());
  CHECK(feeder.error().message == "chakra feeder: workload_graph[0].comm_size: required");
  auto garbage = ParseChakra("{\"id\": ");
  REQUIRE_FALSE(garbage.has_value());
}

}  // namespace
}  // namespace drainwise::connectors
