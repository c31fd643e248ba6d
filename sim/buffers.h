// The flow solver's large buffers (internal to sim/): reserved with room
// to spare, given back when done.
//
// No huge-page advice. These buffers were advised MADV_HUGEPAGE from
// 2026-12-01 (ff356f5) to 2026-12-06, when a 4 KiB page fault cost about
// 12 us on the VM the figures come from. On that VM's later host (kernel
// 6.18, measured 2026-12-06) first touching a 4 KiB page costs 0.35-0.63
// ms per MiB and a huge page 2.6-3.7 ms per MiB, and turning huge pages
// off (this advice and malloc's, src/process/malloc_tunables.h) took an
// 8-seed 32k-moe hash run from 13.6-16.4 s to 12.3-13.7 s
// (docs/performance.md, "Huge pages off").
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace drainwise::sim {

// Reserves room for `n` elements in `v`. When it must grow, it takes 1/32
// more: consecutive buffers of about one size (the components of one seed,
// 893.3 k +- 0.3 k aggregates each on the 32k MoE hash case) then fit the
// first one's pages instead of each slightly larger one faulting in a
// fresh allocation.
template <class T>
void ReserveWithRoom(std::vector<T>& v, size_t n) {
  if (v.capacity() >= n) return;
  v.reserve(n + n / 32);
}

// v.resize(n) (entries kept, new ones value-initialised), through
// ReserveWithRoom when it must grow.
template <class T>
void ResizeWithRoom(std::vector<T>& v, size_t n) {
  ReserveWithRoom(v, n);
  v.resize(n);
}

// v.assign(n, value), through ReserveWithRoom when it must grow.
template <class T, class U>
void AssignWithRoom(std::vector<T>& v, size_t n, const U& value) {
  if (v.capacity() < n) {
    v.clear();
    ReserveWithRoom(v, n);
  }
  v.assign(n, static_cast<T>(value));
}

// Gives the kernel back the pages of freed heap memory, which glibc's
// malloc otherwise keeps for later allocations: freed arrays under the
// mmap threshold stay in its arenas, between arrays still in use. After a
// hash-mode FlowSimulator::Create on 32k MoE (8 seeds, 2 threads) the
// process held 902 MB resident for 269 MB of baselines; the drained runs
// then peaked on top of it. Elsewhere it does nothing.
inline void ReleaseFreeMemory() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

// The bytes `v` holds (its capacity, not its size).
template <class T>
size_t BytesOf(const std::vector<T>& v) {
  return v.capacity() * sizeof(T);
}

// Empties `v` and gives its memory back. (`v = {}` would not: it assigns an
// empty initializer list and keeps the capacity.)
template <class T>
void Free(std::vector<T>& v) {
  std::vector<T>().swap(v);
}

}  // namespace drainwise::sim
