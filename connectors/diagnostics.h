// What a connector left out or doubted, item by item.
//
// A source applies everything it can: one bad item (one host's LLDP report,
// one job's hostlist, one ambiguous switch) is skipped and named here with its
// reason, never dropped silently and never allowed to void the whole source.
// /v1/sources shows the counts and the first reasons.
#pragma once

#include <string>
#include <vector>

namespace drainwise::connectors {

struct DiagnosticItem {
  std::string item;    // what: "job 481516", "switch StorageSW", "report gpu-07.json"
  std::string reason;  // why, naming the rule: "CPU-only (no GPU in tres_per_node or tres_alloc_str)"
};

struct Diagnostics {
  std::vector<DiagnosticItem> skipped;   // left out; the rest applied
  std::vector<DiagnosticItem> warnings;  // applied, but worth a look (a hint that disagrees with structure)

  void Skip(std::string item, std::string reason) { skipped.push_back({std::move(item), std::move(reason)}); }
  void Warn(std::string item, std::string reason) { warnings.push_back({std::move(item), std::move(reason)}); }
  // Appends another parser's diagnostics (several reports, several pages).
  void Merge(const Diagnostics& other) {
    skipped.insert(skipped.end(), other.skipped.begin(), other.skipped.end());
    warnings.insert(warnings.end(), other.warnings.begin(), other.warnings.end());
  }
};

}  // namespace drainwise::connectors
