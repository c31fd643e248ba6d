// main() of every benchmark: Google Benchmark's, after the process set-up
// the daemon has too (malloc on transparent huge pages,
// src/process/malloc_huge_pages.h), so that a figure here is what the
// daemon and the CLI would measure.
#include <benchmark/benchmark.h>

#include "process/malloc_huge_pages.h"

int main(int argc, char** argv) {
  drainwise::process::ReexecWithMallocHugePages(argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
