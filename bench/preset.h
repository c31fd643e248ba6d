// The benchmarks' workload: a named preset generated in-process, resolved
// strictly (a generator bug aborts the benchmark rather than skewing it).
#pragma once

#include <cstdlib>
#include <memory>
#include <string_view>

#include "fabric/generator.h"
#include "model/snapshot.h"

namespace drainwise::bench {

inline model::SnapshotPtr PresetSnapshot(std::string_view name) {
  auto preset = fabric::FindPreset(name);
  if (!preset) std::abort();
  auto spec = fabric::GenerateFabric(preset->fabric);
  auto jobs = fabric::GenerateJobs(spec, preset->fabric, preset->jobs);
  auto topo = std::make_shared<const model::Topology>(*model::BuildTopology(spec));
  if (!model::ResolveJobs(jobs, *topo)) std::abort();
  return model::MakeSnapshot(topo, 1, jobs, 1);
}

}  // namespace drainwise::bench
