// Kubernetes pod list (kubectl get pods -A -o json, or GET /api/v1/pods) -> jobs.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/error.h"
#include "model/jobs.h"

namespace drainwise::connectors {

struct KubernetesOptions {
  // Pod labels naming the job, first present wins.
  std::vector<std::string> job_labels = {"training.kubeflow.org/job-name", "volcano.sh/job-name"};
  std::string id_prefix;  // prepended to "<namespace>/<job>"
  std::string gpu_resource = "nvidia.com/gpu";
};

// Running pods (status.phase == "Running", spec.nodeName set, no
// deletionTimestamp) carrying one of `job_labels` are grouped by (namespace,
// label value) into a job: id = id_prefix + "namespace/name", name = label
// value, tenant = namespace, hosts = distinct spec.nodeName in natural order
// of pod name, gpus_per_host = the largest per-node sum of container
// `resources.limits[gpu_resource]` (0 = unknown: every GPU), labels = the
// labels every pod of the job shares, plus "namespace". Other pods are
// ignored. The iteration is left empty (profile_source "default").
Result<model::JobsSpec> ParseKubernetesPods(const nlohmann::json& doc, const KubernetesOptions& options = {});

}  // namespace drainwise::connectors
