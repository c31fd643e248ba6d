#include "advisor/advisor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <thread>
#include <unordered_set>

#include <fmt/format.h>

namespace drainwise::advisor {

using model::Drain;
using model::JobId;
using model::NodeId;
using policies::Decision;

namespace {

double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

int Severity(Decision d) { return d == Decision::kDeny ? 2 : d == Decision::kWarn ? 1 : 0; }

bool SameJobMeasures(const sim::JobImpact& a, const sim::JobImpact& b) {
  auto close = [](double x, double y) { return std::fabs(x - y) <= 1e-9; };
  return a.connected == b.connected && close(a.path_fraction, b.path_fraction) &&
         close(a.bandwidth_fraction, b.bandwidth_fraction) && a.min_paths_after == b.min_paths_after;
}

Prediction Predict(const Scenario& s) {
  Prediction p;
  p.decision = s.verdict.decision;
  p.reasons = static_cast<int>(s.verdict.reasons.size());
  p.jobs_affected = s.jobs_affected;
  p.jobs_disconnected = s.jobs_disconnected;
  p.max_slowdown_pct = s.max_slowdown_pct;
  return p;
}

// Lexicographic "better outcome" order for predictions.
bool BetterPrediction(const Prediction& a, const Prediction& b) {
  if (Severity(a.decision) != Severity(b.decision)) return Severity(a.decision) < Severity(b.decision);
  if (a.jobs_disconnected != b.jobs_disconnected) return a.jobs_disconnected < b.jobs_disconnected;
  if (std::fabs(a.max_slowdown_pct - b.max_slowdown_pct) > 1e-9) return a.max_slowdown_pct < b.max_slowdown_pct;
  if (a.reasons != b.reasons) return a.reasons < b.reasons;
  return a.jobs_affected < b.jobs_affected;
}

std::set<std::string> ViolatorSet(const policies::Verdict& v) {
  auto ids = policies::JobsViolating(v, policies::Action::kWarn);
  return {ids.begin(), ids.end()};
}

bool HasFabricReason(const policies::Verdict& v) {
  return std::any_of(v.reasons.begin(), v.reasons.end(), [](const policies::Reason& r) { return !r.job_rule; });
}

}  // namespace

std::string_view RecommendationKindName(RecommendationKind kind) {
  switch (kind) {
    case RecommendationKind::kMigrate: return "migrate";
    case RecommendationKind::kWait: return "wait";
    case RecommendationKind::kAlternative: return "alternative";
  }
  return "migrate";
}

// Per-snapshot caches: the job-level index and one flow simulator per
// routing mode. Keyed by the snapshot pointer; a new snapshot replaces them.
struct Advisor::Cache {
  std::mutex mu;
  std::weak_ptr<const model::Snapshot> snapshot;
  std::shared_ptr<const sim::JobSimIndex> job_index;
  std::map<std::string, std::shared_ptr<const sim::FlowSimulator>> flow;  // key: options fingerprint
};

Advisor::Advisor(AdvisorOptions options) : options_(std::move(options)), cache_(std::make_unique<Cache>()) {}
Advisor::~Advisor() = default;

namespace {
std::string FlowKey(const sim::FlowOptions& o) {
  return fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}", sim::FlowRoutingName(o.routing), o.hash_seeds, o.seed, o.goodput,
                     o.per_hop_latency_s, o.per_message_overhead_s, o.overload_threshold, o.overload_penalty,
                     o.background_bps.size());
}
}  // namespace

std::shared_ptr<const sim::JobSimIndex> Advisor::JobIndex(const model::SnapshotPtr& snapshot) const {
  {
    std::lock_guard lock(cache_->mu);
    if (cache_->snapshot.lock() == snapshot && cache_->job_index) return cache_->job_index;
  }
  auto index = std::make_shared<const sim::JobSimIndex>(snapshot);
  std::lock_guard lock(cache_->mu);
  if (cache_->snapshot.lock() != snapshot) {
    cache_->snapshot = snapshot;
    cache_->flow.clear();
  }
  cache_->job_index = index;
  return index;
}

Result<std::shared_ptr<const sim::FlowSimulator>> Advisor::FlowSim(const model::SnapshotPtr& snapshot,
                                                                   const sim::FlowOptions& options,
                                                                   std::stop_token stop) const {
  const std::string key = FlowKey(options);
  {
    std::lock_guard lock(cache_->mu);
    if (cache_->snapshot.lock() == snapshot) {
      auto it = cache_->flow.find(key);
      if (it != cache_->flow.end()) return it->second;
    }
  }
  auto sim = sim::FlowSimulator::Create(snapshot, options, stop);
  if (!sim) return tl::unexpected(sim.error());
  std::lock_guard lock(cache_->mu);
  if (cache_->snapshot.lock() != snapshot) {
    cache_->snapshot = snapshot;
    cache_->job_index.reset();
    cache_->flow.clear();
  }
  cache_->flow[key] = *sim;
  return *sim;
}

Result<Advisor::JobLevel> Advisor::JobLevelOf(const Context& ctx, const Drain& combined, std::stop_token stop) const {
  JobLevel out;
  auto index = JobIndex(ctx.snapshot);
  auto all = sim::AssessJobs(*index, combined, stop);
  if (!all) return tl::unexpected(all.error());
  out.all = std::move(*all);
  // With drains in progress, what the proposal changes is the difference
  // between "active" and "active + proposed".
  if (!ctx.active.empty()) {
    auto b = sim::AssessJobs(*index, ctx.active, stop);
    if (!b) return tl::unexpected(b.error());
    out.before = std::move(*b);
  }
  return out;
}

namespace {
void Retotal(sim::JobAssessment& a) {
  a.jobs_affected = a.jobs_disconnected = a.gpus_affected = 0;
  for (const auto& j : a.jobs) {
    a.jobs_affected += j.affected;
    a.jobs_disconnected += !j.connected;
    a.gpus_affected += j.affected ? j.gpus : 0;
  }
}
}  // namespace

Result<Advisor::JobLevel> Advisor::PatchMoved(const JobLevel& base, const Context& moved_ctx, const Drain& combined,
                                              const std::vector<JobId>& moved, std::stop_token stop) const {
  // Job-level measures of a job depend on its own hosts and the drain only,
  // so moving jobs changes just their entries: route them on a snapshot of
  // their own instead of re-indexing every job of the fabric.
  JobLevel out = base;
  const auto& snap = *moved_ctx.snapshot;
  for (JobId j : moved) {
    model::JobsSpec one;
    one.jobs.push_back(model::DescribeJob(snap.jobs->job(j), *snap.topology));
    auto single = model::MakeSnapshot(snap.topology, snap.topology_version, one, snap.jobs_version);
    sim::JobSimIndex index(single);
    auto all = sim::AssessJobs(index, combined, stop);
    if (!all) return tl::unexpected(all.error());
    out.all.jobs[j.value] = all->jobs.front();
    out.all.jobs[j.value].job = j;
    if (out.before) {
      auto b = sim::AssessJobs(index, moved_ctx.active, stop);
      if (!b) return tl::unexpected(b.error());
      out.before->jobs[j.value] = b->jobs.front();
      out.before->jobs[j.value].job = j;
    }
  }
  Retotal(out.all);
  if (out.before) Retotal(*out.before);
  return out;
}

Result<Scenario> Advisor::Simulate(const Context& ctx, const Drain& drain, bool flow,
                                   const sim::FlowOptions& flow_options, const policies::Policy& policy,
                                   std::stop_token stop, const JobLevel* job_level) const {
  Scenario s;
  s.drain = drain;
  s.combined = ctx.active.Merge(drain);
  std::optional<sim::JobAssessment> before;
  if (job_level) {
    s.job = job_level->all;
    before = job_level->before;
  } else {
    auto jl = JobLevelOf(ctx, s.combined, stop);
    if (!jl) return tl::unexpected(jl.error());
    s.job = std::move(jl->all);
    before = std::move(jl->before);
  }
  const auto& jobs = ctx.snapshot->jobs->jobs();
  std::vector<char> include(jobs.size(), 0);
  for (size_t j = 0; j < jobs.size(); ++j) {
    const auto& ji = s.job.jobs[j];
    include[j] = before ? !SameJobMeasures(ji, before->jobs[j]) : ji.affected;
  }

  if (flow) {
    auto fsim = FlowSim(ctx.snapshot, flow_options, stop);
    if (!fsim) return tl::unexpected(fsim.error());
    auto rep = (*fsim)->Simulate(s.combined, stop);
    if (!rep) return tl::unexpected(rep.error());
    if (!ctx.active.empty()) {
      // Re-base: the baseline is the fabric with the active drains applied.
      auto base = (*fsim)->Simulate(ctx.active, stop);
      if (!base) return tl::unexpected(base.error());
      for (size_t j = 0; j < rep->jobs.size(); ++j) {
        auto& r = rep->jobs[j];
        r.baseline = base->jobs[j].drained;
        r.slowdown_pct.reset();
        r.slowdown_pct_worst.reset();
        if (r.baseline.connected && r.drained.connected && r.baseline.iteration_s > 0) {
          r.slowdown_pct = (r.drained.iteration_s / r.baseline.iteration_s - 1) * 100;
          r.slowdown_pct_worst = (r.drained.iteration_s_worst / r.baseline.iteration_s_worst - 1) * 100;
        }
      }
      rep->baseline_load_bps = base->drained_load_bps;
    }
    for (size_t j = 0; j < rep->jobs.size(); ++j) {
      const auto& r = rep->jobs[j];
      // Jobs the drain slows without crossing it (their links took the
      // re-routed traffic) count too.
      double sd = r.slowdown_pct_worst.value_or(r.slowdown_pct.value_or(0));
      if (sd > 0.01 || (r.baseline.connected && !r.drained.connected)) include[j] = 1;
    }
    s.flow = std::move(*rep);
  }

  policies::Impact impact;
  impact.topology = ctx.snapshot->topology.get();
  impact.drain = drain;
  if (!ctx.active.empty()) impact.active.push_back(ctx.active);
  impact.now_unix_s = ctx.now;
  for (size_t j = 0; j < jobs.size(); ++j) {
    if (!include[j]) continue;
    const auto& ji = s.job.jobs[j];
    auto pi = policies::IdentifyJob(jobs[j], JobId(j));
    pi.connected = ji.connected;
    pi.path_fraction = ji.path_fraction;
    pi.bandwidth_fraction = ji.bandwidth_fraction;
    if (ji.min_paths_after) pi.min_paths_after = static_cast<int>(std::llround(*ji.min_paths_after));
    if (s.flow) {
      const auto& fr = s.flow->jobs[j];
      if (!fr.drained.connected) pi.connected = false;
      auto sd = fr.slowdown_pct_worst ? fr.slowdown_pct_worst : fr.slowdown_pct;
      if (sd) {
        pi.slowdown_pct = std::max(0.0, *sd);
        s.max_slowdown_pct = std::max(s.max_slowdown_pct, *pi.slowdown_pct);
      }
    }
    ++s.jobs_affected;
    if (!pi.connected) ++s.jobs_disconnected;
    s.impacts.push_back(std::move(pi));
  }
  impact.jobs = s.impacts;
  auto verdict = policies::Evaluate(policy, impact);
  if (!verdict) return tl::unexpected(verdict.error());
  s.verdict = std::move(*verdict);
  return s;
}

double MigrationCostSeconds(const model::Job& job, int64_t now, const AdvisorOptions& options) {
  double restart = options.default_restart_cost_s;
  double interval = options.default_checkpoint_interval_s;
  if (job.checkpoint) {
    restart = job.checkpoint->restart_cost_s;
    if (job.checkpoint->interval_s > 0) interval = job.checkpoint->interval_s;
  }
  double lost = interval / 2;  // unknown phase: half an interval on average
  if (job.started_at && *job.started_at <= now && interval > 0) {
    lost = std::fmod(static_cast<double>(now - *job.started_at), interval);
  }
  return restart + lost;
}

std::vector<NodeId> FindMigrationTarget(const model::Snapshot& snapshot, const model::Job& job, const Drain& drain,
                                        const std::vector<NodeId>& exclude) {
  const auto& topo = *snapshot.topology;
  if (job.hosts.empty()) return {};
  const int gpus = model::GpusPerHost(job, topo);
  const size_t nics = topo.neighbors(job.hosts.front()).size();
  std::map<std::string, int> pods;
  for (NodeId h : job.hosts) ++pods[topo.node(h).pod];
  std::string home_pod = std::max_element(pods.begin(), pods.end(), [](auto& a, auto& b) {
                           return a.second < b.second;
                         })->first;
  model::DrainMask mask(topo, drain);
  std::unordered_set<uint32_t> skip;
  for (NodeId h : exclude) skip.insert(h.value);
  for (NodeId h : job.hosts) skip.insert(h.value);

  // Group eligible hosts by the leaves they attach to.
  std::map<std::vector<uint32_t>, std::vector<NodeId>> groups;
  for (NodeId h : topo.hosts()) {
    if (skip.count(h.value) || !snapshot.jobs->HostIsFree(h)) continue;
    const auto& n = topo.node(h);
    if (n.gpus > 0 && n.gpus < gpus) continue;
    auto adj = topo.neighbors(h);
    if (adj.size() != nics) continue;
    std::vector<uint32_t> leaves;
    bool touched = false;
    for (const auto& a : adj) {
      if (mask.link_down(a.link) || mask.node_down(a.peer)) touched = true;
      leaves.push_back(a.peer.value);
    }
    if (touched) continue;
    std::sort(leaves.begin(), leaves.end());
    groups[leaves].push_back(h);
  }
  struct Group {
    bool same_pod;
    std::vector<NodeId> hosts;
  };
  std::vector<Group> ordered;
  for (auto& [leaves, hosts] : groups) ordered.push_back({topo.node(hosts.front()).pod == home_pod, hosts});
  // Same pod first, then the largest groups (fewest leaves for the job), then
  // by first host id for determinism.
  std::stable_sort(ordered.begin(), ordered.end(), [](const Group& a, const Group& b) {
    if (a.same_pod != b.same_pod) return a.same_pod;
    if (a.hosts.size() != b.hosts.size()) return a.hosts.size() > b.hosts.size();
    return a.hosts.front() < b.hosts.front();
  });
  // A group that fits the whole job on its own beats spreading over several.
  for (const auto& g : ordered) {
    if (g.hosts.size() >= job.hosts.size() && g.same_pod == ordered.front().same_pod) {
      return {g.hosts.begin(), g.hosts.begin() + static_cast<long>(job.hosts.size())};
    }
  }
  std::vector<NodeId> out;
  for (const auto& g : ordered) {
    for (NodeId h : g.hosts) {
      if (out.size() == job.hosts.size()) break;
      out.push_back(h);
    }
  }
  if (out.size() < job.hosts.size()) return {};
  return out;
}

model::SnapshotPtr WithJobMoved(const model::Snapshot& snapshot, JobId job, const std::vector<NodeId>& hosts) {
  const auto& topo = *snapshot.topology;
  auto spec = model::DescribeJobs(*snapshot.jobs, topo);
  auto& moved = spec.jobs[job.value];
  // Explicit flows follow their hosts: the i-th old host becomes the i-th new one.
  std::map<std::string, std::string> rename;
  for (size_t i = 0; i < moved.hosts.size() && i < hosts.size(); ++i) rename[moved.hosts[i]] = topo.node(hosts[i]).name;
  for (auto& h : moved.hosts) h = rename[h];
  for (auto& c : moved.iteration.collectives) {
    for (auto& f : c.flows) {
      f.src = rename[f.src];
      f.dst = rename[f.dst];
    }
  }
  return model::MakeSnapshot(snapshot.topology, snapshot.topology_version, spec, snapshot.jobs_version);
}

Result<Assessment> Advisor::Assess(const Context& ctx, const Request& request, const policies::Policy& policy,
                                   std::stop_token stop) const {
  Assessment out;
  sim::FlowOptions fopts = options_.flow;
  if (request.routing) fopts.routing = *request.routing;
  auto t0 = std::chrono::steady_clock::now();

  // Alternatives first: with only `any_of`, the best of them is the scenario.
  std::vector<std::pair<Scenario, Drain>> alternatives;
  for (size_t i = 0; i < request.any_of.size() && static_cast<int>(i) < options_.max_alternatives; ++i) {
    auto s = Simulate(ctx, request.any_of[i], request.flow, fopts, policy, stop);
    if (!s) return tl::unexpected(s.error());
    alternatives.emplace_back(std::move(*s), request.any_of[i]);
  }
  std::stable_sort(alternatives.begin(), alternatives.end(), [](const auto& a, const auto& b) {
    return BetterPrediction(Predict(a.first), Predict(b.first));
  });

  Drain main_drain = request.drain;
  if (main_drain.empty() && !alternatives.empty()) main_drain = alternatives.front().second;
  JobLevel main_job_level;
  {
    auto jl = JobLevelOf(ctx, ctx.active.Merge(main_drain), stop);
    if (!jl) return tl::unexpected(jl.error());
    main_job_level = std::move(*jl);
    auto s = Simulate(ctx, main_drain, request.flow, fopts, policy, stop, &main_job_level);
    if (!s) return tl::unexpected(s.error());
    out.scenario = std::move(*s);
  }
  out.job_ms = MsSince(t0);
  if (request.flow && out.scenario.flow) out.flow_ms = 0;  // included in job_ms; split below when measured
  auto t1 = std::chrono::steady_clock::now();

  for (size_t i = 0; i < alternatives.size(); ++i) {
    Recommendation r;
    r.kind = RecommendationKind::kAlternative;
    r.alternative = alternatives[i].second;
    r.rank = static_cast<int>(i) + 1;
    r.predicted = Predict(alternatives[i].first);
    out.recommendations.push_back(std::move(r));
  }

  const auto& verdict = out.scenario.verdict;
  if (!request.recommend || verdict.decision == Decision::kAllow) {
    out.recommend_ms = MsSince(t1);
    return out;
  }

  const auto& snap = *ctx.snapshot;
  const auto& jobs = snap.jobs->jobs();
  // Jobs that break a rule, deny first, then by priority (most important first).
  std::vector<JobId> violators;
  for (const auto& id : policies::JobsViolating(verdict, policies::Action::kWarn)) {
    if (auto j = snap.jobs->FindJob(id)) violators.push_back(*j);
  }
  auto deny_set = policies::JobsViolating(verdict, policies::Action::kDeny);
  std::set<std::string> denied(deny_set.begin(), deny_set.end());
  std::stable_sort(violators.begin(), violators.end(), [&](JobId a, JobId b) {
    bool da = denied.count(jobs[a.value].id), db = denied.count(jobs[b.value].id);
    if (da != db) return da;
    return jobs[a.value].priority > jobs[b.value].priority;
  });
  if (HasFabricReason(verdict)) {
    out.notes.push_back("a fabric rule fires: moving jobs cannot fix it; drain fewer switches at once or "
                        "pick switches in other failure domains");
  }

  // Migrations, one job at a time, each checked by simulation.
  const auto original_violators = ViolatorSet(verdict);
  std::vector<NodeId> used;
  std::vector<std::pair<JobId, std::vector<NodeId>>> accepted;
  int tried = 0;
  for (JobId j : violators) {
    if (tried++ >= options_.max_migrations) {
      out.notes.push_back(fmt::format("only the first {} jobs breaking rules were considered for migration",
                                      options_.max_migrations));
      break;
    }
    if (stop.stop_requested()) return MakeError(ErrorCode::kCancelled, "assessment cancelled");
    const auto& job = jobs[j.value];
    auto target = FindMigrationTarget(snap, job, out.scenario.combined, used);
    if (target.empty()) {
      out.notes.push_back(fmt::format("job '{}': no {} free hosts of the same shape that the drain leaves intact",
                                      job.id, job.hosts.size()));
      continue;
    }
    Context moved_ctx = ctx;
    moved_ctx.snapshot = WithJobMoved(snap, j, target);
    auto jl = PatchMoved(main_job_level, moved_ctx, out.scenario.combined, {j}, stop);
    if (!jl) return tl::unexpected(jl.error());
    // A moved snapshot is used once: simulate it without touching the cache.
    Advisor scratch(options_);
    auto s = scratch.Simulate(moved_ctx, main_drain, request.flow, fopts, policy, stop, &*jl);
    if (!s) return tl::unexpected(s.error());
    auto after = ViolatorSet(s->verdict);
    Recommendation r;
    r.kind = RecommendationKind::kMigrate;
    r.job = j;
    r.from_hosts = job.hosts;
    r.to_hosts = target;
    r.cost_s = MigrationCostSeconds(job, ctx.now, options_);
    r.cost_gpu_hours = r.cost_s * job.hosts.size() * model::GpusPerHost(job, *snap.topology) / 3600.0;
    r.fixes_job = !after.count(job.id);
    for (const auto& reason : verdict.reasons) {
      if (reason.job == job.id && r.fixes_job) r.rules_fixed.push_back(reason.rule);
    }
    r.predicted = Predict(*s);
    // Nothing else may get worse: no new rule breaker, no job slowed further.
    std::vector<std::string> worse;
    for (const auto& id : after) {
      if (!original_violators.count(id)) worse.push_back(id);
    }
    if (s->flow && out.scenario.flow) {
      for (size_t k = 0; k < jobs.size(); ++k) {
        if (JobId(k) == j) continue;
        auto before_sd = out.scenario.flow->jobs[k].slowdown_pct.value_or(0);
        auto after_sd = s->flow->jobs[k].slowdown_pct.value_or(0);
        if (after_sd > before_sd + options_.worse_tolerance_pct) worse.push_back(jobs[k].id);
      }
    }
    if (!r.fixes_job) {
      out.notes.push_back(fmt::format("job '{}': moving it does not clear its rules", job.id));
      continue;
    }
    if (!worse.empty()) {
      out.notes.push_back(fmt::format("job '{}': moving it would make job '{}' worse", job.id, worse.front()));
      continue;
    }
    r.summary = fmt::format("move {} ({} hosts) to {}{}", job.id, job.hosts.size(), snap.topology->node(target.front()).name,
                            target.size() > 1 ? fmt::format(" and {} more", target.size() - 1) : "");
    used.insert(used.end(), target.begin(), target.end());
    accepted.emplace_back(j, target);
    out.recommendations.push_back(std::move(r));
  }
  // Rank migrations: residual impact, then cost, then lower priority first.
  auto first_migration = std::stable_partition(out.recommendations.begin(), out.recommendations.end(),
                                               [](const Recommendation& r) { return r.kind == RecommendationKind::kMigrate; });
  std::stable_sort(out.recommendations.begin(), first_migration, [&](const Recommendation& a, const Recommendation& b) {
    if (BetterPrediction(a.predicted, b.predicted) != BetterPrediction(b.predicted, a.predicted)) {
      return BetterPrediction(a.predicted, b.predicted);
    }
    if (std::fabs(a.cost_gpu_hours - b.cost_gpu_hours) > 1e-9) return a.cost_gpu_hours < b.cost_gpu_hours;
    return jobs[a.job.value].priority < jobs[b.job.value].priority;
  });

  // Waiting: when every rule breaker has an expected end, the drain passes
  // after the last of them (other jobs' measures assumed unchanged).
  {
    int64_t until = 0;
    bool all_known = !violators.empty();
    std::vector<JobId> waiting;
    for (JobId j : violators) {
      const auto& job = jobs[j.value];
      if (!job.expected_end) {
        all_known = false;
        break;
      }
      until = std::max(until, *job.expected_end);
      waiting.push_back(j);
    }
    if (all_known && !HasFabricReason(verdict)) {
      policies::Impact impact;
      impact.topology = snap.topology.get();
      impact.drain = main_drain;
      if (!ctx.active.empty()) impact.active.push_back(ctx.active);
      impact.now_unix_s = std::max(ctx.now, until);
      for (const auto& pi : out.scenario.impacts) {
        if (std::none_of(waiting.begin(), waiting.end(), [&](JobId w) { return w == pi.job; })) {
          impact.jobs.push_back(pi);
        }
      }
      auto v = policies::Evaluate(policy, impact);
      if (v) {
        Recommendation r;
        r.kind = RecommendationKind::kWait;
        r.wait_until = until;
        r.waiting_for = waiting;
        r.predicted.decision = v->decision;
        r.predicted.reasons = static_cast<int>(v->reasons.size());
        r.predicted.jobs_affected = static_cast<int>(impact.jobs.size());
        r.summary = fmt::format("wait until the {} job(s) breaking rules end", waiting.size());
        out.recommendations.push_back(std::move(r));
      }
    }
  }

  // allow_after: all accepted migrations together, verified by simulation.
  if (!accepted.empty() && !stop.stop_requested()) {
    Context moved_ctx = ctx;
    auto snapshot = ctx.snapshot;
    std::vector<JobId> moved;
    for (const auto& [j, hosts] : accepted) {
      snapshot = WithJobMoved(*snapshot, j, hosts);
      moved.push_back(j);
    }
    moved_ctx.snapshot = snapshot;
    auto jl = PatchMoved(main_job_level, moved_ctx, out.scenario.combined, moved, stop);
    if (!jl) return tl::unexpected(jl.error());
    Advisor scratch(options_);
    auto s = scratch.Simulate(moved_ctx, main_drain, request.flow, fopts, policy, stop, &*jl);
    if (!s) return tl::unexpected(s.error());
    auto p = Predict(*s);
    out.allow_after_predicted = p;
    if (p.decision == Decision::kAllow) {
      for (size_t i = 0; i < out.recommendations.size(); ++i) {
        if (out.recommendations[i].kind == RecommendationKind::kMigrate) out.allow_after.push_back(static_cast<int>(i));
      }
    } else {
      out.notes.push_back(fmt::format("with every migration applied the verdict is still {}",
                                      policies::DecisionName(p.decision)));
    }
  }
  if (out.allow_after.empty()) {
    for (size_t i = 0; i < out.recommendations.size(); ++i) {
      const auto& r = out.recommendations[i];
      if (r.kind == RecommendationKind::kWait && r.predicted.decision == Decision::kAllow) {
        out.allow_after.push_back(static_cast<int>(i));
        out.allow_after_predicted = r.predicted;
        break;
      }
    }
  }
  if (out.allow_after.empty()) {
    for (size_t i = 0; i < out.recommendations.size(); ++i) {
      const auto& r = out.recommendations[i];
      if (r.kind == RecommendationKind::kAlternative && r.predicted.decision == Decision::kAllow) {
        out.allow_after.push_back(static_cast<int>(i));
        out.allow_after_predicted = r.predicted;
        break;
      }
    }
  }
  out.recommend_ms = MsSince(t1);
  return out;
}

Result<std::vector<sim::DrainCandidate>> Advisor::Candidates(const Context& ctx, std::span<const NodeId> switches,
                                                             std::stop_token stop) const {
  auto index = JobIndex(ctx.snapshot);
  // Two halves on two threads (each with its own workspace), merged and
  // ranked: the sweep is the one request that runs every switch of a tier.
  const size_t half = switches.size() / 2;
  if (half < 8) {
    sim::JobSimWorkspace ws;
    return sim::SweepDrainCandidates(*index, switches, ws, stop);
  }
  Result<std::vector<sim::DrainCandidate>> second;
  std::thread helper([&] {
    sim::JobSimWorkspace ws;
    second = sim::SweepDrainCandidates(*index, switches.subspan(half), ws, stop);
  });
  sim::JobSimWorkspace ws;
  auto first = sim::SweepDrainCandidates(*index, switches.first(half), ws, stop);
  helper.join();
  if (!first) return first;
  if (!second) return second;
  first->insert(first->end(), std::make_move_iterator(second->begin()), std::make_move_iterator(second->end()));
  sim::RankCandidates(*ctx.snapshot->topology, *first);
  return first;
}

Result<Plan> Advisor::PlanDrains(const Context& ctx, std::span<const NodeId> switches, bool flow,
                                 const policies::Policy& policy, std::stop_token stop) const {
  Plan plan;
  if (switches.empty()) return plan;
  // Single-switch impact orders the list: the gentlest switches first, so
  // they can share batches.
  struct Single {
    NodeId sw;
    Prediction p;
  };
  std::vector<Single> singles;
  for (NodeId s : switches) {
    Drain d;
    d.switches = {s};
    auto sc = Simulate(ctx, d, false, options_.flow, policy, stop);
    if (!sc) return tl::unexpected(sc.error());
    singles.push_back({s, Predict(*sc)});
  }
  const auto& topo = *ctx.snapshot->topology;
  std::stable_sort(singles.begin(), singles.end(), [&](const Single& a, const Single& b) {
    if (BetterPrediction(a.p, b.p) != BetterPrediction(b.p, a.p)) return BetterPrediction(a.p, b.p);
    return topo.node(a.sw).name < topo.node(b.sw).name;
  });

  auto evaluate = [&](const std::vector<NodeId>& batch) -> Result<Scenario> {
    Drain d;
    d.switches = batch;
    std::sort(d.switches.begin(), d.switches.end());
    return Simulate(ctx, d, flow, options_.flow, policy, stop);
  };
  std::vector<bool> placed(singles.size(), false);
  for (size_t i = 0; i < singles.size(); ++i) {
    if (placed[i]) continue;
    std::vector<NodeId> batch = {singles[i].sw};
    placed[i] = true;
    auto current = evaluate(batch);
    if (!current) return tl::unexpected(current.error());
    if (current->verdict.decision == Decision::kAllow) {
      // Grow the batch with any later switch that keeps it allowed.
      for (size_t k = i + 1; k < singles.size(); ++k) {
        if (placed[k] || singles[k].p.decision != Decision::kAllow) continue;
        auto trial = batch;
        trial.push_back(singles[k].sw);
        auto sc = evaluate(trial);
        if (!sc) return tl::unexpected(sc.error());
        if (sc->verdict.decision == Decision::kAllow) {
          batch = std::move(trial);
          current = std::move(sc);
          placed[k] = true;
        }
      }
    }
    PlanBatch pb;
    pb.switches = batch;
    std::sort(pb.switches.begin(), pb.switches.end(),
              [&](NodeId a, NodeId b) { return topo.node(a).name < topo.node(b).name; });
    pb.verdict = current->verdict;
    pb.predicted = Predict(*current);
    if (current->verdict.decision != Decision::kAllow) {
      // A switch that does not pass alone: bring the migrations that fix it.
      Request req;
      req.drain.switches = batch;
      req.flow = flow;
      auto a = Assess(ctx, req, policy, stop);
      if (!a) return tl::unexpected(a.error());
      for (int idx : a->allow_after) {
        if (a->recommendations[idx].kind == RecommendationKind::kMigrate) {
          pb.migrations.push_back(a->recommendations[idx]);
        }
      }
      if (!pb.migrations.empty() && a->allow_after_predicted) {
        pb.predicted = *a->allow_after_predicted;
      }
      if (pb.predicted.decision != Decision::kAllow) {
        plan.all_allowed = false;
        plan.notes.push_back(fmt::format("{}: {} even alone{}", topo.node(batch.front()).name,
                                         policies::DecisionName(pb.predicted.decision),
                                         a->notes.empty() ? "" : " (" + a->notes.front() + ")"));
      }
    }
    plan.batches.push_back(std::move(pb));
  }
  return plan;
}

}  // namespace drainwise::advisor
