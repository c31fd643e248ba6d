// The task-level discrete-event simulation (contract in task_sim.h).
//
// State is kept as counters updated at each event, so every time average is
// an exact integral of a piecewise-constant function: switches not failed,
// switches in service, usable link capacity, GPUs on available hosts, GPUs
// allocated. A link is in service while it is neither failed nor drained and
// no end of it is a failed or drained switch (a "block" count per element).
//
// The network's effect on jobs comes from the job-level pass run on a probe
// snapshot: one two-host job per unordered pair of host attachment classes
// (and per class with two hosts or more). Hosts of one class are
// interchangeable for routing (sim/routing.h), so a running job's
// connectivity and bandwidth fraction are the minimum over the class pairs
// its hosts span. The pass runs only when the switch-level state changes;
// a host's own NIC links are handled per host (they would make that host
// unlike the rest of its class): losing k of n NICs leaves (n - k) / n of the
// host's bandwidth, losing all cuts the host off.
#include "sim/task_sim.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <queue>
#include <random>
#include <set>

#include <fmt/format.h>

#include "sim/job_sim.h"

namespace drainwise::sim {

using model::LinkId;
using model::NodeId;

Reliability DefaultReliability(std::string_view kind) {
  // Hosts: of the order of Llama 3's 54-day pre-training snapshot (about 380
  // hardware/host interruptions on 2,048 hosts: one per ~7,000 host-hours).
  if (kind == "host") return {7000, 24};
  // Cables and optics: network switches and cables were 8.4 % of those
  // interruptions; spread over ~50,000 links that is one per ~2 M link-hours.
  if (kind == "link") return {2'000'000, 4};
  if (kind == "leaf") return {200'000, 8};
  if (kind == "spine") return {200'000, 8};
  if (kind == "superspine") return {200'000, 8};
  return {200'000, 8};  // "switch": any other tier
}

namespace {

constexpr double kSecondsPerHour = 3600;
constexpr double kInf = std::numeric_limits<double>::infinity();

// Uniform and exponential variates from the raw 64-bit stream: the
// standard library's distributions are not specified bit for bit.
class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  double Uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }  // [0, 1)
  double Exponential(double mean) { return -std::log1p(-Uniform()) * mean; }
  uint64_t Below(uint64_t n) { return engine_() % n; }

 private:
  std::mt19937_64 engine_;
};

enum class EventType : uint8_t { kFail, kRepair, kArrive, kComplete, kDrainStart, kDrainEnd, kSample };

struct Event {
  double t;
  uint64_t seq;
  EventType type;
  uint32_t a;
  uint32_t b;
};
struct Later {
  bool operator()(const Event& x, const Event& y) const { return x.t != y.t ? x.t > y.t : x.seq > y.seq; }
};

enum class Cause { kFailure, kPlannedDrain, kMigration };

enum class JobState : uint8_t { kPending, kQueued, kRunning, kDone, kRejected };

struct JobRun {
  const TaskJob* spec = nullptr;
  JobState state = JobState::kPending;
  double work_s = 0;
  double limit_s = 0;
  double ckpt_s = 0;
  double restart_cost_s = 0;
  std::vector<uint32_t> hosts;
  std::vector<uint32_t> classes;  // distinct attachment classes of the hosts
  std::vector<uint8_t> dup;       // classes[i] holds two hosts or more
  int gpus = 0;
  double done_s = 0;
  double restart_left_s = 0;
  Cause restart_cause = Cause::kFailure;
  double rate = 1;
  double rate_fail = 1;  // the rate with failures only (no drains): splits slowdown by cause
  double last_t = 0;
  double est_end = 0;
  double first_start = -1;
  uint32_t version = 0;
  size_t running_pos = 0;
  double end = -1;
  int64_t interruptions = 0;
};

struct Effect {
  bool connected = true;
  double bw = 1;
  bool connected_fail = true;
  double bw_fail = 1;
};

class Simulation {
 public:
  Simulation(std::shared_ptr<const model::Topology> topology, std::span<const TaskJob> trace,
             const TaskOptions& options, const TaskProgress& progress, std::stop_token stop)
      : topo_(std::move(topology)),
        t_(*topo_),
        trace_(trace),
        o_(options),
        progress_(progress),
        stop_(std::move(stop)),
        rng_(options.seed) {}

  Result<TaskReport> Run();

 private:
  // Setup.
  void BuildDevices();
  void BuildProbes();
  Reliability ReliabilityOf(std::string_view kind) const {
    auto it = o_.reliability.find(std::string(kind));
    if (it != o_.reliability.end()) return it->second;
    if (kind != "host" && kind != "link") {  // a tier without its own entry: the "switch" entry
      auto sw = o_.reliability.find("switch");
      if (sw != o_.reliability.end()) return sw->second;
    }
    return DefaultReliability(kind);
  }

  // Events.
  void Push(double t, EventType type, uint32_t a = 0, uint32_t b = 0) { events_.push(Event{t, seq_++, type, a, b}); }
  void Accrue(double t);
  void OnFail(uint32_t device, double t);
  void OnRepair(uint32_t device, double t);
  void OnDrain(uint32_t window, bool start, double t);
  void OnSample(double t);

  // Element state.
  bool NodeBlocked(uint32_t n) const { return node_fail_[n] || node_drain_[n] > 0; }
  void ChangeNode(uint32_t n, int fail_delta, int drain_delta);
  void ChangeLink(uint32_t l, int fail_delta, int drain_delta, int end_delta);
  void UpdateHost(uint32_t h);
  bool IsFabricLink(uint32_t l) const {
    return !is_host_[t_.link(LinkId(l)).a.value] && !is_host_[t_.link(LinkId(l)).b.value];
  }

  // Network.
  void RecomputePairs();
  Effect EffectOf(const JobRun& job) const;
  void Classify(JobRun& job) const;
  void RefreshJobs(double t, bool drain_event, bool migrate);
  void RefreshJob(uint32_t j, double t, std::optional<Cause> cut_cause);

  // Jobs.
  void Advance(JobRun& job, double t);
  void Reschedule(uint32_t j, double t);
  void Interrupt(uint32_t j, double t, Cause cause);
  void Release(uint32_t j);
  bool TryStart(uint32_t j, double t);
  void Schedule(double t);
  CauseTotals& Totals(Cause c) {
    return c == Cause::kFailure        ? report_.failure
           : c == Cause::kPlannedDrain ? report_.planned_drain
                                       : report_.migration;
  }

  std::shared_ptr<const model::Topology> topo_;
  const model::Topology& t_;
  std::span<const TaskJob> trace_;
  const TaskOptions& o_;
  const TaskProgress& progress_;
  std::stop_token stop_;
  Rng rng_;
  TaskReport report_;

  std::priority_queue<Event, std::vector<Event>, Later> events_;
  uint64_t seq_ = 0;
  double now_ = 0;

  // Devices: node ids, then N + link ids.
  size_t n_nodes_ = 0;
  std::vector<Reliability> rel_;
  std::vector<uint8_t> is_host_;
  std::vector<int> tier_index_;  // switches: index into report_.tiers; -1 otherwise

  // Block counts.
  std::vector<uint8_t> node_fail_;
  std::vector<int> node_drain_;
  std::vector<uint8_t> link_fail_;
  std::vector<int> link_drain_;
  std::vector<int> link_end_;  // blocked switch ends
  std::vector<uint8_t> link_ok_;

  // Hosts.
  std::vector<int> nics_total_;
  std::vector<int> nics_live_;
  std::vector<int> nics_own_down_;  // own link failed or drained
  std::vector<int> nics_own_fail_;  // own link failed
  std::vector<uint8_t> host_avail_;
  std::vector<int32_t> host_job_;
  std::vector<uint64_t> free_bits_;  // by host index (hosts_[i])
  int free_count_ = 0;
  std::vector<uint32_t> host_index_;  // node -> index in t_.hosts()

  // Counters integrated over time.
  int switches_up_ = 0;
  int switches_in_service_ = 0;
  double capacity_ok_ = 0;
  double capacity_total_ = 0;
  int64_t gpus_available_ = 0;
  int64_t gpus_allocated_ = 0;
  std::vector<int> tier_up_;
  std::vector<int> tier_in_service_;
  double last_accrue_ = 0;
  double i_switch_up_ = 0, i_switch_service_ = 0, i_capacity_ = 0, i_gpu_avail_ = 0, i_gpu_alloc_ = 0;
  std::vector<double> i_tier_up_, i_tier_service_;

  // Network (probe pass).
  std::unique_ptr<JobSimIndex> probe_index_;
  JobSimWorkspace workspace_;
  size_t classes_ = 0;
  std::vector<std::pair<uint32_t, uint32_t>> probe_pairs_;
  std::vector<double> bw_all_, bw_fail_;  // classes_ x classes_; 0 = disconnected
  std::vector<uint32_t> class_of_;        // node -> class (hosts)
  bool switch_state_dirty_ = false;
  std::set<uint32_t> blocked_switches_, failed_switches_, blocked_links_, failed_links_;
  int active_drains_ = 0;

  // Jobs.
  std::vector<JobRun> jobs_;
  std::set<std::pair<double, uint32_t>> queue_;  // (submit, trace index)
  std::vector<uint32_t> running_;
  std::vector<double> delays_;

  // Time series.
  struct Mark {
    double t = 0, i_switch_up = 0, i_gpu_avail = 0, i_gpu_alloc = 0, failure = 0, drain = 0, migration = 0;
    int64_t interruptions = 0;
  } mark_;
};

Status Validate(const model::Topology& t, std::span<const TaskJob> trace, const TaskOptions& o) {
  if (!(o.horizon_s > 0) || !std::isfinite(o.horizon_s)) return InvalidArgument("horizon: must be > 0");
  if (!(o.sample_interval_s > 0)) return InvalidArgument("sample_interval_s: must be > 0");
  if (!(o.comm_fraction >= 0 && o.comm_fraction <= 1)) return InvalidArgument("comm_fraction: must be in [0, 1]");
  if (o.checkpoint_interval_s < 0) return InvalidArgument("checkpoint_interval_s: must be >= 0");
  if (o.restart_cost_s < 0) return InvalidArgument("restart_cost_s: must be >= 0");
  if (o.backfill_depth < 0) return InvalidArgument("backfill_depth: must be >= 0");
  if (o.min_nics_up < 0) return InvalidArgument("min_nics_up: must be >= 0");
  for (const auto& [kind, r] : o.reliability) {
    if (!(r.mtbf_h >= 0) || !(r.mttr_h >= 0)) {
      return InvalidArgument(fmt::format("reliability.{}: mtbf_h and mttr_h must be >= 0", kind));
    }
    if (r.mtbf_h > 0 && r.mttr_h <= 0) {
      return InvalidArgument(fmt::format("reliability.{}: mttr_h must be > 0 when mtbf_h is", kind));
    }
  }
  for (size_t i = 0; i < trace.size(); ++i) {
    const TaskJob& j = trace[i];
    auto name = j.id.empty() ? fmt::format("trace[{}]", i) : fmt::format("job '{}'", j.id);
    if (j.hosts <= 0) return InvalidArgument(name + ": hosts must be > 0");
    if (!(j.work_s > 0)) return InvalidArgument(name + ": work_s must be > 0");
    if (!(j.submit_s >= 0)) return InvalidArgument(name + ": submit_s must be >= 0");
    if (j.limit_s < 0) return InvalidArgument(name + ": limit_s must be >= 0");
  }
  for (size_t i = 0; i < o.drains.size(); ++i) {
    const DrainWindow& w = o.drains[i];
    if (!(w.end_s > w.start_s)) return InvalidArgument(fmt::format("drains[{}]: end must be after start", i));
    for (NodeId n : w.drain.switches) {
      if (n.value >= t.node_count() || !t.node(n).is_switch()) {
        return InvalidArgument(fmt::format("drains[{}]: node {} is not a switch of the topology", i, n.value));
      }
    }
    for (LinkId l : w.drain.links) {
      if (l.value >= t.link_count()) {
        return InvalidArgument(fmt::format("drains[{}]: link {} is not in the topology", i, l.value));
      }
    }
  }
  return {};
}

void Simulation::BuildDevices() {
  n_nodes_ = t_.node_count();
  const size_t nl = t_.link_count();
  rel_.resize(n_nodes_ + nl);
  is_host_.assign(n_nodes_, 0);
  tier_index_.assign(n_nodes_, -1);
  node_fail_.assign(n_nodes_, 0);
  node_drain_.assign(n_nodes_, 0);
  link_fail_.assign(nl, 0);
  link_drain_.assign(nl, 0);
  link_end_.assign(nl, 0);
  link_ok_.assign(nl, 1);
  std::map<int, int> level_to_tier;
  for (const auto& [level, name] : t_.tiers()) {
    level_to_tier[level] = static_cast<int>(report_.tiers.size());
    report_.tiers.push_back(TierAvailability{name});
  }
  for (NodeId s : t_.switches()) {
    const model::Node& node = t_.node(s);
    tier_index_[s.value] = level_to_tier[node.level];
    ++report_.tiers[tier_index_[s.value]].switches;
    rel_[s.value] = ReliabilityOf(node.tier);
  }
  tier_up_.assign(report_.tiers.size(), 0);
  tier_in_service_.assign(report_.tiers.size(), 0);
  i_tier_up_.assign(report_.tiers.size(), 0);
  i_tier_service_.assign(report_.tiers.size(), 0);
  for (size_t i = 0; i < report_.tiers.size(); ++i) tier_up_[i] = tier_in_service_[i] = report_.tiers[i].switches;
  switches_up_ = switches_in_service_ = static_cast<int>(t_.switches().size());

  const auto& hosts = t_.hosts();
  host_index_.assign(n_nodes_, 0);
  nics_total_.assign(n_nodes_, 0);
  nics_live_.assign(n_nodes_, 0);
  nics_own_down_.assign(n_nodes_, 0);
  nics_own_fail_.assign(n_nodes_, 0);
  host_avail_.assign(n_nodes_, 0);
  host_job_.assign(n_nodes_, -1);
  free_bits_.assign((hosts.size() + 63) / 64, 0);
  for (size_t i = 0; i < hosts.size(); ++i) {
    uint32_t h = hosts[i].value;
    is_host_[h] = 1;
    host_index_[h] = static_cast<uint32_t>(i);
    rel_[h] = ReliabilityOf("host");
    nics_total_[h] = nics_live_[h] = static_cast<int>(t_.neighbors(hosts[i]).size());
    host_avail_[h] = 1;
    gpus_available_ += t_.node(hosts[i]).gpus;
    free_bits_[i / 64] |= uint64_t{1} << (i % 64);
    ++free_count_;
  }
  const Reliability link_rel = ReliabilityOf("link");
  for (size_t l = 0; l < nl; ++l) {
    rel_[n_nodes_ + l] = link_rel;
    capacity_total_ += t_.link(LinkId(l)).capacity_bps;
  }
  capacity_ok_ = capacity_total_;
  report_.hosts = static_cast<int>(hosts.size());
  report_.gpus = t_.total_gpus();
  report_.switches = switches_up_;
}

void Simulation::BuildProbes() {
  // Classes from a routing index of the topology alone; the probe snapshot's
  // index builds its own (same classes: they depend on the topology only).
  const RoutingIndex routing(t_);
  classes_ = routing.class_count();
  class_of_.assign(n_nodes_, 0);
  for (NodeId h : t_.hosts()) class_of_[h.value] = routing.class_of(h);
  std::vector<model::Job> probes;
  for (uint32_t a = 0; a < classes_; ++a) {
    auto ha = routing.class_hosts(a);
    for (uint32_t b = a; b < classes_; ++b) {
      auto hb = routing.class_hosts(b);
      if (a == b && ha.size() < 2) continue;
      model::Job job;
      job.id = fmt::format("probe-{}-{}", a, b);
      job.hosts = {ha[0], a == b ? ha[1] : hb[0]};
      job.gpus_per_host = 1;
      probes.push_back(std::move(job));
      probe_pairs_.emplace_back(a, b);
    }
  }
  auto snapshot = std::make_shared<model::Snapshot>();
  snapshot->topology = topo_;
  snapshot->jobs = std::make_shared<const model::JobSet>(std::move(probes), n_nodes_);
  probe_index_ = std::make_unique<JobSimIndex>(std::move(snapshot));
  bw_all_.assign(classes_ * classes_, 1.0);
  bw_fail_.assign(classes_ * classes_, 1.0);
  report_.attachment_classes = static_cast<int>(classes_);
}

void Simulation::Accrue(double t) {
  const double dt = t - last_accrue_;
  if (dt <= 0) return;
  i_switch_up_ += dt * switches_up_;
  i_switch_service_ += dt * switches_in_service_;
  i_capacity_ += dt * capacity_ok_;
  i_gpu_avail_ += dt * static_cast<double>(gpus_available_);
  i_gpu_alloc_ += dt * static_cast<double>(gpus_allocated_);
  for (size_t i = 0; i < tier_up_.size(); ++i) {
    i_tier_up_[i] += dt * tier_up_[i];
    i_tier_service_[i] += dt * tier_in_service_[i];
  }
  last_accrue_ = t;
}

void Simulation::ChangeNode(uint32_t n, int fail_delta, int drain_delta) {
  const bool was_blocked = NodeBlocked(n);
  const bool was_failed = node_fail_[n];
  node_fail_[n] = static_cast<uint8_t>(node_fail_[n] + fail_delta);
  node_drain_[n] += drain_delta;
  if (is_host_[n]) {
    UpdateHost(n);
    return;
  }
  const int tier = tier_index_[n];
  if (was_failed != static_cast<bool>(node_fail_[n])) {
    const int d = node_fail_[n] ? -1 : 1;
    switches_up_ += d;
    tier_up_[tier] += d;
    if (node_fail_[n]) {
      failed_switches_.insert(n);
    } else {
      failed_switches_.erase(n);
    }
    switch_state_dirty_ = true;
  }
  const bool blocked = NodeBlocked(n);
  if (was_blocked == blocked) return;
  const int d = blocked ? -1 : 1;
  switches_in_service_ += d;
  tier_in_service_[tier] += d;
  if (blocked) {
    blocked_switches_.insert(n);
  } else {
    blocked_switches_.erase(n);
  }
  switch_state_dirty_ = true;
  for (const model::Adjacency& adj : t_.neighbors(NodeId(n))) ChangeLink(adj.link.value, 0, 0, blocked ? 1 : -1);
}

void Simulation::ChangeLink(uint32_t l, int fail_delta, int drain_delta, int end_delta) {
  const model::Link& link = t_.link(LinkId(l));
  const bool own_down_before = link_fail_[l] || link_drain_[l] > 0;
  const bool own_fail_before = link_fail_[l];
  link_fail_[l] = static_cast<uint8_t>(link_fail_[l] + fail_delta);
  link_drain_[l] += drain_delta;
  link_end_[l] += end_delta;
  const bool own_down = link_fail_[l] || link_drain_[l] > 0;
  const bool own_fail = link_fail_[l];
  const bool ok = !own_down && link_end_[l] == 0;
  const bool fabric = IsFabricLink(l);
  if (own_down != own_down_before || own_fail != own_fail_before) {
    if (fabric) {
      if (own_down) {
        blocked_links_.insert(l);
      } else {
        blocked_links_.erase(l);
      }
      if (own_fail) {
        failed_links_.insert(l);
      } else {
        failed_links_.erase(l);
      }
      switch_state_dirty_ = true;
    } else {
      const uint32_t h = is_host_[link.a.value] ? link.a.value : link.b.value;
      nics_own_down_[h] += (own_down ? 1 : 0) - (own_down_before ? 1 : 0);
      nics_own_fail_[h] += (own_fail ? 1 : 0) - (own_fail_before ? 1 : 0);
    }
  }
  if (static_cast<bool>(link_ok_[l]) == ok) return;
  link_ok_[l] = ok;
  capacity_ok_ += ok ? link.capacity_bps : -link.capacity_bps;
  for (NodeId end : {link.a, link.b}) {
    if (!is_host_[end.value]) continue;
    nics_live_[end.value] += ok ? 1 : -1;
    UpdateHost(end.value);
  }
}

void Simulation::UpdateHost(uint32_t h) {
  const int need = std::min(o_.min_nics_up, nics_total_[h]);
  const bool avail = !node_fail_[h] && nics_live_[h] >= need;
  const size_t i = host_index_[h];
  const bool was_free = (free_bits_[i / 64] >> (i % 64)) & 1;
  if (static_cast<bool>(host_avail_[h]) != avail) {
    host_avail_[h] = avail;
    gpus_available_ += avail ? t_.node(NodeId(h)).gpus : -t_.node(NodeId(h)).gpus;
  }
  const bool free = avail && host_job_[h] < 0;
  if (free != was_free) {
    free_bits_[i / 64] ^= uint64_t{1} << (i % 64);
    free_count_ += free ? 1 : -1;
  }
}

void Simulation::RecomputePairs() {
  switch_state_dirty_ = false;
  auto fill = [&](const std::set<uint32_t>& sw, const std::set<uint32_t>& ln, std::vector<double>& m) {
    std::fill(m.begin(), m.end(), 1.0);
    if (sw.empty() && ln.empty()) return;
    model::Drain d;
    for (uint32_t s : sw) d.switches.push_back(NodeId(s));
    for (uint32_t l : ln) d.links.push_back(LinkId(l));
    auto a = AssessJobs(*probe_index_, d, workspace_);
    ++report_.network_passes;
    if (!a) return;  // ids come from the topology: cannot fail
    for (const JobImpact& j : a->jobs) {
      if (!j.affected && j.connected) continue;
      auto [x, y] = probe_pairs_[j.job.value];
      const double v = j.connected ? std::max(j.bandwidth_fraction, 1e-9) : 0.0;
      m[x * classes_ + y] = m[y * classes_ + x] = v;
    }
  };
  fill(blocked_switches_, blocked_links_, bw_all_);
  if (active_drains_ == 0) {
    bw_fail_ = bw_all_;
  } else {
    fill(failed_switches_, failed_links_, bw_fail_);
  }
}

void Simulation::Classify(JobRun& job) const {
  std::vector<uint32_t> cls;
  cls.reserve(job.hosts.size());
  for (uint32_t h : job.hosts) cls.push_back(class_of_[h]);
  std::sort(cls.begin(), cls.end());
  job.classes.clear();
  job.dup.clear();
  for (size_t i = 0; i < cls.size(); ++i) {
    if (!job.classes.empty() && job.classes.back() == cls[i]) {
      job.dup.back() = 1;
    } else {
      job.classes.push_back(cls[i]);
      job.dup.push_back(0);
    }
  }
}

Effect Simulation::EffectOf(const JobRun& job) const {
  Effect e;
  if (job.hosts.size() < 2) return e;  // no traffic leaves the host
  const size_t c = job.classes.size();
  for (size_t i = 0; i < c; ++i) {
    const size_t row = job.classes[i] * classes_;
    for (size_t k = job.dup[i] ? i : i + 1; k < c; ++k) {
      e.bw = std::min(e.bw, bw_all_[row + job.classes[k]]);
      e.bw_fail = std::min(e.bw_fail, bw_fail_[row + job.classes[k]]);
    }
  }
  for (uint32_t h : job.hosts) {
    const int n = nics_total_[h];
    if (n == 0) {
      e.bw = e.bw_fail = 0;
      break;
    }
    e.bw = std::min(e.bw, static_cast<double>(n - nics_own_down_[h]) / n);
    e.bw_fail = std::min(e.bw_fail, static_cast<double>(n - nics_own_fail_[h]) / n);
  }
  e.connected = e.bw > 0;
  e.connected_fail = e.bw_fail > 0;
  return e;
}

double RateOf(double bw, double c) { return bw >= 1 ? 1.0 : 1.0 / ((1 - c) + c / bw); }

void Simulation::Advance(JobRun& job, double t) {
  double dt = t - job.last_t;
  job.last_t = t;
  if (dt <= 0) return;
  if (job.restart_left_s > 0) {
    const double r = std::min(dt, job.restart_left_s);
    job.restart_left_s -= r;
    dt -= r;
    Totals(job.restart_cause).restart_gpu_h += job.gpus * r / kSecondsPerHour;
  }
  if (dt <= 0) return;
  job.done_s += dt * job.rate;
  const double slow = job.gpus * dt * (1 - job.rate) / kSecondsPerHour;
  if (slow > 0) {
    const double fail = std::min(slow, job.gpus * dt * (1 - job.rate_fail) / kSecondsPerHour);
    report_.failure.slowdown_gpu_h += fail;
    report_.planned_drain.slowdown_gpu_h += slow - fail;
  }
}

void Simulation::Reschedule(uint32_t j, double t) {
  JobRun& job = jobs_[j];
  ++job.version;
  const double end = t + job.restart_left_s + std::max(0.0, job.work_s - job.done_s) / job.rate;
  Push(end, EventType::kComplete, j, job.version);
}

void Simulation::Release(uint32_t j) {
  JobRun& job = jobs_[j];
  for (uint32_t h : job.hosts) {
    host_job_[h] = -1;
    UpdateHost(h);
  }
  gpus_allocated_ -= job.gpus;
  const size_t pos = job.running_pos;
  running_[pos] = running_.back();
  jobs_[running_[pos]].running_pos = pos;
  running_.pop_back();
  job.hosts.clear();
  ++job.version;  // cancels the pending completion
}

void Simulation::Interrupt(uint32_t j, double t, Cause cause) {
  JobRun& job = jobs_[j];
  Advance(job, t);
  double kept = job.done_s;  // migration: checkpointed just before the drain
  if (cause != Cause::kMigration) kept = job.ckpt_s > 0 ? std::floor(job.done_s / job.ckpt_s) * job.ckpt_s : 0;
  CauseTotals& totals = Totals(cause);
  ++totals.interruptions;
  ++job.interruptions;
  totals.lost_work_gpu_h += job.gpus * (job.done_s - kept) / kSecondsPerHour;
  job.done_s = kept;
  job.restart_left_s = job.restart_cost_s;
  job.restart_cause = cause;
  Release(j);
  job.state = JobState::kQueued;
  queue_.emplace(job.spec->submit_s, j);
}

void Simulation::RefreshJob(uint32_t j, double t, std::optional<Cause> cut_cause) {
  JobRun& job = jobs_[j];
  if (switch_state_dirty_ && job.hosts.size() > 1) RecomputePairs();
  const Effect e = EffectOf(job);
  if (!e.connected) {
    Interrupt(j, t, !e.connected_fail ? Cause::kFailure : cut_cause.value_or(Cause::kPlannedDrain));
    return;
  }
  const double rate = RateOf(e.bw, o_.comm_fraction);
  const double rate_fail = std::max(rate, RateOf(e.bw_fail, o_.comm_fraction));
  if (rate == job.rate && rate_fail == job.rate_fail) return;
  Advance(job, t);
  job.rate = rate;
  job.rate_fail = rate_fail;
  Reschedule(j, t);
}

void Simulation::RefreshJobs(double t, bool drain_event, bool migrate) {
  if (running_.empty()) return;  // the pass waits until a job needs it
  if (switch_state_dirty_) RecomputePairs();
  std::optional<Cause> cut;
  if (drain_event) cut = migrate ? Cause::kMigration : Cause::kPlannedDrain;
  const std::vector<uint32_t> running = running_;  // Interrupt edits running_
  for (uint32_t j : running) RefreshJob(j, t, cut);
}

bool Simulation::TryStart(uint32_t j, double t) {
  JobRun& job = jobs_[j];
  const int need = job.spec->hosts;
  if (need > free_count_) return false;
  job.hosts.clear();
  const auto& hosts = t_.hosts();
  for (size_t w = 0; w < free_bits_.size() && static_cast<int>(job.hosts.size()) < need; ++w) {
    uint64_t bits = free_bits_[w];
    while (bits && static_cast<int>(job.hosts.size()) < need) {
      const int b = __builtin_ctzll(bits);
      bits &= bits - 1;
      job.hosts.push_back(hosts[w * 64 + b].value);
    }
  }
  Classify(job);
  if (switch_state_dirty_ && job.hosts.size() > 1) RecomputePairs();
  const Effect e = EffectOf(job);
  if (!e.connected) {  // the lowest free hosts cannot reach each other now: wait
    job.hosts.clear();
    return false;
  }
  job.gpus = 0;
  for (uint32_t h : job.hosts) {
    host_job_[h] = static_cast<int32_t>(j);
    job.gpus += t_.node(NodeId(h)).gpus;
    UpdateHost(h);
  }
  gpus_allocated_ += job.gpus;
  job.state = JobState::kRunning;
  job.running_pos = running_.size();
  running_.push_back(j);
  job.last_t = t;
  job.rate = RateOf(e.bw, o_.comm_fraction);
  job.rate_fail = std::max(job.rate, RateOf(e.bw_fail, o_.comm_fraction));
  job.est_end = t + job.limit_s;
  if (job.first_start < 0) {
    job.first_start = t;
    ++report_.jobs_started;
    delays_.push_back(t - job.spec->submit_s);
  }
  Reschedule(j, t);
  return true;
}

// First come, first served with EASY backfill: the head of the queue starts
// when it fits; otherwise it gets a reservation at the earliest time enough
// hosts free up by the running jobs' estimated ends (the "shadow" time), and
// a later job may start now if it fits and either ends (by its limit) before
// the shadow time or uses only hosts the head will not need.
void Simulation::Schedule(double t) {
  while (!queue_.empty()) {
    const uint32_t head = queue_.begin()->second;
    if (!TryStart(head, t)) break;
    queue_.erase(queue_.begin());
  }
  if (queue_.size() < 2 || free_count_ == 0 || o_.backfill_depth == 0) return;
  const int need = jobs_[queue_.begin()->second].spec->hosts;
  std::vector<std::pair<double, int>> ends;
  ends.reserve(running_.size());
  for (uint32_t j : running_) ends.emplace_back(std::max(t, jobs_[j].est_end), static_cast<int>(jobs_[j].hosts.size()));
  std::sort(ends.begin(), ends.end());
  double shadow = kInf;
  int extra = 0;
  int acc = free_count_;
  for (const auto& [end, n] : ends) {
    acc += n;
    if (acc >= need) {
      shadow = end;
      extra = acc - need;
      break;
    }
  }
  int considered = 0;
  for (auto it = std::next(queue_.begin()); it != queue_.end() && considered < o_.backfill_depth && free_count_ > 0;
       ++considered) {
    const uint32_t j = it->second;
    const int n = jobs_[j].spec->hosts;
    const bool before_shadow = t + jobs_[j].limit_s <= shadow;
    if (n <= free_count_ && (before_shadow || n <= extra) && TryStart(j, t)) {
      if (!before_shadow) extra -= n;
      it = queue_.erase(it);
    } else {
      ++it;
    }
  }
}

void Simulation::OnFail(uint32_t device, double t) {
  const Reliability& r = rel_[device];
  Push(t + rng_.Exponential(r.mttr_h * kSecondsPerHour), EventType::kRepair, device);
  if (device < n_nodes_) {
    if (is_host_[device]) {
      ++report_.host_failures;
      ChangeNode(device, 1, 0);
      if (host_job_[device] >= 0) Interrupt(static_cast<uint32_t>(host_job_[device]), t, Cause::kFailure);
      Schedule(t);
      return;
    }
    ++report_.tiers[tier_index_[device]].failures;
    ChangeNode(device, 1, 0);
  } else {
    ++report_.link_failures;
    const uint32_t l = device - static_cast<uint32_t>(n_nodes_);
    ChangeLink(l, 1, 0, 0);
    if (!IsFabricLink(l)) {  // a host's NIC link: only that host's job changes
      const model::Link& link = t_.link(LinkId(l));
      const uint32_t h = is_host_[link.a.value] ? link.a.value : link.b.value;
      if (host_job_[h] >= 0) RefreshJob(static_cast<uint32_t>(host_job_[h]), t, std::nullopt);
      Schedule(t);
      return;
    }
  }
  RefreshJobs(t, false, false);
  Schedule(t);
}

void Simulation::OnRepair(uint32_t device, double t) {
  const Reliability& r = rel_[device];
  Push(t + rng_.Exponential(r.mtbf_h * kSecondsPerHour), EventType::kFail, device);
  if (device < n_nodes_) {
    ChangeNode(device, -1, 0);
    if (is_host_[device]) {
      Schedule(t);
      return;
    }
  } else {
    const uint32_t l = device - static_cast<uint32_t>(n_nodes_);
    ChangeLink(l, -1, 0, 0);
    if (!IsFabricLink(l)) {
      const model::Link& link = t_.link(LinkId(l));
      const uint32_t h = is_host_[link.a.value] ? link.a.value : link.b.value;
      if (host_job_[h] >= 0) RefreshJob(static_cast<uint32_t>(host_job_[h]), t, std::nullopt);
      Schedule(t);
      return;
    }
  }
  RefreshJobs(t, false, false);
  Schedule(t);
}

void Simulation::OnDrain(uint32_t window, bool start, double t) {
  const DrainWindow& w = o_.drains[window];
  const int d = start ? 1 : -1;
  active_drains_ += d;
  for (NodeId s : w.drain.switches) ChangeNode(s.value, 0, d);
  for (LinkId l : w.drain.links) ChangeLink(l.value, 0, d, 0);
  switch_state_dirty_ = true;  // the failures-only matrix changes meaning with active_drains_
  RefreshJobs(t, start, w.migrate);
  Schedule(t);
}

void Simulation::OnSample(double t) {
  for (uint32_t j : running_) Advance(jobs_[j], t);
  TaskSample s;
  s.start_s = mark_.t;
  s.end_s = t;
  const double dt = t - mark_.t;
  if (dt > 0) {
    auto share = [dt](double integral, double n) { return n > 0 ? std::min(1.0, integral / (dt * n)) : 1.0; };
    s.switch_availability = share(i_switch_up_ - mark_.i_switch_up, report_.switches);
    s.gpu_availability = share(i_gpu_avail_ - mark_.i_gpu_avail, report_.gpus);
    s.gpu_utilization = report_.gpus ? std::min(1.0, (i_gpu_alloc_ - mark_.i_gpu_alloc) / (dt * report_.gpus)) : 0;
  }
  const double fail = report_.failure.total_gpu_h();
  const double drain = report_.planned_drain.total_gpu_h();
  const double migr = report_.migration.total_gpu_h();
  const int64_t intr =
      report_.failure.interruptions + report_.planned_drain.interruptions + report_.migration.interruptions;
  s.lost_failure_gpu_h = fail - mark_.failure;
  s.lost_drain_gpu_h = drain - mark_.drain;
  s.lost_migration_gpu_h = migr - mark_.migration;
  s.interruptions = intr - mark_.interruptions;
  s.running = static_cast<int>(running_.size());
  s.queued = static_cast<int>(queue_.size());
  report_.series.push_back(s);
  mark_ = Mark{t, i_switch_up_, i_gpu_avail_, i_gpu_alloc_, fail, drain, migr, intr};
  if (progress_) progress_(std::min(1.0, t / o_.horizon_s));
}

Result<TaskReport> Simulation::Run() {
  if (auto ok = Validate(t_, trace_, o_); !ok) return tl::unexpected(ok.error());
  report_.horizon_s = o_.horizon_s;
  report_.seed = o_.seed;
  BuildDevices();
  BuildProbes();

  // First failures of every device that fails, in device order (the seed's stream).
  for (uint32_t d = 0; d < rel_.size(); ++d) {
    if (rel_[d].mtbf_h > 0) Push(rng_.Exponential(rel_[d].mtbf_h * kSecondsPerHour), EventType::kFail, d);
  }
  // Drain windows before arrivals: at equal times (ties go in push order) a
  // drain starting at t is in place when a job submitted at t is placed.
  for (uint32_t w = 0; w < o_.drains.size(); ++w) {
    Push(o_.drains[w].start_s, EventType::kDrainStart, w);
    Push(o_.drains[w].end_s, EventType::kDrainEnd, w);
  }
  jobs_.resize(trace_.size());
  for (uint32_t j = 0; j < trace_.size(); ++j) {
    JobRun& job = jobs_[j];
    const TaskJob& spec = trace_[j];
    job.spec = &spec;
    job.work_s = spec.work_s;
    job.limit_s = spec.limit_s > 0 ? spec.limit_s : spec.work_s;
    job.ckpt_s = spec.checkpoint_interval_s > 0 ? spec.checkpoint_interval_s : o_.checkpoint_interval_s;
    job.restart_cost_s = spec.restart_cost_s >= 0 ? spec.restart_cost_s : o_.restart_cost_s;
    if (spec.submit_s < o_.horizon_s) Push(spec.submit_s, EventType::kArrive, j);
  }
  const int64_t steps = static_cast<int64_t>(std::ceil(o_.horizon_s / o_.sample_interval_s));
  for (int64_t k = 1; k < steps; ++k) Push(static_cast<double>(k) * o_.sample_interval_s, EventType::kSample);

  while (!events_.empty()) {
    const Event ev = events_.top();
    if (ev.t >= o_.horizon_s) break;
    events_.pop();
    if ((++report_.events & 1023) == 0 && stop_.stop_requested()) {
      return MakeError(ErrorCode::kCancelled, "task simulation cancelled");
    }
    Accrue(ev.t);
    now_ = ev.t;
    switch (ev.type) {
      case EventType::kFail:
        OnFail(ev.a, ev.t);
        break;
      case EventType::kRepair:
        OnRepair(ev.a, ev.t);
        break;
      case EventType::kArrive: {
        JobRun& job = jobs_[ev.a];
        ++report_.jobs_submitted;
        if (job.spec->hosts > report_.hosts) {
          job.state = JobState::kRejected;
          ++report_.jobs_rejected;
          break;
        }
        job.state = JobState::kQueued;
        queue_.emplace(job.spec->submit_s, ev.a);
        Schedule(ev.t);
        break;
      }
      case EventType::kComplete: {
        JobRun& job = jobs_[ev.a];
        if (job.state != JobState::kRunning || job.version != ev.b) break;  // superseded
        Advance(job, ev.t);
        job.done_s = job.work_s;
        job.restart_left_s = 0;
        Release(ev.a);
        job.state = JobState::kDone;
        job.end = ev.t;
        ++report_.jobs_completed;
        Schedule(ev.t);
        break;
      }
      case EventType::kDrainStart:
        OnDrain(ev.a, true, ev.t);
        break;
      case EventType::kDrainEnd:
        OnDrain(ev.a, false, ev.t);
        break;
      case EventType::kSample:
        OnSample(ev.t);
        break;
    }
  }
  Accrue(o_.horizon_s);
  OnSample(o_.horizon_s);

  TaskReport& r = report_;
  const double h = o_.horizon_s;
  // Shares of a time integral: capped at 1 against rounding (1 + 2e-16 for a
  // fabric where nothing failed).
  auto share = [](double integral, double whole) { return whole > 0 ? std::min(1.0, integral / whole) : 1.0; };
  r.switch_availability = share(i_switch_up_, h * r.switches);
  r.switch_in_service = share(i_switch_service_, h * r.switches);
  r.link_capacity_in_service = share(i_capacity_, h * capacity_total_);
  r.gpu_availability = share(i_gpu_avail_, h * r.gpus);
  for (size_t i = 0; i < r.tiers.size(); ++i) {
    r.tiers[i].availability = share(i_tier_up_[i], h * r.tiers[i].switches);
    r.tiers[i].in_service = share(i_tier_service_[i], h * r.tiers[i].switches);
  }
  r.total_gpu_h = r.gpus * h / kSecondsPerHour;
  r.allocated_gpu_h = i_gpu_alloc_ / kSecondsPerHour;
  double useful = 0;
  for (const JobRun& job : jobs_) useful += job.gpus * job.done_s / kSecondsPerHour;
  r.useful_gpu_h = useful;
  if (o_.record_jobs) {
    r.jobs.reserve(jobs_.size());
    for (const JobRun& job : jobs_) {
      r.jobs.push_back(TaskJobOutcome{job.spec->id, job.spec->submit_s, job.first_start, job.end, job.interruptions});
    }
  }
  r.running_at_end = static_cast<int>(running_.size());
  r.queued_at_end = static_cast<int>(queue_.size());
  if (!delays_.empty()) {
    std::vector<double> d = delays_;
    std::sort(d.begin(), d.end());
    double sum = 0;
    for (double x : d) sum += x;
    auto pct = [&](double p) { return d[std::min(d.size() - 1, static_cast<size_t>(p * (d.size() - 1) + 0.5))]; };
    r.queue_delay_mean_h = sum / d.size() / kSecondsPerHour;
    r.queue_delay_p50_h = pct(0.5) / kSecondsPerHour;
    r.queue_delay_p95_h = pct(0.95) / kSecondsPerHour;
    r.queue_delay_max_h = d.back() / kSecondsPerHour;
  }
  return std::move(report_);
}

}  // namespace

Result<TaskReport> SimulateTasks(std::shared_ptr<const model::Topology> topology, std::span<const TaskJob> trace,
                                 const TaskOptions& options, const TaskProgress& progress, std::stop_token stop) {
  if (!topology) return InvalidArgument("topology: missing");
  Simulation sim(std::move(topology), trace, options, progress, std::move(stop));
  return sim.Run();
}

namespace {

struct SyntheticLaw {
  int kmax = 0;
  double ratio = 1;
  double rate = 0;  // arrivals per second
};

std::optional<SyntheticLaw> LawOf(const SyntheticTraceOptions& o) {
  if (o.total_hosts <= 0 || !(o.horizon_s > 0) || !(o.load > 0) || !(o.min_work_s > 0) ||
      !(o.max_work_s >= o.min_work_s)) {
    return std::nullopt;
  }
  SyntheticLaw law;
  const int cap = std::max(1, std::min(o.max_hosts, o.total_hosts / 4));
  while ((2 << law.kmax) <= cap) ++law.kmax;
  // E[hosts] over k uniform in [0, kmax]; E[work] of the log-uniform law.
  const double mean_hosts = (std::pow(2.0, law.kmax + 1) - 1) / (law.kmax + 1);
  law.ratio = o.max_work_s / o.min_work_s;
  const double mean_work = law.ratio > 1 ? (o.max_work_s - o.min_work_s) / std::log(law.ratio) : o.min_work_s;
  law.rate = o.load * o.total_hosts / (mean_hosts * mean_work);
  return law;
}

}  // namespace

double ExpectedSyntheticJobs(const SyntheticTraceOptions& o) {
  auto law = LawOf(o);
  return law ? law->rate * o.horizon_s : 0;
}

std::vector<TaskJob> GenerateSyntheticTrace(const SyntheticTraceOptions& o) {
  std::vector<TaskJob> out;
  auto law = LawOf(o);
  if (!law) return out;
  Rng rng(o.seed);
  double t = rng.Exponential(1 / law->rate);
  for (int64_t i = 0; t < o.horizon_s; ++i) {
    TaskJob job;
    job.id = fmt::format("syn-{}", i);
    job.submit_s = t;
    job.hosts = 1 << rng.Below(law->kmax + 1);
    job.work_s = o.min_work_s * std::pow(law->ratio, rng.Uniform());
    job.limit_s = job.work_s * (1 + rng.Uniform());
    out.push_back(std::move(job));
    t += rng.Exponential(1 / law->rate);
  }
  return out;
}

}  // namespace drainwise::sim
