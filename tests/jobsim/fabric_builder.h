// A tiny builder for hand-drawn fabrics in the jobsim tests: nodes and links
// in the order written, rendered as a drainwise.topology/v1 document so the
// tests go through the same parse/build path as real input.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace drainwise::testing {

class FabricBuilder {
 public:
  FabricBuilder& Switch(const std::string& id, const std::string& tier, const std::string& pod = "",
                        const std::string& plane = "") {
    nlohmann::json n = {{"id", id}, {"kind", "switch"}, {"tier", tier}};
    if (!pod.empty()) n["pod"] = pod;
    if (!plane.empty()) n["plane"] = plane;
    nodes_.push_back(std::move(n));
    return *this;
  }
  FabricBuilder& Host(const std::string& id, int gpus = 8) {
    nodes_.push_back({{"id", id}, {"kind", "host"}, {"gpus", gpus}});
    return *this;
  }
  // `count` parallel links a-b of `gbps` each.
  FabricBuilder& Link(const std::string& a, const std::string& b, double gbps = 100, int count = 1) {
    for (int i = 0; i < count; ++i) {
      std::string port = std::to_string(port_++);
      port.insert(port.begin(), 'p');
      links_.push_back({{"a", a}, {"b", b}, {"gbps", gbps}, {"a_port", port}});
    }
    return *this;
  }
  nlohmann::json Json() const {
    return {{"format", "drainwise.topology/v1"}, {"name", "test"}, {"nodes", nodes_}, {"links", links_}};
  }

 private:
  nlohmann::json nodes_ = nlohmann::json::array();
  nlohmann::json links_ = nlohmann::json::array();
  int port_ = 0;
};

}  // namespace drainwise::testing
