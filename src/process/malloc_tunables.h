// glibc's malloc tuned for the simulators' large, short-lived arrays, for
// the whole process.
//
// glibc reads its tunables only when a process starts, from
// GLIBC_TUNABLES. So this re-executes the program once with the tunables
// below added, before anything else has run: same pid, arguments and
// environment otherwise.
//
// Not glibc.malloc.hugetlb=1 (malloc's memory on transparent huge pages),
// set here from 2026-12-02 to 2026-12-06: on the VM of the figures a
// huge page the host no longer backs costs 2.6-3.7 ms per MiB to touch
// again, a 4 KiB one 0.35-0.63 ms (2026-12-06), and without the tunable a
// cold 32k-moe spray run took 0.49-0.75 s instead of 0.92-1.28 s
// (docs/performance.md, "Huge pages off"). An operator whose machine
// gains from it can name it in GLIBC_TUNABLES.
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
// a time. A 4 KiB fault cost about 12 us on the 2-vCPU VM the figures
// came from then (touching a fresh 200 MiB mapping: 3.0-3.6 ms per MiB on
// 4 KiB pages; 0.35-0.63 ms per MiB, 1.4-2.5 us a fault, on
// 2026-12-06). With one arena a cold 32k-moe spray run made 1.4-2.1 k page
// faults instead of 13.7-14.0 k, and 8 hash seeds 18-20 k instead of
// 44-48 k (docs/performance.md, "One malloc arena, a kept pool").
//
// A tunable GLIBC_TUNABLES already names is left as it is (an operator's
// choice, and the re-executed process); nothing happens when every one is
// named, when DRAINWISE_MALLOC_TUNABLES=0, when the process runs set-uid
// (glibc ignores tunables then) or when the re-execution fails (the
// program goes on as it is). Linux only; elsewhere a no-op.
#pragma once

#include <string>

namespace drainwise::process {

inline constexpr const char* kMallocTunables[] = {
    "glibc.malloc.mmap_threshold=33554432",
    "glibc.malloc.top_pad=16777216",
    "glibc.malloc.arena_max=1",
};

// `current` (a GLIBC_TUNABLES value) with each of kMallocTunables it does
// not name appended, in that order.
std::string MallocTunables(const std::string& current);

// Call first in main(), with main's argv. Returns only when it did not re-execute.
void ReexecWithMallocTunables(char** argv);

}  // namespace drainwise::process
