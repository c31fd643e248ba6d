// Parsing and validating drainwise.policy/v1 documents: every bad document is
// rejected with the rule and the field named; good ones round-trip.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "policies/policy.h"

namespace drainwise::policies {
namespace {

using nlohmann::json;

json Doc(json job_rules, json fabric_rules = json::array()) {
  return {{"format", "drainwise.policy/v1"},
          {"name", "test"},
          {"job_rules", std::move(job_rules)},
          {"fabric_rules", std::move(fabric_rules)}};
}

// A valid job rule named `name`, with `patch` merged over it.
json JobRuleDoc(const std::string& name, json patch = json::object()) {
  json r = {{"name", name}, {"action", "deny"}, {"forbid_disconnect", true}};
  r.merge_patch(patch);
  return r;
}

// A valid fabric rule named `name`, with `patch` merged over it (a null in
// `patch` removes the field).
json FabricRuleDoc(const std::string& name, json patch = json::object()) {
  json r = {{"name", name}, {"action", "deny"}, {"max_switches_drained", 4}};
  r.merge_patch(patch);
  return r;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct BadCase {
  const char* what;
  json doc;
  std::string message;
};

TEST_CASE("malformed policies are rejected with the rule and the field named") {
  const std::vector<BadCase> cases = {
      {"wrong format",
       {{"format", "drainwise.policy/v2"}, {"name", "x"}},
       "format: expected 'drainwise.policy/v1', got 'drainwise.policy/v2'"},
      {"no format", {{"name", "x"}}, "format: required"},
      {"no name", {{"format", "drainwise.policy/v1"}}, "name: required"},
      {"unknown top-level field",
       {{"format", "drainwise.policy/v1"}, {"name", "x"}, {"rules", json::array()}},
       "rules: unknown field"},
      {"not an object", json::array(), "expected an object, got array"},
      {"job_rules not an array",
       {{"format", "drainwise.policy/v1"}, {"name", "x"}, {"job_rules", json::object()}},
       "job_rules: expected an array, got object"},
      {"rule not an object", Doc(json::array({"protect"})), "job_rules[0]: expected an object, got string"},
      {"the brief's example: a string where a number belongs",
       Doc(json::array({JobRuleDoc("a"), JobRuleDoc("b"), JobRuleDoc("protect-prod", {{"max_slowdown_pct", "25"}})})),
       "job_rules[2] ('protect-prod').max_slowdown_pct: expected a number, got string"},
      {"rule without a name", Doc(json::array({{{"action", "deny"}, {"forbid_disconnect", true}}})),
       "job_rules[0].name: required"},
      {"empty name", Doc(json::array({JobRuleDoc("")})), "job_rules[0].name: must not be empty"},
      {"unknown action", Doc(json::array({JobRuleDoc("r", {{"action", "block"}})})),
       "job_rules[0] ('r').action: expected 'deny' or 'warn', got 'block'"},
      {"no action", Doc(json::array({JobRuleDoc("r", {{"action", nullptr}})})), "job_rules[0] ('r').action: required"},
      {"typo in a limit", Doc(json::array({JobRuleDoc("r", {{"max_slowdown", 10}})})),
       "job_rules[0] ('r').max_slowdown: unknown field"},
      {"typo in the selector", Doc(json::array({JobRuleDoc("r", {{"select", {{"priority", 50}}}})})),
       "job_rules[0] ('r').select.priority: unknown field"},
      {"selector not an object", Doc(json::array({JobRuleDoc("r", {{"select", "prod"}})})),
       "job_rules[0] ('r').select: expected an object, got string"},
      {"fractional priority", Doc(json::array({JobRuleDoc("r", {{"select", {{"priority_at_least", 1.5}}}})})),
       "job_rules[0] ('r').select.priority_at_least: expected an integer"},
      {"inverted priority range",
       Doc(json::array({JobRuleDoc("r", {{"select", {{"priority_at_least", 50}, {"priority_at_most", 10}}}})})),
       "job_rules[0] ('r').select.priority_at_most: 10 is below priority_at_least (50): the rule selects no job"},
      {"tenant of the wrong type", Doc(json::array({JobRuleDoc("r", {{"select", {{"tenant", 5}}}})})),
       "job_rules[0] ('r').select.tenant: expected a string or an array of strings, got number"},
      {"tenant list with a number", Doc(json::array({JobRuleDoc("r", {{"select", {{"tenant", {"a", 5}}}}})})),
       "job_rules[0] ('r').select.tenant[1]: expected a string, got number"},
      {"empty tenant list", Doc(json::array({JobRuleDoc("r", {{"select", {{"tenant", json::array()}}}})})),
       "job_rules[0] ('r').select.tenant: an empty list selects no job; omit the field to select all"},
      {"labels not an object", Doc(json::array({JobRuleDoc("r", {{"select", {{"labels", {"a"}}}}})})),
       "job_rules[0] ('r').select.labels: expected an object, got array"},
      {"jobs not a list of strings", Doc(json::array({JobRuleDoc("r", {{"select", {{"jobs", {1}}}}})})),
       "job_rules[0] ('r').select.jobs[0]: expected a string, got number"},
      {"no limit at all", Doc(json::array({JobRuleDoc("r", {{"forbid_disconnect", false}})})),
       "job_rules[0] ('r'): sets no limit (one of forbid_disconnect, max_slowdown_pct, min_paths_after, "
       "min_bandwidth_fraction, min_path_fraction)"},
      {"forbid_disconnect not a bool", Doc(json::array({JobRuleDoc("r", {{"forbid_disconnect", "yes"}})})),
       "job_rules[0] ('r').forbid_disconnect: expected true or false, got string"},
      {"negative slowdown", Doc(json::array({JobRuleDoc("r", {{"max_slowdown_pct", -1}})})),
       "job_rules[0] ('r').max_slowdown_pct: must be >= 0"},
      {"zero paths", Doc(json::array({JobRuleDoc("r", {{"min_paths_after", 0}})})),
       "job_rules[0] ('r').min_paths_after: must be >= 1"},
      {"fraction above 1", Doc(json::array({JobRuleDoc("r", {{"min_bandwidth_fraction", 1.5}})})),
       "job_rules[0] ('r').min_bandwidth_fraction: must be in (0, 1], got 1.5"},
      {"fraction of zero", Doc(json::array({JobRuleDoc("r", {{"min_path_fraction", 0}})})),
       "job_rules[0] ('r').min_path_fraction: must be in (0, 1], got 0"},
      {"fabric field in a job rule", Doc(json::array({JobRuleDoc("r", {{"no_shared_domain", "power"}})})),
       "job_rules[0] ('r').no_shared_domain: a fabric rule field: move this rule to fabric_rules"},
      {"job field in a fabric rule", Doc(json::array(), json::array({FabricRuleDoc("f", {{"max_slowdown_pct", 5}})})),
       "fabric_rules[0] ('f').max_slowdown_pct: a job rule field: move this rule to job_rules"},
      {"selector in a fabric rule", Doc(json::array(), json::array({FabricRuleDoc("f", {{"select", json::object()}})})),
       "fabric_rules[0] ('f').select: fabric rules apply to the drain, not to jobs"},
      {"duplicate name across lists", Doc(json::array({JobRuleDoc("r")}), json::array({FabricRuleDoc("r")})),
       "fabric_rules[0] ('r').name: duplicate rule name, already used by job_rules[0]"},
      {"duplicate name in one list", Doc(json::array({JobRuleDoc("r"), JobRuleDoc("s"), JobRuleDoc("r")})),
       "job_rules[2] ('r').name: duplicate rule name, already used by job_rules[0]"},
      {"fabric rule without a kind",
       Doc(json::array(), json::array({FabricRuleDoc("f", {{"max_switches_drained", nullptr}})})),
       "fabric_rules[0] ('f'): needs one of max_capacity_drained_pct, max_switches_drained, no_shared_domain, "
       "change_windows, no_drift"},
      {"fabric rule with two kinds",
       Doc(json::array(), json::array({FabricRuleDoc("f", {{"no_shared_domain", "power"}})})),
       "fabric_rules[0] ('f').no_shared_domain: a rule has one limit, and this one already has "
       "max_switches_drained: write two rules"},
      {"unknown fabric field", Doc(json::array(), json::array({FabricRuleDoc("f", {{"pod", "p1"}})})),
       "fabric_rules[0] ('f').pod: unknown field"},
      {"percentage above 100",
       Doc(json::array(),
           json::array({FabricRuleDoc("f", {{"max_switches_drained", nullptr}, {"max_capacity_drained_pct", 150}})})),
       "fabric_rules[0] ('f').max_capacity_drained_pct: must be a percentage in [0, 100], got 150"},
      {"per_pod not a bool",
       Doc(json::array(),
           json::array({FabricRuleDoc(
               "f", {{"max_switches_drained", nullptr}, {"max_capacity_drained_pct", 50}, {"per_pod", 1}})})),
       "fabric_rules[0] ('f').per_pod: expected true or false, got number"},
      {"per_pod on a switch count", Doc(json::array(), json::array({FabricRuleDoc("f", {{"per_pod", true}})})),
       "fabric_rules[0] ('f').per_pod: not used by max_switches_drained"},
      {"negative switch count", Doc(json::array(), json::array({FabricRuleDoc("f", {{"max_switches_drained", -1}})})),
       "fabric_rules[0] ('f').max_switches_drained: must be >= 0"},
      {"fractional switch count",
       Doc(json::array(), json::array({FabricRuleDoc("f", {{"max_switches_drained", 2.5}})})),
       "fabric_rules[0] ('f').max_switches_drained: expected an integer"},
      {"empty tier", Doc(json::array(), json::array({FabricRuleDoc("f", {{"tier", ""}})})),
       "fabric_rules[0] ('f').tier: must not be empty; omit it for every tier"},
      {"tier on a change window rule",
       Doc(json::array(), json::array({FabricRuleDoc("f", {{"max_switches_drained", nullptr},
                                                           {"change_windows", {{{"start", "09:00"}, {"end", "17:00"}}}},
                                                           {"tier", "spine"}})})),
       "fabric_rules[0] ('f').tier: not used by change_windows"},
      {"empty domain kind",
       Doc(json::array(),
           json::array({FabricRuleDoc("f", {{"max_switches_drained", nullptr}, {"no_shared_domain", ""}})})),
       "fabric_rules[0] ('f').no_shared_domain: must name a domain kind (plane, power, row, rack, ...)"},
      {"no windows",
       Doc(json::array(),
           json::array({FabricRuleDoc("f", {{"max_switches_drained", nullptr}, {"change_windows", json::array()}})})),
       "fabric_rules[0] ('f').change_windows: must list at least one window (an empty list would forbid every "
       "drain)"},
      {"sloppy clock",
       Doc(json::array(),
           json::array({FabricRuleDoc("f", {{"max_switches_drained", nullptr},
                                            {"change_windows", {{{"start", "9:00"}, {"end", "17:00"}}}}})})),
       "fabric_rules[0] ('f').change_windows[0].start: expected HH:MM (UTC), got '9:00'"},
      {"hour 25",
       Doc(json::array(),
           json::array({FabricRuleDoc("f", {{"max_switches_drained", nullptr},
                                            {"change_windows", {{{"start", "09:00"}, {"end", "25:00"}}}}})})),
       "fabric_rules[0] ('f').change_windows[0].end: '25:00' is not a time of day"},
      {"24:00 as a start",
       Doc(json::array(),
           json::array({FabricRuleDoc("f", {{"max_switches_drained", nullptr},
                                            {"change_windows", {{{"start", "24:00"}, {"end", "02:00"}}}}})})),
       "fabric_rules[0] ('f').change_windows[0].start: '24:00' is not a time of day"},
      {"empty window",
       Doc(json::array(),
           json::array({FabricRuleDoc("f", {{"max_switches_drained", nullptr},
                                            {"change_windows", {{{"start", "09:00"}, {"end", "09:00"}}}}})})),
       "fabric_rules[0] ('f').change_windows[0].end: equals start: the window is empty (use 00:00-24:00 for a "
       "whole day)"},
      {"day spelled out",
       Doc(json::array(),
           json::array({FabricRuleDoc(
               "f", {{"max_switches_drained", nullptr},
                     {"change_windows", {{{"days", {"mon", "tuesday"}}, {"start", "09:00"}, {"end", "17:00"}}}}})})),
       "fabric_rules[0] ('f').change_windows[0].days[1]: unknown day 'tuesday' (expected one of mon, tue, wed, "
       "thu, fri, sat, sun)"},
      {"window field typo",
       Doc(json::array(), json::array({FabricRuleDoc(
                              "f", {{"max_switches_drained", nullptr},
                                    {"change_windows", {{{"start", "09:00"}, {"end", "17:00"}, {"tz", "CET"}}}}})})),
       "fabric_rules[0] ('f').change_windows[0].tz: unknown field"},
  };
  for (const BadCase& c : cases) {
    CAPTURE(c.what);
    auto p = ParsePolicy(c.doc);
    REQUIRE_FALSE(p.has_value());
    CHECK(p.error().code == ErrorCode::kInvalidArgument);
    CHECK(p.error().message == c.message);
  }
}

TEST_CASE("malformed JSON text names the byte offset") {
  auto p = ParsePolicyText("{\"format\": ");
  REQUIRE_FALSE(p.has_value());
  CHECK(p.error().message.rfind("malformed JSON at byte", 0) == 0);
}

TEST_CASE("a valid policy parses into the documented fields") {
  json doc = Doc(
      json::array({
          {{"name", "protect-prod"},
           {"action", "deny"},
           {"description", "prod training"},
           {"select",
            {{"priority_at_least", 50}, {"priority_at_most", 99}, {"tenant", "prod"}, {"labels", {{"team", "llm"}}}}},
           {"forbid_disconnect", true},
           {"max_slowdown_pct", 25},
           {"min_paths_after", 2},
           {"min_bandwidth_fraction", 0.5},
           {"min_path_fraction", 0.25}},
          {{"name", "named-jobs"},
           {"action", "warn"},
           {"select", {{"tenant", {"a", "b"}}, {"jobs", {"j1"}}}},
           {"max_slowdown_pct", 0}},
      }),
      json::array({
          {{"name", "cap"}, {"action", "deny"}, {"max_capacity_drained_pct", 50}, {"per_pod", true}, {"tier", "spine"}},
          {{"name", "count"}, {"action", "warn"}, {"max_switches_drained", 0}},
          {{"name", "power"}, {"action", "deny"}, {"no_shared_domain", "power"}, {"tier", "spine"}},
          {{"name", "windows"},
           {"action", "deny"},
           {"change_windows",
            {{{"days", {"fri", "mon", "mon"}}, {"start", "09:00"}, {"end", "17:30"}},
             {{"start", "22:00"}, {"end", "02:00"}},
             {{"days", {"sun"}}, {"start", "00:00"}, {"end", "24:00"}}}}},
      }));
  auto p = ParsePolicy(doc);
  REQUIRE_MESSAGE(p.has_value(), p.error().message);
  REQUIRE(p->job_rules.size() == 2);
  const JobRule& prod = p->job_rules[0];
  CHECK(prod.name == "protect-prod");
  CHECK(prod.action == Action::kDeny);
  CHECK(prod.description == "prod training");
  CHECK(prod.select.priority_at_least == 50);
  CHECK(prod.select.priority_at_most == 99);
  CHECK(prod.select.tenants == std::vector<std::string>{"prod"});
  CHECK(prod.select.labels.at("team") == "llm");
  CHECK(prod.limits.forbid_disconnect);
  CHECK(prod.limits.max_slowdown_pct == 25.0);
  CHECK(prod.limits.min_paths_after == 2);
  CHECK(prod.limits.min_bandwidth_fraction == 0.5);
  CHECK(prod.limits.min_path_fraction == 0.25);
  CHECK(p->job_rules[1].action == Action::kWarn);
  CHECK(p->job_rules[1].select.tenants == std::vector<std::string>{"a", "b"});
  CHECK(p->job_rules[1].limits.max_slowdown_pct == 0.0);  // 0 is a limit, not "unset"

  REQUIRE(p->fabric_rules.size() == 4);
  CHECK(p->fabric_rules[0].kind == FabricRuleKind::kMaxCapacityDrainedPct);
  CHECK(p->fabric_rules[0].limit == 50.0);
  CHECK(p->fabric_rules[0].per_pod);
  CHECK(p->fabric_rules[0].tier == "spine");
  CHECK(p->fabric_rules[1].kind == FabricRuleKind::kMaxSwitchesDrained);
  CHECK(p->fabric_rules[1].limit == 0.0);
  CHECK(p->fabric_rules[2].domain == "power");
  CHECK(p->fabric_rules[2].tier == "spine");
  const auto& w = p->fabric_rules[3].windows;
  REQUIRE(w.size() == 3);
  CHECK(w[0].days == std::vector<int>{0, 4});  // sorted and deduplicated: mon, fri
  CHECK(w[0].start_minute == 9 * 60);
  CHECK(w[0].end_minute == 17 * 60 + 30);
  CHECK(w[1].days == std::vector<int>{0, 1, 2, 3, 4, 5, 6});  // no days = every day
  CHECK(w[1].start_minute == 22 * 60);
  CHECK(w[1].end_minute == 2 * 60);
  CHECK(w[2].end_minute == 1440);

  SUBCASE("round trip through PolicyToJson") {
    json out = PolicyToJson(*p);
    auto again = ParsePolicy(out);
    REQUIRE_MESSAGE(again.has_value(), again.error().message);
    CHECK(*again == *p);
    CHECK(out["job_rules"][1]["select"]["tenant"] == json({"a", "b"}));
    CHECK(out["fabric_rules"][3]["change_windows"][0]["days"] == json({"mon", "fri"}));
  }
}

TEST_CASE("an empty selector selects every job; each criterion narrows it") {
  JobSelector all;
  CHECK(all.Matches("j", "", 0, {}));
  JobSelector s;
  s.priority_at_least = 50;
  s.priority_at_most = 100;
  s.tenants = {"prod", "research"};
  s.labels = {{"team", "llm"}};
  const std::map<std::string, std::string> llm = {{"team", "llm"}, {"site", "a"}};
  CHECK(s.Matches("j", "prod", 50, llm));  // priority bounds are inclusive
  CHECK(s.Matches("j", "research", 100, llm));
  CHECK_FALSE(s.Matches("j", "prod", 49, llm));
  CHECK_FALSE(s.Matches("j", "prod", 101, llm));
  CHECK_FALSE(s.Matches("j", "batch", 60, llm));
  CHECK_FALSE(s.Matches("j", "prod", 60, {{"team", "vision"}}));
  CHECK_FALSE(s.Matches("j", "prod", 60, {}));
  s.jobs = {"j1"};
  CHECK(s.Matches("j1", "prod", 60, llm));
  CHECK_FALSE(s.Matches("j2", "prod", 60, llm));
}

TEST_CASE("the default policy ships as a file and is embedded unchanged") {
  std::string file = ReadFile(DRAINWISE_DEFAULT_POLICY_FILE);
  REQUIRE_FALSE(file.empty());
  CHECK(DefaultPolicyText() == file);

  auto p = DefaultPolicy();
  REQUIRE_MESSAGE(p.has_value(), p.error().message);
  auto loaded = LoadPolicyFile(DRAINWISE_DEFAULT_POLICY_FILE);
  REQUIRE_MESSAGE(loaded.has_value(), loaded.error().message);
  CHECK(*loaded == *p);
  CHECK(p->name == "default");

  // The rules the brief asks for, by name, action and limit.
  REQUIRE(p->job_rules.size() == 5);
  const auto& j = p->job_rules;
  CHECK((j[0].name == "no-disconnect-priority" && j[0].action == Action::kDeny && j[0].select.priority_at_least == 50 &&
         j[0].limits.forbid_disconnect));
  CHECK((j[1].name == "no-disconnect" && j[1].action == Action::kWarn && j[1].select.empty() &&
         j[1].limits.forbid_disconnect));
  CHECK((j[2].name == "slowdown-priority" && j[2].action == Action::kDeny && j[2].select.priority_at_least == 50 &&
         j[2].limits.max_slowdown_pct == 25.0));
  CHECK((j[3].name == "slowdown" && j[3].action == Action::kWarn && j[3].select.empty() &&
         j[3].limits.max_slowdown_pct == 10.0));
  CHECK((j[4].name == "paths-top-priority" && j[4].action == Action::kDeny && j[4].select.priority_at_least == 100 &&
         j[4].limits.min_paths_after == 2));
  REQUIRE(p->fabric_rules.size() == 5);
  const auto& f = p->fabric_rules;
  CHECK((f[0].kind == FabricRuleKind::kMaxCapacityDrainedPct && f[0].limit == 50.0 && f[0].per_pod &&
         f[0].tier.empty() && f[0].action == Action::kDeny));
  CHECK((f[1].kind == FabricRuleKind::kMaxSwitchesDrained && f[1].limit == 8.0 && f[1].action == Action::kDeny));
  CHECK((f[2].kind == FabricRuleKind::kNoSharedDomain && f[2].domain == "power" && f[2].action == Action::kDeny));
  CHECK((f[3].kind == FabricRuleKind::kNoSharedDomain && f[3].domain == "plane" && f[3].action == Action::kWarn));
  CHECK((f[4].kind == FabricRuleKind::kNoDrift && !f[4].include_crossed && f[4].action == Action::kWarn));

  auto again = ParsePolicy(PolicyToJson(*p));
  REQUIRE(again.has_value());
  CHECK(*again == *p);
}

TEST_CASE("the rule examples in docs/policies.md are valid") {
  // The docs path is derived from the default policy's: <root>/policies/default.json.
  std::string root = std::filesystem::path(DRAINWISE_DEFAULT_POLICY_FILE).parent_path().parent_path().string();
  std::string doc = ReadFile(root + "/docs/policies.md");
  REQUIRE_FALSE(doc.empty());
  int checked = 0;
  for (size_t pos = doc.find("```json\n"); pos != std::string::npos; pos = doc.find("```json\n", pos)) {
    pos += 8;
    size_t end = doc.find("```", pos);
    REQUIRE(end != std::string::npos);
    json block = json::parse(doc.substr(pos, end - pos), nullptr, /*allow_exceptions=*/false);
    if (block.is_discarded()) continue;  // an outline with "..." in it
    json policy;
    if (block.is_object() && block.contains("job_rules")) {
      policy = block;
    } else if (block.is_object() && block.contains("select")) {
      policy = Doc(json::array({block}));
    } else if (block.is_array()) {
      policy = Doc(json::array(), block);
    } else {
      continue;  // the verdict example
    }
    std::string text = block.dump();  // CAPTURE keeps a reference: no temporaries
    CAPTURE(text);
    auto p = ParsePolicy(policy);
    CHECK_MESSAGE(p.has_value(), p.error().message);
    ++checked;
  }
  CHECK(checked >= 2);  // the job rule and the fabric rules examples
}

TEST_CASE("LoadPolicyFile names the file in its errors") {
  SUBCASE("missing file") {
    auto p = LoadPolicyFile("/nonexistent/drainwise/policy.json");
    REQUIRE_FALSE(p.has_value());
    CHECK(p.error().code == ErrorCode::kIo);
    CHECK(p.error().message == "policy file '/nonexistent/drainwise/policy.json': cannot open");
  }
  SUBCASE("invalid policy") {
    std::string path =
        (std::filesystem::temp_directory_path() / ("drainwise-policy-test-" + std::to_string(::getpid()) + ".json"))
            .string();
    {
      std::ofstream out(path);
      out << Doc(json::array({JobRuleDoc("r", {{"action", "block"}})})).dump();
    }
    auto p = LoadPolicyFile(path);
    std::remove(path.c_str());
    REQUIRE_FALSE(p.has_value());
    CHECK(p.error().code == ErrorCode::kInvalidArgument);
    CHECK(p.error().message == path + ": job_rules[0] ('r').action: expected 'deny' or 'warn', got 'block'");
  }
}

}  // namespace
}  // namespace drainwise::policies
