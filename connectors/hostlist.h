// Slurm hostlist expansion, following Slurm's hostlist.c.
//
//   gpu[001-004,010]     -> gpu001 gpu002 gpu003 gpu004 gpu010
//   node[8-11]           -> node8 node9 node10 node11   (width of the lower bound)
//   rack[0-1]_gpu[1-2]   -> rack0_gpu1 rack0_gpu2 rack1_gpu1 rack1_gpu2 (earlier bracket outer)
//   gpu01,gpu02 gpu03    -> gpu01 gpu02 gpu03   (',', ' ', '\t' separate at top level)
//
// Errors (kInvalidArgument, naming the offending item): text after the last
// ']', reversed ranges, unbalanced or nested brackets, empty or non-numeric
// ranges, and expansions larger than `max_hosts`.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "model/error.h"

namespace drainwise::connectors {

inline constexpr size_t kMaxHostlistHosts = 1'000'000;

Result<std::vector<std::string>> ExpandHostlist(std::string_view hostlist,
                                                size_t max_hosts = kMaxHostlistHosts);

}  // namespace drainwise::connectors
