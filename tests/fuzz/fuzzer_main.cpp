// One libFuzzer binary per target: DRAINWISE_FUZZ_TARGET names it.
#include <cstdio>
#include <cstdlib>

#include "targets.h"

namespace {
const drainwise::fuzz::Target* target = nullptr;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  target = drainwise::fuzz::FindTarget(DRAINWISE_FUZZ_TARGET);
  if (!target) {
    std::fprintf(stderr, "unknown fuzz target %s\n", DRAINWISE_FUZZ_TARGET);
    std::abort();
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  target->run(data, size);
  return 0;
}
