// Chakra execution traces -> the collectives of one training iteration.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/error.h"
#include "model/jobs.h"

namespace drainwise::connectors {

struct ChakraProfile {
  // Collectives in order of first appearance; identical (kind, bytes) pairs
  // are merged and counted. group_size is 0 (every rank of the job).
  std::vector<model::CollectiveSpec> collectives;
  double compute_s = 0;  // sum of compute node durations (one rank, serial)
  // Communication nodes with no drainwise equivalent, one entry per node:
  // "BARRIER", "SEND", "RECV", or "COMM_COLL 'name' (no comm_type)" and the
  // like for nodes whose collective or size cannot be told.
  std::vector<std::string> ignored;
  // Collectives mapped to a model kind that only approximates them, one entry
  // per node: "BROADCAST as allgather" (see CollectiveKindApproximation).
  std::vector<std::string> approximated;

  // "3 × BROADCAST as allgather; not mapped: 12 × SEND, 1 × BARRIER", or ""
  // when every node mapped exactly. Shown with the job (label profile_detail).
  std::string Summary() const;
};

// comm_type number or name -> model kind: ALL_REDUCE(0) -> allreduce,
// ALL_GATHER(2) -> allgather, REDUCE_SCATTER(7)/REDUCE_SCATTER_BLOCK(8) ->
// reducescatter, ALL_TO_ALL(6) -> alltoall; nullopt for the others.
std::optional<model::CollectiveKind> CollectiveKindFromChakra(int comm_type);
// Collectives the model has no exact kind for, mapped to the kind whose ring
// moves about the same bytes over each link: BROADCAST(5), GATHER(3) and
// SCATTER(4) of B bytes -> allgather of B (a pipelined ring broadcast sends B
// over each link, a ring allgather of B total (N-1)/N of B); REDUCE(1) ->
// reducescatter of B (same argument). BARRIER(9) moves no data: nullopt.
std::optional<model::CollectiveKind> CollectiveKindApproximation(int comm_type);
std::string_view ChakraCommTypeName(int comm_type);
// A collective's comm_type from a node name when the trace omits it
// ("nccl:broadcast", "c10d::allreduce_", "ncclKernel_AllGather_RING_LL");
// nullopt when the name does not say.
std::optional<int> CommTypeFromName(std::string_view name);

// chakra_jsonizer output: concatenated JSON objects, the global metadata
// first (no "id"), then one node each: {"id", "name", "type":
// "COMM_COLL_NODE", "durationMicros", "attr": [{"name": "comm_type",
// "int64Val": "0"}, {"name": "comm_size", "int64Val": "268435456"}]};
// 64-bit integers as strings. A COMM_COLL node without comm_type takes it from
// its name; one whose type or size cannot be told is counted in `ignored`,
// never a reason to drop the trace. Errors name the node
// ("node 14.attr[0].int64Val: unknown comm_type").
Result<ChakraProfile> ParseChakraJsonizer(std::string_view text);

// Chakra feeder JSON, as Chakra's converter writes it: {"workload_graph":
// [{"Id", "Name", "NodeType" (4 = COMP, 5 = SEND, 6 = RECV, 7 = COMM_COLL),
// "runtime" (us), "comm_type", "comm_size", "tensor_size"}]}; comm_type and
// comm_size are optional as in Chakra's own feeder (size falls back to
// tensor_size, type to the name).
Result<ChakraProfile> ParseChakraFeeder(const nlohmann::json& doc);

// The binary execution trace (.et) written by PyTorch's execution-trace
// observer through Chakra's converter: varint32-length-prefixed protobuf
// messages, GlobalMetadata then Nodes (one file per rank), optionally gzipped.
// Errors name the message index and byte offset.
Result<ChakraProfile> ParseChakraEt(std::string_view bytes);

// Any of the three forms, told apart by the content.
Result<ChakraProfile> ParseChakra(std::string_view text);

}  // namespace drainwise::connectors
