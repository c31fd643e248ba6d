// Workload profiles for jobs whose workload nobody declared.
//
// Order, first hit wins:
//   1. the job already has collectives           -> left alone (its source stays, normally "declared")
//   2. `chakra_jobs` maps the job id to a known Chakra profile          -> "chakra"
//   3. the first rule whose `match` fits the job's labels:
//        with `chakra` naming a known profile -> "chakra";
//        with an `iteration`                   -> "rule"
//   4. `default_iteration`                                              -> "default"
// Slurm jobs carry labels partition/user/account/qos, Kubernetes jobs their
// shared pod labels and namespace, so one rule form matches both.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "connectors/chakra.h"
#include "model/error.h"
#include "model/jobs.h"

namespace drainwise::connectors {

using IterationSpec = model::BasicIteration<std::string>;

struct ProfileRule {
  std::string name;                          // for messages
  std::map<std::string, std::string> match;  // label -> glob; every entry must match
  std::string chakra;                        // name of a Chakra profile, or ""
  std::optional<IterationSpec> iteration;    // used when no Chakra profile applies
};

// The documented default: one ring allreduce of 1 GiB per iteration after
// 1 s of compute, no overlap (a data-parallel gradient sync of a mid-sized
// model). A guess, and labelled "default" so nobody takes it for a measurement.
IterationSpec DefaultIteration();

struct ProfileRules {
  std::vector<ProfileRule> rules;
  std::map<std::string, std::string> chakra_jobs;  // job id glob -> Chakra profile name
  IterationSpec default_iteration = DefaultIteration();
};

using ChakraProfiles = std::map<std::string, ChakraProfile>;

// Sets iteration and profile_source of every job without collectives.
void ApplyProfiles(model::JobsSpec& jobs, const ProfileRules& rules, const ChakraProfiles& chakra);

// {"rules": [{"name", "match": {label: glob}, "chakra": name, "iteration":
// {compute_ms, overlap, collectives: [...]}}], "chakra_jobs": {glob: name},
// "default": {iteration}} — iterations in drainwise.jobs/v1 form. Errors
// name the field ("profiles.rules[1].iteration.collectives[0].kind: ...").
Result<ProfileRules> ParseProfileRules(const nlohmann::json& doc, const std::string& path = "profiles");

}  // namespace drainwise::connectors
