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
// re-executes the program once with the tunable added, before anything else
// has run: same pid, arguments and environment otherwise.
//
// Nothing happens when GLIBC_TUNABLES already names glibc.malloc.hugetlb
// (whatever its value: an operator's choice, and the re-executed process),
// when DRAINWISE_MALLOC_HUGE_PAGES=0, when the process runs set-uid (glibc
// ignores tunables then) or when the re-execution fails (the program goes
// on as it is). Linux only; elsewhere a no-op. With transparent huge pages
// off (`never`) the tunable does nothing.
#pragma once

namespace drainwise::process {

// Call first in main(), with main's argv. Returns only when it did not re-execute.
void ReexecWithMallocHugePages(char** argv);

}  // namespace drainwise::process
