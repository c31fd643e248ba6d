// The fuzz targets as plain functions: each takes arbitrary bytes, feeds them
// to one parser and must return without crashing, hanging or tripping a
// sanitizer, whatever the bytes. The libFuzzer binaries (DRAINWISE_FUZZ=ON)
// and the regression test (tests/fuzz/regressions_test.cpp, every build) call
// the same functions, so a crash found by fuzzing replays in ctest.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace drainwise::fuzz {

using TargetFn = void (*)(const uint8_t* data, size_t size);

struct Target {
  std::string name;  // also the corpus folder: tests/fuzz/corpus/<name>/
  TargetFn run;
};

// Every target, in a fixed order.
const std::vector<Target>& Targets();
// The target called `name`, or nullptr.
const Target* FindTarget(const std::string& name);

}  // namespace drainwise::fuzz
