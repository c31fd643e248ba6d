// Operator-written gating rules (docs/policies.md): the drainwise.policy/v1
// document, parsed and validated once, at load.
//
// A Policy is plain data. It does not depend on any topology: tier names and
// domain kinds are matched when a drain is evaluated (evaluate.h), so one
// policy file serves every fabric. Parse errors (kInvalidArgument) name the
// rule and the field: "job_rules[2] ('protect-prod').max_slowdown_pct:
// expected a number, got string". Unknown fields are rejected, so a typo
// never silently disables a rule.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/error.h"

namespace drainwise::policies {

inline constexpr std::string_view kPolicyFormat = "drainwise.policy/v1";

// What a rule does when it fires. The verdict is deny if any deny rule fires,
// warn if only warn rules fire, allow otherwise.
enum class Action { kDeny, kWarn };

std::string_view ActionName(Action action);  // "deny" | "warn"

// Which jobs a job rule applies to. Every criterion that is set must hold; an
// empty selector selects every job.
struct JobSelector {
  std::optional<int> priority_at_least;       // priority >= this
  std::optional<int> priority_at_most;        // priority <= this
  std::vector<std::string> tenants;           // tenant is one of these; empty = any
  std::map<std::string, std::string> labels;  // every pair present on the job
  std::vector<std::string> jobs;              // job id is one of these; empty = any

  bool empty() const {
    return !priority_at_least && !priority_at_most && tenants.empty() && labels.empty() && jobs.empty();
  }
  bool Matches(std::string_view job_id, std::string_view tenant, int priority,
               const std::map<std::string, std::string>& job_labels) const;
  bool operator==(const JobSelector&) const = default;
};

// Limits on one job's measured impact. At least one is set. A limit is
// breached strictly: a value equal to the limit passes (within 1e-9).
struct JobLimits {
  bool forbid_disconnect = false;                // fires when the job loses connectivity
  std::optional<double> max_slowdown_pct;        // fires when slowdown_pct > this (>= 0)
  std::optional<int> min_paths_after;            // fires when min_paths_after < this (>= 1)
  std::optional<double> min_bandwidth_fraction;  // fires when bandwidth_fraction < this, in (0, 1]
  std::optional<double> min_path_fraction;       // fires when path_fraction < this, in (0, 1]

  bool empty() const {
    return !forbid_disconnect && !max_slowdown_pct && !min_paths_after && !min_bandwidth_fraction && !min_path_fraction;
  }
  bool operator==(const JobLimits&) const = default;
};

struct JobRule {
  std::string name;  // unique across job and fabric rules
  Action action = Action::kDeny;
  std::string description;
  JobSelector select;
  JobLimits limits;
  bool operator==(const JobRule&) const = default;
};

// A weekly window in UTC during which drains are allowed. Minutes are counted
// from 00:00 of each listed day; end <= start means the window runs past
// midnight into the next day (22:00-02:00). end may be 24:00.
struct ChangeWindow {
  std::vector<int> days;  // 0 = Monday ... 6 = Sunday; sorted, unique, non-empty
  int start_minute = 0;   // [0, 1440)
  int end_minute = 0;     // [1, 1440], != start_minute
  bool operator==(const ChangeWindow&) const = default;
};

enum class FabricRuleKind {
  kMaxCapacityDrainedPct,  // capacity of a tier's links down, as % of the tier's total
  kMaxSwitchesDrained,     // switches down at once, active drains included
  kNoSharedDomain,         // no two drained switches share a value of a domain kind
  kChangeWindows,          // the drain happens inside one of the windows
  kNoDrift,                // no drained (or crossed) switch has topology drift
};

std::string_view FabricRuleKindName(FabricRuleKind kind);  // the JSON key of the kind

struct FabricRule {
  std::string name;
  Action action = Action::kDeny;
  std::string description;
  FabricRuleKind kind = FabricRuleKind::kMaxSwitchesDrained;
  // kMaxCapacityDrainedPct: percent in [0, 100]. kMaxSwitchesDrained: count >= 0.
  double limit = 0;
  // All kinds but kChangeWindows: only this tier; empty = each tier
  // (capacity) or all switches together (count, shared domain).
  std::string tier;
  bool per_pod = false;               // kMaxCapacityDrainedPct: measure each pod separately
  std::string domain;                 // kNoSharedDomain: "plane" (Node.plane) or a Node.domains key
  std::vector<ChangeWindow> windows;  // kChangeWindows: non-empty
  // kNoDrift: also the switches the affected jobs' paths cross
  // (Impact::crossed), not only the drained ones.
  bool include_crossed = false;
  bool operator==(const FabricRule&) const = default;
};

struct Policy {
  std::string name;
  std::string description;
  std::vector<JobRule> job_rules;
  std::vector<FabricRule> fabric_rules;
  bool operator==(const Policy&) const = default;
};

// Validates a drainwise.policy/v1 document. Errors: kInvalidArgument naming
// the rule and field.
Result<Policy> ParsePolicy(const nlohmann::json& doc);
// As ParsePolicy, from JSON text (malformed JSON names the byte offset).
Result<Policy> ParsePolicyText(std::string_view text);
// Reads and parses a policy file. Errors: kIo when the file cannot be read,
// kInvalidArgument (prefixed with the path) when it is not a valid policy.
Result<Policy> LoadPolicyFile(const std::string& path);

// The canonical document of `policy`; ParsePolicy(PolicyToJson(p)) == p.
nlohmann::json PolicyToJson(const Policy& policy);

// The policy shipped as policies/default.json, compiled into the binary
// (generated from that file at build time: one source of truth). A test keeps
// it valid; an error here would be a build defect (kInternal).
Result<Policy> DefaultPolicy();
std::string_view DefaultPolicyText();

}  // namespace drainwise::policies
