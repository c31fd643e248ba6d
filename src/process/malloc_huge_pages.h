// glibc's malloc backed by transparent huge pages, for the whole process.
//
// The flow level writes hundreds of MB per run (32k-moe: about 220 MB),
// most of it in arrays that only live for that run; on 4 KiB pages a cold
// run spends much of its time in page faults (32k-moe spray-path: 73 k
// faults for the process, 1.40 s cold against 0.90 s with huge pages and
// 3 k faults; docs/performance.md).
// glibc 2.35+ makes malloc ask for huge pages (madvise(MADV_HUGEPAGE) on its
// heap and its mmap'd chunks) under the tunable glibc.malloc.hugetlb=1, but
// reads tunables only when a process starts, from GLIBC_TUNABLES. So this
// re-executes the program once with the tunables below added, before
// anything else has run: same pid, arguments and environment otherwise.
//
// Two more tunables keep a run's arrays out of fresh pages. glibc serves a
// request over its mmap threshold (128 KiB at first, raised as such blocks
// are freed) with a mapping of its own, unmapped on free, and grows its
// heap by little more than each request lacks: a cold 32k-moe spray run
// made about 17 k page faults that way. With requests up to 32 MiB (the
// largest threshold glibc takes) served from the heap, grown 16 MiB at a
// time, it made about 9 k at the same peak RSS, and ran faster
// (docs/performance.md, "Spray under 0.5 s on a quiet machine").
//
// And one arena for every thread (glibc.malloc.arena_max=1). glibc gives
// other threads arenas of their own, whose heaps (mappings of at most 64
// MiB) go back to the kernel as they empty: the simulators' helper threads
// faulted their working arrays in again on every call, most of it 4 KiB at
// a time. A 4 KiB fault costs about 12 us on the 2-vCPU VM the figures
// come from (touching a fresh 200 MiB mapping: 3.0-3.6 ms per MiB on 4 KiB
// pages, 0.06 ms per MiB on huge pages once the host backs them). With one
// arena a cold 32k-moe spray run made 1.4-2.1 k page faults instead of
// 13.7-14.0 k, and 8 hash seeds 18-20 k instead of 44-48 k
// (docs/performance.md, "One malloc arena, a kept pool").
//
// A tunable GLIBC_TUNABLES already names is left as it is (an operator's
// choice, and the re-executed process); nothing happens when every one is
// named, when DRAINWISE_MALLOC_HUGE_PAGES=0, when the process runs set-uid
// (glibc ignores tunables then) or when the re-execution fails (the
// program goes on as it is). Linux only; elsewhere a no-op. With
// transparent huge pages off (`never`) the hugetlb tunable does nothing.
#pragma once

#include <string>

namespace drainwise::process {

inline constexpr const char* kMallocTunables[] = {
    "glibc.malloc.hugetlb=1",
    "glibc.malloc.mmap_threshold=33554432",
    "glibc.malloc.top_pad=16777216",
    "glibc.malloc.arena_max=1",
};

// `current` (a GLIBC_TUNABLES value) with each of kMallocTunables it does
// not name appended, in that order.
std::string MallocTunables(const std::string& current);

// Call first in main(), with main's argv. Returns only when it did not re-execute.
void ReexecWithMallocHugePages(char** argv);

}  // namespace drainwise::process
