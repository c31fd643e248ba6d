#include "advisor/advisor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <thread>
#include <unordered_set>

#include <fmt/format.h>

#include "advisor/prediction.h"
#include "advisor/sim_cache.h"

namespace drainwise::advisor {

using model::Drain;
using model::JobId;
using model::NodeId;
using policies::Decision;
using namespace internal;

Advisor::Advisor(AdvisorOptions options, sim::TaskRunner flow_runner)
    : options_(std::move(options)),
      flow_runner_(flow_runner ? std::move(flow_runner) : sim::ThreadsRunner(options_.flow_threads)) {}
Advisor::~Advisor() = default;

std::shared_ptr<const SimCache> Advisor::Caches(const Context& ctx) const {
  if (ctx.cache && ctx.cache->snapshot() == ctx.snapshot) return ctx.cache;
  // No caches of the snapshot's own: one of this advisor's, replaced when
  // another snapshot comes.
  std::lock_guard lock(own_mu_);
  if (!own_cache_ || own_cache_->snapshot() != ctx.snapshot) own_cache_ = std::make_shared<SimCache>(ctx.snapshot);
  return own_cache_;
}

std::shared_ptr<const sim::JobSimIndex> Advisor::JobIndex(const Context& ctx) const { return Caches(ctx)->JobIndex(); }

Result<std::shared_ptr<const sim::FlowSimulator>> Advisor::FlowSim(const Context& ctx, const sim::FlowOptions& options,
                                                                   std::stop_token stop) const {
  return Caches(ctx)->FlowSim(options, stop, flow_runner_);
}

Result<Advisor::JobLevel> Advisor::JobLevelOf(const Context& ctx, const Drain& combined, std::stop_token stop) const {
  JobLevel out;
  auto index = JobIndex(ctx);
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
    auto fsim = FlowSim(ctx, flow_options, stop);
    if (!fsim) return tl::unexpected(fsim.error());
    auto rep = (*fsim)->Simulate(s.combined, stop, flow_runner_);
    if (!rep) return tl::unexpected(rep.error());
    if (!ctx.active.empty()) {
      // Re-base: the baseline is the fabric with the active drains applied.
      auto base = (*fsim)->Simulate(ctx.active, stop, flow_runner_);
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
  if (ctx.drift) impact.drift = *ctx.drift;
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

}  // namespace drainwise::advisor
