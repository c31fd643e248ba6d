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

Result<Assessment> Advisor::Assess(const Context& ctx, const Request& request, const policies::Policy& policy,
                                   std::stop_token stop) const {
  Assessment out;
  // The request's routing, else the fabric's declared load balancing, else the configuration's.
  sim::FlowOptions fopts = sim::WithDeclaredLoadBalancing(options_.flow, ctx.snapshot->topology->load_balancing());
  if (request.routing) {
    fopts.routing = *request.routing;
    fopts.routing_source = "request";
  }
  auto t0 = std::chrono::steady_clock::now();

  // Alternatives first: with only `any_of`, the best of them is the scenario.
  std::vector<std::pair<Scenario, Drain>> alternatives;
  for (size_t i = 0; i < request.any_of.size() && static_cast<int>(i) < options_.max_alternatives; ++i) {
    auto s = Simulate(ctx, request.any_of[i], request.flow, fopts, policy, stop);
    if (!s) return tl::unexpected(s.error());
    alternatives.emplace_back(std::move(*s), request.any_of[i]);
  }
  std::stable_sort(alternatives.begin(), alternatives.end(),
                   [](const auto& a, const auto& b) { return BetterPrediction(Predict(a.first), Predict(b.first)); });

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
    out.notes.push_back(
        "a fabric rule fires: moving jobs cannot fix it; drain fewer switches at once or "
        "pick switches in other failure domains");
  }

  // Migrations, one job at a time, each checked by simulation.
  const auto original_violators = ViolatorSet(verdict);
  std::vector<NodeId> used;
  std::vector<std::pair<JobId, std::vector<NodeId>>> accepted;
  int tried = 0;
  for (JobId j : violators) {
    if (tried++ >= options_.max_migrations) {
      out.notes.push_back(
          fmt::format("only the first {} jobs breaking rules were considered for migration", options_.max_migrations));
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
    // A moved snapshot is used once: simulate it with caches of its own,
    // leaving the snapshot's untouched.
    Context moved_ctx = ctx;
    moved_ctx.snapshot = WithJobMoved(snap, j, target);
    moved_ctx.cache = std::make_shared<SimCache>(moved_ctx.snapshot);
    auto jl = PatchMoved(main_job_level, moved_ctx, out.scenario.combined, {j}, stop);
    if (!jl) return tl::unexpected(jl.error());
    auto s = Simulate(moved_ctx, main_drain, request.flow, fopts, policy, stop, &*jl);
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
    r.summary =
        fmt::format("move {} ({} hosts) to {}{}", job.id, job.hosts.size(), snap.topology->node(target.front()).name,
                    target.size() > 1 ? fmt::format(" and {} more", target.size() - 1) : "");
    used.insert(used.end(), target.begin(), target.end());
    accepted.emplace_back(j, target);
    out.recommendations.push_back(std::move(r));
  }
  // Rank migrations: residual impact, then cost, then lower priority first.
  auto first_migration =
      std::stable_partition(out.recommendations.begin(), out.recommendations.end(),
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
      if (ctx.drift) impact.drift = *ctx.drift;
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
    moved_ctx.cache = std::make_shared<SimCache>(snapshot);
    auto jl = PatchMoved(main_job_level, moved_ctx, out.scenario.combined, moved, stop);
    if (!jl) return tl::unexpected(jl.error());
    auto s = Simulate(moved_ctx, main_drain, request.flow, fopts, policy, stop, &*jl);
    if (!s) return tl::unexpected(s.error());
    auto p = Predict(*s);
    out.allow_after_predicted = p;
    if (p.decision == Decision::kAllow) {
      for (size_t i = 0; i < out.recommendations.size(); ++i) {
        if (out.recommendations[i].kind == RecommendationKind::kMigrate) out.allow_after.push_back(static_cast<int>(i));
      }
    } else {
      out.notes.push_back(
          fmt::format("with every migration applied the verdict is still {}", policies::DecisionName(p.decision)));
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

}  // namespace drainwise::advisor
