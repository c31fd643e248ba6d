#include "connectors/kubernetes.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "connectors/util.h"

namespace drainwise::connectors {
namespace {

using codec::FieldError;
using codec::ObjectReader;
using internal::json;

struct Pod {
  std::string name;
  std::string node;
  int gpus = 0;
  std::map<std::string, std::string> labels;
};

// "8", 8 -> 8; Kubernetes quantities for GPUs are plain integers. A number
// that is not a whole count from 0 to 2^20 names the field at `path`.
int Quantity(const json& v, const std::string& path) {
  auto n = internal::NumberOrNumericString(v);
  if (!n) return 0;
  if (!(*n >= 0 && *n <= 1048576) || *n != std::floor(*n)) {
    throw codec::FieldError(path, fmt::format("expected a whole number of GPUs from 0 to 2^20, got {}", *n));
  }
  return static_cast<int>(*n);
}

}  // namespace

Result<model::JobsSpec> ParseKubernetesPods(const json& doc, const KubernetesOptions& options) {
  return internal::Guard("kubernetes pods", [&] {
    ObjectReader top(doc, "");
    top.Array("items");
    std::map<std::pair<std::string, std::string>, std::vector<Pod>> groups;
    for (const auto& item : top.Objects("items")) {
      if (!item.Has("metadata")) throw FieldError(item.Child("metadata"), "required");
      ObjectReader meta(item.Raw("metadata"), item.Child("metadata"));
      if (meta.Has("deletionTimestamp")) continue;
      std::string phase;
      if (item.Has("status")) {
        ObjectReader st(item.Raw("status"), item.Child("status"));
        phase = st.StringOr("phase", "");
      }
      if (phase != "Running") continue;
      auto labels = meta.StringMap("labels");
      std::string job;
      for (const auto& key : options.job_labels) {
        auto it = labels.find(key);
        if (it != labels.end() && !it->second.empty()) {
          job = it->second;
          break;
        }
      }
      if (job.empty()) continue;
      if (!item.Has("spec")) continue;
      ObjectReader spec(item.Raw("spec"), item.Child("spec"));
      Pod pod;
      pod.name = meta.String("name");
      pod.node = spec.StringOr("nodeName", "");
      if (pod.node.empty()) continue;
      for (const auto& c : spec.Objects("containers")) {
        if (!c.Has("resources")) continue;
        ObjectReader res(c.Raw("resources"), c.Child("resources"));
        for (const char* kind : {"limits", "requests"}) {
          if (!res.Has(kind)) continue;
          const json& m = res.Raw(kind);
          if (m.is_object() && m.contains(options.gpu_resource)) {
            pod.gpus += Quantity(m[options.gpu_resource], res.Child(kind) + "." + options.gpu_resource);
            break;  // limits win over requests for extended resources (they must be equal)
          }
        }
      }
      pod.labels = std::move(labels);
      groups[{meta.StringOr("namespace", "default"), job}].push_back(std::move(pod));
    }
    model::JobsSpec out;
    for (auto& [key, pods] : groups) {
      std::sort(pods.begin(), pods.end(),
                [](const Pod& a, const Pod& b) { return internal::NaturalLess(a.name, b.name); });
      model::JobSpec j;
      j.id = options.id_prefix + key.first + "/" + key.second;
      j.name = key.second;
      j.tenant = key.first;
      std::map<std::string, int> gpus_on;
      for (const auto& p : pods) {
        if (!gpus_on.count(p.node)) j.hosts.push_back(p.node);
        gpus_on[p.node] += p.gpus;
      }
      for (const auto& [node, g] : gpus_on) j.gpus_per_host = std::max(j.gpus_per_host, g);
      // Labels shared by every pod (replica index and the like differ).
      j.labels = pods.front().labels;
      for (const auto& p : pods) {
        for (auto it = j.labels.begin(); it != j.labels.end();) {
          auto f = p.labels.find(it->first);
          it = (f == p.labels.end() || f->second != it->second) ? j.labels.erase(it) : std::next(it);
        }
      }
      j.labels["namespace"] = key.first;
      j.profile_source = "default";
      out.jobs.push_back(std::move(j));
    }
    return out;
  });
}

}  // namespace drainwise::connectors
