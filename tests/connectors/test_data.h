// Reading the connector suite's test data (tests/data/...) by relative path.
#pragma once

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "testing/fabrics.h"

namespace drainwise::connectors::testdata {

inline std::string ReadText(const std::string& relative) {
  std::ifstream in(::drainwise::testing::TestDataPath(relative), std::ios::binary);
  if (!in) throw std::runtime_error("missing test data " + relative);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline nlohmann::json ReadJson(const std::string& relative) { return nlohmann::json::parse(ReadText(relative)); }

}  // namespace drainwise::connectors::testdata
