#include "connectors/chakra.h"

#include <fmt/format.h>

#include "connectors/util.h"

namespace drainwise::connectors {
namespace {

using codec::FieldError;
using internal::json;

constexpr std::string_view kCommTypes[] = {"ALL_REDUCE", "REDUCE",    "ALL_GATHER",     "GATHER",
                                           "SCATTER",    "BROADCAST", "ALL_TO_ALL",     "REDUCE_SCATTER",
                                           "REDUCE_SCATTER_BLOCK", "BARRIER"};

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
void AddCollective(ChakraProfile& p, int comm_type, double bytes) {
  auto kind = CollectiveKindFromChakra(comm_type);
  if (!kind) {
    p.ignored.emplace_back(ChakraCommTypeName(comm_type));
    return;
  }
  for (auto& c : p.collectives) {
    if (c.kind == *kind && c.bytes == bytes) {
      ++c.count;
      return;
    }
  }
  model::CollectiveSpec c;
  c.kind = *kind;
  c.algorithm = *kind == model::CollectiveKind::kAllToAll ? "direct" : "ring";
  c.bytes = bytes;
  p.collectives.push_back(std::move(c));
}

}  // namespace

std::optional<model::CollectiveKind> CollectiveKindFromChakra(int comm_type) {
  switch (comm_type) {
    case 0: return model::CollectiveKind::kAllReduce;
    case 2: return model::CollectiveKind::kAllGather;
    case 6: return model::CollectiveKind::kAllToAll;
    case 7:
    case 8: return model::CollectiveKind::kReduceScatter;
    default: return std::nullopt;
  }
}

std::string_view ChakraCommTypeName(int comm_type) {
  if (comm_type < 0 || comm_type >= static_cast<int>(std::size(kCommTypes))) return "UNKNOWN";
  return kCommTypes[comm_type];
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
      std::string type;
      if (r.Has("type")) {
        const json& t = r.Raw("type");
        if (t.is_string()) type = t.get<std::string>();
        else if (t.is_number_integer()) {
          static const char* kNames[] = {"INVALID_NODE", "METADATA_NODE", "MEM_LOAD_NODE", "MEM_STORE_NODE",
                                         "COMP_NODE",    "COMM_SEND_NODE", "COMM_RECV_NODE", "COMM_COLL_NODE"};
          int k = t.get<int>();
          type = k >= 0 && k < 8 ? kNames[k] : "";
        }
      }
      std::optional<int> comm_type;
      std::optional<double> comm_size;
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
        if (name == "comm_type") comm_type = CommTypeFromJson(*value, vpath);
        else comm_size = SizeFromJson(*value, vpath);
      }
      if (type == "COMP_NODE") {
        if (r.Has("durationMicros")) {
          auto us = internal::NumberOrNumericString(r.Raw("durationMicros"));
          if (!us) throw FieldError(r.Child("durationMicros"), "expected microseconds");
          p.compute_s += *us / 1e6;
        }
      } else if (type == "COMM_COLL_NODE") {
        if (!comm_type) throw FieldError(where + ": attr comm_type", "required");
        if (!comm_size) throw FieldError(where + ": attr comm_size", "required");
        AddCollective(p, *comm_type, *comm_size);
      } else if (type == "COMM_SEND_NODE" || type == "COMM_RECV_NODE") {
        p.ignored.push_back(type == "COMM_SEND_NODE" ? "SEND" : "RECV");
      }
    }
    return p;
  });
}

Result<ChakraProfile> ParseChakraFeeder(const json& doc) {
  return internal::Guard("chakra feeder", [&] {
    codec::ObjectReader top(doc, "");
    top.Array("workload_graph");
    ChakraProfile p;
    for (const auto& n : top.Objects("workload_graph")) {
      int64_t type = n.Int("NodeType");
      if (type == 4) {
        p.compute_s += n.NumberOr("runtime", 0) / 1e6;
      } else if (type == 7) {
        if (!n.Has("comm_type")) throw FieldError(n.Child("comm_type"), "required");
        if (!n.Has("comm_size")) throw FieldError(n.Child("comm_size"), "required");
        AddCollective(p, CommTypeFromJson(n.Raw("comm_type"), n.Child("comm_type")),
                      SizeFromJson(n.Raw("comm_size"), n.Child("comm_size")));
      } else if (type == 5 || type == 6) {
        p.ignored.push_back(type == 5 ? "SEND" : "RECV");
      }
    }
    return p;
  });
}

Result<ChakraProfile> ParseChakra(std::string_view text) {
  auto t = internal::Trim(text);
  if (t.find("\"workload_graph\"") != std::string_view::npos && t.find("\"workload_graph\"") < 64) {
    auto doc = codec::ParseJsonText(t);
    if (!doc) return tl::unexpected(doc.error().Wrap("chakra feeder"));
    return ParseChakraFeeder(*doc);
  }
  return ParseChakraJsonizer(t);
}

}  // namespace drainwise::connectors
