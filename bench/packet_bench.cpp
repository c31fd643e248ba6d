// Packet level (ns-3) on the issue-18 goal case (docs/performance.md,
// "Packet level"): 128 hosts, 2,000 flows of 1 MB, baseline + drained.
//
// Fabric: two tiers, 8 leaves of 16 hosts at 100G, 4 spines, one 400G link
// from every leaf to every spine (non-blocking); spine0 drained. Flows: one
// job of explicit flows, flow i from host i mod 128 to a host of another
// leaf, spread so every host sends and receives ~15.6 flows.
#include <benchmark/benchmark.h>

#include <string>

#include "fabric/generator.h"
#include "model/drain.h"
#include "model/snapshot.h"
#include "sim/packet/packet_sim.h"

namespace {

using namespace drainwise;

model::SnapshotPtr Case() {
  fabric::FabricOptions o;
  o.tiers = 2;
  o.hosts = 128;
  o.hosts_per_leaf = 16;
  o.spines_per_pod = 4;
  o.gpus_per_host = 1;
  o.host_gbps = 100;
  o.leaf_spine_gbps = 400;
  auto topo = std::make_shared<const model::Topology>(*model::BuildTopology(fabric::GenerateFabric(o)));
  std::vector<std::string> hosts;
  for (model::NodeId h : topo->hosts()) hosts.push_back(topo->node(h).name);
  model::JobSpec j;
  j.id = "flows";
  j.hosts = hosts;
  j.gpus_per_host = 1;
  model::CollectiveSpec c;
  c.kind = model::CollectiveKind::kFlows;
  for (int i = 0; i < 2000; ++i) {
    const int src = i % 128;
    const int dst = (src + 16 + 17 * (i / 128)) % 128;  // another leaf for i / 128 < 6, then spread
    c.flows.push_back({hosts[src], hosts[dst == src ? (dst + 1) % 128 : dst], 1e6});
  }
  j.iteration.collectives.push_back(c);
  model::JobsSpec spec;
  spec.jobs.push_back(j);
  return model::MakeSnapshot(topo, 1, spec, 1);
}

void BM_Packet128Hosts2000Flows(benchmark::State& state) {
  auto snap = Case();
  model::DrainSpec d;
  d.switches = {"spine0"};
  const model::Drain drain = *model::ResolveDrain(d, *snap->topology);
  sim::PacketOptions o;
  o.routing = state.range(0) == 0 ? sim::PacketRouting::kHash : sim::PacketRouting::kSpray;
  o.flow.routing = state.range(0) == 0 ? sim::FlowRouting::kHashResilient : sim::FlowRouting::kSpray;
  o.mtu_bytes = static_cast<int>(state.range(1));  // 4096 (RoCE) or 9000 (jumbo: 2.2x fewer packets)
  o.flow.hash_seeds = 1;
  for (auto _ : state) {
    auto r = sim::SimulatePackets(*snap, drain, o);
    if (!r) {
      state.SkipWithError(r.error().message.c_str());
      return;
    }
    state.counters["flows"] = static_cast<double>(r->flows);
    state.counters["simulated_us_baseline"] = r->baseline.simulated_s * 1e6;
    state.counters["simulated_us_drained"] = r->drained.simulated_s * 1e6;
    state.counters["packets"] = static_cast<double>(r->baseline.packets_sent + r->drained.packets_sent);
    state.counters["slowdown_pct"] = r->jobs.empty() || !r->jobs[0].slowdown_pct ? -1 : *r->jobs[0].slowdown_pct;
    state.counters["flow_slowdown_pct"] =
        r->jobs.empty() || !r->jobs[0].flow_slowdown_pct ? -1 : *r->jobs[0].flow_slowdown_pct;
  }
}
// {0 = hash | 1 = spray, MTU bytes}; CPU time is the figure on a shared machine.
BENCHMARK(BM_Packet128Hosts2000Flows)
    ->Args({0, 4096})
    ->Args({0, 9000})
    ->Args({1, 4096})
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

}  // namespace

// main(): bench_main.cpp.
