// Slurm hostlist expansion, following Slurm's hostlist.c.
//
//   gpu[001-004,010]     -> gpu001 gpu002 gpu003 gpu004 gpu010
//   node[8-11]           -> node8 node9 node10 node11   (width of the lower bound)
//   rack[0-1]_gpu[1-2]   -> rack0_gpu1 rack0_gpu2 rack1_gpu1 rack1_gpu2 (earlier bracket outer)
//   gpu01,gpu02 gpu03    -> gpu01 gpu02 gpu03   (',', ' ', '\t' separate at top level)
//
// Errors (kInvalidArgument, naming the offending item): text after the last
// ']', reversed ranges, unbalanced or nested brackets, empty or non-numeric
// ranges, and anything past the bounds below.
//
// Bounds. Slurm's hostlist.c takes a range of more than 64K hosts for an error
// (MAX_RANGE); so do we, and we bound what one expression and one document may
// expand to, so that a malformed line cannot turn into millions of names:
//   one range N-M                  at most kMaxHostlistRange hosts (65,536, Slurm's MAX_RANGE)
//   one expression (one Nodes= or  at most `max_hosts`, default kMaxHostlistHosts (65,536)
//     Switches= value, one job's nodes; every bracket multiplied out)
//   one host name                  at most kMaxHostNameLength characters (253, the longest DNS name)
//   every expression of a document at most HostlistBudget::limit, default kMaxHostlistDocumentHosts
//     (one topology.conf, one jobs reply)  (262,144: ten times the hosts of the largest GPU clusters)
// Checked before anything is expanded: a refused expression costs no memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/error.h"

namespace drainwise::connectors {

inline constexpr uint64_t kMaxHostlistRange = 65'536;
inline constexpr size_t kMaxHostlistHosts = 65'536;
inline constexpr size_t kMaxHostNameLength = 253;
inline constexpr size_t kMaxHostlistDocumentHosts = 262'144;

// What the expressions of one document have expanded to so far; pass the
// same budget to every ExpandHostlist call of the document.
struct HostlistBudget {
  size_t limit = kMaxHostlistDocumentHosts;
  size_t used = 0;
};

Result<std::vector<std::string>> ExpandHostlist(std::string_view hostlist, size_t max_hosts = kMaxHostlistHosts);
// Also counts the hosts against `document` (and refuses past its limit).
Result<std::vector<std::string>> ExpandHostlist(std::string_view hostlist, HostlistBudget& document,
                                                size_t max_hosts = kMaxHostlistHosts);

}  // namespace drainwise::connectors
