#include "connectors/chakra.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/gzip_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "proto/chakra_et.pb.h"  // generated from connectors/proto/chakra_et.proto

#include "connectors/util.h"

namespace drainwise::connectors {
namespace {

using codec::FieldError;
using internal::json;

constexpr std::string_view kCommTypes[] = {
    "ALL_REDUCE", "REDUCE",         "ALL_GATHER",           "GATHER", "SCATTER", "BROADCAST",
    "ALL_TO_ALL", "REDUCE_SCATTER", "REDUCE_SCATTER_BLOCK", "BARRIER"};

int CommTypeFromJson(const json& v, const std::string& path) {
  if (v.is_string()) {
    for (int i = 0; i < static_cast<int>(std::size(kCommTypes)); ++i) {
      if (v.get<std::string>() == kCommTypes[i]) return i;
    }
  }
  auto n = internal::NumberOrNumericString(v);
  if (!n || *n < 0 || *n >= static_cast<double>(std::size(kCommTypes)) || *n != static_cast<int>(*n)) {
    throw FieldError(path, fmt::format("unknown comm_type {}", v.dump()));
  }
  return static_cast<int>(*n);
}

double SizeFromJson(const json& v, const std::string& path) {
  auto n = internal::NumberOrNumericString(v);
  if (!n || *n < 0) throw FieldError(path, fmt::format("expected a byte count, got {}", v.dump()));
  return *n;
}

// Adds one collective occurrence, merging identical ones.
void AddCollective(ChakraProfile& p, model::CollectiveKind kind, double bytes) {
  for (auto& c : p.collectives) {
    if (c.kind == kind && c.bytes == bytes) {
      ++c.count;
      return;
    }
  }
  model::CollectiveSpec c;
  c.kind = kind;
  c.algorithm = kind == model::CollectiveKind::kAllToAll ? "direct" : "ring";
  c.bytes = bytes;
  p.collectives.push_back(std::move(c));
}

constexpr int kCompNode = 4, kSendNode = 5, kRecvNode = 6, kCollNode = 7;
constexpr int kBarrier = 9;

// One trace node, whichever form it came in.
struct TraceNode {
  std::string name;
  int type = 0;
  std::optional<int> comm_type;
  std::optional<double> comm_size;
  std::optional<double> tensor_size;  // feeder: the size when comm_size is absent
  double duration_us = 0;
};

void Visit(ChakraProfile& p, const TraceNode& n) {
  if (n.type == kCompNode) {
    p.compute_s += n.duration_us / 1e6;
    return;
  }
  if (n.type == kSendNode || n.type == kRecvNode) {
    p.ignored.push_back(n.type == kSendNode ? "SEND" : "RECV");
    return;
  }
  if (n.type != kCollNode) return;
  std::optional<int> ct = n.comm_type ? n.comm_type : CommTypeFromName(n.name);
  if (!ct) {
    p.ignored.push_back(fmt::format("COMM_COLL '{}' (no comm_type, and the name does not say)", n.name));
    return;
  }
  if (*ct == kBarrier) {
    p.ignored.emplace_back("BARRIER");
    return;
  }
  std::optional<double> bytes = n.comm_size ? n.comm_size : n.tensor_size;
  if (!bytes) {
    p.ignored.push_back(fmt::format("{} '{}' (no comm_size)", ChakraCommTypeName(*ct), n.name));
    return;
  }
  if (auto kind = CollectiveKindFromChakra(*ct)) {
    AddCollective(p, *kind, *bytes);
  } else if (auto approx = CollectiveKindApproximation(*ct)) {
    AddCollective(p, *approx, *bytes);
    p.approximated.push_back(fmt::format("{} as {}", ChakraCommTypeName(*ct), model::CollectiveKindName(*approx)));
  } else {
    p.ignored.emplace_back(ChakraCommTypeName(*ct));
  }
}

// "3 × A, 1 × B" in order of first appearance.
std::string CountList(const std::vector<std::string>& items) {
  std::vector<std::pair<std::string, int>> counts;
  for (const auto& i : items) {
    auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == i; });
    if (it == counts.end())
      counts.emplace_back(i, 1);
    else
      ++it->second;
  }
  std::string out;
  for (const auto& [what, n] : counts) out += fmt::format("{}{} × {}", out.empty() ? "" : ", ", n, what);
  return out;
}

}  // namespace

std::string ChakraProfile::Summary() const {
  std::string out = CountList(approximated);
  if (!ignored.empty()) out += fmt::format("{}not mapped: {}", out.empty() ? "" : "; ", CountList(ignored));
  return out;
}

std::optional<model::CollectiveKind> CollectiveKindFromChakra(int comm_type) {
  switch (comm_type) {
    case 0:
      return model::CollectiveKind::kAllReduce;
    case 2:
      return model::CollectiveKind::kAllGather;
    case 6:
      return model::CollectiveKind::kAllToAll;
    case 7:
    case 8:
      return model::CollectiveKind::kReduceScatter;
    default:
      return std::nullopt;
  }
}

std::optional<model::CollectiveKind> CollectiveKindApproximation(int comm_type) {
  switch (comm_type) {
    case 1:
      return model::CollectiveKind::kReduceScatter;  // REDUCE
    case 3:                                          // GATHER
    case 4:                                          // SCATTER
    case 5:
      return model::CollectiveKind::kAllGather;  // BROADCAST
    default:
      return std::nullopt;
  }
}

std::string_view ChakraCommTypeName(int comm_type) {
  if (comm_type < 0 || comm_type >= static_cast<int>(std::size(kCommTypes))) return "UNKNOWN";
  return kCommTypes[comm_type];
}

std::optional<int> CommTypeFromName(std::string_view name) {
  std::string s;
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      s.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  // Compound names before their parts: "allreduce" holds "reduce".
  static const std::pair<const char*, int> kWords[] = {
      {"allreduce", 0}, {"reducescatter", 7}, {"allgather", 2}, {"alltoall", 6}, {"broadcast", 5},
      {"bcast", 5},     {"barrier", 9},       {"reduce", 1},    {"gather", 3},   {"scatter", 4}};
  for (const auto& [word, type] : kWords) {
    if (s.find(word) != std::string::npos) return type;
  }
  return std::nullopt;
}

Result<ChakraProfile> ParseChakraJsonizer(std::string_view text) {
  auto docs = internal::ParseConcatenatedJson(text);
  if (!docs) return tl::unexpected(docs.error().Wrap("chakra"));
  return internal::Guard("chakra", [&] {
    ChakraProfile p;
    for (size_t i = 0; i < docs->size(); ++i) {
      const json& d = (*docs)[i];
      if (!d.is_object()) throw FieldError(fmt::format("object {}", i), "expected an object");
      if (!d.contains("id")) continue;  // global metadata
      std::string where = fmt::format("node {}", d["id"].is_string() ? d["id"].get<std::string>() : d["id"].dump());
      codec::ObjectReader r(d, where);
      TraceNode n;
      n.name = r.StringOr("name", "");
      if (r.Has("type")) {
        const json& t = r.Raw("type");
        if (t.is_string()) {
          static const char* kNames[] = {"INVALID_NODE", "METADATA_NODE",  "MEM_LOAD_NODE",  "MEM_STORE_NODE",
                                         "COMP_NODE",    "COMM_SEND_NODE", "COMM_RECV_NODE", "COMM_COLL_NODE"};
          for (int k = 0; k < 8; ++k) {
            if (t.get<std::string>() == kNames[k]) n.type = k;
          }
        } else if (t.is_number_integer()) {
          n.type = t.get<int>();
        }
      }
      if (r.Has("attr")) {
        for (const auto& a : r.Objects("attr")) {
          std::string name = a.StringOr("name", "");
          if (name != "comm_type" && name != "comm_size") continue;
          const json* value = nullptr;
          std::string vpath;
          for (const char* k : {"int64Val", "uint64Val", "int32Val", "uint32Val", "doubleVal", "stringVal"}) {
            if (a.Has(k)) {
              value = &a.Raw(k);
              vpath = a.Child(k);
              break;
            }
          }
          if (!value) throw FieldError(fmt::format("{}: attr {}", where, name), "no value");
          if (name == "comm_type")
            n.comm_type = CommTypeFromJson(*value, vpath);
          else
            n.comm_size = SizeFromJson(*value, vpath);
        }
      }
      if (n.type == kCompNode && r.Has("durationMicros")) {
        auto us = internal::NumberOrNumericString(r.Raw("durationMicros"));
        if (!us) throw FieldError(r.Child("durationMicros"), "expected microseconds");
        n.duration_us = *us;
      }
      Visit(p, n);
    }
    return p;
  });
}

Result<ChakraProfile> ParseChakraFeeder(const json& doc) {
  return internal::Guard("chakra feeder", [&] {
    codec::ObjectReader top(doc, "");
    top.Array("workload_graph");
    ChakraProfile p;
    for (const auto& r : top.Objects("workload_graph")) {
      TraceNode n;
      n.name = r.StringOr("Name", "");
      n.type = static_cast<int>(r.Int("NodeType"));
      n.duration_us = r.NumberOr("runtime", 0);
      if (r.Has("comm_type")) n.comm_type = CommTypeFromJson(r.Raw("comm_type"), r.Child("comm_type"));
      if (r.Has("comm_size")) n.comm_size = SizeFromJson(r.Raw("comm_size"), r.Child("comm_size"));
      if (r.Has("tensor_size")) n.tensor_size = SizeFromJson(r.Raw("tensor_size"), r.Child("tensor_size"));
      Visit(p, n);
    }
    return p;
  });
}

namespace {

// A gzipped trace, inflated with a bound: a trace is at most a few hundred
// MB; anything inflating past kMaxEtBytes is refused rather than held.
constexpr size_t kMaxEtBytes = size_t{1} << 30;

Result<std::string> Gunzip(std::string_view bytes) {
  google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::GzipInputStream gz(&raw, google::protobuf::io::GzipInputStream::GZIP);
  std::string out;
  const void* data = nullptr;
  int size = 0;
  while (gz.Next(&data, &size)) {
    out.append(static_cast<const char*>(data), static_cast<size_t>(size));
    if (out.size() > kMaxEtBytes) {
      return InvalidArgument(fmt::format("chakra .et: gzipped trace inflates past {} bytes", kMaxEtBytes));
    }
  }
  if (gz.ZlibErrorMessage() != nullptr) {
    return InvalidArgument(fmt::format("chakra .et: gzip: {}", gz.ZlibErrorMessage()));
  }
  return out;
}

std::optional<double> AttrNumber(const ChakraProtoMsg::AttributeProto& a) {
  using A = ChakraProtoMsg::AttributeProto;
  switch (a.value_case()) {
    case A::kDoubleVal:
      return a.double_val();
    case A::kInt32Val:
      return a.int32_val();
    case A::kInt64Val:
      return static_cast<double>(a.int64_val());
    case A::kUint32Val:
      return a.uint32_val();
    case A::kUint64Val:
      return static_cast<double>(a.uint64_val());
    case A::kSint32Val:
      return a.sint32_val();
    case A::kSint64Val:
      return static_cast<double>(a.sint64_val());
    default:
      return std::nullopt;
  }
}

}  // namespace

Result<ChakraProfile> ParseChakraEt(std::string_view bytes) {
  std::string inflated;
  if (bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
      static_cast<unsigned char>(bytes[1]) == 0x8b) {
    auto g = Gunzip(bytes);
    if (!g) return tl::unexpected(g.error());
    inflated = std::move(*g);
    bytes = inflated;
  }
  if (bytes.size() > kMaxEtBytes) return InvalidArgument(fmt::format("chakra .et: larger than {} bytes", kMaxEtBytes));
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  ChakraProfile p;
  for (size_t index = 0; in.CurrentPosition() < static_cast<int>(bytes.size()); ++index) {
    int at = in.CurrentPosition();
    uint32_t size = 0;
    if (!in.ReadVarint32(&size)) {
      return InvalidArgument(fmt::format("chakra .et: message {} at byte {}: truncated length prefix", index, at));
    }
    if (size > bytes.size() - static_cast<size_t>(in.CurrentPosition())) {
      return InvalidArgument(
          fmt::format("chakra .et: message {} at byte {}: length {} runs past the end of the file "
                      "({} bytes)",
                      index, at, size, bytes.size()));
    }
    auto limit = in.PushLimit(static_cast<int>(size));
    bool ok = false;
    if (index == 0) {
      ChakraProtoMsg::GlobalMetadata meta;
      ok = meta.ParseFromCodedStream(&in) && in.ConsumedEntireMessage();
    } else {
      ChakraProtoMsg::Node node;
      ok = node.ParseFromCodedStream(&in) && in.ConsumedEntireMessage();
      if (ok) {
        TraceNode n;
        n.name = node.name();
        n.type = node.type();
        n.duration_us = static_cast<double>(node.duration_micros());
        for (const auto& a : node.attr()) {
          if (a.name() != "comm_type" && a.name() != "comm_size") continue;
          auto v = AttrNumber(a);
          if (!v) {
            return InvalidArgument(fmt::format("chakra .et: node {}: attr {}: expected a number", node.id(), a.name()));
          }
          if (a.name() == "comm_type") {
            if (*v < 0 || *v >= static_cast<double>(std::size(kCommTypes)) || *v != static_cast<int>(*v)) {
              return InvalidArgument(fmt::format("chakra .et: node {}: unknown comm_type {}", node.id(), *v));
            }
            n.comm_type = static_cast<int>(*v);
          } else {
            if (*v < 0) return InvalidArgument(fmt::format("chakra .et: node {}: negative comm_size", node.id()));
            n.comm_size = *v;
          }
        }
        Visit(p, n);
      }
    }
    in.PopLimit(limit);
    if (!ok) {
      return InvalidArgument(fmt::format("chakra .et: message {} at byte {}: not a Chakra {} message", index, at,
                                         index == 0 ? "GlobalMetadata" : "Node"));
    }
  }
  return p;
}

Result<ChakraProfile> ParseChakra(std::string_view text) {
  auto t = internal::Trim(text);
  if (t.empty()) return InvalidArgument("chakra: empty trace");
  if (t.front() != '{' && t.front() != '[') return ParseChakraEt(text);  // binary (.et, maybe gzipped)
  if (t.find("\"workload_graph\"") != std::string_view::npos && t.find("\"workload_graph\"") < 64) {
    auto doc = codec::ParseJsonText(t);
    if (!doc) return tl::unexpected(doc.error().Wrap("chakra feeder"));
    return ParseChakraFeeder(*doc);
  }
  return ParseChakraJsonizer(t);
}

}  // namespace drainwise::connectors
