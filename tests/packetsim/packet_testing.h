// Helpers of the packet-level tests: generated Clos fabrics and the three
// workloads of the fidelity cases (permutation, all-to-all, ring).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <doctest/doctest.h>
#include <fmt/format.h>

#include "fabric/generator.h"
#include "model/drain.h"
#include "model/snapshot.h"
#include "sim/packet/packet_sim.h"

namespace drainwise::packettest {

inline std::shared_ptr<const model::Topology> Fabric(const fabric::FabricOptions& o) {
  auto t = model::BuildTopology(fabric::GenerateFabric(o));
  REQUIRE(t.has_value());
  return std::make_shared<const model::Topology>(std::move(*t));
}

// Hosts of the generated fabric, in id order (p<pod>-gpu<index>).
inline std::vector<std::string> HostNames(const model::Topology& t) {
  std::vector<std::string> out;
  for (model::NodeId h : t.hosts()) out.push_back(t.node(h).name);
  return out;
}

// One job of explicit flows hosts[i] -> hosts[(i + shift) % n], `bytes` each.
inline model::JobSpec PermutationJob(const std::string& id, const std::vector<std::string>& hosts, size_t shift,
                                     double bytes) {
  model::JobSpec j;
  j.id = id;
  j.hosts = hosts;
  j.gpus_per_host = 1;
  model::CollectiveSpec c;
  c.kind = model::CollectiveKind::kFlows;
  for (size_t i = 0; i < hosts.size(); ++i) c.flows.push_back({hosts[i], hosts[(i + shift) % hosts.size()], bytes});
  j.iteration.collectives.push_back(c);
  return j;
}

inline model::JobSpec CollectiveJob(const std::string& id, const std::vector<std::string>& hosts,
                                    model::CollectiveKind kind, double bytes) {
  model::JobSpec j;
  j.id = id;
  j.hosts = hosts;
  j.gpus_per_host = 1;
  model::CollectiveSpec c;
  c.kind = kind;
  c.algorithm = kind == model::CollectiveKind::kAllToAll ? "direct" : "ring";
  c.bytes = bytes;
  j.iteration.collectives.push_back(c);
  return j;
}

inline model::SnapshotPtr Snapshot(std::shared_ptr<const model::Topology> t, std::vector<model::JobSpec> jobs) {
  model::JobsSpec spec;
  spec.jobs = std::move(jobs);
  auto s = model::MakeSnapshot(std::move(t), 1, spec, 1);
  REQUIRE(s->dropped_jobs.empty());
  return s;
}

inline model::Drain DrainSwitches(const model::Topology& t, std::vector<std::string> switches) {
  model::DrainSpec spec;
  spec.switches = std::move(switches);
  auto d = model::ResolveDrain(spec, t);
  REQUIRE(d.has_value());
  return *d;
}

inline const sim::PacketJobResult& Job(const sim::PacketReport& r, const model::Snapshot& s, const std::string& id) {
  auto j = s.jobs->FindJob(id);
  REQUIRE(j.has_value());
  for (const auto& x : r.jobs) {
    if (x.job == *j) return x;
  }
  FAIL("job " << id << " is not in the blast radius");
  throw 0;
}

}  // namespace drainwise::packettest
