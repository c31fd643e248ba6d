// Evaluating a Policy on an Impact: the verdict a change ticket can act on.
//
// Pure and deterministic: no clock (the time is Impact::now_unix_s), no I/O,
// no globals; safe to call concurrently. A denial is a result, not an error.
#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "model/drain.h"
#include "model/error.h"
#include "model/ids.h"
#include "model/topology.h"
#include "policies/impact.h"
#include "policies/policy.h"

namespace drainwise::policies {

enum class Decision { kAllow, kWarn, kDeny };

std::string_view DecisionName(Decision decision);  // "allow" | "warn" | "deny"

// A measured value or a limit: a number, a flag, or a name (a domain value,
// a time of day).
using Value = std::variant<std::monostate, bool, double, std::string>;

// One rule that fired.
struct Reason {
  std::string rule;  // the rule's name
  Action action = Action::kDeny;
  bool job_rule = false;  // true: a job rule (`job` is set); false: a fabric rule
  // What broke the rule: the job id, or the fabric element ("spine in pod-1",
  // "power 'feed-0'", "fabric", "drain").
  std::string subject;
  std::string job;       // job rules: the job id (== subject)
  model::JobId job_ref;  // job rules: JobImpact::job, when the caller set it
  // Fabric rules: the drained switches involved, proposed and active, sorted
  // by name (for a capacity rule: the switches of the group whose links are
  // down; links drained on their own are not listed).
  std::vector<std::string> elements;
  std::string metric;   // the limit's field: "forbid_disconnect", "max_slowdown_pct", ...
  Value measured;       // e.g. 31.5 (slowdown %), false (connected), 3 (switches)
  Value limit;          // e.g. 25.0, true (forbid_disconnect), 8
  std::string message;  // one readable sentence
};

// A limit that could not be checked because its measure was absent (e.g.
// max_slowdown_pct when the flow-level simulation did not run) or its scope
// does not exist in this fabric (a tier name the topology does not have).
// Never affects the decision; listed so nobody mistakes "not checked" for
// "passed".
struct Unchecked {
  std::string rule;
  Action action = Action::kDeny;  // what the rule would have done
  std::string metric;
  std::vector<std::string> jobs;  // job rules: the selected jobs lacking the measure
  std::string message;
};

struct Verdict {
  Decision decision = Decision::kAllow;
  std::string policy;  // the policy's name
  // Fired rules: job rules in policy order (each over Impact::jobs in order),
  // then fabric rules in policy order.
  std::vector<Reason> reasons;
  std::vector<Unchecked> unchecked;
};

// Evaluates every rule of `policy` on `impact`. Job rules use the measures in
// impact.jobs; fabric rules are measured here on impact.topology with the
// proposed drain and the active drains applied together (docs/policies.md
// defines each measure). A fabric rule only fires when the proposed drain
// contributes to the breach: a limit already exceeded by active drains alone
// does not block an unrelated drain. An empty proposed drain is always allowed.
// Errors (kInvalidArgument): no topology, a drain naming a node or link the
// topology does not have (or a host as a switch), a job measure that is not a
// finite number.
Result<Verdict> Evaluate(const Policy& policy, const Impact& impact);

// Ids of the jobs named by reasons of at least `at_least` severity (kWarn: deny
// and warn; kDeny: deny only), deduplicated, in order of first appearance.
// `rule`, when set, keeps only that rule's reasons. These are the jobs the
// advisor tries to move.
std::vector<std::string> JobsViolating(const Verdict& verdict, Action at_least = Action::kWarn,
                                       std::optional<std::string> rule = std::nullopt);

// --- Fabric measures, exposed for reports and tests. ---

// A tier's links are the links whose upper end (the end with the higher
// level; hosts are level 0) is a switch of that tier; a link between two
// switches of one level belongs to that level, pod of its `a` end. With
// `per_pod`, the links are grouped by the pod of their upper end ("" when it
// has none).
struct TierCapacity {
  std::string tier;
  std::string pod;         // "" without per_pod, or for switches without a pod
  double total_bps = 0;    // sum of capacity_bps of the group's links
  double drained_bps = 0;  // of which down under the drain
  double pct() const { return total_bps > 0 ? 100.0 * drained_bps / total_bps : 0.0; }
};

// Capacity down under `drain` for every (tier[, pod]) group, ordered by tier
// level then pod. REQUIRES: `drain` is valid for `topology`.
std::vector<TierCapacity> CapacityDrained(const model::Topology& topology, const model::Drain& drain, bool per_pod);

}  // namespace drainwise::policies
