#include "connectors/profiles.h"

#include <fmt/format.h>

#include "codec/native.h"
#include "connectors/util.h"

namespace drainwise::connectors {
namespace {

using codec::FieldError;
using internal::json;

bool Matches(const ProfileRule& rule, const model::JobSpec& job) {
  for (const auto& [label, glob] : rule.match) {
    auto it = job.labels.find(label);
    if (it == job.labels.end() || !internal::GlobMatch(glob, it->second)) return false;
  }
  return true;
}

void UseChakra(model::JobSpec& job, const ChakraProfile& p) {
  job.iteration.collectives = p.collectives;
  if (p.compute_s > 0) job.iteration.compute_s = p.compute_s;
  job.profile_source = "chakra";
  // What the trace held that the model could not take exactly, with the job.
  if (auto detail = p.Summary(); !detail.empty()) job.labels["profile_detail"] = detail;
}

// Reuses the native codec's iteration parser so rules accept exactly what a
// drainwise.jobs/v1 document does; the error path is rewritten to `path`.
IterationSpec ParseIteration(const json& j, const std::string& path) {
  json wrapper = {{"format", codec::kJobsFormat},
                  {"jobs", json::array({{{"id", "rule"}, {"hosts", json::array()}, {"iteration", j}}})}};
  auto parsed = codec::ParseJobs(wrapper);
  if (!parsed) {
    std::string msg = parsed.error().message;
    const std::string prefix = "jobs[0].iteration";
    auto at = msg.find(prefix);
    if (at != std::string::npos)
      msg.replace(at, prefix.size(), path);
    else
      msg = path + ": " + msg;
    throw FieldError("", msg);
  }
  return parsed->jobs[0].iteration;
}

}  // namespace

IterationSpec DefaultIteration() {
  IterationSpec it;
  it.compute_s = 1.0;
  it.overlap = 0;
  model::CollectiveSpec c;
  c.kind = model::CollectiveKind::kAllReduce;
  c.algorithm = "ring";
  c.bytes = 1024.0 * 1024 * 1024;
  it.collectives.push_back(c);
  return it;
}

void ApplyProfiles(model::JobsSpec& jobs, const ProfileRules& rules, const ChakraProfiles& chakra) {
  for (auto& job : jobs.jobs) {
    if (!job.iteration.collectives.empty()) continue;
    bool done = false;
    for (const auto& [glob, name] : rules.chakra_jobs) {
      auto p = chakra.find(name);
      if (p != chakra.end() && !p->second.collectives.empty() && internal::GlobMatch(glob, job.id)) {
        UseChakra(job, p->second);
        done = true;
        break;
      }
    }
    for (size_t i = 0; !done && i < rules.rules.size(); ++i) {
      const auto& rule = rules.rules[i];
      if (!Matches(rule, job)) continue;
      if (!rule.chakra.empty()) {
        auto p = chakra.find(rule.chakra);
        if (p != chakra.end() && !p->second.collectives.empty()) {
          UseChakra(job, p->second);
          done = true;
          break;
        }
      }
      if (rule.iteration) {
        job.iteration = *rule.iteration;
        job.profile_source = "rule";
        done = true;
      }
      // A rule naming a Chakra profile that is not (yet) loaded and giving no
      // iteration falls through to the next rule.
    }
    if (!done) {
      job.iteration = rules.default_iteration;
      job.profile_source = "default";
    }
  }
}

Result<ProfileRules> ParseProfileRules(const json& doc, const std::string& path) {
  return internal::Guard("", [&] {
    codec::ObjectReader r(doc, path);
    r.RejectUnknown({"rules", "chakra_jobs", "default"});
    ProfileRules out;
    for (const auto& rr : r.Objects("rules")) {
      rr.RejectUnknown({"name", "match", "chakra", "iteration"});
      ProfileRule rule;
      rule.name = rr.StringOr("name", rr.path());
      rule.match = rr.StringMap("match");
      rule.chakra = rr.StringOr("chakra", "");
      if (rr.Has("iteration")) rule.iteration = ParseIteration(rr.Raw("iteration"), rr.Child("iteration"));
      if (rule.chakra.empty() && !rule.iteration) {
        throw FieldError(rr.path(), "needs \"chakra\" or \"iteration\"");
      }
      out.rules.push_back(std::move(rule));
    }
    out.chakra_jobs = r.StringMap("chakra_jobs");
    if (r.Has("default")) out.default_iteration = ParseIteration(r.Raw("default"), r.Child("default"));
    return out;
  });
}

}  // namespace drainwise::connectors
