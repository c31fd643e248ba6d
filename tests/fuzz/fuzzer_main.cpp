// One libFuzzer binary for every target (one link instead of fifteen in the
// sanitizer build). The target is named by DRAINWISE_FUZZ_TARGET or, when
// that is unset, by the name the binary is run under: fuzz_<target>, with
// '_' for '-' (tests/fuzz/CMakeLists.txt makes one such link per target).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "targets.h"

namespace {
const drainwise::fuzz::Target* target = nullptr;

std::string Underscored(std::string s) {
  std::replace(s.begin(), s.end(), '-', '_');
  return s;
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  std::string wanted;
  if (const char* env = std::getenv("DRAINWISE_FUZZ_TARGET"); env && *env) {
    wanted = env;
  } else if (*argc > 0) {
    wanted = (*argv)[0];
    wanted = wanted.substr(wanted.find_last_of('/') + 1);
    if (wanted.rfind("fuzz_", 0) == 0) wanted = wanted.substr(5);
  }
  for (const auto& t : drainwise::fuzz::Targets()) {
    if (Underscored(t.name) == Underscored(wanted)) target = &t;
  }
  if (!target) {
    std::fprintf(stderr, "unknown fuzz target '%s': run as fuzz_<target> or set DRAINWISE_FUZZ_TARGET to one of:",
                 wanted.c_str());
    for (const auto& t : drainwise::fuzz::Targets()) std::fprintf(stderr, " %s", t.name.c_str());
    std::fprintf(stderr, "\n");
    std::abort();
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  target->run(data, size);
  return 0;
}
