// Task-level simulation: a discrete-event simulation of the cluster over
// time (months to years), at the granularity of jobs, hosts and switches.
//
// What happens in a run (docs/task-level.md has the model and what it leaves
// out):
//   * every device (host, switch of each tier, link) fails and is repaired as
//     an independent alternating renewal process with exponential up and down
//     times of means MTBF and MTTR (TaskOptions::reliability, per kind);
//   * planned drains (DrainWindow: switches and links out of service in
//     [start_s, end_s)) come from the caller, so a campaign can feed them;
//   * jobs arrive from a trace (TaskJob, e.g. from Slurm's sacct --json, or
//     GenerateSyntheticTrace) and are placed by a first-come-first-served
//     scheduler with EASY backfill on whole hosts;
//   * the network acts on running jobs through the job-level pass
//     (sim/job_sim.h) over every pair of host attachment classes: a job left
//     without a path between two of its hosts is interrupted and restarts
//     from its last checkpoint; a job that keeps its paths but loses
//     bandwidth progresses at 1 / ((1 - c) + c / bandwidth_fraction), with c
//     the communication share of an iteration (TaskOptions::comm_fraction).
//
// Units: times in seconds from the start of the run (double), GPU-hours in
// the results, MTBF/MTTR in hours (as vendors state them).
//
// Purity. SimulateTasks does no I/O, keeps no globals and starts no threads.
// Randomness comes from TaskOptions::seed only (a 64-bit Mersenne twister and
// distributions implemented here, so the same seed gives the same result on
// every platform and standard library): same inputs, same seed, same
// TaskReport, bit for bit.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <stop_token>
#include <string>
#include <vector>

#include "model/drain.h"
#include "model/error.h"
#include "model/topology.h"

namespace drainwise::sim {

// Mean time between failures and mean time to repair of one device kind.
// mtbf_h == 0 means the kind never fails.
struct Reliability {
  double mtbf_h = 0;
  double mttr_h = 0;
};

// The documented defaults (docs/task-level.md, "Defaults"), by device kind:
// "host" (a GPU server: GPUs, HBM, NICs, its OS), "link" (a cable and its
// optics), and switches by tier name ("leaf", "spine", "superspine"; any
// other tier uses the "switch" entry). They are assumptions of the order of
// published large-cluster interruption rates, not measurements.
Reliability DefaultReliability(std::string_view kind);

// One job of the workload.
struct TaskJob {
  std::string id;
  double submit_s = 0;               // seconds from the start of the run; >= 0
  int hosts = 1;                     // whole hosts; > 0
  double work_s = 0;                 // run time at full speed without interruption; > 0
  double limit_s = 0;                // the requested time limit (the backfill estimate); 0 = work_s
  double checkpoint_interval_s = 0;  // 0 = TaskOptions::checkpoint_interval_s
  double restart_cost_s = -1;        // < 0 = TaskOptions::restart_cost_s
};

// A planned drain: these switches and links are out of service in [start_s, end_s).
struct DrainWindow {
  double start_s = 0;
  double end_s = 0;
  model::Drain drain;
  // true: jobs the drain would cut off are checkpointed and moved off just
  // before it starts (cause "migration": they lose their restart cost only);
  // false: they are cut off like by a failure (cause "planned_drain").
  bool migrate = true;
  std::string label;
};

struct TaskOptions {
  double horizon_s = 365.0 * 86400;
  uint64_t seed = 1;
  // Overrides of DefaultReliability by kind ("host", "link", a tier name, "switch").
  std::map<std::string, Reliability> reliability;
  // A host counts as available (its GPUs towards GPU availability, and as
  // schedulable) while it is up and at least this many of its NIC links are
  // in service (capped at its NIC count).
  int min_nics_up = 1;
  double comm_fraction = 0.2;           // share of an iteration spent communicating, in [0, 1]
  double checkpoint_interval_s = 3600;  // default for jobs of the trace; 0: never (a cut loses all work)
  double restart_cost_s = 600;          // default: reload and warm-up after an interruption
  int backfill_depth = 100;             // queued jobs behind the head considered for backfill
  double sample_interval_s = 86400;     // time series step (> 0)
  std::vector<DrainWindow> drains;
  bool record_jobs = false;  // fill TaskReport::jobs (one row per trace job)
};

// Interruptions and GPU-hours lost to one cause.
struct CauseTotals {
  int64_t interruptions = 0;
  double lost_work_gpu_h = 0;  // progress since the last checkpoint, thrown away
  double restart_gpu_h = 0;    // restart cost paid after the interruptions
  double slowdown_gpu_h = 0;   // allocated GPU time not turned into progress: (1 - rate) x time
  double total_gpu_h() const { return lost_work_gpu_h + restart_gpu_h + slowdown_gpu_h; }
};

// One step of the time series: averages over [start_s, end_s) and counts at end_s.
struct TaskSample {
  double start_s = 0;
  double end_s = 0;
  double switch_availability = 0;  // share of switches not failed
  double gpu_availability = 0;     // share of GPUs on available hosts
  double gpu_utilization = 0;      // share of GPUs allocated to running jobs
  double lost_failure_gpu_h = 0;   // lost in the step, by cause
  double lost_drain_gpu_h = 0;
  double lost_migration_gpu_h = 0;
  int64_t interruptions = 0;  // in the step, every cause
  int running = 0;            // at end_s
  int queued = 0;
};

// What happened to one job of the trace (TaskOptions::record_jobs).
struct TaskJobOutcome {
  std::string id;
  double submit_s = 0;
  double first_start_s = -1;  // -1: never started
  double end_s = -1;          // completion; -1: not completed within the horizon
  int64_t interruptions = 0;
};

struct TierAvailability {
  std::string tier;
  int switches = 0;
  double availability = 0;  // time-average share not failed
  double in_service = 0;    // time-average share neither failed nor drained
  int64_t failures = 0;
};

struct TaskReport {
  double horizon_s = 0;
  uint64_t seed = 0;
  int hosts = 0;
  int gpus = 0;
  int switches = 0;
  int attachment_classes = 0;

  // Availability (time averages over the horizon).
  double switch_availability = 0;       // share of switches not failed
  double switch_in_service = 0;         // share of switches neither failed nor drained
  double link_capacity_in_service = 0;  // share of link capacity usable (link and both ends in service)
  double gpu_availability = 0;          // share of GPUs on available hosts (TaskOptions::min_nics_up)
  std::vector<TierAvailability> tiers;  // by level
  int64_t host_failures = 0;
  int64_t link_failures = 0;

  // GPU-hours.
  double total_gpu_h = 0;      // GPUs x horizon
  double allocated_gpu_h = 0;  // held by running jobs
  // Progress kept: allocated - lost work - restarts - slowdown (all causes).
  double useful_gpu_h = 0;
  CauseTotals failure;        // device failures (and their slowdown)
  CauseTotals planned_drain;  // drains that cut jobs off unannounced, and their slowdown
  CauseTotals migration;      // jobs moved off a coming drain

  // Jobs.
  int64_t jobs_submitted = 0;  // within the horizon
  int64_t jobs_rejected = 0;   // asking for more hosts than the fabric has
  int64_t jobs_started = 0;    // started at least once
  int64_t jobs_completed = 0;
  int running_at_end = 0;
  int queued_at_end = 0;
  // Queueing delay: first start - submit, over the jobs started, in hours.
  double queue_delay_mean_h = 0;
  double queue_delay_p50_h = 0;
  double queue_delay_p95_h = 0;
  double queue_delay_max_h = 0;

  // Work done, for logs and the benchmark.
  int64_t events = 0;
  int64_t network_passes = 0;  // job-level passes over the probe pairs

  std::vector<TaskSample> series;
  std::vector<TaskJobOutcome> jobs;  // in trace order, only with TaskOptions::record_jobs
};

// Called now and then (at least at every time-series step) with the share
// of the horizon simulated, in [0, 1]. May be empty.
using TaskProgress = std::function<void(double fraction)>;

// The simulation of `trace` on `topology` under `options`.
// Errors (kInvalidArgument, naming the field): a non-positive horizon or
// sample interval, negative MTBF/MTTR, a positive MTBF with a zero MTTR,
// comm_fraction outside [0, 1], a trace job with hosts <= 0, work_s <= 0 or
// submit_s < 0, a drain window with end_s <= start_s or ids outside the
// topology. kCancelled when `stop` fires (checked between events).
Result<TaskReport> SimulateTasks(std::shared_ptr<const model::Topology> topology, std::span<const TaskJob> trace,
                                 const TaskOptions& options, const TaskProgress& progress = {},
                                 std::stop_token stop = {});

// A synthetic workload: Poisson arrivals sized so that the offered load is
// `load` of the hosts; sizes 2^k hosts with k uniform in [0, log2(max_hosts)];
// work log-uniform in [min_work_s, max_work_s]; limits work x U(1, 2).
struct SyntheticTraceOptions {
  uint64_t seed = 1;
  double horizon_s = 365.0 * 86400;
  int total_hosts = 0;  // hosts of the fabric
  double load = 0.85;
  int max_hosts = 512;  // also capped at total_hosts / 4 (at least 1)
  double min_work_s = 900;
  double max_work_s = 72 * 3600.0;
};
std::vector<TaskJob> GenerateSyntheticTrace(const SyntheticTraceOptions& options);
// The expected number of jobs GenerateSyntheticTrace makes (arrival rate x
// horizon), for bounding a request before generating it.
double ExpectedSyntheticJobs(const SyntheticTraceOptions& options);

}  // namespace drainwise::sim
