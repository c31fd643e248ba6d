// Memory of the flow solver's large buffers (internal to sim/).
//
// A hint that a buffer about to be filled should be backed by huge pages.
// The flow solver's arrays run to hundreds of MB per run and are written
// once, front to back: with 4 KiB pages most of the routing time went to
// page faults (32k MoE, hash: ~20 % of the CPU time in the kernel). Linux
// with transparent huge pages in `madvise` mode honours it; elsewhere it
// does nothing. Only the whole 2 MiB pages inside the buffer are advised;
// the contents are not touched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif
#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace drainwise::sim {

inline void AdviseHugePages(const void* data, size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  if (bytes < 2 * kHuge) return;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(kHuge - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)data;
  (void)bytes;
#endif
}

// Reserves room for `n` elements in `v` and advises huge pages for it.
// When it must grow, it takes 1/32 more: consecutive buffers of about one
// size (the components of one seed, 893.3 k +- 0.3 k aggregates each on the
// 32k MoE hash case) then fit the first one's pages instead of each
// slightly larger one faulting in a fresh allocation.
template <class T>
void ReserveHuge(std::vector<T>& v, size_t n) {
  if (v.capacity() >= n) return;
  v.reserve(n + n / 32);
  AdviseHugePages(v.data(), v.capacity() * sizeof(T));
}

// v.assign(n, value), with huge pages advised before the first write.
template <class T, class U>
void AssignHuge(std::vector<T>& v, size_t n, const U& value) {
  if (v.capacity() < n) {
    v.clear();
    ReserveHuge(v, n);
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
