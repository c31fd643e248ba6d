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
  // Communication nodes with no drainwise equivalent, by comm type name
  // (REDUCE, GATHER, SCATTER, BROADCAST, BARRIER, point-to-point SEND/RECV).
  std::vector<std::string> ignored;
};

// comm_type number or name -> model kind: ALL_REDUCE(0) -> allreduce,
// ALL_GATHER(2) -> allgather, REDUCE_SCATTER(7)/REDUCE_SCATTER_BLOCK(8) ->
// reducescatter, ALL_TO_ALL(6) -> alltoall; nullopt for the others.
std::optional<model::CollectiveKind> CollectiveKindFromChakra(int comm_type);
std::string_view ChakraCommTypeName(int comm_type);

// chakra_jsonizer output: concatenated JSON objects, the global metadata
// first (no "id"), then one node each: {"id", "name", "type":
// "COMM_COLL_NODE", "durationMicros", "attr": [{"name": "comm_type",
// "int64Val": "0"}, {"name": "comm_size", "int64Val": "268435456"}]};
// 64-bit integers as strings. Errors name the node ("node 13: attr comm_size: ...").
Result<ChakraProfile> ParseChakraJsonizer(std::string_view text);

// Chakra feeder JSON: {"workload_graph": [{"Id", "Name", "NodeType" (4 =
// COMP, 5 = SEND, 6 = RECV, 7 = COMM_COLL), "runtime" (us), "comm_type",
// "comm_size"}]}.
Result<ChakraProfile> ParseChakraFeeder(const nlohmann::json& doc);

// Either form, told apart by the content.
Result<ChakraProfile> ParseChakra(std::string_view text);

}  // namespace drainwise::connectors
