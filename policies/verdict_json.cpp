#include "policies/verdict_json.h"

#include <cmath>

namespace drainwise::policies {

using json = nlohmann::json;

json ValueToJson(const Value& value) {
  struct Visitor {
    json operator()(std::monostate) const { return nullptr; }
    json operator()(bool b) const { return b; }
    // nlohmann would print infinity as null, losing the difference between
    // "unbounded" and "not measured".
    json operator()(double d) const { return std::isfinite(d) ? json(d) : json(d > 0 ? "inf" : "-inf"); }
    json operator()(const std::string& s) const { return s; }
  };
  return std::visit(Visitor{}, value);
}

json ReasonToJson(const Reason& r) {
  json j = {{"rule", r.rule},
            {"action", ActionName(r.action)},
            {"scope", r.job_rule ? "job" : "fabric"},
            {"subject", r.subject},
            {"metric", r.metric},
            {"measured", ValueToJson(r.measured)},
            {"limit", ValueToJson(r.limit)},
            {"message", r.message}};
  if (r.job_rule) j["job"] = r.job;
  if (!r.elements.empty()) j["elements"] = r.elements;
  return j;
}

json VerdictToJson(const Verdict& v) {
  json reasons = json::array();
  for (const Reason& r : v.reasons) reasons.push_back(ReasonToJson(r));
  json unchecked = json::array();
  for (const Unchecked& u : v.unchecked) {
    json j = {{"rule", u.rule}, {"action", ActionName(u.action)}, {"metric", u.metric}, {"message", u.message}};
    if (!u.jobs.empty()) j["jobs"] = u.jobs;
    unchecked.push_back(std::move(j));
  }
  return {{"decision", DecisionName(v.decision)},
          {"policy", v.policy},
          {"reasons", std::move(reasons)},
          {"unchecked", std::move(unchecked)}};
}

}  // namespace drainwise::policies
