#include "testing/fabrics.h"

#include <stdexcept>

#include <doctest/doctest.h>

#include "codec/native.h"

namespace drainwise::testing {

using nlohmann::json;

model::Topology TopologyFromJson(const json& doc) {
  auto t = codec::LoadTopology(doc);
  if (!t) {
    FAIL_CHECK("topology: " << t.error().message);
    throw std::runtime_error(t.error().message);
  }
  return std::move(*t);
}

model::JobsSpec JobsFromJson(const json& doc) {
  auto j = codec::ParseJobs(doc);
  if (!j) {
    FAIL_CHECK("jobs: " << j.error().message);
    throw std::runtime_error(j.error().message);
  }
  return std::move(*j);
}

model::SnapshotPtr SnapshotFromJson(const json& topology, const json& jobs) {
  auto t = std::make_shared<const model::Topology>(TopologyFromJson(topology));
  auto spec = JobsFromJson(jobs);
  auto strict = model::ResolveJobs(spec, *t);
  if (!strict) {
    FAIL_CHECK("jobs: " << strict.error().message);
    throw std::runtime_error(strict.error().message);
  }
  return model::MakeSnapshot(t, 1, spec, 1);
}

model::Drain DrainOf(const model::Topology& t, const json& drain) {
  auto spec = codec::ParseDrain(drain);
  if (!spec) {
    FAIL_CHECK("drain: " << spec.error().message);
    throw std::runtime_error(spec.error().message);
  }
  auto d = model::ResolveDrain(*spec, t);
  if (!d) {
    FAIL_CHECK("drain: " << d.error().message);
    throw std::runtime_error(d.error().message);
  }
  return *d;
}

json TwoByTwo(double uplink_gbps, double host_gbps) {
  json nodes = json::array({
      {{"id", "spine0"}, {"kind", "switch"}, {"tier", "spine"}},
      {{"id", "spine1"}, {"kind", "switch"}, {"tier", "spine"}},
      {{"id", "leaf0"}, {"kind", "switch"}, {"tier", "leaf"}},
      {{"id", "leaf1"}, {"kind", "switch"}, {"tier", "leaf"}},
  });
  json links = json::array();
  for (auto leaf : {"leaf0", "leaf1"}) {
    for (auto spine : {"spine0", "spine1"}) links.push_back({{"a", leaf}, {"b", spine}, {"gbps", uplink_gbps}});
  }
  for (int h = 0; h < 4; ++h) {
    std::string id = "h" + std::to_string(h);
    nodes.push_back({{"id", id}, {"kind", "host"}, {"gpus", 1}});
    links.push_back({{"a", id}, {"b", h < 2 ? "leaf0" : "leaf1"}, {"gbps", host_gbps}});
  }
  return {{"format", "drainwise.topology/v1"}, {"name", "2x2"}, {"nodes", nodes}, {"links", links}};
}

std::string TestDataPath(const std::string& relative) { return std::string(TEST_DATA_DIR) + "/" + relative; }

}  // namespace drainwise::testing
