// drainwise fabric: writes a synthetic topology.json and jobs.json.
#include <chrono>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "app/commands.h"
#include "codec/native.h"
#include "fabric/generator.h"

namespace drainwise::app {

namespace {

struct FabricArgs {
  std::string preset = "demo";
  std::string out;
  std::optional<int> tiers, pods, hosts, gpus_per_host, rails, hosts_per_leaf, spines, jobs, single_homed,
      superspines_per_plane;
  std::optional<double> host_gbps, uplink_gbps, oversubscription;
  std::optional<uint64_t> seed;
  std::optional<double> alltoall_share;
};

bool WriteFile(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  return static_cast<bool>(out);
}

int RunFabric(const FabricArgs& a) {
  auto preset = fabric::FindPreset(a.preset);
  if (!preset) {
    fmt::print(stderr, "drainwise fabric: unknown preset '{}' (demo, 32k, 32k-moe, 32k-moe-2to1, 128k, small)\n",
               a.preset);
    return 2;
  }
  auto& f = preset->fabric;
  auto& j = preset->jobs;
  if (a.tiers) f.tiers = *a.tiers;
  if (a.pods) f.pods = *a.pods;
  if (a.hosts) f.hosts = *a.hosts;
  if (a.gpus_per_host) f.gpus_per_host = *a.gpus_per_host;
  if (a.rails) f.rails = *a.rails;
  if (a.hosts_per_leaf) f.hosts_per_leaf = *a.hosts_per_leaf;
  if (a.spines) f.spines_per_pod = *a.spines;
  if (a.superspines_per_plane) f.superspines_per_plane = *a.superspines_per_plane;
  if (a.single_homed) f.single_homed_hosts = *a.single_homed;
  if (a.host_gbps) f.host_gbps = *a.host_gbps;
  if (a.uplink_gbps) f.leaf_spine_gbps = f.spine_super_gbps = *a.uplink_gbps;
  if (a.oversubscription) {
    // Leaf uplink capacity = host-facing capacity / oversubscription.
    double down = f.hosts_per_leaf * f.host_gbps;
    f.leaf_spine_gbps = down / *a.oversubscription / (f.spines_per_pod * f.leaf_spine_links);
  }
  if (a.jobs) j.jobs = *a.jobs;
  if (a.seed) j.seed = *a.seed;
  if (a.alltoall_share) j.alltoall_share = *a.alltoall_share;
  if (f.tiers < 2 || f.tiers > 3) {
    fmt::print(stderr, "drainwise fabric: --tiers must be 2 or 3\n");
    return 2;
  }

  auto start = std::chrono::steady_clock::now();
  auto topo = fabric::GenerateFabric(f);
  auto jobs = fabric::GenerateJobs(topo, f, j);
  std::filesystem::path dir(a.out);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    fmt::print(stderr, "drainwise fabric: {}: {}\n", a.out, ec.message());
    return 1;
  }
  if (!WriteFile(dir / "topology.json", codec::TopologySpecToJson(topo).dump(1)) ||
      !WriteFile(dir / "jobs.json", codec::JobsSpecToJson(jobs).dump(1))) {
    fmt::print(stderr, "drainwise fabric: cannot write into {}\n", a.out);
    return 1;
  }
  int gpus = 0, hosts = 0;
  for (const auto& n : topo.nodes) {
    if (n.kind == model::NodeKind::kHost) {
      ++hosts;
      gpus += n.gpus;
    }
  }
  auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  fmt::print("wrote {}/topology.json ({} nodes, {} links, {} hosts, {} GPUs) and jobs.json ({} jobs) in {:.0f} ms\n",
             a.out, topo.nodes.size(), topo.links.size(), hosts, gpus, jobs.jobs.size(), ms);
  return 0;
}

}  // namespace

void RegisterFabric(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<FabricArgs>();
  auto* cmd = app.add_subcommand("fabric", "Write a synthetic topology.json and jobs.json");
  cmd->add_option("--preset", args->preset, "demo | 32k | 32k-moe (cross-pod all-to-all) | 32k-moe-2to1 | 128k | small")
      ->capture_default_str();
  cmd->add_option("--out", args->out, "Output directory")->required();
  cmd->add_option("--tiers", args->tiers, "2 (leaf/spine) or 3 (with superspines)");
  cmd->add_option("--pods", args->pods, "Pods (3 tiers)");
  cmd->add_option("--hosts", args->hosts, "Hosts in all");
  cmd->add_option("--gpus-per-host", args->gpus_per_host, "GPUs per host");
  cmd->add_option("--rails", args->rails, "NICs per host, each to its rail's leaf");
  cmd->add_option("--hosts-per-leaf", args->hosts_per_leaf, "Hosts per leaf group");
  cmd->add_option("--spines", args->spines, "Spines per pod");
  cmd->add_option("--superspines-per-plane", args->superspines_per_plane, "Superspines per plane");
  cmd->add_option("--single-homed", args->single_homed, "Single-homed hosts per pod");
  cmd->add_option("--host-gbps", args->host_gbps, "NIC speed");
  cmd->add_option("--uplink-gbps", args->uplink_gbps, "Switch-to-switch link speed");
  cmd->add_option("--oversubscription", args->oversubscription, "Leaf down:up ratio (sets uplink speed)");
  cmd->add_option("--jobs", args->jobs, "Jobs in the synthetic mix");
  cmd->add_option("--seed", args->seed, "Seed of the job mix");
  cmd->add_option("--alltoall-share", args->alltoall_share, "Share of expert-parallel (all-to-all) jobs, 0..1");
  cmd->callback([args, exit_code] { *exit_code = RunFabric(*args); });
}

}  // namespace drainwise::app
