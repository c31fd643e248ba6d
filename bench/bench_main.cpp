// main() of every benchmark: Google Benchmark's, after the process set-up
// the daemon has too (glibc's malloc tunables,
// src/process/malloc_tunables.h), so that a figure here is what the
// daemon and the CLI would measure.
#include <benchmark/benchmark.h>

#include "process/malloc_tunables.h"

int main(int argc, char** argv) {
  drainwise::process::ReexecWithMallocTunables(argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
