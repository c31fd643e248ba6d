#include <doctest/doctest.h>

#include "connectors/kubernetes.h"
#include "test_data.h"

namespace drainwise::connectors {
namespace {

using nlohmann::json;
using testdata::ReadJson;

TEST_CASE("kubectl pods fixture: Kubeflow and Volcano jobs") {
  auto jobs = ParseKubernetesPods(ReadJson("fixtures/k8s_pods.json"));
  REQUIRE(jobs.has_value());
  REQUIRE(jobs->jobs.size() == 2);
  const auto& a = jobs->jobs[0];
  CHECK(a.id == "ml-training/llama-ft");
  CHECK(a.name == "llama-ft");
  CHECK(a.tenant == "ml-training");
  CHECK(a.hosts == std::vector<std::string>{"gpu003"});
  CHECK(a.gpus_per_host == 0);
  CHECK(a.labels.at("training.kubeflow.org/operator-name") == "pytorchjob-controller");
  CHECK(a.labels.at("namespace") == "ml-training");
  CHECK(a.profile_source == "default");
  const auto& b = jobs->jobs[1];
  CHECK(b.id == "vision/resnet-dist");
  CHECK(b.hosts == std::vector<std::string>{"gpu010"});
  CHECK(b.labels.at("volcano.sh/queue-name") == "default");
}

TEST_CASE("kubernetes: only running, scheduled, live pods; hosts in pod order; shared labels") {
  auto jobs = ParseKubernetesPods(ReadJson("connectors/k8s_pods_mixed.json"));
  REQUIRE(jobs.has_value());
  REQUIRE(jobs->jobs.size() == 2);
  const auto& a = jobs->jobs[0];
  CHECK(a.id == "ml-training/llama-ft");
  // worker-2 (gpu001), worker-3 (gpu001), worker-10 (gpu002) in natural order;
  // worker-4 is Pending, worker-5 is being deleted.
  CHECK(a.hosts == std::vector<std::string>{"gpu001", "gpu002"});
  CHECK(a.gpus_per_host == 8);                                        // two pods x 4 GPUs on gpu001
  CHECK(a.labels.count("training.kubeflow.org/replica-index") == 0);  // differs between pods
  CHECK(a.labels.at("team") == "nlp");
  // The same job name in another namespace is another job.
  CHECK(jobs->jobs[1].id == "other-team/llama-ft");
  CHECK(jobs->jobs[1].hosts == std::vector<std::string>{"gpu007"});

  KubernetesOptions o;
  o.job_labels = {"app"};
  o.id_prefix = "k8s:";
  auto apps = ParseKubernetesPods(ReadJson("connectors/k8s_pods_mixed.json"), o);
  REQUIRE(apps.has_value());
  REQUIRE(apps->jobs.size() == 1);
  CHECK(apps->jobs[0].id == "k8s:vision/jupyter");
  CHECK(apps->jobs[0].hosts == std::vector<std::string>{"gpu004"});
}

TEST_CASE("kubernetes errors name the item") {
  auto bad = ParseKubernetesPods(json::parse(R"({"kind": "Status", "status": "Failure"})"));
  REQUIRE_FALSE(bad.has_value());
  CHECK(bad.error().message == "kubernetes pods: items: required");
  auto no_meta = ParseKubernetesPods(json::parse(R"({"items": [{"spec": {}}]})"));
  REQUIRE_FALSE(no_meta.has_value());
  CHECK(no_meta.error().message == "kubernetes pods: items[0].metadata: required");
  auto bad_labels = ParseKubernetesPods(json::parse(
      R"({"items": [{"metadata": {"name": "p", "labels": {"x": [1]}}, "spec": {}, "status": {"phase": "Running"}}]})"));
  REQUIRE_FALSE(bad_labels.has_value());
  CHECK(bad_labels.error().message == "kubernetes pods: items[0].metadata.labels.x: expected a string");
  // A GPU count no cast can hold (or a fraction) names the field; it was a
  // cast to int whose result is undefined.
  for (const char* count : {"1e30", "-1", "2.5"}) {
    CAPTURE(count);
    json doc = ReadJson("connectors/k8s_pods_mixed.json");
    doc["items"][1]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = json::parse(count);
    auto huge = ParseKubernetesPods(doc);
    REQUIRE_FALSE(huge.has_value());
    CHECK(huge.error().message.find("kubernetes pods: items[1].spec.containers[0].resources.limits.nvidia.com/gpu: "
                                    "expected a whole number of GPUs from 0 to 2^20, got ") == 0);
  }
}

}  // namespace
}  // namespace drainwise::connectors
