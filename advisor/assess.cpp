#include "advisor/advisor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <thread>
#include <unordered_set>

#include <fmt/format.h>

#include "advisor/cost.h"
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
    // An alternative drains something else: the jobs it cuts off restart.
    for (const auto& pi : alternatives[i].first.impacts) {
      if (!pi.connected) {
        r.cost_gpu_hours += RestartGpuHours(ctx.snapshot->jobs->job(pi.job), *ctx.snapshot->topology, ctx.now, options_);
      }
    }
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
    r.cost_gpu_hours = r.cost_s * JobGpus(job, *snap.topology) / 3600.0;
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
  // Every recommendation is priced in one unit (advisor/cost.h).
  const int64_t delay_from = request.window ? std::max(ctx.now, request.window->start_unix_s) : ctx.now;
  const double duration_s = request.duration_s > 0 ? request.duration_s : options_.default_drain_duration_s;
  const auto& topo = *snap.topology;
  // The verdict once the jobs in `ended` are gone, at time `t`, from a
  // scenario's impacts (the other jobs' measures do not depend on them).
  auto judge_at = [&](const Scenario& sc, const std::set<uint32_t>& ended,
                      int64_t t) -> Result<std::pair<policies::Verdict, int>> {
    policies::Impact impact;
    impact.topology = snap.topology.get();
    impact.drain = main_drain;
    if (!ctx.active.empty()) impact.active.push_back(ctx.active);
    impact.now_unix_s = t;
    if (ctx.drift) impact.drift = *ctx.drift;
    for (const auto& pi : sc.impacts) {
      if (!ended.count(pi.job.value)) impact.jobs.push_back(pi);
    }
    auto v = policies::Evaluate(policy, impact);
    if (!v) return tl::unexpected(v.error());
    return std::make_pair(std::move(*v), static_cast<int>(impact.jobs.size()));
  };

  // Waits: for each distinct expected end T among the rule breakers, "wait
  // until T" for the breakers that have ended by then.
  std::vector<int64_t> ends;
  for (JobId j : violators) {
    if (jobs[j.value].expected_end) ends.push_back(std::max(ctx.now, *jobs[j.value].expected_end));
  }
  std::sort(ends.begin(), ends.end());
  ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
  auto ended_by = [&](int64_t t) {
    std::set<uint32_t> ended;
    for (JobId j : violators) {
      if (jobs[j.value].expected_end && *jobs[j.value].expected_end <= t) ended.insert(j.value);
    }
    return ended;
  };
  if (!HasFabricReason(verdict)) {
    for (int64_t until : ends) {
      auto ended = ended_by(until);
      auto v = judge_at(out.scenario, ended, until);
      if (!v) return tl::unexpected(v.error());
      Recommendation r;
      r.kind = RecommendationKind::kWait;
      r.wait_until = until;
      for (uint32_t e : ended) r.waiting_for.push_back(JobId(e));
      r.predicted.decision = v->first.decision;
      r.predicted.reasons = static_cast<int>(v->first.reasons.size());
      r.predicted.jobs_affected = v->second;
      r.cost_gpu_hours = DelayGpuHours(static_cast<double>(until - delay_from), options_);
      r.within_window = !request.window || until + static_cast<int64_t>(duration_s) <= request.window->end_unix_s;
      r.summary = fmt::format("wait until the {} job(s) breaking rules ending by then have ended{}", ended.size(),
                              r.within_window ? "" : " (past the change window)");
      out.recommendations.push_back(std::move(r));
    }
  }

  // Rank: migrations and waits together by predicted verdict, then cost,
  // then residual impact, then lower priority first; alternatives after.
  auto first_alternative =
      std::stable_partition(out.recommendations.begin(), out.recommendations.end(),
                            [](const Recommendation& r) { return r.kind != RecommendationKind::kAlternative; });
  std::stable_sort(out.recommendations.begin(), first_alternative, [&](const Recommendation& a, const Recommendation& b) {
    if (Severity(a.predicted.decision) != Severity(b.predicted.decision)) {
      return Severity(a.predicted.decision) < Severity(b.predicted.decision);
    }
    if (std::fabs(a.cost_gpu_hours - b.cost_gpu_hours) > 1e-9) return a.cost_gpu_hours < b.cost_gpu_hours;
    if (BetterPrediction(a.predicted, b.predicted) != BetterPrediction(b.predicted, a.predicted)) {
      return BetterPrediction(a.predicted, b.predicted);
    }
    if (a.kind != b.kind) return a.kind == RecommendationKind::kMigrate;
    if (a.kind == RecommendationKind::kWait) return a.wait_until < b.wait_until;
    return jobs[a.job.value].priority < jobs[b.job.value].priority;
  });

  // allow_after: the cheapest way to allow. Option T waits until T (or not
  // at all) for the breakers ending by then and migrates the others that
  // have a migration; each option is checked by simulation (migrations
  // applied, ended jobs gone, policy at T), and its cost includes the
  // restart of any job the drain still cuts off. Options are tried cheapest
  // first and the search stops once no untried option can be cheaper.
  struct Option {
    std::optional<int64_t> until;
    std::vector<int> recs;  // indices into recommendations
    double cost = 0;
  };
  std::vector<Option> options;
  auto migration_index = [&](JobId j) -> int {
    for (size_t i = 0; i < out.recommendations.size(); ++i) {
      const auto& r = out.recommendations[i];
      if (r.kind == RecommendationKind::kMigrate && r.job == j) return static_cast<int>(i);
    }
    return -1;
  };
  if (!HasFabricReason(verdict) && !violators.empty()) {
    std::vector<std::optional<int64_t>> thresholds = {std::nullopt};
    for (int64_t t : ends) thresholds.push_back(t);
    for (const auto& t : thresholds) {
      Option o;
      o.until = t;
      auto ended = t ? ended_by(*t) : std::set<uint32_t>{};
      if (t) {
        int w = -1;
        for (size_t i = 0; i < out.recommendations.size(); ++i) {
          const auto& r = out.recommendations[i];
          if (r.kind == RecommendationKind::kWait && r.wait_until == *t) w = static_cast<int>(i);
        }
        if (w < 0 || !out.recommendations[w].within_window) continue;
        o.recs.push_back(w);
        o.cost += out.recommendations[w].cost_gpu_hours;
      }
      for (JobId j : violators) {
        if (ended.count(j.value)) continue;
        int m = migration_index(j);
        if (m < 0) continue;
        o.recs.push_back(m);
        o.cost += out.recommendations[m].cost_gpu_hours;
      }
      if (o.recs.empty()) continue;
      options.push_back(std::move(o));
    }
  }
  std::stable_sort(options.begin(), options.end(), [](const Option& a, const Option& b) { return a.cost < b.cost; });
  std::optional<double> best_cost;
  std::optional<Prediction> last_predicted;
  for (const auto& o : options) {
    if (best_cost && o.cost >= *best_cost - 1e-9) break;
    if (stop.stop_requested()) return MakeError(ErrorCode::kCancelled, "assessment cancelled");
    std::vector<std::pair<JobId, std::vector<NodeId>>> moves;
    for (int i : o.recs) {
      const auto& r = out.recommendations[i];
      if (r.kind == RecommendationKind::kMigrate) moves.emplace_back(r.job, r.to_hosts);
    }
    const int64_t at = o.until.value_or(ctx.now);
    auto ended = o.until ? ended_by(*o.until) : std::set<uint32_t>{};
    Scenario verified;
    if (moves.empty()) {
      verified = out.scenario;
    } else {
      Context moved_ctx = ctx;
      auto snapshot = ctx.snapshot;
      std::vector<JobId> moved;
      for (const auto& [j, hosts] : moves) {
        snapshot = WithJobMoved(*snapshot, j, hosts);
        moved.push_back(j);
      }
      moved_ctx.snapshot = snapshot;
      moved_ctx.cache = std::make_shared<SimCache>(snapshot);
      auto jl = PatchMoved(main_job_level, moved_ctx, out.scenario.combined, moved, stop);
      if (!jl) return tl::unexpected(jl.error());
      auto s = Simulate(moved_ctx, main_drain, request.flow, fopts, policy, stop, &*jl);
      if (!s) return tl::unexpected(s.error());
      verified = std::move(*s);
    }
    auto v = judge_at(verified, ended, at);
    if (!v) return tl::unexpected(v.error());
    Prediction p = Predict(verified);
    p.decision = v->first.decision;
    p.reasons = static_cast<int>(v->first.reasons.size());
    p.jobs_affected = v->second;
    p.jobs_disconnected = 0;
    double cost = o.cost;
    for (const auto& pi : verified.impacts) {
      if (ended.count(pi.job.value) || pi.connected) continue;
      ++p.jobs_disconnected;
      cost += RestartGpuHours(jobs[pi.job.value], topo, at, options_);  // restart risk of a job left cut off
    }
    for (const auto& pi : verified.impacts) {
      if (ended.count(pi.job.value) || !pi.connected || !pi.slowdown_pct) continue;
      cost += SlowdownGpuHours(JobGpus(jobs[pi.job.value], topo), *pi.slowdown_pct, duration_s);
    }
    last_predicted = p;
    if (p.decision != Decision::kAllow) continue;
    if (!best_cost || cost < *best_cost - 1e-9) {
      best_cost = cost;
      out.allow_after = o.recs;
      std::sort(out.allow_after.begin(), out.allow_after.end());
      out.allow_after_predicted = p;
      out.allow_after_cost_gpu_hours = cost;
    }
  }
  if (!best_cost && last_predicted && !options.empty()) {
    out.allow_after_predicted = last_predicted;
    out.notes.push_back(fmt::format("with every migration and wait considered the verdict is still {}",
                                    policies::DecisionName(last_predicted->decision)));
  }
  if (out.allow_after.empty()) {
    for (size_t i = 0; i < out.recommendations.size(); ++i) {
      const auto& r = out.recommendations[i];
      if (r.kind == RecommendationKind::kAlternative && r.predicted.decision == Decision::kAllow) {
        out.allow_after.push_back(static_cast<int>(i));
        out.allow_after_predicted = r.predicted;
        out.allow_after_cost_gpu_hours = r.cost_gpu_hours;
        break;
      }
    }
  }
  out.recommend_ms = MsSince(t1);
  return out;
}

}  // namespace drainwise::advisor
