#include <doctest/doctest.h>

#include <cstring>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/gzip_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "connectors/chakra.h"
#include "proto/chakra_et.pb.h"  // generated from connectors/proto/chakra_et.proto
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
  REQUIRE(p->collectives.size() == 4);
  CHECK(p->collectives[0].kind == CollectiveKind::kAllGather);
  CHECK(p->collectives[0].bytes == 8589934592.0);  // 8 GiB, above 2^32
  CHECK(p->collectives[0].count == 2);
  CHECK(p->collectives[1].kind == CollectiveKind::kReduceScatter);
  CHECK(p->collectives[1].count == 1);
  CHECK(p->collectives[2].kind == CollectiveKind::kAllGather);  // the 1 KiB broadcast
  CHECK(p->collectives[2].bytes == 1024.0);
  CHECK(p->collectives[3].kind == CollectiveKind::kAllToAll);
  CHECK(p->collectives[3].algorithm == "direct");
  CHECK(p->collectives[3].bytes == 134217728.0);
  // The mixed trace's broadcast maps to an allgather of its bytes (counted).
  CHECK(p->ignored.empty());
  CHECK(p->approximated == std::vector<std::string>{"BROADCAST as allgather"});
  CHECK(p->compute_s == doctest::Approx(0.004));  // 1000 + 3000 us

  CHECK(*CollectiveKindFromChakra(8) == CollectiveKind::kReduceScatter);
  CHECK_FALSE(CollectiveKindFromChakra(9).has_value());
  CHECK(ChakraCommTypeName(9) == "BARRIER");
}

TEST_CASE("chakra errors name the node; absent fields are counted, not fatal") {
  auto missing = ParseChakraJsonizer(
      R"({"id": "13", "name": "ar0", "type": "COMM_COLL_NODE", "attr": [{"name": "comm_type", "int64Val": "0"}]})");
  REQUIRE(missing.has_value());
  CHECK(missing->ignored == std::vector<std::string>{"ALL_REDUCE 'ar0' (no comm_size)"});
  auto bad_type = ParseChakraJsonizer(
      R"({"id": "14", "type": "COMM_COLL_NODE", "attr": [{"name": "comm_type", "int64Val": "42"}, {"name": "comm_size", "int64Val": "1"}]})");
  REQUIRE_FALSE(bad_type.has_value());
  CHECK(bad_type.error().message == "chakra: node 14.attr[0].int64Val: unknown comm_type \"42\"");
  auto feeder = ParseChakraFeeder(json::parse(R"({"workload_graph": [{"Id": 1, "NodeType": 7, "comm_type": 0}]})"));
  REQUIRE(feeder.has_value());
  CHECK(feeder->Summary() == "not mapped: 1 × ALL_REDUCE '' (no comm_size)");
  auto bad = ParseChakraFeeder(json::parse(R"({"workload_graph": [{"Id": 1, "NodeType": 7, "comm_type": "x"}]})"));
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().message == "chakra feeder: workload_graph[0].comm_type: unknown comm_type \"x\"");
  auto garbage = ParseChakra("{\"id\": ");
  REQUIRE_FALSE(garbage.has_value());
}

// Chakra's converter writes the feeder JSON with COMM_COLL nodes that carry
// neither comm_type nor comm_size (broadcasts of parameters at start-up, named
// after the NCCL call) next to fully described ones; its own feeder treats
// both fields as optional and falls back to tensor_size.
TEST_CASE("chakra feeder as the converter writes it: collectives named, sizes from tensor_size") {
  auto p = ParseChakra(ReadText("connectors/chakra_feeder_converter.json"));
  REQUIRE(p.has_value());
  // 2 broadcasts of 4 MiB -> one allgather entry counted twice; the 256 MiB
  // allreduce; the barrier and the send/recv pair are not mapped.
  REQUIRE(p->collectives.size() == 2);
  CHECK(p->collectives[0].kind == CollectiveKind::kAllGather);
  CHECK(p->collectives[0].bytes == 4194304.0);
  CHECK(p->collectives[0].count == 2);
  CHECK(p->collectives[1].kind == CollectiveKind::kAllReduce);
  CHECK(p->collectives[1].bytes == 268435456.0);
  CHECK(p->compute_s == doctest::Approx(2500e-6));
  CHECK(p->Summary() ==
        "2 × BROADCAST as allgather; not mapped: 1 × COMM_COLL 'record_param_comms' (no comm_type, and the name does "
        "not say), 1 × BARRIER, 1 × SEND, 1 × RECV");
}

TEST_CASE("comm type from a node's name") {
  CHECK(*CommTypeFromName("nccl:all_reduce") == 0);
  CHECK(*CommTypeFromName("c10d::allgather_") == 2);
  CHECK(*CommTypeFromName("ncclKernel_ReduceScatter_RING_LL_Sum_bf16") == 7);
  CHECK(*CommTypeFromName("nccl:all_to_all") == 6);
  CHECK(*CommTypeFromName("c10d::broadcast_") == 5);
  CHECK(*CommTypeFromName("nccl:reduce") == 1);
  CHECK_FALSE(CommTypeFromName("record_param_comms").has_value());
}

namespace {
// One .et as Chakra's converter writes it: varint32 length, then the message.
void AppendDelimited(std::string& out, const google::protobuf::MessageLite& m) {
  std::string body = m.SerializeAsString();
  google::protobuf::io::StringOutputStream sos(&out);
  google::protobuf::io::CodedOutputStream cos(&sos);
  cos.WriteVarint32(static_cast<uint32_t>(body.size()));
  cos.WriteRaw(body.data(), static_cast<int>(body.size()));
}

ChakraProtoMsg::Node EtNode(uint64_t id, const std::string& name, int type, uint64_t micros) {
  ChakraProtoMsg::Node n;
  n.set_id(id);
  n.set_name(name);
  n.set_type(type);
  n.set_duration_micros(micros);
  return n;
}

std::string SampleEt() {
  std::string et;
  ChakraProtoMsg::GlobalMetadata meta;
  meta.set_version("0.0.4");
  AppendDelimited(et, meta);
  AppendDelimited(et, EtNode(1, "aten::mm", 4, 1500));
  auto ar = EtNode(2, "nccl:all_reduce", 7, 900);
  auto* t = ar.add_attr();
  t->set_name("comm_type");
  t->set_int64_val(0);
  auto* sz = ar.add_attr();
  sz->set_name("comm_size");
  sz->set_uint64_val(1ull << 33);  // 8 GiB: above 2^32
  AppendDelimited(et, ar);
  auto bc = EtNode(3, "c10d::broadcast_", 7, 100);  // no comm_type: from the name; no size
  AppendDelimited(et, bc);
  return et;
}
}  // namespace

TEST_CASE("chakra .et (binary protobuf, plain and gzipped) becomes a profile") {
  std::string et = SampleEt();
  auto p = ParseChakra(et);
  REQUIRE(p.has_value());
  REQUIRE(p->collectives.size() == 1);
  CHECK(p->collectives[0].kind == CollectiveKind::kAllReduce);
  CHECK(p->collectives[0].bytes == 8589934592.0);
  CHECK(p->compute_s == doctest::Approx(1500e-6));
  CHECK(p->Summary() == "not mapped: 1 × BROADCAST 'c10d::broadcast_' (no comm_size)");

  std::string gz;
  {
    google::protobuf::io::StringOutputStream sos(&gz);
    google::protobuf::io::GzipOutputStream::Options o;
    o.format = google::protobuf::io::GzipOutputStream::GZIP;
    google::protobuf::io::GzipOutputStream out(&sos, o);
    void* data = nullptr;
    int size = 0;
    size_t done = 0;
    while (done < et.size() && out.Next(&data, &size)) {
      size_t n = std::min(et.size() - done, static_cast<size_t>(size));
      std::memcpy(data, et.data() + done, n);
      done += n;
      if (n < static_cast<size_t>(size)) out.BackUp(size - static_cast<int>(n));
    }
    REQUIRE(out.Close());
  }
  CHECK(static_cast<unsigned char>(gz[0]) == 0x1f);
  auto pz = ParseChakra(gz);
  REQUIRE(pz.has_value());
  CHECK(pz->collectives.size() == 1);

  auto truncated = ParseChakra(std::string_view(et).substr(0, et.size() - 3));
  REQUIRE_FALSE(truncated.has_value());
  CHECK(truncated.error().message.find("chakra .et: message 3 at byte") == 0);
  CHECK(truncated.error().message.find("runs past the end of the file") != std::string::npos);
}

}  // namespace
}  // namespace drainwise::connectors
