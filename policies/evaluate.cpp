#include "policies/evaluate.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "codec/json_reader.h"

namespace drainwise::policies {

namespace {

using model::Drain;
using model::DrainMask;
using model::LinkId;
using model::Node;
using model::NodeId;
using model::Topology;

// Measures come out of floating-point simulations: a value that equals its
// limit up to rounding passes.
constexpr double kTolerance = 1e-9;

constexpr std::string_view kDayNames[] = {"mon", "tue", "wed", "thu", "fri", "sat", "sun"};

std::string Num(double v) { return fmt::format("{:.4g}", v); }

Status CheckDrain(const Drain& d, const Topology& t, std::string_view what) {
  for (NodeId n : d.switches) {
    if (n.value >= t.node_count()) {
      return InvalidArgument(fmt::format("{}: switch id {} is not in topology '{}'", what, n.value, t.name()));
    }
    if (!t.node(n).is_switch()) {
      return InvalidArgument(fmt::format("{}: '{}' is a host, not a switch", what, t.node(n).name));
    }
  }
  for (LinkId l : d.links) {
    if (l.value >= t.link_count()) {
      return InvalidArgument(fmt::format("{}: link id {} is not in topology '{}'", what, l.value, t.name()));
    }
  }
  return {};
}

Status CheckJob(const JobImpact& j, size_t index) {
  auto bad = [&](std::string_view field, double v) {
    return InvalidArgument(fmt::format("jobs[{}] ('{}').{}: {} is not a finite number", index, j.id, field, v));
  };
  if (!std::isfinite(j.path_fraction)) return bad("path_fraction", j.path_fraction);
  if (!std::isfinite(j.bandwidth_fraction)) return bad("bandwidth_fraction", j.bandwidth_fraction);
  // +infinity is a legitimate slowdown (a cut-off job makes no progress); NaN is a bug upstream.
  if (j.slowdown_pct && std::isnan(*j.slowdown_pct)) return bad("slowdown_pct", *j.slowdown_pct);
  return {};
}

// --- Job rules. ---

void EvaluateJobRule(const JobRule& rule, const std::vector<JobImpact>& jobs, Verdict& v) {
  const JobLimits& l = rule.limits;
  std::vector<std::string> no_slowdown, no_paths;
  for (const JobImpact& j : jobs) {
    if (!rule.select.Matches(j.id, j.tenant, j.priority, j.labels)) continue;
    auto fire = [&](std::string metric, Value measured, Value limit, std::string message) {
      v.reasons.push_back(Reason{rule.name,
                                 rule.action,
                                 true,
                                 j.id,
                                 j.id,
                                 j.job,
                                 {},
                                 std::move(metric),
                                 std::move(measured),
                                 std::move(limit),
                                 std::move(message)});
    };
    std::string who = fmt::format("job '{}' (priority {})", j.id, j.priority);
    if (l.forbid_disconnect && !j.connected) {
      fire("forbid_disconnect", false, true, fmt::format("{} would lose connectivity between its hosts", who));
    }
    if (l.max_slowdown_pct) {
      if (!j.slowdown_pct) {
        no_slowdown.push_back(j.id);
      } else if (*j.slowdown_pct > *l.max_slowdown_pct + kTolerance) {
        fire("max_slowdown_pct", *j.slowdown_pct, *l.max_slowdown_pct,
             fmt::format("{} would slow down by {}%, above the {}% limit", who, Num(*j.slowdown_pct),
                         Num(*l.max_slowdown_pct)));
      }
    }
    if (l.min_paths_after) {
      if (!j.min_paths_after) {
        no_paths.push_back(j.id);
      } else if (*j.min_paths_after < *l.min_paths_after) {
        fire("min_paths_after", static_cast<double>(*j.min_paths_after), static_cast<double>(*l.min_paths_after),
             fmt::format("{} would keep {} path(s) between some pair of its hosts, fewer than {}", who,
                         *j.min_paths_after, *l.min_paths_after));
      }
    }
    if (l.min_bandwidth_fraction && j.bandwidth_fraction < *l.min_bandwidth_fraction - kTolerance) {
      fire("min_bandwidth_fraction", j.bandwidth_fraction, *l.min_bandwidth_fraction,
           fmt::format("{} would keep {}% of its bandwidth, below the {}% limit", who, Num(100 * j.bandwidth_fraction),
                       Num(100 * *l.min_bandwidth_fraction)));
    }
    if (l.min_path_fraction && j.path_fraction < *l.min_path_fraction - kTolerance) {
      fire("min_path_fraction", j.path_fraction, *l.min_path_fraction,
           fmt::format("{} would keep {}% of its paths, below the {}% limit", who, Num(100 * j.path_fraction),
                       Num(100 * *l.min_path_fraction)));
    }
  }
  if (!no_slowdown.empty()) {
    v.unchecked.push_back(
        Unchecked{rule.name, rule.action, "max_slowdown_pct", std::move(no_slowdown),
                  "slowdown not measured (the flow-level simulation did not run) for the selected jobs listed"});
  }
  if (!no_paths.empty()) {
    v.unchecked.push_back(Unchecked{rule.name, rule.action, "min_paths_after", std::move(no_paths),
                                    "paths left not measured for the selected jobs listed"});
  }
}

// --- Fabric rules. ---

// The fabric as the rules see it: the proposed drain on top of the active ones.
struct FabricState {
  const Topology& topology;
  const Drain& proposed;
  Drain active;                     // all active drains merged
  Drain merged;                     // active + proposed
  std::vector<bool> newly_drained;  // per node: drained by the proposal and not already
};

std::vector<std::string> SortedNames(const Topology& t, const std::vector<NodeId>& ids) {
  std::vector<std::string> names;
  for (NodeId n : ids) names.push_back(t.node(n).name);
  std::sort(names.begin(), names.end());
  return names;
}

bool TierExists(const Topology& t, const std::string& tier) {
  for (const auto& [level, name] : t.tiers()) {
    if (name == tier) return true;
  }
  for (NodeId n : t.switches()) {
    if (t.node(n).tier == tier) return true;
  }
  return false;
}

void UnknownTier(const FabricRule& rule, const Topology& t, Verdict& v) {
  v.unchecked.push_back(Unchecked{rule.name,
                                  rule.action,
                                  std::string(FabricRuleKindName(rule.kind)),
                                  {},
                                  fmt::format("topology '{}' has no tier '{}'", t.name(), rule.tier)});
}

struct GroupKey {
  int level;
  std::string tier;
  std::string pod;
  auto operator<=>(const GroupKey&) const = default;
};

// The (tier, pod) group a link belongs to, or nullopt for a link without a
// switch end (not possible in a valid topology, but cheap to guard).
std::optional<GroupKey> GroupOf(const Topology& t, LinkId l, bool per_pod) {
  const model::Link& link = t.link(l);
  const Node& a = t.node(link.a);
  const Node& b = t.node(link.b);
  const Node& upper = a.level >= b.level ? a : b;
  if (!upper.is_switch()) return std::nullopt;
  return GroupKey{upper.level, upper.tier, per_pod ? upper.pod : std::string()};
}

struct GroupMeasure {
  TierCapacity capacity;
  double active_drained_bps = 0;
  std::set<NodeId> switches;  // drained switches at an end of a down link of the group
};

std::map<GroupKey, GroupMeasure> MeasureGroups(const FabricState& s, bool per_pod) {
  const Topology& t = s.topology;
  DrainMask merged(t, s.merged);
  DrainMask active(t, s.active);
  std::map<GroupKey, GroupMeasure> groups;
  for (size_t i = 0; i < t.link_count(); ++i) {
    LinkId l(i);
    auto key = GroupOf(t, l, per_pod);
    if (!key) continue;
    GroupMeasure& g = groups[*key];
    g.capacity.tier = key->tier;
    g.capacity.pod = key->pod;
    double bps = t.link(l).capacity_bps;
    g.capacity.total_bps += bps;
    if (merged.link_down(l)) {
      g.capacity.drained_bps += bps;
      for (NodeId end : {t.link(l).a, t.link(l).b}) {
        if (merged.node_down(end)) g.switches.insert(end);
      }
    }
    if (active.link_down(l)) g.active_drained_bps += bps;
  }
  return groups;
}

void EvaluateCapacity(const FabricRule& rule, const FabricState& s, Verdict& v) {
  const Topology& t = s.topology;
  if (!rule.tier.empty() && !TierExists(t, rule.tier)) return UnknownTier(rule, t, v);
  for (const auto& [key, g] : MeasureGroups(s, rule.per_pod)) {
    if (!rule.tier.empty() && key.tier != rule.tier) continue;
    double pct = g.capacity.pct();
    // Fires only when the proposal adds to this group's drained capacity.
    if (!(pct > rule.limit + kTolerance) || !(g.capacity.drained_bps > g.active_drained_bps)) continue;
    std::string where =
        key.pod.empty() ? fmt::format("{} tier", key.tier) : fmt::format("{} tier in pod '{}'", key.tier, key.pod);
    std::vector<std::string> elements = SortedNames(t, std::vector<NodeId>(g.switches.begin(), g.switches.end()));
    std::string message = fmt::format(
        "{}% of the link capacity of the {} would be out of service ({} of {} Gb/s, active drains included), "
        "above the {}% limit",
        Num(pct), where, Num(g.capacity.drained_bps / 1e9), Num(g.capacity.total_bps / 1e9), Num(rule.limit));
    v.reasons.push_back(Reason{rule.name,
                               rule.action,
                               false,
                               where,
                               {},
                               {},
                               std::move(elements),
                               "max_capacity_drained_pct",
                               pct,
                               rule.limit,
                               std::move(message)});
  }
}

void EvaluateSwitchCount(const FabricRule& rule, const FabricState& s, Verdict& v) {
  const Topology& t = s.topology;
  if (!rule.tier.empty() && !TierExists(t, rule.tier)) return UnknownTier(rule, t, v);
  std::vector<NodeId> counted;
  bool adds = false;
  for (NodeId n : s.merged.switches) {
    if (!rule.tier.empty() && t.node(n).tier != rule.tier) continue;
    counted.push_back(n);
    adds = adds || s.newly_drained[n.value];
  }
  double count = static_cast<double>(counted.size());
  if (!adds || !(count > rule.limit)) return;
  std::string subject = rule.tier.empty() ? "fabric" : fmt::format("{} tier", rule.tier);
  std::string message =
      fmt::format("{} {}switches would be drained at once (active drains included), above the limit of {}",
                  counted.size(), rule.tier.empty() ? "" : rule.tier + " ", Num(rule.limit));
  v.reasons.push_back(Reason{rule.name,
                             rule.action,
                             false,
                             std::move(subject),
                             {},
                             {},
                             SortedNames(t, counted),
                             "max_switches_drained",
                             count,
                             rule.limit,
                             std::move(message)});
}

// A switch's value for a domain kind; "" = none (never shared).
const std::string& DomainValue(const Node& n, const std::string& kind) {
  static const std::string kNone;
  if (kind == "plane" && !n.plane.empty()) return n.plane;
  if (kind == "pod" && !n.pod.empty()) return n.pod;
  auto it = n.domains.find(kind);
  return it == n.domains.end() ? kNone : it->second;
}

void EvaluateSharedDomain(const FabricRule& rule, const FabricState& s, Verdict& v) {
  const Topology& t = s.topology;
  if (!rule.tier.empty() && !TierExists(t, rule.tier)) return UnknownTier(rule, t, v);
  std::map<std::string, std::vector<NodeId>> by_value;
  for (NodeId n : s.merged.switches) {
    if (!rule.tier.empty() && t.node(n).tier != rule.tier) continue;
    const std::string& value = DomainValue(t.node(n), rule.domain);
    if (!value.empty()) by_value[value].push_back(n);
  }
  for (const auto& [value, nodes] : by_value) {
    bool adds = std::any_of(nodes.begin(), nodes.end(), [&](NodeId n) { return s.newly_drained[n.value]; });
    if (nodes.size() < 2 || !adds) continue;
    std::vector<std::string> names = SortedNames(t, nodes);
    std::string message = fmt::format("drained switches {} would share {} '{}' (active drains included)",
                                      fmt::join(names, ", "), rule.domain, value);
    v.reasons.push_back(Reason{rule.name,
                               rule.action,
                               false,
                               fmt::format("{} '{}'", rule.domain, value),
                               {},
                               {},
                               std::move(names),
                               "no_shared_domain",
                               static_cast<double>(nodes.size()),
                               1.0,
                               std::move(message)});
  }
}

std::string DescribeWindows(const std::vector<ChangeWindow>& windows) {
  std::vector<std::string> parts;
  for (const ChangeWindow& w : windows) {
    std::vector<std::string_view> days;
    for (int d : w.days) days.push_back(d >= 0 && d < 7 ? kDayNames[d] : std::string_view("?"));
    parts.push_back(fmt::format("{} {:02}:{:02}-{:02}:{:02}", fmt::join(days, ","), w.start_minute / 60,
                                w.start_minute % 60, w.end_minute / 60, w.end_minute % 60));
  }
  return fmt::format("{} UTC", fmt::join(parts, "; "));
}

void EvaluateChangeWindows(const FabricRule& rule, const FabricState& s, int64_t now, Verdict& v) {
  constexpr int64_t kDay = 86400, kWeekMinutes = 7 * 1440;
  int64_t days = now >= 0 ? now / kDay : -((-now + kDay - 1) / kDay);  // floor division
  int64_t second_of_day = now - days * kDay;
  // 1970-01-01 was a Thursday (3 with Monday = 0).
  int dow = static_cast<int>(((days % 7) + 7 + 3) % 7);
  int64_t minute_of_week = dow * 1440 + second_of_day / 60;
  for (const ChangeWindow& w : rule.windows) {
    int length = w.end_minute > w.start_minute ? w.end_minute - w.start_minute : w.end_minute + 1440 - w.start_minute;
    for (int d : w.days) {
      int64_t start = d * 1440 + w.start_minute;
      // A Sunday window that runs past midnight covers the start of Monday.
      for (int64_t m : {minute_of_week, minute_of_week + kWeekMinutes}) {
        if (m >= start && m < start + length) return;
      }
    }
  }
  std::string when = fmt::format("{} {:02}:{:02} UTC", kDayNames[dow], second_of_day / 3600, second_of_day / 60 % 60);
  std::string windows = DescribeWindows(rule.windows);
  std::string message =
      fmt::format("a drain at {} ({}) is outside every change window ({})", codec::FormatRfc3339(now), when, windows);
  v.reasons.push_back(Reason{rule.name,
                             rule.action,
                             false,
                             "drain",
                             {},
                             {},
                             SortedNames(s.topology, s.proposed.switches),
                             "change_windows",
                             std::move(when),
                             std::move(windows),
                             std::move(message)});
}

// The drained switches (and the ends of drained links), plus with
// include_crossed the switches on the affected jobs' paths, that have drift.
void EvaluateDrift(const FabricRule& rule, const FabricState& s, const Impact& impact, Verdict& v) {
  if (impact.drift.empty()) return;
  std::vector<std::string> touched = SortedNames(s.topology, s.proposed.switches);
  for (LinkId l : s.proposed.links) {
    const auto& link = s.topology.link(l);
    touched.push_back(s.topology.node(link.a).name);
    touched.push_back(s.topology.node(link.b).name);
  }
  size_t drained = touched.size();
  if (rule.include_crossed) touched.insert(touched.end(), impact.crossed.begin(), impact.crossed.end());
  std::vector<std::string> seen;
  for (size_t i = 0; i < touched.size(); ++i) {
    const std::string& name = touched[i];
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) continue;
    seen.push_back(name);
    auto it = impact.drift.find(name);
    if (it == impact.drift.end() || it->second.empty()) continue;
    std::string how = i < drained ? "drained" : "on an affected job's path";
    std::string message =
        fmt::format("{} ({}) has topology drift: {}{}", name, how, it->second.front(),
                    it->second.size() > 1 ? fmt::format(" (and {} more)", it->second.size() - 1) : std::string());
    v.reasons.push_back(Reason{rule.name,
                               rule.action,
                               false,
                               name,
                               {},
                               {},
                               {name},
                               "no_drift",
                               static_cast<double>(it->second.size()),
                               0.0,
                               std::move(message)});
  }
}

}  // namespace

std::string_view DecisionName(Decision decision) {
  switch (decision) {
    case Decision::kAllow:
      return "allow";
    case Decision::kWarn:
      return "warn";
    case Decision::kDeny:
      return "deny";
  }
  return "allow";
}

Result<Verdict> Evaluate(const Policy& policy, const Impact& impact) {
  if (impact.topology == nullptr) return InvalidArgument("impact: no topology");
  const Topology& t = *impact.topology;
  if (auto st = CheckDrain(impact.drain, t, "drain"); !st) return tl::unexpected(st.error());
  for (size_t i = 0; i < impact.active.size(); ++i) {
    if (auto st = CheckDrain(impact.active[i], t, fmt::format("active[{}]", i)); !st) {
      return tl::unexpected(st.error());
    }
  }
  for (size_t i = 0; i < impact.jobs.size(); ++i) {
    if (auto st = CheckJob(impact.jobs[i], i); !st) return tl::unexpected(st.error());
  }

  Verdict v;
  v.policy = policy.name;
  if (impact.drain.empty()) return v;  // nothing changes: nothing to gate

  for (const JobRule& rule : policy.job_rules) EvaluateJobRule(rule, impact.jobs, v);

  FabricState s{t, impact.drain, {}, {}, std::vector<bool>(t.node_count(), false)};
  for (const Drain& d : impact.active) s.active = s.active.Merge(d);
  s.merged = s.active.Merge(impact.drain);
  for (NodeId n : impact.drain.switches) {
    s.newly_drained[n.value] = !std::binary_search(s.active.switches.begin(), s.active.switches.end(), n);
  }
  for (const FabricRule& rule : policy.fabric_rules) {
    switch (rule.kind) {
      case FabricRuleKind::kMaxCapacityDrainedPct:
        EvaluateCapacity(rule, s, v);
        break;
      case FabricRuleKind::kMaxSwitchesDrained:
        EvaluateSwitchCount(rule, s, v);
        break;
      case FabricRuleKind::kNoSharedDomain:
        EvaluateSharedDomain(rule, s, v);
        break;
      case FabricRuleKind::kChangeWindows:
        EvaluateChangeWindows(rule, s, impact.now_unix_s, v);
        break;
      case FabricRuleKind::kNoDrift:
        EvaluateDrift(rule, s, impact, v);
        break;
    }
  }

  for (const Reason& r : v.reasons) {
    if (r.action == Action::kDeny) {
      v.decision = Decision::kDeny;
      break;
    }
    v.decision = Decision::kWarn;
  }
  return v;
}

std::vector<std::string> JobsViolating(const Verdict& verdict, Action at_least, std::optional<std::string> rule) {
  std::vector<std::string> out;
  for (const Reason& r : verdict.reasons) {
    if (!r.job_rule) continue;
    if (at_least == Action::kDeny && r.action != Action::kDeny) continue;
    if (rule && r.rule != *rule) continue;
    if (std::find(out.begin(), out.end(), r.job) == out.end()) out.push_back(r.job);
  }
  return out;
}

std::vector<TierCapacity> CapacityDrained(const Topology& topology, const Drain& drain, bool per_pod) {
  FabricState s{topology, drain, {}, drain, {}};
  std::vector<TierCapacity> out;
  for (auto& [key, g] : MeasureGroups(s, per_pod)) out.push_back(g.capacity);
  return out;
}

}  // namespace drainwise::policies
