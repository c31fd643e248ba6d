// Small hand-checkable fabrics shared by the test suites, written as JSON so
// the tests exercise the same path as real documents.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "model/drain.h"
#include "model/jobs.h"
#include "model/snapshot.h"
#include "model/topology.h"

namespace drainwise::testing {

// Parses + builds; fails the current test (and throws) on error.
model::Topology TopologyFromJson(const nlohmann::json& doc);
model::JobsSpec JobsFromJson(const nlohmann::json& doc);
model::SnapshotPtr SnapshotFromJson(const nlohmann::json& topology, const nlohmann::json& jobs);
model::Drain DrainOf(const model::Topology& t, const nlohmann::json& drain);

// Two leaves x two spines, one 100G link between every leaf and spine, hosts
// h0,h1 on leaf0 and h2,h3 on leaf1 with 100G NICs:
//
//        spine0   spine1
//          |  \  /  |
//          |   \/   |
//          |   /\   |
//        leaf0    leaf1
//        /  \     /  \.
//       h0  h1   h2  h3
nlohmann::json TwoByTwo(double uplink_gbps = 100, double host_gbps = 100);

// Reads a file under TEST_DATA_DIR.
std::string TestDataPath(const std::string& relative);

}  // namespace drainwise::testing
