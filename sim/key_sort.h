// Stable sorts of large arrays by a 64-bit key (the flow solver's t = 0
// sort of a component's finish predictions, and of its rates where the
// fill's levels do not give their order). Internal to sim/; tested in
// tests/flowsim/key_sort_test.cpp.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

namespace drainwise::sim {

// A key whose unsigned order is the order of `<` on doubles, NaN aside
// (-0 and +0 give the same key, as they compare equal).
inline uint64_t OrderKey(double d) {
  if (d == 0) return uint64_t{1} << 63;
  const uint64_t u = std::bit_cast<uint64_t>(d);
  return (u >> 63) != 0 ? ~u : u | (uint64_t{1} << 63);
}

// Sorts v stably by key(x) (uint64_t): least significant 11 bits first, a
// pass per digit on which the keys differ. For the t = 0 sorts of a large
// component (893 k entries on the 32k MoE hash case, a few thousand
// distinct keys), which took ~11 % of that case's CPU as std::sort's
// comparisons; its wall time fell by ~10 % with this.
//
// Below kRadixMin entries, std::stable_sort (the same order): the passes
// cost ~12 k bucket steps and a 48 KB table whatever n is, and the default
// 32k preset solves ~21 k components of a few aggregates each, two sorts
// apiece: they were ~56 % of its `Ring32k_Full_Spine` time (99 ms against
// 45 ms before the radix sort).
template <class T, class Key>
void RadixSort(std::vector<T>& v, const Key& key) {
  constexpr int kBits = 11, kPasses = (64 + kBits - 1) / kBits;
  constexpr size_t kBuckets = size_t{1} << kBits, kRadixMin = 1024;
  const size_t n = v.size();
  if (n < kRadixMin) {
    std::stable_sort(v.begin(), v.end(), [&](const T& x, const T& y) { return key(x) < key(y); });
    return;
  }
  std::vector<uint32_t> count(kPasses * kBuckets, 0);
  for (const T& x : v) {
    const uint64_t k = key(x);
    for (int d = 0; d < kPasses; ++d) ++count[d * kBuckets + ((k >> (d * kBits)) & (kBuckets - 1))];
  }
  std::vector<T> tmp;
  for (int d = 0; d < kPasses; ++d) {
    uint32_t* c = count.data() + d * kBuckets;
    if (std::any_of(c, c + kBuckets, [&](uint32_t m) { return m == n; })) continue;  // one digit for all
    uint32_t at = 0;
    for (size_t b = 0; b < kBuckets; ++b) at += std::exchange(c[b], at);
    if (tmp.empty()) tmp.resize(n);
    for (const T& x : v) tmp[c[(key(x) >> (d * kBits)) & (kBuckets - 1)]++] = x;
    v.swap(tmp);
  }
}

// Sorts v stably by key(x) (uint64_t), as RadixSort does, when its keys
// take few distinct values: each entry's key is looked up in a small open
// addressing table (in cache), the distinct keys are sorted, and one
// counting pass places the entries: two passes over v instead of one per
// 11-bit digit (six for doubles whose bits all vary). The t = 0 sort of
// a component's finish predictions is such (32k MoE hash: 893 k entries, a
// few thousand distinct values). Falls back to RadixSort past
// kMaxDistinct keys, having read only the entries up to there.
template <class T, class Key>
void SortByFewKeys(std::vector<T>& v, const Key& key) {
  constexpr size_t kMaxDistinct = size_t{1} << 14, kSlots = 2 * kMaxDistinct;
  constexpr uint32_t kEmpty = UINT32_MAX;
  const size_t n = v.size();
  if (n < kMaxDistinct) {
    RadixSort(v, key);
    return;
  }
  std::vector<uint64_t> slot_key(kSlots);
  std::vector<uint32_t> slot_id(kSlots, kEmpty), id_of(n);
  std::vector<uint64_t> keys;  // per distinct id
  std::vector<uint32_t> count;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t k = key(v[i]);
    size_t s = (k * 0x9E3779B97F4A7C15ull) >> 49;  // 15 bits: kSlots
    while (slot_id[s] != kEmpty && slot_key[s] != k) s = (s + 1) & (kSlots - 1);
    if (slot_id[s] == kEmpty) {
      if (keys.size() == kMaxDistinct) {
        RadixSort(v, key);
        return;
      }
      slot_key[s] = k;
      slot_id[s] = static_cast<uint32_t>(keys.size());
      keys.push_back(k);
      count.push_back(0);
    }
    id_of[i] = slot_id[s];
    ++count[slot_id[s]];
  }
  std::vector<uint32_t> by_key(keys.size());
  std::iota(by_key.begin(), by_key.end(), 0u);
  std::sort(by_key.begin(), by_key.end(), [&](uint32_t x, uint32_t y) { return keys[x] < keys[y]; });
  uint32_t at = 0;
  for (uint32_t id : by_key) at += std::exchange(count[id], at);  // count[id]: where id's entries start
  std::vector<T> out(n);
  for (size_t i = 0; i < n; ++i) out[count[id_of[i]]++] = v[i];
  v.swap(out);
}

}  // namespace drainwise::sim
