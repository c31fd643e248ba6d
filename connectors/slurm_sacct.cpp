// sacct --json (contract in slurm_sacct.h).
#include "connectors/slurm_sacct.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace drainwise::connectors {

namespace {

using nlohmann::json;

// A number, or data_parser's {"set": bool, "infinite": bool, "number": n}
// (v0.0.40 on). Unset or infinite gives `fallback`.
int64_t NumberOf(const json& v, int64_t fallback = 0) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number()) return static_cast<int64_t>(v.get<double>());
  if (v.is_object()) {
    if (!v.value("set", true) || v.value("infinite", false)) return fallback;
    auto n = v.find("number");
    if (n != v.end() && n->is_number()) return NumberOf(*n, fallback);
  }
  return fallback;
}

int64_t Field(const json& obj, const char* key) {
  if (!obj.is_object()) return 0;
  auto it = obj.find(key);
  return it == obj.end() ? 0 : NumberOf(*it);
}

std::string StateOf(const json& job) {
  auto s = job.find("state");
  if (s == job.end() || !s->is_object()) return "";
  auto cur = s->find("current");
  if (cur == s->end()) return "";
  if (cur->is_string()) return cur->get<std::string>();  // before 23.02
  if (cur->is_array() && !cur->empty() && (*cur)[0].is_string()) return (*cur)[0].get<std::string>();
  return "";
}

// The count of the tres.allocated entry of `type` (and `name` when given).
int64_t TresCount(const json& job, std::string_view type, std::string_view name) {
  auto tres = job.find("tres");
  if (tres == job.end() || !tres->is_object()) return 0;
  auto alloc = tres->find("allocated");
  if (alloc == tres->end() || !alloc->is_array()) return 0;
  for (const json& t : *alloc) {
    if (!t.is_object() || t.value("type", "") != type) continue;
    if (!name.empty()) {
      auto n = t.find("name");
      if (n == t.end() || !n->is_string() || n->get<std::string>() != name) continue;
    }
    return std::max<int64_t>(0, NumberOf(t.value("count", json(0))));
  }
  return 0;
}

std::string IdOf(const json& job) {
  std::string id = std::to_string(NumberOf(job.at("job_id")));
  auto array = job.find("array");
  if (array != job.end() && array->is_object() && Field(*array, "job_id") != 0) {
    auto task = array->find("task_id");
    if (task != array->end() && !task->is_null()) {
      const int64_t t = NumberOf(*task, -1);
      if (t >= 0) id = fmt::format("{}_{}", Field(*array, "job_id"), t);
    }
  }
  return id;
}

}  // namespace

Result<std::vector<SacctJob>> ParseSacctJson(std::string_view text, Diagnostics* diagnostics) {
  json doc = json::parse(text.begin(), text.end(), nullptr, false);
  if (doc.is_discarded()) return InvalidArgument("sacct --json: not valid JSON");
  if (!doc.is_object() || !doc.contains("jobs") || !doc["jobs"].is_array()) {
    return InvalidArgument("sacct --json: no \"jobs\" list (is this the output of sacct --json?)");
  }
  Diagnostics local;
  Diagnostics& diag = diagnostics ? *diagnostics : local;
  std::vector<SacctJob> out;
  const json& jobs = doc["jobs"];
  for (size_t i = 0; i < jobs.size(); ++i) {
    const json& j = jobs[i];
    if (!j.is_object() || !j.contains("job_id") || !j["job_id"].is_number()) {
      diag.Skip(fmt::format("jobs[{}]", i), "not a job object with a numeric job_id");
      continue;
    }
    SacctJob job;
    job.id = IdOf(j);
    if (auto n = j.find("name"); n != j.end() && n->is_string()) job.name = n->get<std::string>();
    job.state = StateOf(j);
    const json time = j.value("time", json::object());
    job.submit = Field(time, "submission");
    job.start = Field(time, "start");
    job.end = Field(time, "end");
    job.elapsed_s = Field(time, "elapsed");
    job.limit_s = time.is_object() && time.contains("limit") ? NumberOf(time["limit"]) * 60 : 0;
    job.nodes = static_cast<int>(j.contains("allocation_nodes") ? NumberOf(j["allocation_nodes"]) : 0);
    if (job.nodes <= 0) job.nodes = static_cast<int>(TresCount(j, "node", ""));
    job.gpus = static_cast<int>(TresCount(j, "gres", "gpu"));
    if (auto n = j.find("nodes"); n != j.end() && n->is_string()) job.nodelist = n->get<std::string>();
    if (job.start <= 0 || job.nodes <= 0) {
      diag.Skip("job " + job.id, fmt::format("never ran (state {}, start {}, {} nodes allocated)",
                                             job.state.empty() ? "unknown" : job.state, job.start, job.nodes));
      continue;
    }
    if (job.submit <= 0) job.submit = job.start;
    if (job.elapsed_s <= 0 && job.end > job.start) job.elapsed_s = job.end - job.start;
    out.push_back(std::move(job));
  }
  return out;
}

}  // namespace drainwise::connectors
