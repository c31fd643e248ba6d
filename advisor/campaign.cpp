// The campaign scheduler (advisor/campaign.h, docs/campaigns.md).
//
// Three steps:
//   1. group the items into batches with the policy's fabric rules (the
//      greedy rule of plan.cpp: an item joins the current batch when the
//      batch still passes every fabric rule and stays within max_concurrent);
//   2. time the batches one after another. For a batch and a cursor (the end
//      of the previous batch) the candidate starts are the cursor, the items'
//      earliest starts, the expected ends and next checkpoints of the jobs
//      breaking rules, and the ends of blackouts, each pushed past the
//      blackouts and checked against the window and the deadlines. At each
//      candidate the jobs ended by then are gone, the rest of the rule
//      breakers are migrated (right after their last checkpoint since the
//      cursor when there was one) or, without a target, cut off and
//      restarted; the candidate's cost is the cost model's sum. The search
//      times next the batch whose best start is cheapest once the delay it
//      puts on the items still waiting is counted (list scheduling), so
//      batches that need not wait go first;
//   3. replay each schedule on the fabric as it will be at each batch's
//      start (moves applied, ended jobs gone; flow level when asked) for its
//      verdict and slowdown cost, and compare with the simple strategies.
#include "advisor/campaign.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "advisor/prediction.h"
#include "advisor/sim_cache.h"

namespace drainwise::advisor {

using model::Drain;
using model::JobId;
using model::NodeId;
using policies::Decision;
using namespace internal;

std::string_view CampaignObjectiveName(CampaignObjective objective) {
  return objective == CampaignObjective::kFinish ? "finish" : "gpu_hours";
}

std::string_view CampaignActionKindName(CampaignActionKind kind) {
  return kind == CampaignActionKind::kWait ? "wait" : "migrate";
}

std::vector<std::string> ReservationHosts(const model::Snapshot& snapshot, const CampaignBatch& batch) {
  const auto& topo = *snapshot.topology;
  std::set<std::string> hosts;
  model::DrainMask mask(topo, batch.drain);
  for (NodeId h : topo.hosts()) {
    for (const auto& a : topo.neighbors(h)) {
      if (mask.link_down(a.link) || mask.node_down(a.peer)) hosts.insert(topo.node(h).name);
    }
  }
  for (const auto& a : batch.actions) {
    if (a.kind == CampaignActionKind::kMigrate) {
      for (NodeId h : a.from_hosts) hosts.insert(topo.node(h).name);
    } else if (a.job.value < snapshot.jobs->size()) {
      for (NodeId h : snapshot.jobs->job(a.job).hosts) hosts.insert(topo.node(h).name);
    }
  }
  return {hosts.begin(), hosts.end()};
}

namespace {
enum class Mode { kSearch, kNow, kAfterJobsEnd };
std::string_view ModeName(Mode m) {
  switch (m) {
    case Mode::kSearch:
      return "search";
    case Mode::kNow:
      return "now";
    case Mode::kAfterJobsEnd:
      return "after_jobs_end";
  }
  return "search";
}
}  // namespace

class CampaignPlanner {
 public:
  CampaignPlanner(const Advisor& adv, const Context& ctx, const CampaignRequest& req, const policies::Policy& policy,
                  std::stop_token stop)
      : adv_(adv), ctx_(ctx), req_(req), policy_(policy), stop_(stop), opts_(adv.options()) {
    job_policy_ = fabric_policy_ = policy;
    job_policy_.fabric_rules.clear();
    fabric_policy_.job_rules.clear();
    for (const auto& r : policy.fabric_rules) has_windows_ |= r.kind == policies::FabricRuleKind::kChangeWindows;
  }

  Result<Campaign> Run() {
    Campaign out;
    for (const auto& item : req_.items) {
      int64_t e = std::max(req_.window.start_unix_s, ctx_.now);
      if (item.earliest) e = std::max(e, *item.earliest);
      item_earliest_.push_back(e);
    }
    auto groups = Group();
    if (!groups) return tl::unexpected(groups.error());
    groups_ = std::move(*groups);
    for (const auto& g : groups_) {
      Batch b;
      b.items = g;
      for (int i : g) {
        b.drain = b.drain.Merge(req_.items[i].drain);
        b.duration_s = std::max(b.duration_s, static_cast<int64_t>(std::ceil(req_.items[i].duration_s)));
        b.earliest = std::max(b.earliest, item_earliest_[i]);
        if (req_.items[i].deadline) b.deadline = std::min(b.deadline, *req_.items[i].deadline);
      }
      b.combined = ctx_.active.Merge(b.drain);
      auto jl = adv_.JobLevelOf(ctx_, b.combined, stop_);
      if (!jl) return tl::unexpected(jl.error());
      b.base = std::move(*jl);
      batches_.push_back(std::move(b));
    }
    for (Mode m : {Mode::kSearch, Mode::kNow, Mode::kAfterJobsEnd}) {
      auto s = Build(m);
      if (!s) return tl::unexpected(s.error());
      if (m == Mode::kSearch)
        out.chosen = std::move(*s);
      else
        out.strategies.push_back(std::move(*s));
    }
    // Never worse than a simple strategy: fewer batches that miss (unscheduled
    // or not allowed) first, then the objective.
    auto misses = [](const CampaignSchedule& s) {
      int n = static_cast<int>(s.unscheduled.size());
      for (const auto& b : s.batches) n += b.predicted.decision != Decision::kAllow;
      return n;
    };
    auto better = [&](const CampaignSchedule& a, const CampaignSchedule& b) {
      if (misses(a) != misses(b)) return misses(a) < misses(b);
      if (req_.objective == CampaignObjective::kFinish && a.finish != b.finish) return a.finish < b.finish;
      if (std::fabs(a.gpu_hours() - b.gpu_hours()) > 1e-6) return a.gpu_hours() < b.gpu_hours();
      return a.finish < b.finish;
    };
    for (const auto& s : out.strategies) {
      if (better(s, out.chosen)) {
        out.notes.push_back(
            fmt::format("the simple strategy '{}' beats the search on this campaign: it is chosen", s.strategy));
        out.chosen = s;
      }
    }
    out.notes.insert(out.notes.end(), notes_.begin(), notes_.end());
    if (!req_.flow) out.notes.push_back("job level only: slowdown costs need the flow level (modes: [\"flow\"])");
    return out;
  }

 private:
  struct Batch {
    std::vector<int> items;
    Drain drain, combined;
    int64_t duration_s = 0;
    int64_t earliest = 0;
    int64_t deadline = INT64_MAX;
    Advisor::JobLevel base;  // on the snapshot as given
  };
  // The fabric between batches: jobs moved so far (on `snap`).
  struct State {
    model::SnapshotPtr snap;
    std::vector<JobId> moved;
    int64_t cursor = 0;
  };
  struct Candidate {
    int64_t start = 0;
    bool feasible = false;
    CampaignBatch batch;  // actions, predicted (job level), costs but slowdown
  };

  // Step 1: batches by the fabric rules (change windows are a matter of time: step 2).
  Result<std::vector<std::vector<int>>> Group() {
    const int n = static_cast<int>(req_.items.size());
    std::vector<int> order(n);
    for (int i = 0; i < n; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return item_earliest_[a] < item_earliest_[b]; });
    // Fabric rules depend on the drain and the fabric only, not on the jobs:
    // the policy on an impact without jobs, no simulation needed.
    auto fabric_ok = [&](const std::vector<int>& items) -> Result<bool> {
      policies::Impact impact;
      impact.topology = ctx_.snapshot->topology.get();
      for (int i : items) impact.drain = impact.drain.Merge(req_.items[i].drain);
      if (!ctx_.active.empty()) impact.active.push_back(ctx_.active);
      impact.now_unix_s = ctx_.now;
      if (ctx_.drift) impact.drift = *ctx_.drift;
      auto v = policies::Evaluate(policy_, impact);
      if (!v) return tl::unexpected(v.error());
      return !HasStaticFabricReason(*v);
    };
    std::vector<std::vector<int>> groups;
    std::vector<bool> placed(n, false);
    for (int a = 0; a < n; ++a) {
      int i = order[a];
      if (placed[i]) continue;
      placed[i] = true;
      std::vector<int> batch = {i};
      auto alone = fabric_ok(batch);
      if (!alone) return tl::unexpected(alone.error());
      if (*alone) {
        for (int c = a + 1; c < n && static_cast<int>(batch.size()) < req_.max_concurrent; ++c) {
          int k = order[c];
          if (placed[k]) continue;
          auto trial = batch;
          trial.push_back(k);
          auto ok = fabric_ok(trial);
          if (!ok) return tl::unexpected(ok.error());
          if (*ok) {
            batch = std::move(trial);
            placed[k] = true;
          }
        }
      }
      groups.push_back(std::move(batch));
    }
    return groups;
  }

  bool HasStaticFabricReason(const policies::Verdict& v) const {
    for (const auto& r : v.reasons) {
      if (r.job_rule) continue;
      bool window = false;
      for (const auto& fr : policy_.fabric_rules) {
        if (fr.name == r.rule && fr.kind == policies::FabricRuleKind::kChangeWindows) window = true;
      }
      if (!window) return true;
    }
    return false;
  }

  // The job-level scenario of batch `b` on the state's fabric (moves
  // applied). Moves only accumulate within one schedule, so each batch's
  // job-level result is patched with the jobs moved since it was last asked.
  Result<Scenario> ScenarioAt(int b, const State& st) {
    auto& p = patched_[b];
    Context c = ctx_;
    c.snapshot = st.snap;
    c.cache = nullptr;
    if (!p.init) {
      p.jl = batches_[b].base;
      p.init = true;
    }
    if (p.count < st.moved.size()) {
      std::vector<JobId> fresh(st.moved.begin() + static_cast<long>(p.count), st.moved.end());
      auto jl = adv_.PatchMoved(p.jl, c, batches_[b].combined, fresh, stop_);
      if (!jl) return tl::unexpected(jl.error());
      p.jl = std::move(*jl);
      p.count = st.moved.size();
      p.sc.reset();
    }
    if (!p.sc || p.snap != st.snap) {
      auto s = adv_.Simulate(c, batches_[b].drain, false, opts_.flow, policy_, stop_, &p.jl);
      if (!s) return tl::unexpected(s.error());
      p.sc = std::move(*s);
      p.snap = st.snap;
    }
    return *p.sc;
  }

  std::set<uint32_t> EndedBy(const model::Snapshot& snap, int64_t t) const {
    std::set<uint32_t> ended;
    const auto& jobs = snap.jobs->jobs();
    for (size_t j = 0; j < jobs.size(); ++j) {
      if (jobs[j].expected_end && *jobs[j].expected_end <= t) ended.insert(static_cast<uint32_t>(j));
    }
    return ended;
  }

  // The policy on `sc`'s impacts without the jobs in `gone`, at time `t`.
  // Job rules and fabric rules are evaluated apart: the fabric rules depend
  // on the drain alone (and on the time, for change windows), and measuring
  // them walks every link, so their verdict is kept per drain unless the
  // policy has change windows. The merged verdict is what Evaluate returns:
  // job rules' reasons, then fabric rules', the worst decision.
  Result<std::pair<policies::Verdict, std::vector<policies::JobImpact>>> Judge(const Scenario& sc,
                                                                               const std::set<uint32_t>& gone,
                                                                               int64_t t, const Drain& drain) {
    policies::Impact impact;
    impact.topology = ctx_.snapshot->topology.get();
    impact.drain = drain;
    if (!ctx_.active.empty()) impact.active.push_back(ctx_.active);
    impact.now_unix_s = t;
    if (ctx_.drift) impact.drift = *ctx_.drift;
    for (const auto& pi : sc.impacts) {
      if (!gone.count(pi.job.value)) impact.jobs.push_back(pi);
    }
    auto v = policies::Evaluate(job_policy_, impact);
    if (!v) return tl::unexpected(v.error());
    std::vector<uint32_t> key;
    for (auto n : drain.switches) key.push_back(n.value);
    key.push_back(UINT32_MAX);
    for (auto l : drain.links) key.push_back(l.value);
    const policies::Verdict* fabric = nullptr;
    policies::Verdict fresh;
    if (auto it = fabric_verdicts_.find(key); it != fabric_verdicts_.end() && !has_windows_) {
      fabric = &it->second;
    } else {
      impact.jobs.swap(fresh_jobs_);
      auto f = policies::Evaluate(fabric_policy_, impact);
      impact.jobs.swap(fresh_jobs_);
      if (!f) return tl::unexpected(f.error());
      fresh = std::move(*f);
      if (!has_windows_) {
        fabric = &(fabric_verdicts_[key] = std::move(fresh));
      } else {
        fabric = &fresh;
      }
    }
    v->reasons.insert(v->reasons.end(), fabric->reasons.begin(), fabric->reasons.end());
    v->unchecked.insert(v->unchecked.end(), fabric->unchecked.begin(), fabric->unchecked.end());
    if (Severity(fabric->decision) > Severity(v->decision)) v->decision = fabric->decision;
    v->policy = policy_.name;
    return std::make_pair(std::move(*v), std::move(impact.jobs));
  }

  std::vector<JobId> Violators(const policies::Verdict& v, const model::Snapshot& snap) const {
    std::vector<JobId> out;
    for (const auto& id : policies::JobsViolating(v, policies::Action::kWarn)) {
      if (auto j = snap.jobs->FindJob(id)) out.push_back(*j);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  // The first start >= t outside every blackout, or nullopt when the batch
  // then misses the window or a deadline.
  std::optional<int64_t> Feasible(const Batch& b, int64_t t) const {
    t = std::max(t, b.earliest);
    for (size_t round = 0; round <= req_.blackouts.size(); ++round) {
      bool moved = false;
      for (const auto& bo : req_.blackouts) {
        if (t < bo.end_unix_s && t + b.duration_s > bo.start_unix_s) {
          t = bo.end_unix_s;
          moved = true;
        }
      }
      if (!moved) break;
    }
    if (t + b.duration_s > req_.window.end_unix_s || t + b.duration_s > b.deadline) return std::nullopt;
    return t;
  }

  // Batch `b` started at `t` from state `st`: actions, verdict, costs.
  // REQUIRES: cursor_violators = Violators at st.cursor (CursorViolators).
  Result<Candidate> Evaluate(int bi, const State& st, int64_t t, const std::vector<JobId>& cursor_violators) {
    const Batch& b = batches_[bi];
    const auto& snap = *st.snap;
    const auto& jobs = snap.jobs->jobs();
    const auto& topo = *snap.topology;
    Candidate c;
    c.start = t;
    c.feasible = true;
    auto sc = ScenarioAt(bi, st);
    if (!sc) return tl::unexpected(sc.error());
    auto ended = EndedBy(snap, t);
    auto at_t = Judge(*sc, ended, t, b.drain);
    if (!at_t) return tl::unexpected(at_t.error());
    // Waits: who broke a rule at the cursor and has ended by t.
    for (JobId j : cursor_violators) {
      if (ended.count(j.value)) {
        CampaignAction a;
        a.kind = CampaignActionKind::kWait;
        a.job = j;
        a.at = *jobs[j.value].expected_end;
        c.batch.actions.push_back(a);
      }
    }
    std::set<uint32_t> gone = ended;
    std::vector<NodeId> used;
    std::vector<CampaignAction> migrations;
    for (JobId j : Violators(at_t->first, snap)) {
      const auto& job = jobs[j.value];
      auto target = FindMigrationTarget(snap, job, b.combined, used);
      if (target.empty()) continue;
      CampaignAction a;
      a.kind = CampaignActionKind::kMigrate;
      a.job = j;
      a.from_hosts = job.hosts;
      a.to_hosts = target;
      a.at = t;
      a.gpu_hours = RestartGpuHours(job, topo, t, opts_);
      if (job.started_at && job.checkpoint && job.checkpoint->interval_s > 0 && *job.started_at <= t) {
        // Right after the last checkpoint since the cursor: only the restart is lost.
        int64_t last = t - static_cast<int64_t>(LostWorkSeconds(job, t, opts_));
        if (last >= st.cursor && last >= *job.started_at) {
          a.at = last;
          a.after_checkpoint = true;
          a.gpu_hours = RestartCostSeconds(job, opts_) * JobGpus(job, topo) / 3600.0;
        }
      }
      used.insert(used.end(), target.begin(), target.end());
      gone.insert(j.value);
      c.batch.migration_gpu_hours += a.gpu_hours;
      migrations.push_back(std::move(a));
    }
    std::stable_sort(migrations.begin(), migrations.end(), [](const auto& x, const auto& y) { return x.at < y.at; });
    c.batch.actions.insert(c.batch.actions.begin(), migrations.begin(), migrations.end());
    // Without migrations the verdict at t stands (the policy pass is the
    // dear part of a candidate: fabric rules walk every link).
    auto after = gone.size() == ended.size() ? std::move(at_t) : Judge(*sc, gone, t, b.drain);
    if (!after) return tl::unexpected(after.error());
    c.batch.verdict = after->first;
    c.batch.predicted = Predict(*sc);
    c.batch.predicted.decision = after->first.decision;
    c.batch.predicted.reasons = static_cast<int>(after->first.reasons.size());
    c.batch.predicted.jobs_affected = static_cast<int>(after->second.size());
    c.batch.predicted.jobs_disconnected = 0;
    for (const auto& pi : after->second) {
      if (pi.connected) continue;
      ++c.batch.predicted.jobs_disconnected;
      c.batch.interrupted.push_back(pi.job);
      c.batch.interruption_gpu_hours += RestartGpuHours(jobs[pi.job.value], topo, t, opts_);
    }
    for (int i : b.items) {
      c.batch.delay_gpu_hours += DelayGpuHours(static_cast<double>(t - item_earliest_[i]), opts_);
    }
    c.batch.items = b.items;
    c.batch.drain = b.drain;
    c.batch.start = t;
    c.batch.end = t + b.duration_s;
    return c;
  }

  // Candidate starts of batch `bi` from `st`, feasible ones only.
  Result<std::vector<JobId>> CursorViolators(int bi, const State& st) {
    auto sc = ScenarioAt(bi, st);
    if (!sc) return tl::unexpected(sc.error());
    auto v = Judge(*sc, EndedBy(*st.snap, st.cursor), st.cursor, batches_[bi].drain);
    if (!v) return tl::unexpected(v.error());
    return Violators(v->first, *st.snap);
  }

  Result<std::vector<int64_t>> Starts(int bi, const State& st, Mode mode, const std::vector<JobId>& violators) {
    const Batch& b = batches_[bi];
    const auto& snap = *st.snap;
    std::vector<int64_t> raw = {st.cursor};
    if (mode == Mode::kAfterJobsEnd) {
      int64_t t = st.cursor;
      for (JobId j : violators) {
        const auto& job = snap.jobs->job(j);
        if (job.expected_end) t = std::max(t, *job.expected_end);
      }
      raw = {t};
    } else if (mode == Mode::kSearch) {
      for (JobId j : violators) {
        const auto& job = snap.jobs->job(j);
        if (job.expected_end && *job.expected_end > st.cursor) raw.push_back(*job.expected_end);
        if (auto ck = NextCheckpoint(job, st.cursor)) raw.push_back(*ck);
      }
      for (const auto& bo : req_.blackouts) {
        if (bo.end_unix_s > st.cursor) raw.push_back(bo.end_unix_s);
      }
      for (int i : b.items) raw.push_back(item_earliest_[i]);
    }
    std::vector<int64_t> out;
    for (int64_t t : raw) {
      if (auto f = Feasible(b, std::max(t, st.cursor))) out.push_back(*f);
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }

  // Lower is better: allowed first, then the objective.
  bool Prefer(const Candidate& a, const Candidate& b) const {
    int sa = Severity(a.batch.predicted.decision), sb = Severity(b.batch.predicted.decision);
    if (sa != sb) return sa < sb;
    if (req_.objective == CampaignObjective::kFinish && a.start != b.start) return a.start < b.start;
    double ca = a.batch.gpu_hours(), cb = b.batch.gpu_hours();
    if (std::fabs(ca - cb) > 1e-9) return ca < cb;
    return a.start < b.start;
  }

  Result<std::optional<Candidate>> Best(int bi, const State& st, Mode mode) {
    auto violators = CursorViolators(bi, st);
    if (!violators) return tl::unexpected(violators.error());
    auto starts = Starts(bi, st, mode, *violators);
    if (!starts) return tl::unexpected(starts.error());
    std::optional<Candidate> best;
    for (int64_t t : *starts) {
      if (stop_.stop_requested()) return MakeError(ErrorCode::kCancelled, "campaign cancelled");
      auto c = Evaluate(bi, st, t, *violators);
      if (!c) return tl::unexpected(c.error());
      if (!best || Prefer(*c, *best)) best = std::move(*c);
    }
    return best;
  }

  Result<CampaignSchedule> Build(Mode mode) {
    CampaignSchedule s;
    s.strategy = std::string(ModeName(mode));
    State st;
    st.snap = ctx_.snapshot;
    st.cursor = std::max(req_.window.start_unix_s, ctx_.now);
    std::vector<int> remaining;
    for (size_t b = 0; b < batches_.size(); ++b) remaining.push_back(static_cast<int>(b));
    patched_.assign(batches_.size(), Patched{});  // a new state history
    while (!remaining.empty()) {
      std::optional<Candidate> pick;
      size_t pick_at = 0;
      if (mode == Mode::kSearch) {
        // Next goes the batch whose best start costs least counting what it
        // does to the others: every item still waiting is delayed until the
        // batch ends (objective finish: the batch that ends first). A batch
        // with no feasible start now has none later either.
        int waiting_items = 0;
        for (int b : remaining) waiting_items += static_cast<int>(batches_[b].items.size());
        std::vector<int> alive;
        double pick_score = 0;
        for (int b : remaining) {
          auto c = Best(b, st, mode);
          if (!c) return tl::unexpected(c.error());
          if (!*c) {
            s.unscheduled.insert(s.unscheduled.end(), batches_[b].items.begin(), batches_[b].items.end());
            continue;
          }
          alive.push_back(b);
          const int others = waiting_items - static_cast<int>(batches_[b].items.size());
          double score = req_.objective == CampaignObjective::kFinish
                             ? static_cast<double>((*c)->batch.end)
                             : (*c)->batch.gpu_hours() +
                                   DelayGpuHours(static_cast<double>((*c)->batch.end - st.cursor), opts_) * others;
          int sev = Severity((*c)->batch.predicted.decision);
          bool take = !pick || sev < Severity(pick->batch.predicted.decision) ||
                      (sev == Severity(pick->batch.predicted.decision) && score < pick_score - 1e-9);
          if (take) {
            pick = std::move(**c);
            pick_score = score;
            pick_at = alive.size() - 1;
          }
        }
        remaining = std::move(alive);
        if (!pick) break;
      } else {
        // The simple strategies keep the grouping's order.
        auto c = Best(remaining.front(), st, mode);
        if (!c) return tl::unexpected(c.error());
        if (!*c) {
          const auto& items = batches_[remaining.front()].items;
          s.unscheduled.insert(s.unscheduled.end(), items.begin(), items.end());
          remaining.erase(remaining.begin());
          continue;
        }
        pick = std::move(**c);
      }
      const int bi = remaining[pick_at];
      for (const auto& a : pick->batch.actions) {
        if (a.kind != CampaignActionKind::kMigrate) continue;
        st.snap = WithJobMoved(*st.snap, a.job, a.to_hosts);
        st.moved.push_back(a.job);
      }
      auto verified = Verify(bi, std::move(pick->batch), st);
      if (!verified) return tl::unexpected(verified.error());
      st.cursor = verified->end;
      s.batches.push_back(std::move(*verified));
      remaining.erase(remaining.begin() + static_cast<long>(pick_at));
    }
    std::sort(s.unscheduled.begin(), s.unscheduled.end());
    s.all_allowed = s.unscheduled.empty();
    for (const auto& b : s.batches) {
      s.all_allowed = s.all_allowed && b.predicted.decision == Decision::kAllow;
      s.finish = std::max(s.finish, b.end);
      s.migration_gpu_hours += b.migration_gpu_hours;
      s.interruption_gpu_hours += b.interruption_gpu_hours;
      s.slowdown_gpu_hours += b.slowdown_gpu_hours;
      s.delay_gpu_hours += b.delay_gpu_hours;
    }
    return s;
  }

  // Step 3 for one batch, on `st` (its own moves applied): the verdict on
  // the fabric as it will be at the batch's start, moved jobs judged where
  // they went; with the flow level when asked (ended jobs send nothing).
  Result<CampaignBatch> Verify(int bi, CampaignBatch batch, const State& st) {
    const auto& snap = *st.snap;
    auto ended = EndedBy(snap, batch.start);
    Scenario sc;
    if (req_.flow) {
      auto spec = model::DescribeJobs(*snap.jobs, *snap.topology);
      for (uint32_t e : ended) spec.jobs[e].iteration.collectives.clear();
      Context c = ctx_;
      c.snapshot = model::MakeSnapshot(snap.topology, snap.topology_version, spec, snap.jobs_version);
      c.cache = std::make_shared<SimCache>(c.snapshot);
      auto jl = ScenarioJobLevel(bi, st);
      if (!jl) return tl::unexpected(jl.error());
      auto s = adv_.Simulate(c, batch.drain, true, opts_.flow, policy_, stop_, &*jl);
      if (!s) return tl::unexpected(s.error());
      sc = std::move(*s);
    } else {
      auto s = ScenarioAt(bi, st);
      if (!s) return tl::unexpected(s.error());
      sc = std::move(*s);
    }
    auto v = Judge(sc, ended, batch.start, batch.drain);
    if (!v) return tl::unexpected(v.error());
    const auto& topo = *snap.topology;
    batch.verdict = v->first;
    Prediction p = Predict(sc);
    p.decision = v->first.decision;
    p.reasons = static_cast<int>(v->first.reasons.size());
    p.jobs_affected = static_cast<int>(v->second.size());
    p.jobs_disconnected = 0;
    p.max_slowdown_pct = 0;
    batch.interrupted.clear();
    batch.interruption_gpu_hours = 0;
    batch.slowdown_gpu_hours = 0;
    for (const auto& pi : v->second) {
      const auto& job = snap.jobs->job(pi.job);
      if (!pi.connected) {
        ++p.jobs_disconnected;
        batch.interrupted.push_back(pi.job);
        batch.interruption_gpu_hours += RestartGpuHours(job, topo, batch.start, opts_);
      } else if (pi.slowdown_pct) {
        p.max_slowdown_pct = std::max(p.max_slowdown_pct, *pi.slowdown_pct);
        batch.slowdown_gpu_hours +=
            SlowdownGpuHours(JobGpus(job, topo), *pi.slowdown_pct, static_cast<double>(batch.end - batch.start));
      }
    }
    batch.predicted = p;
    return batch;
  }

  Result<Advisor::JobLevel> ScenarioJobLevel(int bi, const State& st) {
    auto s = ScenarioAt(bi, st);  // brings patched_[bi].jl up to date
    if (!s) return tl::unexpected(s.error());
    return patched_[bi].jl;
  }

  const Advisor& adv_;
  const Context& ctx_;
  const CampaignRequest& req_;
  const policies::Policy& policy_;
  std::stop_token stop_;
  const AdvisorOptions& opts_;
  std::vector<int64_t> item_earliest_;
  std::vector<std::vector<int>> groups_;
  std::vector<Batch> batches_;
  struct Patched {
    bool init = false;
    size_t count = 0;  // st.moved entries applied to jl
    Advisor::JobLevel jl;
    model::SnapshotPtr snap;  // of sc
    std::optional<Scenario> sc;
  };
  std::vector<Patched> patched_;  // per batch, for the schedule being built
  std::vector<std::string> notes_;
  policies::Policy job_policy_, fabric_policy_;  // policy_'s job rules, its fabric rules
  bool has_windows_ = false;                     // policy_ has change windows: fabric verdicts depend on time
  std::map<std::vector<uint32_t>, policies::Verdict> fabric_verdicts_;  // by drain, without change windows
  std::vector<policies::JobImpact> fresh_jobs_;                         // always empty
};

Result<Campaign> Advisor::PlanCampaign(const Context& ctx, const CampaignRequest& request,
                                       const policies::Policy& policy, std::stop_token stop) const {
  if (request.items.empty()) return MakeError(ErrorCode::kInvalidArgument, "items: at least one item is required");
  for (size_t i = 0; i < request.items.size(); ++i) {
    const auto& it = request.items[i];
    if (it.drain.empty()) {
      return MakeError(ErrorCode::kInvalidArgument, fmt::format("items[{}]: names no switch and no link", i));
    }
    if (!(it.duration_s > 0)) {
      return MakeError(ErrorCode::kInvalidArgument, fmt::format("items[{}].duration_s: must be > 0", i));
    }
  }
  if (request.window.end_unix_s <= request.window.start_unix_s) {
    return MakeError(ErrorCode::kInvalidArgument, "window: end must be after start");
  }
  if (request.max_concurrent < 1) {
    return MakeError(ErrorCode::kInvalidArgument, "constraints.max_concurrent: must be >= 1");
  }
  CampaignPlanner planner(*this, ctx, request, policy, stop);
  return planner.Run();
}

}  // namespace drainwise::advisor
