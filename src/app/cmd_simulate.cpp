// drainwise simulate: the what-if of one drain, offline, from files.
//
//   drainwise simulate --topology T --jobs J --drain D [--switch S]...
//                      --mode job --format json|table
//   drainwise simulate --topology T --jobs J --candidates spine [--format ...]
//   drainwise simulate --topology T --jobs J --switch S --mode packet [--routing spray|hash]
//   drainwise simulate --mode task (--topology T | --preset 32k) --horizon 365d
//                      [--seed N] [--trace sacct.json] [--options FILE]
//                      [--format json|text|csv]
//
// Modes are entries of kModes below: each gets the loaded snapshot and the
// resolved drain and prints its own result, so another fidelity (e.g. a
// flow-level mode with its own options) is one more entry and its options.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "app/commands.h"
#include "codec/native.h"
#include "engine/task_request.h"
#include "fabric/generator.h"
#include "model/drain.h"
#include "model/snapshot.h"
#include "report/flow_report.h"
#include "report/job_report.h"
#include "report/packet_report.h"
#include "report/task_report.h"
#include "sim/flow_sim.h"
#include "sim/job_sim.h"
#include "sim/packet/packet_sim.h"
#include "sim/task_sim.h"

namespace drainwise::app {

namespace {

struct SimulateArgs {
  std::string topology;
  std::string jobs;
  std::string drain;                  // drain JSON file (optional with --switch)
  std::vector<std::string> switches;  // extra switches to drain
  std::string mode = "job";
  std::string format = "table";
  std::string candidates;  // tier name, or comma-separated switches
  bool only_affected = false;
  int max_rows = 50;
  // --mode flow (sim/flow_sim.h; defaults are FlowOptions').
  std::string routing;  // empty: the topology's declared load balancing, else spray-path
  int hash_seeds = 8;
  uint64_t seed = 1;
  std::optional<double> goodput;
  std::optional<double> per_hop_latency_us;
  std::optional<double> per_message_overhead_us;
  std::optional<double> overload_penalty;
  bool fluid_only = false;  // goodput 1, no latency: the exactness contract's model
  int threads = 0;          // hash seeds or flow components at once; 0 = one per core
  // --mode task (sim/task_sim.h; the request document of engine/task_request.h).
  std::string preset;             // a named synthetic fabric instead of --topology
  std::string horizon;            // "365d"; default the request's (365d)
  bool hash_seeds_given = false;  // --hash-seeds on the command line (else the topology's, else 8)
  bool seed_given = false;        // --seed on the command line (else the request's, else 1)
  std::string trace;              // sacct --json output; default a synthetic trace
  std::string task_options;       // a request document (reliability, drains, ...)
  // --mode packet (sim/packet/packet_sim.h; defaults are PacketOptions').
  size_t max_hosts = sim::PacketOptions{}.max_hosts;
  size_t max_flows = sim::PacketOptions{}.max_flows;
};

// What every mode starts from.
struct Inputs {
  model::SnapshotPtr snapshot;
  model::Drain drain;
};

constexpr int kUsage = 2;  // bad arguments or input documents
constexpr int kFailed = 1;

int Fail(int code, const std::string& message) {
  fmt::print(stderr, "drainwise simulate: {}\n", message);
  return code;
}

std::optional<Inputs> Load(const SimulateArgs& a, int* code) {
  auto topo_spec = codec::ReadTopologySpecFile(a.topology);
  if (!topo_spec) {
    *code = Fail(kUsage, fmt::format("{}: {}", a.topology, topo_spec.error().message));
    return std::nullopt;
  }
  auto topo = model::BuildTopology(*topo_spec);
  if (!topo) {
    *code = Fail(kUsage, fmt::format("{}: {}", a.topology, topo.error().message));
    return std::nullopt;
  }
  auto jobs = codec::ReadJobsSpecFile(a.jobs);
  if (!jobs) {
    *code = Fail(kUsage, fmt::format("{}: {}", a.jobs, jobs.error().message));
    return std::nullopt;
  }
  Inputs in;
  in.snapshot = model::MakeSnapshot(std::make_shared<const model::Topology>(std::move(*topo)), 1, *jobs, 1);
  for (const std::string& d : in.snapshot->dropped_jobs) {
    fmt::print(stderr, "drainwise simulate: warning: {}: job left out: {}\n", a.jobs, d);
  }
  model::DrainSpec spec;
  if (!a.drain.empty()) {
    auto parsed = codec::ReadDrainSpecFile(a.drain);
    if (!parsed) {
      *code = Fail(kUsage, fmt::format("{}: {}", a.drain, parsed.error().message));
      return std::nullopt;
    }
    spec = std::move(*parsed);
  }
  spec.switches.insert(spec.switches.end(), a.switches.begin(), a.switches.end());
  auto drain = model::ResolveDrain(spec, *in.snapshot->topology);
  if (!drain) {
    *code = Fail(kUsage, fmt::format("drain: {}", drain.error().message));
    return std::nullopt;
  }
  in.drain = std::move(*drain);
  return in;
}

int RunJobMode(const SimulateArgs& a, const Inputs& in) {
  const sim::JobSimIndex index(in.snapshot);
  auto result = sim::AssessJobs(index, in.drain);
  if (!result) return Fail(kFailed, result.error().message);
  if (a.format == "json") {
    report::JobJsonOptions options;
    options.include_unaffected = !a.only_affected;
    fmt::print("{}\n", report::JobAssessmentToJson(*result, *in.snapshot, in.drain, options).dump(2));
  } else {
    fmt::print("{}", report::JobAssessmentTable(*result, *in.snapshot, in.drain, a.max_rows));
  }
  return 0;
}

// Every single-switch drain of a tier (or of the listed switches), safest first.
int RunCandidates(const SimulateArgs& a, const Inputs& in) {
  const model::Topology& t = *in.snapshot->topology;
  std::vector<model::NodeId> switches = sim::SwitchesOfTier(t, a.candidates);
  if (switches.empty()) {
    size_t start = 0;
    while (start <= a.candidates.size()) {
      size_t end = a.candidates.find(',', start);
      if (end == std::string::npos) end = a.candidates.size();
      std::string name = a.candidates.substr(start, end - start);
      if (!name.empty()) {
        auto n = t.FindNode(name);
        if (!n || !t.node(*n).is_switch()) {
          return Fail(kUsage, fmt::format("--candidates: '{}' is neither a tier nor a switch", name));
        }
        switches.push_back(*n);
      }
      start = end + 1;
    }
  }
  const sim::JobSimIndex index(in.snapshot);
  sim::JobSimWorkspace ws;
  auto ranked = sim::SweepDrainCandidates(index, switches, ws);
  if (!ranked) return Fail(kFailed, ranked.error().message);
  if (a.format == "json") {
    fmt::print("{}\n", report::DrainCandidatesToJson(*ranked, *in.snapshot).dump(2));
  } else {
    fmt::print("{}", report::DrainCandidatesTable(*ranked, *in.snapshot, a.max_rows));
  }
  return 0;
}

// Flow-level: every job's collectives as flows, max-min fair on the drained fabric.
int RunFlowMode(const SimulateArgs& a, const Inputs& in) {
  sim::FlowOptions o = a.fluid_only ? sim::FlowOptions::Exact() : sim::FlowOptions{};
  o.hash_seeds = a.hash_seeds;
  o = sim::WithDeclaredLoadBalancing(o, in.snapshot->topology->load_balancing());
  if (a.hash_seeds_given) o.hash_seeds = a.hash_seeds;
  if (!a.routing.empty()) {
    auto routing = sim::ParseFlowRouting(a.routing);
    if (!routing) {
      return Fail(kUsage,
                  fmt::format("--routing '{}': expected spray, spray-path, hash, hash-rehash, adaptive", a.routing));
    }
    o.routing = *routing;
    o.routing_source = "request";
  }
  o.seed = a.seed;
  if (a.goodput) o.goodput = *a.goodput;
  if (a.per_hop_latency_us) o.per_hop_latency_s = *a.per_hop_latency_us / 1e6;
  if (a.per_message_overhead_us) o.per_message_overhead_s = *a.per_message_overhead_us / 1e6;
  if (a.overload_penalty) o.overload_penalty = *a.overload_penalty;
  const int threads = a.threads > 0 ? a.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  auto result = sim::SimulateFlows(*in.snapshot, in.drain, o, {}, sim::ThreadsRunner(threads));
  if (!result) {
    return Fail(result.error().code == ErrorCode::kInvalidArgument ? kUsage : kFailed, result.error().message);
  }
  report::FlowJsonOptions jo;
  if (a.only_affected) jo.max_jobs = a.max_rows;
  nlohmann::json doc = report::FlowReportToJson(*result, *in.snapshot, jo);
  if (a.format == "json") {
    fmt::print("{}\n", doc.dump(2));
  } else {
    fmt::print("{}", report::FlowReportText(doc, a.max_rows));
  }
  return 0;
}

std::optional<std::string> ReadFile(const std::string& path, int* code) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    *code = Fail(kUsage, fmt::format("{}: cannot open", path));
    return std::nullopt;
  }
  std::string text;
  char buf[65536];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
  std::fclose(f);
  return text;
}

// Task level: a year of failures, drains and jobs over the fabric (sim/task_sim.h).
int RunTaskMode(const SimulateArgs& a) {
  if (a.format != "json" && a.format != "text" && a.format != "table" && a.format != "csv") {
    return Fail(kUsage, "--format must be json, text or csv with --mode task");
  }
  if (a.topology.empty() == a.preset.empty()) return Fail(kUsage, "--mode task: give --topology FILE or --preset NAME");
  std::shared_ptr<const model::Topology> topology;
  if (!a.preset.empty()) {
    auto preset = fabric::FindPreset(a.preset);
    if (!preset) return Fail(kUsage, fmt::format("--preset '{}': no such preset (demo, small, 32k, ...)", a.preset));
    auto topo = model::BuildTopology(fabric::GenerateFabric(preset->fabric));
    if (!topo) return Fail(kFailed, topo.error().message);
    topology = std::make_shared<const model::Topology>(std::move(*topo));
  } else {
    auto spec = codec::ReadTopologySpecFile(a.topology);
    if (!spec) return Fail(kUsage, fmt::format("{}: {}", a.topology, spec.error().message));
    auto topo = model::BuildTopology(*spec);
    if (!topo) return Fail(kUsage, fmt::format("{}: {}", a.topology, topo.error().message));
    topology = std::make_shared<const model::Topology>(std::move(*topo));
  }
  int code = 0;
  nlohmann::json request = nlohmann::json::object();
  if (!a.task_options.empty()) {
    auto text = ReadFile(a.task_options, &code);
    if (!text) return code;
    request = nlohmann::json::parse(*text, nullptr, false);
    if (request.is_discarded() || !request.is_object()) {
      return Fail(kUsage, fmt::format("{}: not a JSON object", a.task_options));
    }
  }
  if (!a.horizon.empty()) request["horizon"] = a.horizon;
  if (a.seed_given) request["seed"] = a.seed;
  if (!a.trace.empty()) {
    auto text = ReadFile(a.trace, &code);
    if (!text) return code;
    nlohmann::json sacct = nlohmann::json::parse(*text, nullptr, false);
    if (sacct.is_discarded())
      return Fail(kUsage, fmt::format("{}: not valid JSON (expected sacct --json output)", a.trace));
    request["trace"] = {{"sacct", std::move(sacct)}};
  }
  auto run = engine::ParseTaskRequest(request, *topology);
  if (!run) return Fail(kUsage, run.error().message);
  for (const auto& s : run->trace_diagnostics.skipped) {
    fmt::print(stderr, "drainwise simulate: trace: {} left out: {}\n", s.item, s.reason);
  }
  fmt::print(stderr, "drainwise simulate: task level, {} hosts, trace {}\n", topology->hosts().size(),
             run->trace_source);
  // Progress every 10 % of the horizon, and the time taken, on stderr.
  int last_tenth = 0;
  const auto start = std::chrono::steady_clock::now();
  auto progress = [&](double f) {
    const int tenth = static_cast<int>(f * 10);
    if (tenth <= last_tenth || tenth >= 10) return;
    last_tenth = tenth;
    fmt::print(stderr, "drainwise simulate: {} % simulated\n", tenth * 10);
  };
  auto report = sim::SimulateTasks(topology, run->trace, run->options, progress);
  if (!report) return Fail(kFailed, report.error().message);
  fmt::print(stderr, "drainwise simulate: {:.0f} h simulated in {:.2f} s ({} events, {} network passes)\n",
             report->horizon_s / 3600, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
             report->events, report->network_passes);
  if (a.format == "json") {
    fmt::print("{}\n", report::TaskReportToJson(*report).dump(2));
  } else if (a.format == "csv") {
    fmt::print("{}", report::TaskSeriesCsv(*report));
  } else {
    fmt::print("{}", report::TaskReportText(*report));
  }
  return 0;
}

// Packet level on ns-3 for the drain's blast radius, with the flow level
// for the same jobs side by side. --routing spray|hash sets both levels.
int RunPacketMode(const SimulateArgs& a, const Inputs& in) {
  if (!sim::PacketLevelAvailable()) return Fail(kFailed, std::string(sim::PacketLevelUnavailableMessage()));
  sim::PacketOptions o;
  // Without --routing, per-packet spraying: the packet level has no adaptive or per-path mode, and spraying is
  // what its fidelity suite and golden test measure.
  const std::string routing_name = a.routing.empty() ? "spray" : a.routing;
  auto routing = sim::ParsePacketRouting(routing_name);
  if (!routing) return Fail(kUsage, fmt::format("--routing '{}': --mode packet takes spray or hash", routing_name));
  o.routing = *routing;
  o.flow.routing = *routing == sim::PacketRouting::kSpray ? sim::FlowRouting::kSpray : sim::FlowRouting::kHashResilient;
  o.flow.hash_seeds = a.hash_seeds;
  o.seed = a.seed;
  o.flow.seed = a.seed;
  if (a.goodput) o.flow.goodput = *a.goodput;
  if (a.per_hop_latency_us) o.per_hop_delay_s = o.flow.per_hop_latency_s = *a.per_hop_latency_us / 1e6;
  if (a.per_message_overhead_us) {
    o.per_message_overhead_s = o.flow.per_message_overhead_s = *a.per_message_overhead_us / 1e6;
  }
  o.max_hosts = a.max_hosts;
  o.max_flows = a.max_flows;
  const auto start = std::chrono::steady_clock::now();
  auto result = sim::SimulatePackets(*in.snapshot, in.drain, o);
  if (!result) {
    const bool usage =
        result.error().code == ErrorCode::kInvalidArgument || result.error().code == ErrorCode::kTooLarge;
    return Fail(usage ? kUsage : kFailed, result.error().message);
  }
  nlohmann::json doc = report::PacketReportToJson(*result, *in.snapshot);
  if (a.format == "json") {
    fmt::print("{}\n", doc.dump(2));
  } else {
    fmt::print("{}", report::PacketReportText(doc, a.max_rows));
  }
  std::fflush(stdout);
  fmt::print(stderr, "drainwise simulate: packet level in {:.2f} s\n",
             std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return 0;
}

struct Mode {
  const char* name;
  int (*run)(const SimulateArgs&, const Inputs&);
};
constexpr Mode kModes[] = {
    {"job", RunJobMode},
    {"flow", RunFlowMode},
    {"packet", RunPacketMode},
};

int RunSimulate(const SimulateArgs& a) {
  if (a.mode == "task") return RunTaskMode(a);
  if (a.topology.empty() || a.jobs.empty()) return Fail(kUsage, "--topology and --jobs are required");
  if (a.format != "json" && a.format != "table") return Fail(kUsage, "--format must be json or table");
  const Mode* mode = nullptr;
  for (const Mode& m : kModes) {
    if (a.mode == m.name) mode = &m;
  }
  if (!mode) return Fail(kUsage, fmt::format("unknown --mode '{}'", a.mode));
  if (a.candidates.empty() && a.drain.empty() && a.switches.empty()) {
    return Fail(kUsage, "give a drain: --drain FILE and/or --switch NAME (or --candidates TIER)");
  }
  int code = 0;
  auto in = Load(a, &code);
  if (!in) return code;
  if (!a.candidates.empty()) {
    if (a.mode != "job") return Fail(kUsage, "--candidates runs the job-level what-if: use --mode job");
    return RunCandidates(a, *in);
  }
  return mode->run(a, *in);
}

}  // namespace

void RegisterSimulate(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<SimulateArgs>();
  auto* cmd = app.add_subcommand("simulate", "What a drain does to the jobs, offline, from files");
  cmd->add_option("--topology", args->topology, "drainwise.topology/v1 file (required but with --mode task --preset)");
  cmd->add_option("--jobs", args->jobs, "drainwise.jobs/v1 file (required but with --mode task)");
  cmd->add_option("--drain", args->drain, "Drain file: {\"switches\":[...], \"links\":[...]}");
  cmd->add_option("--switch", args->switches, "A switch to drain (repeatable; added to --drain)");
  cmd->add_option(
         "--mode", args->mode,
         "Fidelity: job (structural: paths, spray bandwidth) | flow (max-min fair flows: comm and iteration times) | "
         "task (a horizon of failures, drains and jobs: availability, lost GPU-hours) | "
         "packet (ns-3, the drain's blast radius: packet vs flow level per job)")
      ->capture_default_str();
  cmd->add_option("--format", args->format, "json | table (--mode task: json | text | csv, the time series)")
      ->capture_default_str();
  cmd->add_option("--preset", args->preset,
                  "--mode task: a named synthetic fabric (32k, demo, small) instead of --topology");
  cmd->add_option("--horizon", args->horizon, "--mode task: simulated time, e.g. 365d, 12h (default 365d)");
  cmd->add_option("--trace", args->trace,
                  "--mode task: the output of sacct --json as the workload (default synthetic)");
  cmd->add_option("--options", args->task_options,
                  "--mode task: a request document (reliability, drains, ...; docs/task-level.md)");
  cmd->add_option("--candidates", args->candidates,
                  "Rank every single-switch drain of a tier (e.g. spine) or of a comma-separated list");
  cmd->add_flag("--only-affected", args->only_affected, "JSON: list only the jobs the drain affects");
  cmd->add_option("--max-rows", args->max_rows, "Table rows at most")->capture_default_str();
  cmd->add_option("--routing", args->routing,
                  "--mode flow: spray | spray-path | hash | hash-rehash | adaptive (default: the topology's "
                  "load_balancing, else spray-path); --mode packet: spray (default) | hash")
      ->capture_default_str();
  cmd->add_option("--hash-seeds", args->hash_seeds, "--mode flow, hash routing: seeds (mean and worst)")
      ->capture_default_str();
  cmd->add_option("--seed", args->seed,
                  "--mode flow, hash routing: first seed; --mode task: seed of failures and of the synthetic trace")
      ->capture_default_str();
  cmd->add_option("--goodput", args->goodput, "--mode flow: usable share of line rate (default 0.95)");
  cmd->add_option("--per-hop-latency-us", args->per_hop_latency_us,
                  "--mode flow: one-way latency per link of a path; a step pays a round trip (default 1)");
  cmd->add_option("--per-message-overhead-us", args->per_message_overhead_us,
                  "--mode flow: latency per collective step (default 5)");
  cmd->add_option("--overload-penalty", args->overload_penalty,
                  "--mode flow: capacity lost on links at >= 95% at t = 0 (default 0: off)");
  cmd->add_option("--threads", args->threads,
                  "--mode flow: hash seeds, or independent flow components, at once (0 = one per core)")
      ->capture_default_str();
  cmd->add_option("--max-hosts", args->max_hosts, "--mode packet: cap on the blast radius's hosts")
      ->capture_default_str();
  cmd->add_option("--max-flows", args->max_flows, "--mode packet: cap on the blast radius's flows (TCP connections)")
      ->capture_default_str();
  cmd->add_flag("--fluid-only", args->fluid_only,
                "--mode flow: pure fluid model (goodput 1, no latency), as in the exactness contract");
  cmd->callback([args, exit_code, cmd] {
    args->seed_given = cmd->count("--seed") > 0;
    args->hash_seeds_given = cmd->count("--hash-seeds") > 0;
    *exit_code = RunSimulate(*args);
  });
}

// `packet-worker --fd 3 --parent PID`: one packet-level run for a daemon
// that spawned this program (PacketOptions::worker_program), over the
// socket on fd 3. Not for people: hidden from --help.
void RegisterPacketWorker(CLI::App& app, int* exit_code) {
  CLI::App* cmd = app.add_subcommand("packet-worker", "");
  cmd->group("");
  auto fd = std::make_shared<int>(3);
  auto parent = std::make_shared<int>(0);
  cmd->add_option("--fd", *fd)->required();
  cmd->add_option("--parent", *parent)->required();
  cmd->callback([=] { *exit_code = sim::ServePacketWorker(*fd, *parent); });
}

}  // namespace drainwise::app
