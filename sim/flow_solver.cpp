#include "sim/flow_solver.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <deque>
#include <limits>
#include <mutex>
#include <numeric>
#include <optional>
#include <queue>
#include <span>
#include <utility>

#include "sim/buffers.h"
#include "sim/key_sort.h"

namespace drainwise::sim {

void FluidProblem::Clear() {
  capacity_bps.clear();
  classes.clear();
  owned_classes.clear();
  weight.clear();
  bits.clear();
  private_offsets.assign(1, 0);
  private_links.clear();
  private_shares.clear();
  term_offsets.assign(1, 0);
  terms.clear();
  term_scales.clear();
  outside_side0.clear();
  outside_side1.clear();
}

uint32_t FluidProblem::AddClass(std::span<const LinkShare> links) {
  constexpr size_t kChunk = 1 << 14;
  if (owned_classes.empty() || owned_classes.back().capacity() - owned_classes.back().size() < links.size()) {
    owned_classes.emplace_back().reserve(std::max(kChunk, links.size()));
  }
  std::vector<LinkShare>& chunk = owned_classes.back();
  const size_t at = chunk.size();
  chunk.insert(chunk.end(), links.begin(), links.end());
  classes.emplace_back(chunk.data() + at, links.size());
  return static_cast<uint32_t>(classes.size() - 1);
}

uint32_t FluidProblem::AddAggregate(double w, double b, const std::vector<LinkShare>& priv,
                                    const std::vector<ClassTerm>& t) {
  weight.push_back(w);
  bits.push_back(b);
  for (const LinkShare& ls : priv) AddPrivate(ls.link, ls.share);
  private_offsets.push_back(static_cast<uint32_t>(private_links.size()));
  for (const ClassTerm& ct : t) AddTerm(ct.cls, ct.scale);
  term_offsets.push_back(static_cast<uint32_t>(terms.size()));
  return static_cast<uint32_t>(weight.size() - 1);
}

PackedDoubles::PackedDoubles(std::span<const double> values) : size_(values.size()) {
  // Codes by bit pattern (lossless for every double, NaN and -0 included),
  // through an open-addressing table kept at most half full; a run of equal
  // entries (one component's) looks up once.
  const size_t n = values.size();
  std::vector<uint32_t> code(n);
  std::vector<uint64_t> keys;
  std::vector<uint32_t> slots(64, UINT32_MAX);
  auto bits_of = [](double v) { return std::bit_cast<uint64_t>(v); };
  auto slot_of = [&](uint64_t k) {
    size_t s = static_cast<size_t>((k * 0x9E3779B97F4A7C15ull) >> 32) & (slots.size() - 1);
    while (slots[s] != UINT32_MAX && keys[slots[s]] != k) s = (s + 1) & (slots.size() - 1);
    return s;
  };
  bool raw = n <= 1;
  for (size_t i = 0; i < n && !raw; ++i) {
    const uint64_t k = bits_of(values[i]);
    if (i > 0 && k == bits_of(values[i - 1])) {
      code[i] = code[i - 1];
      continue;
    }
    size_t s = slot_of(k);
    if (slots[s] == UINT32_MAX) {
      // Half the entries distinct: even 4 B codes would not beat the raw column.
      raw = 2 * (keys.size() + 1) >= n;
      if (raw) break;
      slots[s] = static_cast<uint32_t>(keys.size());
      keys.push_back(k);
      if (2 * keys.size() > slots.size()) {
        slots.assign(2 * slots.size(), UINT32_MAX);
        for (uint32_t c = 0; c < keys.size(); ++c) slots[slot_of(keys[c])] = c;
        s = slot_of(k);
      }
    }
    code[i] = slots[s];
  }
  // The width PackedIds gives codes up to keys.size() - 1.
  const unsigned width = keys.size() <= 0x100 ? 1 : keys.size() <= 0x10000 ? 2 : 4;
  if (raw || keys.size() * sizeof(double) + n * width >= n * sizeof(double)) {
    values_.assign(values.begin(), values.end());
    return;
  }
  raw_ = false;
  values_.resize(keys.size());
  for (size_t c = 0; c < keys.size(); ++c) values_[c] = std::bit_cast<double>(keys[c]);
  codes_ = PackedIds(code);
}

PackedIds::PackedIds(std::span<const uint32_t> ids) : size_(ids.size()) {
  const uint32_t top = ids.empty() ? 0 : *std::max_element(ids.begin(), ids.end());
  width_ = top <= 0xFF ? 1 : top <= 0xFFFF ? 2 : 4;
  codes_.resize(ids.size() * width_);
  for (size_t i = 0; i < ids.size(); ++i) {
    switch (width_) {
      case 1:
        codes_[i] = static_cast<uint8_t>(ids[i]);
        break;
      case 2: {
        const auto c = static_cast<uint16_t>(ids[i]);
        std::memcpy(codes_.data() + 2 * i, &c, 2);
        break;
      }
      default:
        std::memcpy(codes_.data() + 4 * i, &ids[i], 4);
    }
  }
}

size_t FluidSolution::bytes() const {
  return BytesOf(finish_s) + BytesOf(rate0_bps) + BytesOf(bottleneck0) + BytesOf(load0_bps) + BytesOf(component) +
         BytesOf(component_size) + packed_finish_s.bytes() + packed_rate0_bps.bytes() + packed_component.bytes();
}

void FluidSolution::MembersByComponent(std::vector<uint32_t>& off, std::vector<uint32_t>& members) const {
  const size_t na = aggregate_count(), ncomp = component_size.size();
  off.assign(ncomp + 1, 0);
  for (size_t c = 0; c < ncomp; ++c) off[c + 1] = off[c] + component_size[c];
  AssignWithRoom(members, na, 0u);
  std::vector<uint32_t> fill(off.begin(), off.end() - 1);
  for (uint32_t a = 0; a < na; ++a) members[fill[component_of(a)]++] = a;
}

std::vector<size_t> FluidSolution::ComponentRuns(const std::vector<uint32_t>& off, size_t runs) {
  const size_t ncomp = off.size() - 1, na = off.back();
  std::vector<size_t> begin(runs + 1, 0);
  for (size_t k = 1; k < runs; ++k) {
    size_t c = std::min(begin[k - 1] + 1, ncomp);
    while (c + (runs - k) < ncomp && runs * off[c] < k * na) ++c;
    begin[k] = c;
  }
  begin[runs] = ncomp;
  return begin;
}

void FluidSolution::Pack(const TaskRunner& runner, Columns* spare) {
  RunTasks(runner, 3, [&](size_t column) {
    if (column == 0) packed_finish_s = PackedDoubles(finish_s);
    if (column == 1) packed_rate0_bps = PackedDoubles(rate0_bps);
    if (column == 2) packed_component = PackedIds(component);
  });
  if (spare != nullptr) {
    spare->finish_s = std::move(finish_s);
    spare->rate0_bps = std::move(rate0_bps);
    spare->component = std::move(component);
  }
  Free(finish_s);
  Free(rate0_bps);
  Free(component);
}

void FluidSolution::GiveColumns(Columns& out) {
  if (!finish_s.empty()) out.finish_s = std::move(finish_s);
  if (!rate0_bps.empty()) out.rate0_bps = std::move(rate0_bps);
  if (!bottleneck0.empty()) out.bottleneck0 = std::move(bottleneck0);
  if (!component.empty()) out.component = std::move(component);
  Free(finish_s);
  Free(rate0_bps);
  Free(bottleneck0);
  Free(component);
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Completions closer than this (relative) are one batch: exact ties split by
// rounding would otherwise cost one re-solve each.
constexpr double kBatchTolerance = 1e-9;

// A binary min-heap (by T's operator<, as std::priority_queue) whose
// storage survives clear(): the re-fills reuse it at every batch.
template <class T>
class ReusableHeap {
 public:
  bool empty() const { return v_.empty(); }
  const T& top() const { return v_.front(); }
  void push(const T& x) {
    v_.push_back(x);
    std::push_heap(v_.begin(), v_.end());
  }
  void pop() {
    std::pop_heap(v_.begin(), v_.end());
    v_.pop_back();
  }
  void clear() { v_.clear(); }
  // Bulk load: Append() any number, then Build() once (linear, not n log n).
  void Append(const T& x) { v_.push_back(x); }
  void Build() { std::make_heap(v_.begin(), v_.end()); }

 private:
  std::vector<T> v_;
};

// A min-queue (by T's operator<, as std::priority_queue: x < y when x comes
// later) for a batch known up front plus a few late pushes: the batch is
// sorted once and consumed from a cursor, late pushes go to a heap. Pops
// come in the heap's order; a sort costs far less than as many heap pops.
template <class T>
class SortedQueue {
 public:
  void clear() {
    sorted_.clear();
    cursor_ = 0;
    late_.clear();
  }
  void Append(const T& x) { sorted_.push_back(x); }
  void Build() {
    std::sort(sorted_.begin(), sorted_.end(), [](const T& x, const T& y) { return y < x; });
  }
  bool empty() const { return cursor_ == sorted_.size() && late_.empty(); }
  const T& top() const { return FromSorted() ? sorted_[cursor_] : late_.top(); }
  void pop() {
    if (FromSorted()) {
      ++cursor_;
    } else {
      late_.pop();
    }
  }
  void push(const T& x) { late_.push(x); }

 private:
  bool FromSorted() const {
    if (cursor_ == sorted_.size()) return false;
    return late_.empty() || !(sorted_[cursor_] < late_.top());
  }
  std::vector<T> sorted_;
  size_t cursor_ = 0;
  ReusableHeap<T> late_;
};

class UnionFind {
 public:
  // `parent` is the storage (its capacity is kept by the caller).
  UnionFind(std::vector<uint32_t>& parent, size_t n) : parent_(parent) {
    AssignWithRoom(parent_, n, 0u);
    std::iota(parent_.begin(), parent_.end(), 0u);
  }
  uint32_t Find(uint32_t x) {
    while (parent_[x] != x) {
      parent_[x] = parent_[parent_[x]];
      x = parent_[x];
    }
    return x;
  }
  void Union(uint32_t a, uint32_t b) {
    a = Find(a);
    b = Find(b);
    if (a != b) parent_[std::max(a, b)] = std::min(a, b);
  }

 private:
  std::vector<uint32_t>& parent_;
};

// One component as a self-contained problem with dense local indices.
struct LocalProblem {
  std::vector<uint32_t> aggs;    // global aggregate ids
  std::vector<uint32_t> links;   // global directed link ids
  std::vector<double> capacity;  // per local link
  std::vector<double> weight;    // per local agg
  std::vector<uint32_t> priv_off{0};
  // Private links (local ids) and their shares, apart: the shares stay
  // empty while every one is 1 (always, in the hash modes, where most
  // class terms flatten into private links), so that a private link costs
  // 4 B instead of 16, and x 1 leaves every sum's bits as they were.
  // (The same layout as FluidProblem's lists.)
  std::vector<uint32_t> priv;
  std::vector<double> priv_shares;
  double priv_share(uint32_t k) const { return priv_shares.empty() ? 1.0 : priv_shares[k]; }
  void AddPriv(uint32_t link, double share) {
    AppendValue(priv_shares, priv.size(), share);
    priv.push_back(link);
  }
  std::vector<uint32_t> term_off{0};
  std::vector<uint32_t> terms;  // local class ids
  std::vector<double> term_scales;
  double term_scale(uint32_t k) const { return term_scales.empty() ? 1.0 : term_scales[k]; }
  // Aggregate a's entries of `terms`, [first, second). Without reading
  // term_off when there are none: in the hash modes, whose classes all
  // flatten into private links, that read was a cache miss per aggregate
  // wherever aggregates come in no order (the fills, the re-fills).
  std::pair<uint32_t, uint32_t> term_range(uint32_t a) const {
    if (terms.empty()) return {0, 0};
    return {term_off[a], term_off[a + 1]};
  }
  void AddTerm(uint32_t cls, double scale) {
    AppendValue(term_scales, terms.size(), scale);
    terms.push_back(cls);
  }
  std::vector<uint32_t> class_off{0};
  std::vector<LinkShare> class_links;  // link = local id
  // Reverse indices.
  std::vector<uint32_t> link_aggs_off, link_aggs;        // link -> aggs with it private
  std::vector<uint32_t> link_classes_off, link_classes;  // link -> classes containing it
  std::vector<double> link_class_share;                  // per link_classes entry: the class's share of the link
  std::vector<uint32_t> class_aggs_off, class_aggs;      // class -> aggs with a term on it
  // The full fillings (WaterFiller) read the reverse indices, and the
  // directed batches read link_aggs now and then; the other incremental
  // events, after their fill at t = 0, give them back.
  void FreeReverse() {
    Free(link_aggs);
    Free(link_classes);
    Free(link_class_share);
    Free(class_aggs);
  }

  void Clear() {
    aggs.clear();
    links.clear();
    capacity.clear();
    weight.clear();
    priv_off.assign(1, 0);
    priv.clear();
    priv_shares.clear();
    term_off.assign(1, 0);
    terms.clear();
    term_scales.clear();
    class_off.assign(1, 0);
    class_links.clear();
  }

  static constexpr auto kNoEntry = [](uint32_t, uint32_t) {};
  // rev lists, per target, the sources in ascending order; `on_entry(i, k)`
  // is told that entry i of rev came from entry k of the forward array.
  // `counts`, when given, holds each target's entry count (a pass fewer).
  static void Reverse(size_t n, const std::vector<uint32_t>& off, size_t from_count, const auto& target_of,
                      std::vector<uint32_t>& rev_off, std::vector<uint32_t>& rev, const auto& on_entry,
                      const uint32_t* counts = nullptr) {
    rev_off.assign(n + 1, 0);
    if (counts != nullptr) {
      std::copy_n(counts, n, rev_off.begin() + 1);
    } else {
      for (size_t f = 0; f < from_count; ++f) {
        for (uint32_t k = off[f]; k < off[f + 1]; ++k) ++rev_off[target_of(k) + 1];
      }
    }
    for (size_t i = 0; i < n; ++i) rev_off[i + 1] += rev_off[i];
    // Every entry is written below: no zeroing of the part kept from the
    // last component (18 MB per component on the 32k MoE hash case).
    ReserveWithRoom(rev, rev_off.back());
    rev.resize(rev_off.back());
    std::vector<uint32_t> fill(rev_off.begin(), rev_off.end() - 1);
    for (size_t f = 0; f < from_count; ++f) {
      for (uint32_t k = off[f]; k < off[f + 1]; ++k) {
        const uint32_t i = fill[target_of(k)]++;
        rev[i] = static_cast<uint32_t>(f);
        on_entry(i, k);
      }
    }
  }

  // `priv_counts`, when given: per link, its entries in `priv`.
  void BuildReverse(const std::vector<uint32_t>* priv_counts = nullptr) {
    const size_t nl = links.size(), nc = class_off.size() - 1, na = aggs.size();
    Reverse(
        nl, priv_off, na, [&](uint32_t k) { return priv[k]; }, link_aggs_off, link_aggs, kNoEntry,
        priv_counts != nullptr ? priv_counts->data() : nullptr);
    AssignWithRoom(link_class_share, class_links.size(), 0.0);
    Reverse(
        nl, class_off, nc, [&](uint32_t k) { return class_links[k].link; }, link_classes_off, link_classes,
        [&](uint32_t i, uint32_t k) { link_class_share[i] = class_links[k].share; });
    Reverse(
        nc, term_off, na, [&](uint32_t k) { return terms[k]; }, class_aggs_off, class_aggs, kNoEntry);
  }
};

// Loops over lists of aggregates read each one's scattered fields (offsets,
// weight, rate, links): arrays far larger than the caches, so a miss per
// field one after another. ForEachAhead calls f(a) for each a of `list`,
// fetching those of the aggregate kAhead places on (its offsets, weight and
// `extra[a]`) and the links of the one kAhead / 2 places on (whose offsets
// were fetched before).
constexpr size_t kAhead = 16;
template <class T, class F>
void ForEachAhead(const LocalProblem& p, std::span<const uint32_t> list, const T* extra, F&& f) {
  const size_t n = list.size();
  for (size_t i = 0; i < n; ++i) {
    if (i + kAhead < n) {
      const uint32_t b = list[i + kAhead];
      __builtin_prefetch(&p.priv_off[b]);
      __builtin_prefetch(&p.weight[b]);
      __builtin_prefetch(extra + b);
    }
    if (i + kAhead / 2 < n) __builtin_prefetch(p.priv.data() + p.priv_off[list[i + kAhead / 2]]);
    f(list[i]);
  }
}

// Progressive filling on the active aggregates of a LocalProblem.
//
// A class's links are many (a sprayed route crosses thousands on a large
// fabric) and its members freeze a few at a time, so the class side of a
// link's load is not kept per link: per class, the weight of its active
// members and the rate its frozen members take; a link sums its classes
// when the heap asks for its level (once or twice per link) instead of
// every class updating every link at each freeze (35 M updates for one
// 131k-aggregate component of the 32k MoE case, against about 2 M terms
// summed: each link once for the heap and once when popped).
class WaterFiller {
 public:
  // Fills rate[a] (per flow) and bottleneck[a] (local link) for every active a.
  void Fill(const LocalProblem& p, const std::vector<uint8_t>& active, std::vector<double>& rate,
            std::vector<uint32_t>& bottleneck) {
    const size_t nl = p.links.size(), nc = p.class_off.size() - 1, na = p.aggs.size();
    slope_.assign(nl, 0.0);
    used_.assign(nl, 0.0);
    count_.assign(nl, 0);
    class_sum_.assign(nc, 0.0);
    class_used_.assign(nc, 0.0);
    class_n_.assign(nc, 0);
    class_dsum_.assign(nc, 0.0);
    class_dn_.assign(nc, 0);
    frozen_.assign(na, 0);
    link_level_.assign(nl, kNoLevel);
    levels_ = 0;
    for (size_t a = 0; a < na; ++a) {
      if (!active[a]) continue;
      const double w = p.weight[a];
      for (uint32_t k = p.priv_off[a]; k < p.priv_off[a + 1]; ++k) {
        slope_[p.priv[k]] += w * p.priv_share(k);
        ++count_[p.priv[k]];
      }
      for (uint32_t k = p.term_off[a]; k < p.term_off[a + 1]; ++k) {
        class_sum_[p.terms[k]] += w * p.term_scale(k);
        ++class_n_[p.terms[k]];
      }
      if (p.priv_off[a] == p.priv_off[a + 1] && p.term_off[a] == p.term_off[a + 1]) {
        rate[a] = kInf;  // crosses no link that can saturate
        bottleneck[a] = kNoLink;
        frozen_[a] = 1;
      }
    }
    for (size_t c = 0; c < nc; ++c) {
      if (class_n_[c] == 0) continue;
      for (uint32_t k = p.class_off[c]; k < p.class_off[c + 1]; ++k) ++count_[p.class_links[k].link];
    }
    // A link's saturation level only rises as flows freeze (freezing a=wφ
    // at level ℓ <= R/S gives (R - aℓ)/(S - a) >= R/S), so every link keeps
    // one heap entry whose key is a lower bound: a popped entry is
    // re-checked and pushed back with its current level when that is
    // higher. Far fewer heap operations than one push per touch.
    heap_ = {};
    for (uint32_t l = 0; l < nl; ++l) {
      if (count_[l] == 0) continue;
      const double slope = Slope(p, l);
      if (slope > 0) heap_.push({p.capacity[l] / slope, l});
    }
    double level = 0;
    while (!heap_.empty()) {
      Entry e = heap_.top();
      heap_.pop();
      if (count_[e.link] == 0) continue;
      const double now = LevelOf(p, e.link, level);
      if (now > e.level * (1 + 1e-12)) {
        heap_.push({now, e.link});
        continue;
      }
      if (levels_ == 0 || now > level) ++levels_;  // a new level
      level = std::max(level, now);
      link_level_[e.link] = levels_ - 1;
      touched_classes_.clear();
      auto freeze = [&](uint32_t a) {
        if (!active[a] || frozen_[a]) return;
        frozen_[a] = 1;
        rate[a] = level;
        bottleneck[a] = e.link;
        const double w = p.weight[a];
        for (uint32_t k = p.priv_off[a]; k < p.priv_off[a + 1]; ++k) {
          uint32_t m = p.priv[k];
          used_[m] += w * p.priv_share(k) * level;
          slope_[m] -= w * p.priv_share(k);
          --count_[m];
        }
        for (auto [k, end] = p.term_range(a); k < end; ++k) {
          uint32_t c = p.terms[k];
          if (class_dn_[c] == 0) touched_classes_.push_back(c);
          class_dsum_[c] += w * p.term_scale(k);
          ++class_dn_[c];
        }
      };
      // The link's members, scattered: fetched ahead.
      const uint32_t kb = p.link_aggs_off[e.link], ke = p.link_aggs_off[e.link + 1];
      ForEachAhead(p, std::span<const uint32_t>(p.link_aggs.data() + kb, ke - kb), frozen_.data(), freeze);
      for (uint32_t k = p.link_classes_off[e.link]; k < p.link_classes_off[e.link + 1]; ++k) {
        uint32_t c = p.link_classes[k];
        if (class_n_[c] == 0) continue;
        for (uint32_t j = p.class_aggs_off[c]; j < p.class_aggs_off[c + 1]; ++j) freeze(p.class_aggs[j]);
      }
      for (uint32_t c : touched_classes_) {
        const double ds = class_dsum_[c];
        class_sum_[c] -= ds;
        class_used_[c] += ds * level;
        class_n_[c] -= class_dn_[c];
        if (class_n_[c] == 0) {
          for (uint32_t k = p.class_off[c]; k < p.class_off[c + 1]; ++k) --count_[p.class_links[k].link];
        }
        class_dsum_[c] = 0;
        class_dn_[c] = 0;
      }
      count_[e.link] = 0;  // saturated: every flow on it is frozen
    }
  }

  static constexpr uint32_t kNoLevel = UINT32_MAX;
  // The levels of the last fill, numbered from 0 as they rose: per link,
  // the one at which it saturated (kNoLevel: it did not). Every aggregate
  // frozen there has that level as its rate.
  const std::vector<uint32_t>& link_level() const { return link_level_; }
  uint32_t levels() const { return levels_; }

 private:
  struct Entry {
    double level;
    uint32_t link;
    bool operator<(const Entry& o) const {
      return level != o.level ? level > o.level : link > o.link;  // min-heap, ties by link id
    }
  };
  // The active weight on link l: its private members' and its classes'.
  double Slope(const LocalProblem& p, uint32_t l) const {
    double slope = slope_[l];
    for (uint32_t k = p.link_classes_off[l]; k < p.link_classes_off[l + 1]; ++k) {
      const uint32_t c = p.link_classes[k];
      if (class_n_[c] > 0) slope += p.link_class_share[k] * class_sum_[c];
    }
    return slope;
  }
  // The level at which link l fills, given what its frozen members take.
  double LevelOf(const LocalProblem& p, uint32_t l, double level) const {
    double slope = slope_[l], used = used_[l];
    for (uint32_t k = p.link_classes_off[l]; k < p.link_classes_off[l + 1]; ++k) {
      const uint32_t c = p.link_classes[k];
      const double share = p.link_class_share[k];
      used += share * class_used_[c];
      if (class_n_[c] > 0) slope += share * class_sum_[c];
    }
    return slope > 0 ? std::max(level, (p.capacity[l] - used) / slope) : level;
  }

  std::vector<uint32_t> link_level_;
  uint32_t levels_ = 0;
  std::vector<double> slope_, used_;  // per link: its private members' part
  std::vector<uint32_t> count_;       // per link: active private members and classes with active members
  // Per class: its active members' weight, the rate its frozen members take
  // (both per unit of share), its active members.
  std::vector<double> class_sum_, class_used_, class_dsum_;
  std::vector<uint32_t> class_n_, class_dn_;
  std::vector<uint8_t> frozen_;
  std::vector<uint32_t> touched_classes_;
  std::priority_queue<Entry> heap_;
};

// Completions re-solve only what they can change (incremental max-min).
//
// Why it is exact. Let F be a batch of completing aggregates and r_min the
// lowest rate in F. Every link that an aggregate of F crosses saturated, in
// the progressive filling that produced the current rates, at a level
// >= r_min (the aggregate froze there or lower). Without F, filling from 0
// to r_min meets the same saturations in the same order: links not crossed
// by F see the same load at every level, links crossed by F see less and
// cannot fill earlier. So every aggregate whose rate is below r_min keeps
// it, and every other one gets at least r_min. The new allocation is the
// progressive filling of the others only, from level r_min, with the low
// aggregates' load fixed on every link.
//
// With classes, every aggregate at or above r_min is re-filled: in each
// batch the fastest flows finish first, so usually few. Without classes
// (the hash modes: millions of aggregates, a few links each), only those
// whose rate the batch can change, found by following bottlenecks
// (DirectedBatch): on the 32k MoE hash case, 16-39 k re-fills per baseline
// component of 893 k aggregates and 133 k on a drained one, where the rule
// before (every aggregate at or above r_min that a chain of shared links
// joins to a finished one) re-filled 66-159 k and 795 k, two thirds of
// them to the rates they had.
//
// Cost per batch: the finished aggregates, the re-filled ones, their links
// (and classes), and a heap of predicted finish times; not the whole
// component.
struct EventCounts {
  size_t events = 0;    // completion batches
  size_t refilled = 0;  // aggregates re-filled, summed over batches
  size_t widened = 0;   // re-fills started again with more aggregates (DirectedBatch)
  size_t shared = 0;    // batches that fell back to every aggregate joined by shared links
  double last_s = 0;    // the last finite finish time (the component's part of the makespan)
  bool loads = false;   // the t = 0 loads of the component's links written into the solution
};

class IncrementalEvents {
 public:
  void set_max_restarts(int n) { max_restarts_ = std::max(n, 0); }  // FluidOptions::refill_restarts
  // Frees p's reverse indices once they are no longer read: after the
  // t = 0 fill, unless the batches are directed.
  // With `write_loads`, each link's t = 0 load goes into sol.load0_bps
  // (counts.loads): the caller knows it is LoadsAtStart's sum to the bit.
  Status Run(LocalProblem& p, const std::vector<double>& bits, WaterFiller& filler, FluidSolution& sol,
             EventCounts& counts, std::stop_token stop, bool write_loads = false) {
    const size_t n = p.aggs.size(), nl = p.links.size(), nc = p.class_off.size() - 1;
    AssignWithRoom(active_, n, 0);
    AssignWithRoom(rate_, n, 0.0);
    AssignWithRoom(bottleneck_, n, kNoLink);
    AssignWithRoom(remaining_, n, 0.0);
    AssignWithRoom(since_, n, 0.0);
    AssignWithRoom(finish_, n, 0.0);
    AssignWithRoom(version_, n, 0);
    order_.clear();
    for (size_t i = 0; i < n; ++i) {
      remaining_[i] = bits[p.aggs[i]];
      if (remaining_[i] > 0) active_[i] = 1;
    }
    // t = 0: one full progressive filling.
    filler.Fill(p, active_, rate_, bottleneck_);
    // Without classes (the hash modes), batches follow bottlenecks
    // (DirectedBatch), which reads the members of a link now and then, and
    // needs every active aggregate with a finite rate frozen on a link (so
    // it is, unless a link had a member of zero weight or share).
    directed_ = p.class_off.size() == 1 && p.terms.empty();
    for (size_t i = 0; i < n && directed_; ++i) {
      if (active_[i] && bottleneck_[i] == kNoLink && std::isfinite(rate_[i])) directed_ = false;
    }
    if (!directed_) p.FreeReverse();
    // Directed: each link's members in the reverse index are read from
    // link_members_ (p's, compacted as they finish) up to link_members_end_.
    link_members_ = directed_ ? p.link_aggs.data() : nullptr;
    // One pass over the active aggregates: their t = 0 rates out, the
    // loads, the links' bounds and lists (directed batches), and the t = 0
    // predictions, which initial_ lists by index here, so that a stable
    // sort by time alone gives the order (time, index). Most aggregates
    // are never re-predicted, and one sort is far cheaper than as many
    // heap pops.
    usage_.assign(nl, 0.0);
    if (directed_) {
      bound_.assign(nl, 0.0);
      InitBottlenecks(p, n, nl);
    }
    heap_.clear();
    compact_at_ = 4096;
    initial_.clear();
    ReserveWithRoom(initial_, n);
    // Room for n (push_back's doubling would keep up to twice it, per thread;
    // ReserveWithRoom takes 1/32 more, so the next component may fit in it).
    if (!directed_) ReserveWithRoom(order_, n);
    cursor_ = 0;
    std::vector<double> class_rate(nc, 0.0);
    for (uint32_t i = 0; i < n; ++i) {
      if (!active_[i]) {  // (every entry is written: the arrays may be another solve's)
        sol.rate0_bps[p.aggs[i]] = 0;
        sol.bottleneck0[p.aggs[i]] = kNoLink;
        continue;
      }
      sol.rate0_bps[p.aggs[i]] = rate_[i];
      sol.bottleneck0[p.aggs[i]] = bottleneck_[i] == kNoLink ? kNoLink : p.links[bottleneck_[i]];
      if (!directed_) order_.push_back(i);
      version_[i] = 1;
      initial_.push_back({PredictAt(i, 0), i, 1});
      if (!std::isfinite(rate_[i])) continue;
      const double r = rate_[i] * p.weight[i];
      for (uint32_t k = p.priv_off[i]; k < p.priv_off[i + 1]; ++k) usage_[p.priv[k]] += r * p.priv_share(k);
      for (auto [k, end] = p.term_range(i); k < end; ++k) class_rate[p.terms[k]] += r * p.term_scale(k);
      if (!directed_) continue;
      if (bottleneck_[i] != kNoLink) ++first_off_[bottleneck_[i] + 1];
      for (uint32_t k = p.priv_off[i]; k < p.priv_off[i + 1]; ++k) {
        bound_[p.priv[k]] = std::max(bound_[p.priv[k]], rate_[i]);
      }
    }
    if (directed_) ListFirstBottlenecks(n, nl);
    for (size_t c = 0; c < nc; ++c) {
      if (class_rate[c] == 0) continue;
      for (uint32_t k = p.class_off[c]; k < p.class_off[c + 1]; ++k) {
        usage_[p.class_links[k].link] += class_rate[c] * p.class_links[k].share;
      }
    }
    if (write_loads) {
      for (uint32_t l = 0; l < nl; ++l) sol.load0_bps[p.links[l]] = usage_[l];
      counts.loads = true;
    }
    SortByFewKeys(initial_, [](const Finish& f) { return OrderKey(f.at); });
    if (!directed_) OrderByLevel(filler);
    Free(keyed_);  // the later sorts are of a batch's re-filled aggregates: a few

    // Scratch of the re-fills, stamped per batch.
    link_stamp_.assign(nl, 0);
    class_stamp_.assign(nc, 0);
    AssignWithRoom(agg_stamp_, n, 0u);
    slope_.assign(nl, 0.0);
    used_.assign(nl, 0.0);
    queued_.assign(nl, kInf);
    count_.assign(nl, 0);
    class_sum_.assign(nc, 0.0);
    class_old_.assign(nc, 0.0);
    class_n_.assign(nc, 0);
    class_dsum_.assign(nc, 0.0);
    class_dn_.assign(nc, 0);
    stamp_ = 0;

    double now = 0;
    size_t live = initial_.size();  // the active aggregates
    while (live > 0) {
      if (stop.stop_requested()) return MakeError(ErrorCode::kCancelled, "flow simulation cancelled");
      const double next = NextFinish();
      ++counts.events;
      if (!std::isfinite(next)) {  // nothing can progress (zero capacity): never finishes
        for (size_t i = 0; i < n; ++i) {
          if (active_[i]) finish_[i] = kInf;
        }
        break;
      }
      // The batch: every finish within a relative kBatchTolerance of the
      // step (as the full re-solve batches them).
      const double dt = next - now;
      const double cutoff = now + dt * (1 + kBatchTolerance);
      now = next;
      counts.last_s = now;  // (finite; the batch holds at least the earliest finish)
      finished_.clear();
      double r_min = kInf;
      while (const Finish* top_f = Top()) {
        const Finish f = *top_f;
        if (f.at > cutoff) break;
        Pop(top_f);
        active_[f.agg] = 0;
        finish_[f.agg] = now;
        finished_.push_back(f.agg);
        r_min = std::min(r_min, rate_[f.agg]);
      }
      live -= finished_.size();
      if (directed_) {
        if (std::isfinite(r_min) && live > 0) DirectedBatch(p, r_min, now, counts);
        continue;
      }
      // With classes, every aggregate at or above r_min is re-filled: a
      // suffix of order_ (ascending rates).
      size_t top = order_.size();
      // (Scattered: fetched ahead, as ForEachAhead does.)
      while (top > 0 && rate_[order_[top - 1]] >= r_min) {
        if (top > kAhead) {
          __builtin_prefetch(&rate_[order_[top - 1 - kAhead]]);
          __builtin_prefetch(&active_[order_[top - 1 - kAhead]]);
        }
        --top;
      }
      refill_.clear();
      for (size_t k = top; k < order_.size(); ++k) {
        if (active_[order_[k]]) refill_.push_back(order_[k]);
      }
      order_.resize(top);
      const bool refill = std::isfinite(r_min) && live > 0;
      for (uint32_t i : refill_) {
        remaining_[i] -= rate_[i] * (now - since_[i]);
        since_[i] = now;
      }
      if (refill) {
        TakeOffFinished(p);
        Refill(p, r_min);
        for (uint32_t i : refill_) Predict(i, now);
      }
      // The refilled aggregates are all >= r_min > every rate before them
      // (only flows that crossed no link, at infinite rate, finished when
      // r_min is infinite: nothing else changes).
      SortByRate(refill_);
      order_.insert(order_.end(), refill_.begin(), refill_.end());
    }
    for (size_t i = 0; i < n; ++i) sol.finish_s[p.aggs[i]] = finish_[i];
    return {};
  }

 private:
  struct Finish {
    double at;
    uint32_t agg;
    uint32_t version;
    bool operator<(const Finish& o) const { return at != o.at ? at > o.at : agg > o.agg; }  // min-heap
  };

  // Sorts aggregates by (rate, index), on copies of the keys: the
  // comparisons then read one contiguous array instead of rate_ at random
  // (millions of cache misses on a large component's first sort). When v
  // is in index order (`by_index`, the t = 0 sort), a stable radix sort by
  // rate alone gives the same order.
  void SortByRate(std::vector<uint32_t>& v, bool by_index = false) {
    keyed_.resize(v.size());
    for (size_t k = 0; k < v.size(); ++k) keyed_[k] = {rate_[v[k]], v[k]};
    if (by_index) {
      SortByFewKeys(keyed_, [](const Keyed& x) { return OrderKey(x.rate); });
    } else {
      std::sort(keyed_.begin(), keyed_.end(),
                [](const Keyed& x, const Keyed& y) { return x.rate != y.rate ? x.rate < y.rate : x.agg < y.agg; });
    }
    for (size_t k = 0; k < v.size(); ++k) v[k] = keyed_[k].agg;
  }
  struct Keyed {
    double rate;
    uint32_t agg;
  };
  std::vector<Keyed> keyed_;

  // Puts order_ (the active aggregates by index, after the t = 0 fill) in
  // (rate, index) order from the fill's levels: an aggregate's rate is the
  // level at which its bottleneck saturated and levels only rose, so a
  // counting sort by that level's number, keeping index order, gives what
  // SortByRate(order_, true) does (aggregates on no link, at an infinite
  // rate, last), in two passes over the aggregates without their rates,
  // where the sort took 8.5 ms per component of 893 k aggregates on the
  // 32k MoE hash case (measured before those batches were directed, and
  // needed no order). Sorts by rate should an active aggregate not have
  // been frozen.
  void OrderByLevel(const WaterFiller& filler) {
    const std::vector<uint32_t>& link_level = filler.link_level();
    const uint32_t top = filler.levels();  // infinite rates
    auto level_of = [&](uint32_t i) { return bottleneck_[i] == kNoLink ? top : link_level[bottleneck_[i]]; };
    level_start_.assign(static_cast<size_t>(top) + 2, 0);
    for (uint32_t i : order_) {
      if (bottleneck_[i] == kNoLink && std::isfinite(rate_[i])) {
        SortByRate(order_, true);
        return;
      }
      ++level_start_[level_of(i) + 1];
    }
    for (size_t k = 1; k < level_start_.size(); ++k) level_start_[k] += level_start_[k - 1];
    AssignWithRoom(by_level_, order_.size(), 0u);
    for (uint32_t i : order_) by_level_[level_start_[level_of(i)]++] = i;
    order_.swap(by_level_);
    Free(by_level_);
  }
  std::vector<uint32_t> level_start_, by_level_;

  double PredictAt(uint32_t i, double now) const {
    return !std::isfinite(rate_[i]) ? now : rate_[i] > 0 ? now + remaining_[i] / rate_[i] : kInf;
  }
  void Predict(uint32_t i, double now) {
    ++version_[i];
    heap_.push_back({PredictAt(i, now), i, version_[i]});
    std::push_heap(heap_.begin(), heap_.end());
    // Re-predictions leave stale entries (millions on large components):
    // drop them in one pass when they outnumber the current ones, rather
    // than popping each at log cost.
    if (heap_.size() >= compact_at_) {
      heap_.erase(std::remove_if(heap_.begin(), heap_.end(), [&](const Finish& f) { return !Current(f); }),
                  heap_.end());
      std::make_heap(heap_.begin(), heap_.end());
      compact_at_ = std::max<size_t>(2 * heap_.size(), 4096);
    }
  }
  bool Current(const Finish& f) const { return active_[f.agg] && f.version == version_[f.agg]; }

  // The earliest current prediction (of initial_ from cursor_ and heap_),
  // stale ones dropped on the way; nullptr when none is left.
  const Finish* Top() {
    while (cursor_ < initial_.size() && !Current(initial_[cursor_])) ++cursor_;
    while (!heap_.empty() && !Current(heap_.front())) {
      std::pop_heap(heap_.begin(), heap_.end());
      heap_.pop_back();
    }
    const Finish* a = cursor_ < initial_.size() ? &initial_[cursor_] : nullptr;
    const Finish* b = heap_.empty() ? nullptr : &heap_.front();
    if (a == nullptr || b == nullptr) return a != nullptr ? a : b;
    return *a < *b ? b : a;  // operator< orders the heap: x < y when x comes later
  }
  void Pop(const Finish* f) {
    if (cursor_ < initial_.size() && f == &initial_[cursor_]) {
      ++cursor_;
      if (cursor_ + kAhead < initial_.size()) {  // scattered: fetched ahead
        const uint32_t b = initial_[cursor_ + kAhead].agg;
        __builtin_prefetch(&active_[b]);
        __builtin_prefetch(&version_[b]);
        __builtin_prefetch(&rate_[b]);
      }
    } else {
      std::pop_heap(heap_.begin(), heap_.end());
      heap_.pop_back();
    }
  }

  double NextFinish() {
    const Finish* f = Top();
    return f != nullptr ? f->at : kInf;
  }

  void TouchLink(uint32_t l) {
    if (link_stamp_[l] == stamp_) return;
    link_stamp_[l] = stamp_;
    links_.push_back(l);
    slope_[l] = 0;
    used_[l] = 0;  // first: what the batch takes off
    count_[l] = 0;
    queued_[l] = kInf;
  }
  void TouchClass(uint32_t c) {
    if (class_stamp_[c] == stamp_) return;
    class_stamp_[c] = stamp_;
    classes_.push_back(c);
    class_sum_[c] = class_old_[c] = class_dsum_[c] = 0;
    class_n_[c] = class_dn_[c] = 0;
  }

  // Old contributions of an aggregate finished (refilled = false) or to
  // re-fill (true, with its slopes).
  void TakeOff(const LocalProblem& p, uint32_t a, bool refilled) {
    const double w = p.weight[a];
    const double r = std::isfinite(rate_[a]) ? rate_[a] : 0.0;
    for (uint32_t k = p.priv_off[a]; k < p.priv_off[a + 1]; ++k) {
      const uint32_t l = p.priv[k];
      TouchLink(l);
      used_[l] += w * p.priv_share(k) * r;
      if (refilled) {
        slope_[l] += w * p.priv_share(k);
        ++count_[l];
      }
    }
    for (auto [k, end] = p.term_range(a); k < end; ++k) {
      const uint32_t c = p.terms[k];
      TouchClass(c);
      class_old_[c] += w * p.term_scale(k) * r;
      if (refilled) {
        class_sum_[c] += w * p.term_scale(k);
        ++class_n_[c];
      }
    }
  }
  // Starts a batch's re-fill: a new stamp, the finished aggregates' old
  // contributions taken off.
  void TakeOffFinished(const LocalProblem& p) {
    if (++stamp_ == 0) {
      std::fill(link_stamp_.begin(), link_stamp_.end(), 0);
      std::fill(class_stamp_.begin(), class_stamp_.end(), 0);
      std::fill(agg_stamp_.begin(), agg_stamp_.end(), 0);
      stamp_ = 1;
    }
    links_.clear();
    classes_.clear();
    ForEachAhead(p, finished_, rate_.data(), [&](uint32_t a) { TakeOff(p, a, false); });
  }
  // New rates of refill_ (the active aggregates to re-fill, all at or
  // above r_min) with every other active aggregate fixed and finished_
  // gone (taken off by TakeOffFinished first); keeps usage_. In a directed
  // batch, false (rates of refill_ back as they were, usage_ untouched)
  // when R froze on a link with a fixed member above its level: those
  // members are in widen_.
  bool Refill(const LocalProblem& p, double r_min, bool check = true) {
    ForEachAhead(p, refill_, rate_.data(), [&](uint32_t a) {
      agg_stamp_[a] = stamp_;  // unfrozen
      TakeOff(p, a, true);
    });
    froze_at_.clear();
    for (uint32_t c : classes_) {
      for (uint32_t k = p.class_off[c]; k < p.class_off[c + 1]; ++k) {
        const uint32_t l = p.class_links[k].link;
        TouchLink(l);
        used_[l] += class_old_[c] * p.class_links[k].share;
        if (class_n_[c] > 0) {
          slope_[l] += class_sum_[c] * p.class_links[k].share;
          ++count_[l];
        }
      }
    }
    // used_ = what the fixed (low) aggregates put on each touched link.
    for (uint32_t l : links_) used_[l] = usage_[l] - used_[l];

    // Who crosses each touched link, restricted to the refill: private
    // members and classes with refilled members (CSR over links_).
    BuildIndex(p);

    // The queue of links that may saturate next. Not every touched link:
    // per refilled aggregate, the one of its private links that fills
    // first if nothing froze (a lower bound of where the aggregate can
    // freeze, as levels only rise), and every link of a class with
    // refilled members. The queue's least key is then never above the
    // level at which the next link saturates: for any link with an
    // unfrozen member, that member's tracked link (or, for a class link,
    // the link itself) is queued at or below it. A link popped whose level
    // rose is queued again, and its private members tracked again, from
    // their links' current levels. On the 32k MoE hash case this queues
    // one link per five touched (the private links of most refilled
    // aggregates are theirs alone): sorting all of them was a third of
    // the re-fills.
    heap_links_.clear();  // keeps its storage across batches
    bool built = false;
    auto queue = [&](uint32_t l, double key) {
      if (!(key < queued_[l])) return;  // already queued as low (a lower bound either way)
      queued_[l] = key;
      if (built) {
        heap_links_.push({key, l});
      } else {
        heap_links_.Append({key, l});
      }
    };
    double level = r_min;
    // Keys are never below the current level: a link whose load already
    // exceeds its capacity saturates at once.
    auto track = [&](uint32_t a) {
      double best = kInf;
      uint32_t best_link = kNoLink;
      for (uint32_t k = p.priv_off[a]; k < p.priv_off[a + 1]; ++k) {
        const uint32_t l = p.priv[k];
        if (count_[l] == 0 || !(slope_[l] > 0)) continue;
        const double v = std::max(level, (p.capacity[l] - used_[l]) / slope_[l]);
        if (v < best || (v == best && l < best_link)) {
          best = v;
          best_link = l;
        }
      }
      if (best_link != kNoLink) queue(best_link, best);
    };
    for (uint32_t a : refill_) track(a);
    for (uint32_t c : classes_) {
      if (class_n_[c] == 0) continue;
      for (uint32_t k = p.class_off[c]; k < p.class_off[c + 1]; ++k) {
        const uint32_t l = p.class_links[k].link;
        if (count_[l] > 0 && slope_[l] > 0) queue(l, std::max(level, (p.capacity[l] - used_[l]) / slope_[l]));
      }
    }
    heap_links_.Build();
    built = true;
    // Once every refilled aggregate is frozen, no link left has a member.
    size_t unfrozen = refill_.size();
    while (unfrozen > 0 && !heap_links_.empty()) {
      const LinkEntry e = heap_links_.top();
      heap_links_.pop();
      if (count_[e.link] == 0 || e.level != queued_[e.link]) continue;  // full, or queued again lower
      queued_[e.link] = kInf;
      const double now =
          slope_[e.link] > 0 ? std::max(level, (p.capacity[e.link] - used_[e.link]) / slope_[e.link]) : level;
      if (now > e.level * (1 + 1e-12)) {
        queue(e.link, now);
        const uint32_t slot = link_slot_[e.link];
        for (uint32_t k = priv_off_[slot]; k < priv_off_[slot + 1]; ++k) {
          if (agg_stamp_[priv_aggs_[k]] == stamp_) track(priv_aggs_[k]);
        }
        continue;
      }
      level = std::max(level, now);
      if (directed_) {
        if (check && FixedAbove(p, e.link, level)) {
          for (size_t k = 0; k < refill_.size(); ++k) rate_[refill_[k]] = old_rate_[k];
          return false;
        }
        froze_at_.push_back({level, e.link});
      }
      touched_classes_.clear();
      auto freeze = [&](uint32_t a) {
        if (agg_stamp_[a] != stamp_) return;  // fixed, or frozen in this fill
        agg_stamp_[a] = 0;
        --unfrozen;
        rate_[a] = level;
        if (directed_) new_bottleneck_[a] = e.link;
        const double w = p.weight[a];
        for (uint32_t k = p.priv_off[a]; k < p.priv_off[a + 1]; ++k) {
          const uint32_t m = p.priv[k];
          used_[m] += w * p.priv_share(k) * level;
          slope_[m] -= w * p.priv_share(k);
          --count_[m];
        }
        for (auto [k, end] = p.term_range(a); k < end; ++k) {
          const uint32_t c = p.terms[k];
          if (class_dn_[c] == 0) touched_classes_.push_back(c);
          class_dsum_[c] += w * p.term_scale(k);
          ++class_dn_[c];
        }
      };
      const uint32_t slot = link_slot_[e.link];
      for (uint32_t k = priv_off_[slot]; k < priv_off_[slot + 1]; ++k) freeze(priv_aggs_[k]);
      for (uint32_t k = cls_off_[slot]; k < cls_off_[slot + 1]; ++k) {
        const uint32_t c = link_cls_[k];
        if (class_n_[c] == 0) continue;
        for (uint32_t j = member_off_[class_slot_[c]]; j < member_off_[class_slot_[c] + 1]; ++j) freeze(members_[j]);
      }
      for (uint32_t c : touched_classes_) {
        const double ds = class_dsum_[c];
        class_sum_[c] -= ds;
        class_n_[c] -= class_dn_[c];
        const bool emptied = class_n_[c] == 0;
        for (uint32_t k = p.class_off[c]; k < p.class_off[c + 1]; ++k) {
          const uint32_t m = p.class_links[k].link;
          used_[m] += ds * p.class_links[k].share * level;
          slope_[m] -= ds * p.class_links[k].share;
          if (emptied) --count_[m];
        }
        class_dsum_[c] = 0;
        class_dn_[c] = 0;
      }
      count_[e.link] = 0;
    }
    for (uint32_t l : links_) usage_[l] = used_[l];
    return true;
  }

  // Directed batches (problems without classes).
  //
  // Which aggregates a batch can change. Every aggregate is frozen on a
  // bottleneck link: saturated, and its rate the highest there. A link's
  // state changes only when one of its aggregates finishes or changes
  // rate, and an aggregate's rate only when its bottleneck's state does.
  // So R, the set re-filled, is the closure: the aggregates frozen on the
  // finished ones' links, then those frozen on the links of those, and so
  // on. Every other aggregate keeps its bottleneck, with the same members
  // at the same rates, so it keeps its rate too: R is re-filled from r_min
  // with every other aggregate fixed (Refill).
  //
  // What can go wrong, and the check. The re-fill is the max-min
  // allocation unless an aggregate of R freezes on a link where a fixed
  // aggregate has a higher rate: that one would have to give way. Per
  // link, bound_ is at least the rate of every member (the level at which
  // it last froze members, or the highest member's rate), so the members
  // are only read (through the reverse index, which these problems keep)
  // when a link freezes R below its bound; any member above the level
  // joins R, with what its links' closure adds, and the re-fill starts
  // again (on the 32k MoE hash case, in 84-166 of 2,849-3,697 batches per
  // baseline component, 500 of 5,809 on a drained one).
  //
  // Each link lists the aggregates frozen on it, entries of those that
  // finished or moved dropped when the list is next read; a list read
  // empties, as its members join R and are listed again where they freeze.
  // Those of t = 0 in one array by link (first_, a counting sort: pushed
  // one by one onto a vector per link, in a process's first components on
  // the 32k MoE hash case the vectors' growth was ~a quarter of the
  // set-up), those frozen later in bl_.

  // Empty lists and stamps; Run counts each link's aggregates frozen at
  // t = 0 in first_off_[l + 1], then ListFirstBottlenecks.
  void InitBottlenecks(const LocalProblem& p, size_t n, size_t nl) {
    if (bl_.size() < nl) bl_.resize(nl);
    for (size_t l = 0; l < nl; ++l) bl_[l].clear();
    first_off_.assign(nl + 1, 0);
    first_read_.assign(nl, 0);
    link_members_end_.assign(p.link_aggs_off.begin() + 1, p.link_aggs_off.end());
    AssignWithRoom(new_bottleneck_, n, kNoLink);
    AssignWithRoom(in_r_, n, 0u);
    link_in_p_.assign(nl, 0);
    r_stamp_ = 0;
  }
  void ListFirstBottlenecks(size_t n, size_t nl) {
    for (size_t l = 0; l < nl; ++l) first_off_[l + 1] += first_off_[l];
    ResizeWithRoom(first_, first_off_[nl]);
    fill_first_.assign(first_off_.begin(), first_off_.end() - 1);
    for (uint32_t i = 0; i < n; ++i) {
      if (active_[i] && std::isfinite(rate_[i]) && bottleneck_[i] != kNoLink) first_[fill_first_[bottleneck_[i]]++] = i;
    }
  }
  // Adds a's links to the closure's queue.
  void QueueLinks(const LocalProblem& p, uint32_t a) {
    for (uint32_t k = p.priv_off[a]; k < p.priv_off[a + 1]; ++k) {
      const uint32_t l = p.priv[k];
      if (link_in_p_[l] == r_stamp_) continue;
      link_in_p_[l] = r_stamp_;
      queue_.push_back(l);
    }
  }
  // Adds to R (refill_) every aggregate frozen on a queued link, and its links.
  void Close(const LocalProblem& p) {
    while (queue_head_ < queue_.size()) {
      const uint32_t l = queue_[queue_head_++];
      auto join = [&](uint32_t a) {
        if (!active_[a] || bottleneck_[a] != l || in_r_[a] == r_stamp_) return;
        in_r_[a] = r_stamp_;
        refill_.push_back(a);
        QueueLinks(p, a);
      };
      if (!first_read_[l]) {
        first_read_[l] = 1;
        for (uint32_t k = first_off_[l]; k < first_off_[l + 1]; ++k) join(first_[k]);
      }
      for (uint32_t a : bl_[l]) join(a);
      bl_[l].clear();
    }
  }
  // Whether link l, freezing aggregates of R at `level`, has a fixed member
  // above it (within the batch tolerance); those go to `widen_`.
  // The members read are compacted on the way, in order: finished ones
  // are dropped (on a drained component of the 32k MoE hash case, ~4 in 5
  // of the 3 M entries these reads met had finished).
  bool FixedAbove(const LocalProblem& p, uint32_t l, double level) {
    const double top = level * (1 + kBatchTolerance);
    if (bound_[l] <= top) return false;
    bool any = false;
    uint32_t kept = p.link_aggs_off[l];
    for (uint32_t k = p.link_aggs_off[l]; k < link_members_end_[l]; ++k) {
      const uint32_t u = link_members_[k];
      if (!active_[u]) continue;
      link_members_[kept++] = u;
      if (in_r_[u] != r_stamp_ && rate_[u] > top) {
        widen_.push_back(u);
        any = true;
      }
    }
    link_members_end_[l] = kept;
    return any;
  }
  // Adds to R every active aggregate at or above r_min on a queued link
  // (all of them, from the first: the reverse index), and their links.
  void ShareClose(const LocalProblem& p, double r_min) {
    for (size_t k = 0; k < queue_.size(); ++k) {
      const uint32_t l = queue_[k];
      for (uint32_t j = p.link_aggs_off[l]; j < link_members_end_[l]; ++j) {
        const uint32_t u = link_members_[j];
        if (!active_[u] || in_r_[u] == r_stamp_ || !(rate_[u] >= r_min)) continue;
        in_r_[u] = r_stamp_;
        refill_.push_back(u);
        QueueLinks(p, u);
      }
    }
    queue_head_ = queue_.size();
  }
  // A batch's re-fill: finished_ is the batch, r_min its lowest rate.
  void DirectedBatch(const LocalProblem& p, double r_min, double now, EventCounts& counts) {
    if (++r_stamp_ == 0) {
      std::fill(in_r_.begin(), in_r_.end(), 0);
      std::fill(link_in_p_.begin(), link_in_p_.end(), 0);
      r_stamp_ = 1;
    }
    refill_.clear();
    queue_.clear();
    queue_head_ = 0;
    TakeOffFinished(p);
    for (uint32_t l : links_) {  // the finished aggregates' links, as QueueLinks would list them
      link_in_p_[l] = r_stamp_;
      queue_.push_back(l);
    }
    Close(p);
    // The state of the finished aggregates' links, which a re-fill that
    // starts again goes back to.
    const size_t finished_links = links_.size();
    kept_used_.resize(finished_links);
    for (size_t k = 0; k < finished_links; ++k) kept_used_[k] = used_[links_[k]];
    int restarts = 0;
    bool shared = false;  // R is every aggregate joined by shared links: no check
    for (;;) {
      old_rate_.resize(refill_.size());
      for (size_t k = 0; k < refill_.size(); ++k) {
        const uint32_t i = refill_[k];
        remaining_[i] -= rate_[i] * (now - since_[i]);
        since_[i] = now;
        old_rate_[k] = rate_[i];
        new_bottleneck_[i] = kNoLink;
      }
      widen_.clear();
      if (Refill(p, r_min, !shared)) break;
      ++counts.widened;
      for (size_t k = 0; k < links_.size(); ++k) {
        const uint32_t l = links_[k];
        if (k >= finished_links) {
          link_stamp_[l] = 0;  // untouched (stamps start at 1)
          continue;
        }
        used_[l] = kept_used_[k];
        slope_[l] = 0;
        count_[l] = 0;
        queued_[l] = kInf;
      }
      links_.resize(finished_links);
      if (++restarts >= max_restarts_) {
        // Too many: every aggregate at or above r_min that a chain of
        // links, each crossed by it or another such, joins to the batch
        // (the rule before; exact without the check, since any other
        // crosses no link with them and fills as it did). Linear in what
        // the links reach, where restarts could each add one aggregate.
        ShareClose(p, r_min);
        shared = true;
        ++counts.shared;
        continue;
      }
      for (uint32_t u : widen_) {
        if (in_r_[u] == r_stamp_) continue;
        in_r_[u] = r_stamp_;
        refill_.push_back(u);
        QueueLinks(p, u);
      }
      Close(p);
    }
    counts.refilled += refill_.size();
    for (uint32_t a : refill_) {
      bottleneck_[a] = new_bottleneck_[a];
      if (bottleneck_[a] != kNoLink) bl_[bottleneck_[a]].push_back(a);
      Predict(a, now);
      for (uint32_t k = p.priv_off[a]; k < p.priv_off[a + 1]; ++k) {
        bound_[p.priv[k]] = std::max(bound_[p.priv[k]], rate_[a]);
      }
    }
    for (const auto& [level, l] : froze_at_) bound_[l] = level;  // every member is at most that now
  }

  bool directed_ = false;
  int max_restarts_ = 16;                  // FluidOptions::refill_restarts
  std::vector<std::vector<uint32_t>> bl_;  // per local link: aggregates frozen there since t = 0 (and stale entries)
  std::vector<uint32_t> first_off_, first_, fill_first_;  // per local link: aggregates frozen there at t = 0
  std::vector<uint8_t> first_read_;                       // per local link: its t = 0 list read (so empty)
  uint32_t* link_members_ = nullptr;                      // p.link_aggs, written by the compaction
  std::vector<uint32_t> link_members_end_;                // per local link: where its members still listed end
  std::vector<uint32_t> new_bottleneck_;                  // per aggregate of R: the link it froze on in the re-fill
  uint32_t r_stamp_ = 0;                                  // this batch's, in in_r_ and link_in_p_
  std::vector<uint32_t> in_r_, link_in_p_, queue_, widen_;
  size_t queue_head_ = 0;
  std::vector<double> bound_;                          // per local link: at least the rate of every member
  std::vector<double> old_rate_, kept_used_;           // what a re-fill started again goes back to
  std::vector<std::pair<double, uint32_t>> froze_at_;  // the re-fill's (level, link) where R froze

  void BuildIndex(const LocalProblem& p) {
    const size_t nt = links_.size(), ncl = classes_.size();
    if (link_slot_.size() < p.links.size()) link_slot_.resize(p.links.size());
    if (class_slot_.size() < class_stamp_.size()) class_slot_.resize(class_stamp_.size());
    for (uint32_t s = 0; s < nt; ++s) link_slot_[links_[s]] = s;
    for (uint32_t s = 0; s < ncl; ++s) class_slot_[classes_[s]] = s;
    priv_off_.assign(nt + 1, 0);
    cls_off_.assign(nt + 1, 0);
    member_off_.assign(ncl + 1, 0);
    for (uint32_t a : refill_) {
      for (uint32_t k = p.priv_off[a]; k < p.priv_off[a + 1]; ++k) ++priv_off_[link_slot_[p.priv[k]] + 1];
      for (auto [k, end] = p.term_range(a); k < end; ++k) ++member_off_[class_slot_[p.terms[k]] + 1];
    }
    for (uint32_t c : classes_) {
      if (class_n_[c] == 0) continue;
      for (uint32_t k = p.class_off[c]; k < p.class_off[c + 1]; ++k) ++cls_off_[link_slot_[p.class_links[k].link] + 1];
    }
    for (size_t s = 0; s < nt; ++s) {
      priv_off_[s + 1] += priv_off_[s];
      cls_off_[s + 1] += cls_off_[s];
    }
    for (size_t s = 0; s < ncl; ++s) member_off_[s + 1] += member_off_[s];
    priv_aggs_.resize(priv_off_.back());
    link_cls_.resize(cls_off_.back());
    members_.resize(member_off_.back());
    fill_a_.assign(priv_off_.begin(), priv_off_.end() - 1);
    fill_b_.assign(cls_off_.begin(), cls_off_.end() - 1);
    fill_c_.assign(member_off_.begin(), member_off_.end() - 1);
    for (uint32_t a : refill_) {
      for (uint32_t k = p.priv_off[a]; k < p.priv_off[a + 1]; ++k) priv_aggs_[fill_a_[link_slot_[p.priv[k]]]++] = a;
      for (auto [k, end] = p.term_range(a); k < end; ++k) members_[fill_c_[class_slot_[p.terms[k]]]++] = a;
    }
    for (uint32_t c : classes_) {
      if (class_n_[c] == 0) continue;
      for (uint32_t k = p.class_off[c]; k < p.class_off[c + 1]; ++k)
        link_cls_[fill_b_[link_slot_[p.class_links[k].link]]++] = c;
    }
  }

  struct LinkEntry {
    double level;
    uint32_t link;
    bool operator<(const LinkEntry& o) const { return level != o.level ? level > o.level : link > o.link; }
  };

  std::vector<uint8_t> active_;
  std::vector<double> rate_, remaining_, since_;
  // Per aggregate: its finish (0 if it had nothing to send), written out
  // at the end in index order: set in the order of finishes, straight into
  // the solution's array of every aggregate it was a cache miss each.
  std::vector<double> finish_;
  std::vector<uint32_t> bottleneck_, version_;
  // Active aggregates, rates ascending; empty when the batches are directed
  // (they find what to re-fill otherwise).
  std::vector<uint32_t> order_;
  std::vector<Finish> initial_;  // t = 0 predictions, earliest first, consumed from cursor_
  size_t cursor_ = 0;
  std::vector<Finish> heap_;   // re-predictions (std heap)
  size_t compact_at_ = 4096;   // heap_ size at which stale entries are dropped
  std::vector<double> usage_;  // per local link: load of every active aggregate at its rate
  std::vector<uint32_t> finished_, refill_;
  // Re-fill scratch.
  uint32_t stamp_ = 0;
  std::vector<uint32_t> link_stamp_, class_stamp_, agg_stamp_;
  std::vector<uint32_t> links_, classes_, touched_classes_;
  std::vector<double> slope_, used_;
  std::vector<double> queued_;  // per touched link: its least key in heap_links_ (kInf: none)
  std::vector<uint32_t> count_;
  std::vector<double> class_sum_, class_old_, class_dsum_;
  std::vector<uint32_t> class_n_, class_dn_;
  std::vector<uint32_t> link_slot_, class_slot_;
  std::vector<uint32_t> priv_off_, priv_aggs_, cls_off_, link_cls_, member_off_, members_;
  std::vector<uint32_t> fill_a_, fill_b_, fill_c_;
  SortedQueue<LinkEntry> heap_links_;
};

// An aggregate's cover link on side s: its first private link (the source
// NIC) for s = 0, its last (the destination NIC) for s = 1.
// Returns its index in private_links.
uint32_t CoverOf(const FluidProblem& p, int s, size_t a) {
  return s == 0 ? p.private_offsets[a] : p.private_offsets[a + 1] - 1;
}

// The aggregates grouped by cover link on side s (a counting sort): link
// l's are by_cover[off[l] .. off[l + 1]), ascending. Aggregates without
// private links have no cover and are left out.
void GroupByCover(const FluidProblem& p, int s, std::vector<uint32_t>& off, std::vector<uint32_t>& by_cover) {
  const size_t na = p.aggregate_count(), nl = p.capacity_bps.size();
  off.assign(nl + 1, 0);
  for (size_t a = 0; a < na; ++a) {
    if (p.private_offsets[a] != p.private_offsets[a + 1]) ++off[p.private_links[CoverOf(p, s, a)] + 1];
  }
  for (size_t l = 0; l < nl; ++l) off[l + 1] += off[l];
  AssignWithRoom(by_cover, off[nl], 0u);
  std::vector<uint32_t> fill(off.begin(), off.end() - 1);
  for (size_t a = 0; a < na; ++a) {
    if (p.private_offsets[a] != p.private_offsets[a + 1])
      by_cover[fill[p.private_links[CoverOf(p, s, a)]]++] = static_cast<uint32_t>(a);
  }
}

// Cover link m's part of each class side: the aggregates on m (`aggs`)
// carry at most max(scale / share on m) * c_m into each class they reach,
// added to side[c]. stamp[c] == m marks a class reached from m (stamps of
// another m are stale, so one stamp array serves every cover link).
void AddCoverShare(const FluidProblem& p, int s, uint32_t m, std::span<const uint32_t> aggs,
                   std::vector<uint32_t>& stamp, std::vector<double>& best, std::vector<uint32_t>& reached,
                   std::vector<double>& side) {
  reached.clear();
  for (const uint32_t a : aggs) {
    const double share = p.private_share(CoverOf(p, s, a));
    for (uint32_t k = p.term_offsets[a]; k < p.term_offsets[a + 1]; ++k) {
      const uint32_t c = p.terms[k];
      const double ratio = p.term_scale(k) / share;
      if (stamp[c] != m) {
        stamp[c] = m;
        best[c] = ratio;
        reached.push_back(c);
      } else {
        best[c] = std::max(best[c], ratio);
      }
    }
  }
  for (uint32_t c : reached) side[c] += best[c] * p.capacity_bps[m];
}

// When every share and scale is 1 (always in the hash modes) an aggregate
// on cover link m carries at most c_m into each class it reaches, so a
// class's side is the sum of c_m over the distinct cover links reaching
// it, in ascending order: AddCoverShare's sum, to the bit. CoverSums finds
// the distinct (cover link, class) pairs with one bit each, kBlockRows
// cover links at a time in ascending link order (the aggregates grouped
// by cover link, GroupByCover): each block's bits are set from its links'
// aggregates, its rows added in ascending link order and its bits cleared
// as they are read, so every class still sums its cover links in
// ascending order. A block's bits stay in the second-level cache (64 rows
// of 768 words on the 32k MoE hash case: 384 KB), where one bitset over
// every cover link takes 50 MB per side, in fresh pages, set at random.
// FootprintOf keeps such bits per component instead (ComponentSides).
class CoverSums {
 public:
  // Adds each class's side s to side[c]; false, and nothing added, when a
  // share or scale is not 1. Aggregates without private links have no
  // cover and are left out (as in GroupByCover).
  bool Add(const FluidProblem& p, int s, std::vector<double>& side) {
    if (!p.unit_shares()) return false;
    const size_t nc = p.class_count(), nl = p.capacity_bps.size(), words = (nc + 63) / 64;
    GroupByCover(p, s, off_, by_cover_);
    bits_.assign(kBlockRows * words, 0);
    links_.clear();
    // The block's rows, in ascending link order, each cleared as it is read.
    auto add_block = [&] {
      for (size_t r = 0; r < links_.size(); ++r) {
        const double cap = p.capacity_bps[links_[r]];
        uint64_t* row = bits_.data() + r * words;
        for (size_t w = 0; w < words; ++w) {
          if (row[w] == 0) continue;
          for (uint64_t x = std::exchange(row[w], 0); x != 0; x &= x - 1) side[w * 64 + std::countr_zero(x)] += cap;
        }
      }
      links_.clear();
    };
    for (uint32_t m = 0; m < nl; ++m) {
      if (off_[m] == off_[m + 1]) continue;
      uint64_t* row = bits_.data() + links_.size() * words;
      for (uint32_t k = off_[m]; k < off_[m + 1]; ++k) {
        const uint32_t a = by_cover_[k];
        for (uint32_t t = p.term_offsets[a]; t < p.term_offsets[a + 1]; ++t) {
          const uint32_t c = p.terms[t];
          row[c / 64] |= uint64_t{1} << (c % 64);
        }
      }
      links_.push_back(m);
      if (links_.size() == kBlockRows) add_block();
    }
    add_block();
    return true;
  }

 private:
  static constexpr size_t kBlockRows = 64;
  std::vector<uint32_t> off_, by_cover_, links_;
  std::vector<uint64_t> bits_;
};

}  // namespace

// Upper bound on the total rate of each class from the capacity of the
// private links feeding it: aggregates sharing a cover link m carry at most
// max(scale / share_m) * c_m into the class. Taken over the first and the
// last private link (source and destination NICs), whichever is smaller.
std::vector<double> ClassRateBounds(const FluidProblem& p, const TaskRunner& runner) {
  const size_t nc = p.class_count(), na = p.aggregate_count(), nl = p.capacity_bps.size();
  std::vector<double> bound(nc, 0.0);
  std::vector<uint8_t> unbounded(nc, 0);
  for (size_t a = 0; a < na; ++a) {
    if (p.private_offsets[a] != p.private_offsets[a + 1]) continue;
    for (uint32_t k = p.term_offsets[a]; k < p.term_offsets[a + 1]; ++k) unbounded[p.terms[k]] = 1;
  }
  // Per side: the aggregates grouped by cover link, then for each cover
  // link in ascending order the classes its aggregates reach with their
  // largest ratio. Linear in the terms, and each class's bound sums its
  // cover links in ascending order, as a sort by (class, link) would. The
  // two sides are independent: through the runner, at once.
  std::vector<double> side[2];
  RunTasks(runner, 2, [&](size_t s) {
    side[s].assign(nc, 0.0);
    if (CoverSums sums; !sums.Add(p, static_cast<int>(s), side[s])) {
      std::vector<uint32_t> off, by_cover, stamp(nc, UINT32_MAX), reached;
      std::vector<double> best(nc, 0.0);
      GroupByCover(p, static_cast<int>(s), off, by_cover);
      for (uint32_t m = 0; m < nl; ++m) {
        if (off[m] == off[m + 1]) continue;
        AddCoverShare(p, static_cast<int>(s), m,
                      std::span<const uint32_t>(by_cover.data() + off[m], by_cover.data() + off[m + 1]), stamp, best,
                      reached, side[s]);
      }
    }
    const std::vector<double>& outside = s == 0 ? p.outside_side0 : p.outside_side1;
    if (!outside.empty()) {
      for (size_t c = 0; c < nc; ++c) side[s][c] += outside[c];
    }
  });
  for (size_t c = 0; c < nc; ++c) bound[c] = unbounded[c] ? kInf : std::min(side[0][c], side[1][c]);
  return bound;
}

namespace {

// Lower bounds of ClassRateBounds's sides, from at most kFew of the
// distinct cover links feeding each class on each side, found in one pass
// over the terms with a table of 2 MB per half of the aggregates on the
// 32k MoE hash case (in cache; the exact sides, CoverSums, group every
// aggregate by cover link first, per side). A side with no more than kFew
// cover links is exact. Else its kFew links summed in ascending order give
// a lower bound of the exact sum: that sum adds the same values
// in the same relative order among others, none negative, and rounding to
// nearest is monotone, so each of its partial sums is at least the
// corresponding one here. So is every later step (adding the outside
// side, the minimum of the two sides, a link's sum of shares times
// bounds): a lower bound above a link's capacity makes it tight, exactly
// as the exact bound would. With a fabric's links no faster than a few
// NICs together, every class link is decided so (on the 32k MoE hash
// case, at every seed, baseline and drained: the exact bounds are never
// computed).
class FewCovers {
 public:
  // Per class, a lower bound of its rate bound and whether it is the
  // bound itself; false, and nothing computed, when a share or scale is
  // not 1. Two halves of the aggregates through `runner`.
  bool Bounds(const FluidProblem& p, const TaskRunner& runner, std::vector<double>& bound,
              std::vector<uint8_t>& exact) {
    if (!p.unit_shares()) return false;
    const size_t na = p.aggregate_count(), nc = p.class_count();
    Table half[2];
    RunTasks(runner, 2, [&](size_t h) {
      half[h].entries.assign(nc, Entry{});
      half[h].unbounded.assign(nc, 0);
      half[h].full.assign(nc, 0);
      Scan(p, h == 0 ? 0 : na / 2, h == 0 ? na / 2 : na, half[h]);
    });
    Table& t = half[0];
    for (size_t c = 0; c < nc; ++c) {
      const Entry& e = half[1].entries[c];
      for (int s = 0; s < 2; ++s) {
        for (uint32_t i = 0; i < std::min(e.n[s], kFew); ++i) Add(t.entries[c], s, e.link[s][i]);
        if (e.n[s] > kFew) t.entries[c].n[s] = kFew + 1;
      }
      t.unbounded[c] |= half[1].unbounded[c];
    }
    bound.assign(nc, 0.0);
    exact.assign(nc, 1);
    for (size_t c = 0; c < nc; ++c) {
      if (t.unbounded[c]) {
        bound[c] = std::numeric_limits<double>::infinity();
        continue;
      }
      Entry& e = t.entries[c];
      double side[2];
      bool complete[2];
      for (int s = 0; s < 2; ++s) {
        const uint32_t n = std::min(e.n[s], kFew);
        std::sort(e.link[s], e.link[s] + n);
        side[s] = 0.0;
        for (uint32_t i = 0; i < n; ++i) side[s] += p.capacity_bps[e.link[s][i]];
        const std::vector<double>& outside = s == 0 ? p.outside_side0 : p.outside_side1;
        if (!outside.empty()) side[s] += outside[c];
        complete[s] = e.n[s] <= kFew;
      }
      bound[c] = std::min(side[0], side[1]);
      // The minimum is exact when its side is, and the other's lower
      // bound is no smaller.
      exact[c] = (complete[0] && side[0] <= side[1]) || (complete[1] && side[1] <= side[0]);
    }
    return true;
  }

 private:
  static constexpr uint32_t kFew = 4;
  struct Entry {
    uint32_t link[2][kFew];
    uint32_t n[2] = {0, 0};  // distinct links seen, kFew + 1 for more than kFew
  };
  struct Table {
    std::vector<Entry> entries;
    std::vector<uint8_t> unbounded;
    // Per class: more than kFew links seen on both sides, so that Add
    // changes nothing more (most classes, soon): a byte read in place of
    // the entry's 40 (millions of terms per seed on the 32k MoE case).
    std::vector<uint8_t> full;
  };
  static void Add(Entry& e, int s, uint32_t m) {
    if (e.n[s] > kFew) return;
    for (uint32_t i = 0; i < e.n[s]; ++i) {
      if (e.link[s][i] == m) return;
    }
    if (e.n[s] < kFew) e.link[s][e.n[s]] = m;
    ++e.n[s];
  }
  static void Scan(const FluidProblem& p, size_t begin, size_t end, Table& t) {
    for (size_t a = begin; a < end; ++a) {
      const uint32_t tb = p.term_offsets[a], te = p.term_offsets[a + 1];
      if (p.private_offsets[a] == p.private_offsets[a + 1]) {  // no cover: its classes are unbounded
        for (uint32_t k = tb; k < te; ++k) t.unbounded[p.terms[k]] = 1;
        continue;
      }
      const uint32_t src = p.private_links[CoverOf(p, 0, a)], dst = p.private_links[CoverOf(p, 1, a)];
      for (uint32_t k = tb; k < te; ++k) {
        const uint32_t c = p.terms[k];
        if (t.full[c]) continue;
        Entry& e = t.entries[c];
        Add(e, 0, src);
        Add(e, 1, dst);
        t.full[c] = e.n[0] > kFew && e.n[1] > kFew;
      }
    }
  }
};

// Tight links and the count of redundant ones from class bounds of which
// those not marked `exact` (all are, when it is null) are lower bounds
// only; false when a link's decision rests on such a bound (not above its
// capacity), and then `tight` and `dropped` mean nothing.
bool DecideTight(const FluidProblem& p, const std::vector<double>& bound, const std::vector<uint8_t>* exact,
                 std::vector<uint8_t>& tight, size_t& dropped) {
  const size_t nc = p.class_count(), nl = p.capacity_bps.size();
  tight.assign(nl, 0);
  for (const uint32_t l : p.private_links) tight[l] = 1;
  std::vector<double> link_bound(nl, 0.0);
  std::vector<uint8_t> link_exact(nl, 1);
  for (size_t c = 0; c < nc; ++c) {
    for (const LinkShare& ls : p.classes[c]) {
      link_bound[ls.link] += ls.share * bound[c];
      if (exact != nullptr && !(*exact)[c]) link_exact[ls.link] = 0;
    }
  }
  dropped = 0;
  for (size_t l = 0; l < nl; ++l) {
    if (BoundCanSaturate(link_bound[l], p.capacity_bps[l])) tight[l] = 1;
    if (tight[l]) continue;
    if (!link_exact[l]) return false;
    if (link_bound[l] > 0) ++dropped;
  }
  return true;
}

}  // namespace

std::vector<uint8_t> TightLinks(const FluidProblem& p, size_t* redundant, const TaskRunner& runner) {
  std::vector<uint8_t> tight;
  size_t dropped = 0;
  std::vector<double> bound;
  std::vector<uint8_t> exact;
  if (!FewCovers().Bounds(p, runner, bound, exact) || !DecideTight(p, bound, &exact, tight, dropped)) {
    DecideTight(p, ClassRateBounds(p, runner), nullptr, tight, dropped);
  }
  if (redundant != nullptr) *redundant = dropped;
  return tight;
}

namespace {

// One component's part of the class sides (ClassRateBounds's two sums,
// restricted to the component's cover links), added to side[s][class]. A
// cover link is a private link, so all the aggregates on it are in one
// component: the component's part of a class side sums its own cover links
// in ascending order, as ClassRateBounds sums all of them, and where a
// class is reached from one component only the two are the same to the bit.
//
// Unit shares and scales (the hash modes): one bit per (cover link, class)
// of the component, local ids for both (a component reaches a fraction of
// the classes: on the 32k MoE hash case 2,048 cover links and ~12 k of the
// 49 k classes per side, 3 MB, where one bitset over the whole problem took
// 50 MB per side, zeroed in fresh pages at every seed). Otherwise, or when
// the bits would pass kMaxBytes, the component's aggregates grouped by cover
// link and AddCoverShare per link.
class ComponentSides {
 public:
  ComponentSides(size_t links, size_t classes) : col_(classes, kNone), best_(classes, 0.0) {
    for (int s = 0; s < 2; ++s) {
      row_[s].assign(links, kNone);
      stamp_[s].assign(classes, UINT32_MAX);
    }
  }

  // Per aggregate of the component, in order (by the caller's pass over
  // its links, so that the aggregates are read once): its cover links,
  // and with unit shares its classes (Finish then keeps bits, one per
  // cover link and class); then Finish.
  void NoteCovers(const FluidProblem& p, uint32_t a) {
    for (int s = 0; s < 2; ++s) {
      const uint32_t m = p.private_links[CoverOf(p, s, a)];
      if (row_[s][m] == kNone) {
        row_[s][m] = static_cast<uint32_t>(links_[s].size());
        links_[s].push_back(m);
      }
    }
  }
  void NoteClass(uint32_t c) {
    if (col_[c] == kNone) {
      col_[c] = static_cast<uint32_t>(classes_.size());
      classes_.push_back(c);
    }
  }
  // Adds the noted component's part to side[s][class].
  void Finish(const FluidProblem& p, std::span<const uint32_t> members, std::vector<double> (&side)[2]) {
    const bool unit = p.unit_shares();
    const size_t words = (classes_.size() + 63) / 64;
    const size_t bytes = (links_[0].size() + links_[1].size()) * words * sizeof(uint64_t);
    if (unit && bytes <= kMaxBytes) {
      AddBits(p, members, words, side);
    } else {
      for (int s = 0; s < 2; ++s) AddGrouped(p, s, members, side[s]);
    }
    for (int s = 0; s < 2; ++s) {
      for (uint32_t m : links_[s]) row_[s][m] = kNone;
      links_[s].clear();
    }
    for (uint32_t c : classes_) col_[c] = kNone;
    classes_.clear();
  }

 private:
  static constexpr uint32_t kNone = UINT32_MAX;
  static constexpr size_t kMaxBytes = size_t{64} << 20;

  // The component's rows in ascending link order.
  void SortRows(int s) {
    order_.resize(links_[s].size());
    for (uint32_t i = 0; i < order_.size(); ++i) order_[i] = i;
    std::sort(order_.begin(), order_.end(), [&](uint32_t x, uint32_t y) { return links_[s][x] < links_[s][y]; });
  }

  void AddBits(const FluidProblem& p, std::span<const uint32_t> members, size_t words, std::vector<double> (&side)[2]) {
    bits_.assign((links_[0].size() + links_[1].size()) * words, 0);
    uint64_t* base[2] = {bits_.data(), bits_.data() + links_[0].size() * words};
    for (const uint32_t a : members) {
      uint64_t* row[2];
      for (int s = 0; s < 2; ++s) row[s] = base[s] + row_[s][p.private_links[CoverOf(p, s, a)]] * words;
      for (uint32_t k = p.term_offsets[a]; k < p.term_offsets[a + 1]; ++k) {
        const uint32_t c = col_[p.terms[k]];
        const uint64_t bit = uint64_t{1} << (c % 64);
        row[0][c / 64] |= bit;
        row[1][c / 64] |= bit;
      }
    }
    for (int s = 0; s < 2; ++s) {
      SortRows(s);
      for (const uint32_t r : order_) {
        const double cap = p.capacity_bps[links_[s][r]];
        const uint64_t* bits = base[s] + r * words;
        for (size_t w = 0; w < words; ++w) {
          for (uint64_t b = bits[w]; b != 0; b &= b - 1) side[s][classes_[w * 64 + std::countr_zero(b)]] += cap;
        }
      }
    }
  }

  // The members grouped by cover row (a counting sort, ascending within a
  // row), then AddCoverShare per row in ascending link order.
  void AddGrouped(const FluidProblem& p, int s, std::span<const uint32_t> members, std::vector<double>& side) {
    const size_t nr = links_[s].size();
    off_.assign(nr + 1, 0);
    for (const uint32_t a : members) ++off_[row_[s][p.private_links[CoverOf(p, s, a)]] + 1];
    for (size_t r = 0; r < nr; ++r) off_[r + 1] += off_[r];
    grouped_.resize(members.size());
    fill_.assign(off_.begin(), off_.end() - 1);
    for (const uint32_t a : members) grouped_[fill_[row_[s][p.private_links[CoverOf(p, s, a)]]]++] = a;
    SortRows(s);
    for (const uint32_t r : order_) {
      AddCoverShare(p, s, links_[s][r],
                    std::span<const uint32_t>(grouped_.data() + off_[r], grouped_.data() + off_[r + 1]), stamp_[s],
                    best_, reached_, side);
    }
  }

  std::vector<uint32_t> row_[2], links_[2];  // per side: link -> local row, and the rows' links
  std::vector<uint32_t> col_, classes_;      // class -> local column, and the columns' classes
  std::vector<uint64_t> bits_;
  // AddCoverShare's scratch; a stamp array per side, as a link may be a
  // cover on both (an aggregate with one private link).
  std::vector<uint32_t> stamp_[2], order_, off_, fill_, grouped_, reached_;
  std::vector<double> best_;
};

}  // namespace

namespace {

// Whether `p` has footprints (FootprintOf): every class one link at share
// 1, no two classes on one link, every aggregate with a private link. Then
// class_of_link[l] is the class on link l, or UINT32_MAX.
bool FootprintClasses(const FluidProblem& p, std::vector<uint32_t>& class_of_link) {
  const size_t na = p.aggregate_count(), nc = p.class_count();
  class_of_link.assign(p.capacity_bps.size(), UINT32_MAX);
  for (uint32_t c = 0; c < nc; ++c) {
    const auto& links = p.classes[c];
    if (links.size() != 1 || links[0].share != 1.0 || class_of_link[links[0].link] != UINT32_MAX) return false;
    class_of_link[links[0].link] = c;
  }
  for (size_t a = 0; a < na; ++a) {
    if (p.private_offsets[a] == p.private_offsets[a + 1]) return false;
  }
  return true;
}

// One thread's scratch for the footprints of components, one at a time.
class FootprintMaker {
 public:
  FootprintMaker(const FluidProblem& p, const std::vector<uint32_t>& class_of_link)
      : p_(p),
        class_of_link_(class_of_link),
        link_of_class_(p.class_count()),
        unit_(p.unit_shares()),
        side_{std::vector<double>(p.class_count(), 0.0), std::vector<double>(p.class_count(), 0.0)},
        load_(p.capacity_bps.size(), 0.0),
        sides_(p.capacity_bps.size(), p.class_count()),
        in_use_(p.capacity_bps.size(), 0) {
    for (uint32_t c = 0; c < p.class_count(); ++c) link_of_class_[c] = p.classes[c][0].link;
  }

  // Appends to `out` the entries of the component whose aggregates are
  // `mine` (ascending), from their rates at t = 0. True when each entry's
  // load is the sum SolveFluid's loads make on its link from this
  // component's aggregates: no link is both one's private link and
  // another's class link (those sums add the two parts apart).
  bool Add(const std::vector<double>& rate0, std::span<const uint32_t> mine,
           std::vector<ComponentFootprint::Entry>& out) {
    const FluidProblem& p = p_;
    used_.clear();
    for (const uint32_t a : mine) {
      const double r = rate0[a] * p.weight[a];
      const bool loaded = r > 0 && std::isfinite(r);
      for (uint32_t i = p.private_offsets[a]; i < p.private_offsets[a + 1]; ++i) {
        Use(p.private_links[i], kPrivate);
        if (loaded) load_[p.private_links[i]] += r * p.private_share(i);
      }
      sides_.NoteCovers(p, a);
      for (uint32_t i = p.term_offsets[a]; i < p.term_offsets[a + 1]; ++i) {
        const uint32_t c = p.terms[i];
        const uint32_t l = link_of_class_[c];
        Use(l, kClass);
        if (loaded) load_[l] += r * p.term_scale(i);
        if (unit_) sides_.NoteClass(c);
      }
    }
    sides_.Finish(p, mine, side_);
    std::sort(used_.begin(), used_.end());
    bool loads = true;
    for (uint32_t l : used_) {
      loads = loads && in_use_[l] != (kPrivate | kClass);
      const uint32_t cl = class_of_link_[l];
      ComponentFootprint::Entry e{l, 0, 0, load_[l]};
      if (cl != UINT32_MAX) {
        e.side0 = side_[0][cl];
        e.side1 = side_[1][cl];
        side_[0][cl] = side_[1][cl] = 0;
      }
      out.push_back(e);
      load_[l] = 0;
      in_use_[l] = 0;
    }
    return loads;
  }

 private:
  static constexpr uint8_t kPrivate = 1, kClass = 2;
  void Use(uint32_t l, uint8_t how) {
    if (!in_use_[l]) used_.push_back(l);
    in_use_[l] |= how;
  }

  const FluidProblem& p_;
  const std::vector<uint32_t>& class_of_link_;
  std::vector<uint32_t> link_of_class_;  // each class's one link (FootprintClasses)
  bool unit_;
  std::vector<double> side_[2];  // per class, per side: the component's sum
  std::vector<double> load_;     // per link
  ComponentSides sides_;
  std::vector<uint32_t> used_;   // the component's links
  std::vector<uint8_t> in_use_;  // per link: kPrivate | kClass, as the component uses it
};

}  // namespace

ComponentFootprint FootprintOf(const FluidProblem& p, const FluidSolution& sol, size_t max_entries,
                               const TaskRunner& runner) {
  std::vector<uint32_t> class_of_link;
  if (!FootprintClasses(p, class_of_link)) return {};
  std::vector<uint32_t> comp_off, members;
  sol.MembersByComponent(comp_off, members);
  // The components in four runs of about equal aggregate counts
  // (ComponentRuns), each with its own scratch and entries, joined in
  // order: a component's entries do not depend on which run computes them.
  // Four, not one per thread: the runner hands the next run to whichever
  // thread is free, and components of one size take unequal times (on the
  // 32k MoE hash case the two halves of a seed took 0.035-0.083 s and
  // 0.082-0.095 s).
  constexpr size_t kParts = 4;
  const std::vector<size_t> part_begin = FluidSolution::ComponentRuns(comp_off, kParts);
  ComponentFootprint part[kParts];
  bool too_many[kParts] = {};
  RunTasks(runner, kParts, [&](size_t t) {
    ComponentFootprint& f = part[t];
    FootprintMaker maker(p, class_of_link);
    f.offsets.assign(1, 0);
    for (size_t c = part_begin[t]; c < part_begin[t + 1]; ++c) {
      maker.Add(sol.rate0_bps,
                std::span<const uint32_t>(members.data() + comp_off[c], members.data() + comp_off[c + 1]), f.entries);
      if (f.entries.size() > max_entries) {
        too_many[t] = true;
        return;
      }
      f.offsets.push_back(static_cast<uint32_t>(f.entries.size()));
    }
  });
  size_t entries = 0;
  for (size_t t = 0; t < kParts; ++t) {
    if (too_many[t]) return {};
    entries += part[t].entries.size();
  }
  if (entries > max_entries) return {};
  ComponentFootprint f = std::move(part[0]);
  f.entries.reserve(entries);
  for (size_t t = 1; t < kParts; ++t) {
    const auto shift = static_cast<uint32_t>(f.entries.size());
    for (size_t k = 1; k < part[t].offsets.size(); ++k) f.offsets.push_back(shift + part[t].offsets[k]);
    f.entries.insert(f.entries.end(), part[t].entries.begin(), part[t].entries.end());
  }
  return f;
}

namespace {

// What one thread needs to solve components: the local problem, the
// filler, the event state and the maps from global to local ids (every
// entry UINT32_MAX between components).
struct ComponentWork {
  LocalProblem lp;
  WaterFiller filler;
  IncrementalEvents incremental;
  std::vector<uint32_t> link_local, class_local, classes_used, link_count;
  std::vector<LinkShare> class_single;  // per class: its one tight link (local id) and share
  std::vector<uint8_t> active;
  std::vector<double> rate, remaining;
  std::vector<uint32_t> bottleneck;

  void Prepare(size_t nl, size_t nc) {
    link_local.assign(nl, UINT32_MAX);
    class_local.assign(nc, UINT32_MAX);
    class_single.resize(nc);
  }
};

// Simulates the component whose aggregates are [mb, me): writes their
// finish_s, rate0_bps and bottleneck0 in `sol` (nothing else of it, so
// components can be solved concurrently) and adds its batches (and
// re-fills) to `counts`.
Status SolveComponent(const FluidProblem& p, const std::vector<uint8_t>& tight, const std::vector<uint8_t>& class_tight,
                      const std::vector<LinkShare>& class_only, const uint32_t* mb, const uint32_t* me,
                      bool incremental_events, ComponentWork& w, FluidSolution& sol, EventCounts& counts,
                      std::stop_token stop) {
  LocalProblem& lp = w.lp;
  std::vector<uint32_t>& link_local = w.link_local;
  std::vector<uint32_t>& class_local = w.class_local;
  std::vector<uint32_t>& classes_used = w.classes_used;
  std::vector<LinkShare>& class_single = w.class_single;
  std::vector<uint8_t>& active = w.active;
  std::vector<double>& rate = w.rate;
  std::vector<double>& remaining = w.remaining;
  std::vector<uint32_t>& bottleneck = w.bottleneck;
  constexpr uint32_t kSingle = UINT32_MAX - 1;  // class_local: flattened into private links
  // Build the local problem: tight links only.
  lp.Clear();
  auto local_link = [&](uint32_t l) {
    if (link_local[l] == UINT32_MAX) {
      link_local[l] = static_cast<uint32_t>(lp.links.size());
      lp.links.push_back(l);
      lp.capacity.push_back(p.capacity_bps[l]);
    }
    return link_local[l];
  };
  size_t max_priv = 0;  // most terms flatten into private links
  for (const uint32_t* it = mb; it != me; ++it) {
    max_priv += p.private_offsets[*it + 1] - p.private_offsets[*it];
    max_priv += p.term_offsets[*it + 1] - p.term_offsets[*it];
  }
  {
    const size_t n = static_cast<size_t>(me - mb);
    ReserveWithRoom(lp.aggs, n);
    ReserveWithRoom(lp.weight, n);
    ReserveWithRoom(lp.priv_off, n + 1);
    ReserveWithRoom(lp.term_off, n + 1);
    ReserveWithRoom(lp.priv, max_priv);
  }
  // One pass over the aggregates. Local link ids go in the order of first
  // use, private links first, then class links (ties between links
  // saturating together are broken by id): a class link's local id is not
  // known yet, so a class with one tight link (class_only), which for the
  // solve is a private link of each aggregate on it (share scale x share;
  // every class of the hash modes is one fabric link, and the fills then
  // keep no class bookkeeping), is written as its class id tagged, and the
  // other classes as their global ids, both replaced once the classes
  // used have their links' local ids.
  constexpr uint32_t kClassTag = uint32_t{1} << 31;
  classes_used.clear();
  // Every share and scale 1 and every tight class one tight link at share
  // 1 (the hash modes): the same arrays, written in place (no share list
  // to keep, no capacity checks; ~15 % of the local build with its reverse
  // index on the 32k MoE hash case). A class with several tight links or
  // another share sends the component back to the general pass below,
  // from its first aggregate.
  bool unit = p.unit_shares();
  if (unit) {
    const size_t n = static_cast<size_t>(me - mb);
    lp.aggs.assign(mb, me);
    lp.weight.resize(n);
    lp.priv_off.resize(n + 1);
    lp.term_off.assign(n + 1, 0);
    lp.priv.resize(max_priv);
    uint32_t* out = lp.priv.data();
    uint32_t j = 0;
    for (size_t i = 0; i < n && unit; ++i) {
      const uint32_t a = mb[i];
      lp.weight[i] = p.weight[a];
      for (uint32_t k = p.private_offsets[a]; k < p.private_offsets[a + 1]; ++k)
        out[j++] = local_link(p.private_links[k]);
      for (uint32_t k = p.term_offsets[a]; k < p.term_offsets[a + 1]; ++k) {
        const uint32_t c = p.terms[k];
        if (!class_tight[c]) continue;
        if (class_only[c].link == kNoLink || class_only[c].share != 1.0) {
          unit = false;
          break;
        }
        if (class_local[c] == UINT32_MAX) {
          class_local[c] = 0;
          classes_used.push_back(c);
        }
        out[j++] = kClassTag | c;
      }
      lp.priv_off[i + 1] = j;
    }
    lp.priv.resize(j);
    if (!unit) {
      for (uint32_t l : lp.links) link_local[l] = UINT32_MAX;
      for (uint32_t c : classes_used) class_local[c] = UINT32_MAX;
      classes_used.clear();
      lp.Clear();
    }
  }
  for (const uint32_t* it = mb; !unit && it != me; ++it) {
    const uint32_t a = *it;
    lp.aggs.push_back(a);
    lp.weight.push_back(p.weight[a]);
    for (uint32_t k = p.private_offsets[a]; k < p.private_offsets[a + 1]; ++k) {
      lp.AddPriv(local_link(p.private_links[k]), p.private_share(k));
    }
    uint32_t terms = 0;  // the aggregate's terms on classes with several tight links
    for (uint32_t k = p.term_offsets[a]; k < p.term_offsets[a + 1]; ++k) {
      const uint32_t c = p.terms[k];
      if (!class_tight[c]) continue;
      if (class_local[c] == UINT32_MAX) {
        class_local[c] = 0;
        classes_used.push_back(c);
      }
      if (class_only[c].link != kNoLink) {
        lp.AddPriv(kClassTag | c, p.term_scale(k) * class_only[c].share);
      } else {
        ++terms;
      }
    }
    lp.priv_off.push_back(static_cast<uint32_t>(lp.priv.size()));
    // (None in the hash modes, where every class is one link.)
    for (uint32_t k = p.term_offsets[a]; terms > 0 && k < p.term_offsets[a + 1]; ++k) {
      const uint32_t c = p.terms[k];
      if (class_tight[c] && class_only[c].link == kNoLink) lp.AddTerm(c, p.term_scale(k));
    }
    lp.term_off.push_back(static_cast<uint32_t>(lp.terms.size()));
  }
  // The t = 0 loads the solve sums per link (usage_) are LoadsAtStart's
  // to the bit when every share is 1 (the pass above ran to its end), each
  // class is one link, and no link is both a private link and a class's
  // (LoadsAtStart adds the two parts apart): then class links get ids
  // after the private ones.
  const auto private_ids = static_cast<uint32_t>(lp.links.size());
  bool own_loads = unit;
  uint32_t multi = 0;
  for (uint32_t c : classes_used) {
    if (class_only[c].link != kNoLink) {
      class_local[c] = kSingle;
      class_single[c] = {local_link(class_only[c].link), class_only[c].share};
      own_loads = own_loads && class_single[c].link >= private_ids && p.classes[c].size() == 1;
      continue;
    }
    class_local[c] = multi++;
    for (const LinkShare& ls : p.classes[c]) {
      if (tight[ls.link]) lp.class_links.push_back({local_link(ls.link), ls.share});
    }
    lp.class_off.push_back(static_cast<uint32_t>(lp.class_links.size()));
  }
  // The class links' ids, and each link's entries (BuildReverse's counts).
  std::vector<uint32_t>& link_count = w.link_count;
  link_count.assign(lp.links.size(), 0);
  for (uint32_t& l : lp.priv) {
    if (l & kClassTag) l = class_single[l & ~kClassTag].link;
    ++link_count[l];
  }
  for (uint32_t& c : lp.terms) c = class_local[c];
  for (uint32_t c : classes_used) class_local[c] = UINT32_MAX;
  for (uint32_t l : lp.links) link_local[l] = UINT32_MAX;
  lp.BuildReverse(&link_count);

  const size_t n = lp.aggs.size();
  if (incremental_events) {
    return w.incremental.Run(lp, p.bits, w.filler, sol, counts, stop, own_loads && lp.terms.empty());
  }
  // The reference: fill everything, advance to the next batch of
  // completions, repeat.
  active.assign(n, 0);
  rate.assign(n, 0.0);
  bottleneck.assign(n, kNoLink);
  remaining.resize(n);
  size_t live = 0;
  for (size_t i = 0; i < n; ++i) {
    remaining[i] = p.bits[lp.aggs[i]];
    if (remaining[i] > 0) {
      active[i] = 1;
      ++live;
    } else {  // (every entry is written: the arrays may be another solve's)
      sol.finish_s[lp.aggs[i]] = 0;
      sol.rate0_bps[lp.aggs[i]] = 0;
      sol.bottleneck0[lp.aggs[i]] = kNoLink;
    }
  }
  double now = 0;
  bool first = true;
  while (live > 0) {
    if (stop.stop_requested()) return MakeError(ErrorCode::kCancelled, "flow simulation cancelled");
    w.filler.Fill(lp, active, rate, bottleneck);
    if (first) {
      for (size_t i = 0; i < n; ++i) {
        if (!active[i]) continue;
        sol.rate0_bps[lp.aggs[i]] = rate[i];
        sol.bottleneck0[lp.aggs[i]] = bottleneck[i] == kNoLink ? kNoLink : lp.links[bottleneck[i]];
      }
      first = false;
    }
    double dt = kInf;
    for (size_t i = 0; i < n; ++i) {
      if (active[i]) dt = std::min(dt, rate[i] > 0 ? remaining[i] / rate[i] : kInf);
    }
    ++counts.events;
    if (!std::isfinite(dt)) {  // nothing can progress (zero capacity): never finishes
      for (size_t i = 0; i < n; ++i) {
        if (active[i]) sol.finish_s[lp.aggs[i]] = kInf;
      }
      return {};
    }
    const double cutoff = dt * (1 + kBatchTolerance);
    now += dt;
    counts.last_s = now;
    for (size_t i = 0; i < n; ++i) {
      if (!active[i]) continue;
      if (rate[i] == kInf || remaining[i] <= rate[i] * cutoff) {
        active[i] = 0;
        --live;
        sol.finish_s[lp.aggs[i]] = now;
      } else {
        remaining[i] -= rate[i] * dt;
      }
    }
  }
  return {};
}

}  // namespace

struct SolverScratch::Impl {
  std::vector<uint32_t> parent, parent2, joined, joined2, comp_of_root, members;
  // One ComponentWork per thread that solves components at once: `works`
  // only grows (to the runner's concurrency), and `free` lists those no
  // task holds.
  std::deque<ComponentWork> works;
  std::vector<ComponentWork*> free;
  std::mutex mu;
  size_t nl = 0, nc = 0;  // the sizes of the problem being solved

  void Prepare(size_t links, size_t classes) {
    nl = links;
    nc = classes;
    if (works.empty()) works.emplace_back();
    free.clear();
    for (ComponentWork& w : works) {
      w.Prepare(nl, nc);
      free.push_back(&w);
    }
  }
  ComponentWork& Take() {
    std::lock_guard<std::mutex> lock(mu);
    if (free.empty()) {
      works.emplace_back().Prepare(nl, nc);
      return works.back();
    }
    ComponentWork* w = free.back();
    free.pop_back();
    return *w;
  }
  void Give(ComponentWork& w) {
    std::lock_guard<std::mutex> lock(mu);
    free.push_back(&w);
  }
};
SolverScratch::SolverScratch() : impl_(std::make_unique<Impl>()) {}
SolverScratch::~SolverScratch() = default;
SolverScratch::SolverScratch(SolverScratch&&) noexcept = default;
SolverScratch& SolverScratch::operator=(SolverScratch&&) noexcept = default;

namespace {

// SolveFluid's loads at t = 0 from the rates: the private links' in one
// pass over the aggregates, the classes' rates in another (at once through
// `runner`: each sum still in aggregate order, so the same bits), then the
// classes' on their links.
void LoadsAtStart(const FluidProblem& p, FluidSolution& sol, const TaskRunner& runner) {
  const size_t na = p.aggregate_count(), nc = p.class_count();
  std::vector<double> class_rate(nc, 0.0);
  auto loads = [&](size_t part) {
    for (size_t a = 0; a < na; ++a) {
      const double r = sol.rate0_bps[a] * p.weight[a];
      if (!(r > 0) || !std::isfinite(r)) continue;
      if (part == 0) {
        for (uint32_t k = p.private_offsets[a]; k < p.private_offsets[a + 1]; ++k) {
          sol.load0_bps[p.private_links[k]] += r * p.private_share(k);
        }
      } else {
        for (uint32_t k = p.term_offsets[a]; k < p.term_offsets[a + 1]; ++k) {
          class_rate[p.terms[k]] += r * p.term_scale(k);
        }
      }
    }
  };
  RunTasks(runner, 2, loads);
  for (size_t c = 0; c < nc; ++c) {
    if (class_rate[c] == 0) continue;
    for (const LinkShare& ls : p.classes[c]) sol.load0_bps[ls.link] += class_rate[c] * ls.share;
  }
}

}  // namespace

Result<FluidSolution> SolveFluid(const FluidProblem& p, std::stop_token stop, const ReuseHint& reuse,
                                 const FluidOptions& options) {
  std::unique_ptr<SolverScratch> own;
  if (options.scratch == nullptr) own = std::make_unique<SolverScratch>();
  SolverScratch::Impl& work = (options.scratch != nullptr ? options.scratch : own.get())->impl();
  const size_t na = p.aggregate_count(), nc = p.class_count(), nl = p.capacity_bps.size();
  FluidSolution sol;
  // Every aggregate's entries are written below (its component copies or
  // solves it), so arrays handed in are not cleared: on the 32k MoE hash
  // case, filling fresh ones (86 MB) took 3-26 ms of one thread per seed.
  if (options.storage != nullptr) {
    FluidSolution::Columns& c = *options.storage;
    sol.finish_s = std::move(c.finish_s);
    sol.rate0_bps = std::move(c.rate0_bps);
    sol.bottleneck0 = std::move(c.bottleneck0);
    sol.component = std::move(c.component);
  }
  // (Fresh ones, at a run's first seed, in two tasks: their pages fault in
  // on both threads.)
  RunTasks(options.runner != nullptr ? *options.runner : TaskRunner{}, 2, [&](size_t h) {
    if (h == 0) {
      ResizeWithRoom(sol.finish_s, na);
      ResizeWithRoom(sol.component, na);
    } else {
      ResizeWithRoom(sol.rate0_bps, na);
      ResizeWithRoom(sol.bottleneck0, na);
    }
  });
  sol.load0_bps.assign(nl, 0.0);

  // 1. Tight links: private links always; class links whose bounded load can
  //    exceed their capacity.
  std::vector<uint8_t> tight =
      TightLinks(p, &sol.redundant_links, options.runner != nullptr ? *options.runner : TaskRunner{});
  for (size_t l = 0; l < nl; ++l) sol.tight_links += tight[l];
  // Per class: whether a link of it is tight, and when exactly one is, that
  // link and its share (the solve takes the class as a private link there).
  std::vector<uint8_t> class_tight(nc, 0);
  std::vector<LinkShare> class_only(nc, LinkShare{kNoLink, 0});
  for (size_t c = 0; c < nc; ++c) {
    uint32_t n = 0;
    for (const LinkShare& ls : p.classes[c]) {
      if (tight[ls.link] && n++ == 0) class_only[c] = ls;
    }
    class_tight[c] = n > 0;
    if (n != 1) class_only[c] = {kNoLink, 0};
  }
  if (stop.stop_requested()) return MakeError(ErrorCode::kCancelled, "flow simulation cancelled");

  // 2. Components: classes (ids 0..nc) and links (nc..nc+nl) joined through
  //    the aggregates that cross them, then each aggregate given its first
  //    one's (an aggregate on no tight link or class is one alone). A union
  //    find over links and classes only stays in cache, where one over the
  //    aggregates too (millions in the hash modes) did not.
  UnionFind uf(work.parent, nc + nl);
  constexpr uint32_t kAlone = UINT32_MAX;
  auto first_of = [&](uint32_t a) {
    if (p.private_offsets[a] != p.private_offsets[a + 1]) {
      return static_cast<uint32_t>(nc + p.private_links[p.private_offsets[a]]);
    }
    for (uint32_t k = p.term_offsets[a]; k < p.term_offsets[a + 1]; ++k) {
      if (class_tight[p.terms[k]]) return p.terms[k];
    }
    return kAlone;
  };
  // `joined[x]`: the `first` that x was last joined to. Aggregates come
  // by demand, so the same (first, x) pairs come again and again (a NIC's
  // aggregates over its leaf's uplinks): joined once, not once per
  // aggregate (the same sets).
  auto join = [&](UnionFind& u, std::vector<uint32_t>& joined, uint32_t begin, uint32_t end) {
    AssignWithRoom(joined, nc + nl, kAlone);
    auto join_to = [&](uint32_t first, uint32_t x) {
      if (joined[x] == first) return;
      joined[x] = first;
      u.Union(first, x);
    };
    for (uint32_t a = begin; a < end; ++a) {
      const uint32_t first = first_of(a);
      if (first == kAlone) continue;
      for (uint32_t k = p.private_offsets[a]; k < p.private_offsets[a + 1]; ++k) {
        join_to(first, static_cast<uint32_t>(nc + p.private_links[k]));
      }
      for (uint32_t k = p.term_offsets[a]; k < p.term_offsets[a + 1]; ++k) {
        if (class_tight[p.terms[k]]) join_to(first, p.terms[k]);
      }
    }
  };
  // Through a runner, the aggregates in two halves, each joined in a union
  // find of its own, the second's sets then joined into the first's: the
  // same sets, and the ids below do not depend on which element is a root.
  // (The pass over the aggregates was ~0.07 s of one thread per 3.6 M
  // aggregates on the 32k MoE hash case, once per seed.)
  if (options.runner != nullptr && *options.runner && na > 1) {
    UnionFind other(work.parent2, nc + nl);
    const auto mid = static_cast<uint32_t>(na / 2);
    RunTasks(*options.runner, 2, [&](size_t half) {
      if (half == 0) {
        join(uf, work.joined, 0, mid);
      } else {
        join(other, work.joined2, mid, static_cast<uint32_t>(na));
      }
    });
    for (uint32_t x = 0; x < nc + nl; ++x) {
      const uint32_t r = other.Find(x);
      if (r != x) uf.Union(x, r);
    }
  } else {
    join(uf, work.joined, 0, static_cast<uint32_t>(na));
  }
  for (uint32_t c = 0; c < nc; ++c) {
    if (!class_tight[c]) continue;
    for (const LinkShare& ls : p.classes[c]) {
      if (tight[ls.link]) uf.Union(c, static_cast<uint32_t>(nc + ls.link));
    }
  }
  // Dense component ids in order of first aggregate; members grouped.
  std::vector<uint32_t>& comp_of_root = work.comp_of_root;  // indexed by root id
  AssignWithRoom(comp_of_root, nc + nl, UINT32_MAX);
  uint32_t last_first = kAlone, last_id = 0;  // consecutive aggregates of one NIC: one Find
  for (uint32_t a = 0; a < na; ++a) {
    const uint32_t first = first_of(a);
    if (first != kAlone && first == last_first) {
      sol.component[a] = last_id;
      ++sol.component_size[last_id];
      continue;
    }
    uint32_t alone = UINT32_MAX;
    uint32_t& id = first == kAlone ? alone : comp_of_root[uf.Find(first)];
    if (id == UINT32_MAX) {
      id = static_cast<uint32_t>(sol.component_size.size());
      sol.component_size.push_back(0);
    }
    sol.component[a] = id;
    ++sol.component_size[id];
    last_first = first;
    last_id = id;
  }
  const size_t ncomp = sol.component_size.size();
  std::vector<uint32_t> comp_off;
  std::vector<uint32_t>& members = work.members;
  sol.MembersByComponent(comp_off, members);

  // 3. Simulate each component: those a previous solution has are copied;
  //    the others are solved, concurrently through options.runner when
  //    there is one (each touches only its own aggregates' entries of sol).
  //    With options.footprint, each component's footprint too, once its
  //    rates are known: components whose rates are known wait in `ready`,
  //    and a task that finds every component taken by a solver takes
  //    footprints from there. So the footprints fill the time a thread
  //    would wait for another's last component (0.14-0.27 s per seed on
  //    the 32k MoE hash case), where FootprintOf after the solve came on
  //    top of it. Entries per component, joined in component order.
  std::vector<uint32_t> class_of_link;
  const bool footprints = options.footprint != nullptr && FootprintClasses(p, class_of_link);
  if (options.footprint != nullptr && !footprints) *options.footprint = {};
  std::vector<std::vector<ComponentFootprint::Entry>> comp_entries(footprints ? ncomp : 0);
  std::vector<uint8_t> comp_loads(footprints ? ncomp : 0, 0);  // per component: Add's answer
  std::mutex ready_mu;
  std::vector<uint32_t> ready;
  size_t ready_taken = 0;
  std::atomic<size_t> entry_count{0};
  auto take_ready = [&]() {
    std::optional<FootprintMaker> maker;
    for (;;) {
      uint32_t comp = 0;
      {
        std::lock_guard<std::mutex> lock(ready_mu);
        if (ready_taken == ready.size()) return;
        comp = ready[ready_taken++];
      }
      if (entry_count.load() > options.footprint_max_entries) continue;  // no footprint: skip the work
      if (!maker) maker.emplace(p, class_of_link);
      auto& out = comp_entries[comp];
      comp_loads[comp] = maker->Add(
          sol.rate0_bps,
          std::span<const uint32_t>(members.data() + comp_off[comp], members.data() + comp_off[comp + 1]), out);
      entry_count += out.size();
    }
  };
  auto make_ready = [&](uint32_t comp) {
    std::lock_guard<std::mutex> lock(ready_mu);
    ready.push_back(comp);
  };
  std::vector<uint32_t> to_solve;
  for (size_t comp = 0; comp < ncomp; ++comp) {
    const uint32_t* mb = members.data() + comp_off[comp];
    const uint32_t* me = members.data() + comp_off[comp + 1];
    if (reuse.previous != nullptr && reuse.previous_index != nullptr) {
      const FluidSolution& prev = *reuse.previous;
      const auto& idx = *reuse.previous_index;
      bool same = idx[*mb] != kNoLink;
      const uint32_t pc = same ? prev.component_of(idx[*mb]) : 0;
      same = same && prev.component_size[pc] == static_cast<uint32_t>(me - mb);
      for (const uint32_t* it = mb; same && it != me; ++it) {
        same = idx[*it] != kNoLink && prev.component_of(idx[*it]) == pc;
      }
      if (same) {
        for (const uint32_t* it = mb; it != me; ++it) {
          sol.finish_s[*it] = prev.finish(idx[*it]);
          if (std::isfinite(sol.finish_s[*it])) sol.makespan_s = std::max(sol.makespan_s, sol.finish_s[*it]);
          sol.rate0_bps[*it] = prev.rate0(idx[*it]);
          sol.bottleneck0[*it] = prev.bottleneck0.empty() ? kNoLink : prev.bottleneck0[idx[*it]];
        }
        ++sol.components_reused;
        if (footprints) make_ready(static_cast<uint32_t>(comp));
        continue;
      }
    }
    to_solve.push_back(static_cast<uint32_t>(comp));
    sol.max_component = std::max<size_t>(sol.max_component, me - mb);
  }
  sol.components_solved = to_solve.size();
  const bool concurrent = options.runner != nullptr && *options.runner && to_solve.size() > 1;
  if (concurrent) {
    // Largest first, so that the threads finish close together.
    std::stable_sort(to_solve.begin(), to_solve.end(),
                     [&](uint32_t x, uint32_t y) { return sol.component_size[x] > sol.component_size[y]; });
  }
  std::vector<Status> status(to_solve.size());
  std::vector<EventCounts> counts(to_solve.size());
  std::atomic<size_t> started{0};
  work.Prepare(nl, nc);
  RunTasks(concurrent ? *options.runner : TaskRunner{}, to_solve.size(), [&](size_t i) {
    ++started;
    if (stop.stop_requested()) {
      status[i] = MakeError(ErrorCode::kCancelled, "flow simulation cancelled");
      return;
    }
    ComponentWork& w = work.Take();
    w.incremental.set_max_restarts(options.refill_restarts);
    const uint32_t comp = to_solve[i];
    status[i] = SolveComponent(p, tight, class_tight, class_only, members.data() + comp_off[comp],
                               members.data() + comp_off[comp + 1], options.incremental, w, sol, counts[i], stop);
    work.Give(w);
    if (!footprints || !status[i]) return;
    make_ready(comp);
    // Once every task has started, this thread has no component left to
    // solve (a pool hands out tasks in index order; were a runner not to,
    // the footprints would only be made later, not differently).
    if (started.load() == to_solve.size()) take_ready();
  });
  for (size_t i = 0; i < to_solve.size(); ++i) {
    if (!status[i]) return tl::unexpected(status[i].error());
    sol.events += counts[i].events;
    sol.refilled += counts[i].refilled;
    sol.refills_widened += counts[i].widened;
    sol.refills_shared += counts[i].shared;
    sol.makespan_s = std::max(sol.makespan_s, counts[i].last_s);
  }
  if (footprints) {
    take_ready();  // what no task took (the copied components, when none is solved)
    ComponentFootprint& f = *options.footprint;
    f = {};
    if (entry_count.load() <= options.footprint_max_entries) {
      f.offsets.reserve(ncomp + 1);
      f.offsets.push_back(0);
      f.entries.reserve(entry_count.load());
      for (auto& e : comp_entries) {
        f.entries.insert(f.entries.end(), e.begin(), e.end());
        f.offsets.push_back(static_cast<uint32_t>(f.entries.size()));
        Free(e);
      }
    }
  }

  // 4. Loads at t = 0 on every link (tight or not), LoadsAtStart's sums to
  //    the bit without its two passes over the problem: those the
  //    components' solves wrote, when each did (SolveComponent says when
  //    its sums are LoadsAtStart's) and every loaded link is a tight link
  //    of one of them (every class tight, nothing copied: ~4.5 ms of a
  //    drained hash seed's thread on the 32k MoE case); else from the
  //    footprints, when they hold every component and no link is in two
  //    of them (each link's load is then one component's, summed there in
  //    ascending aggregates: ~20 ms per seed there); else the passes.
  bool loaded = options.incremental && sol.components_reused == 0 &&
                std::all_of(class_tight.begin(), class_tight.end(), [](uint8_t t) { return t != 0; }) &&
                std::all_of(counts.begin(), counts.end(), [](const EventCounts& c) { return c.loads; });
  if (!loaded && footprints && !options.footprint->empty() &&
      std::all_of(comp_loads.begin(), comp_loads.end(), [](uint8_t ok) { return ok != 0; })) {
    std::vector<uint8_t> seen(nl, 0);
    bool shared = false;
    for (const auto& e : options.footprint->entries) {
      shared = shared || seen[e.link] != 0;
      seen[e.link] = 1;
    }
    if (!shared) {
      for (const auto& e : options.footprint->entries) sol.load0_bps[e.link] = e.load;
      loaded = true;
    }
  }
  if (!loaded) {
    sol.load0_bps.assign(nl, 0.0);  // (some components may have written theirs)
    LoadsAtStart(p, sol, options.runner != nullptr ? *options.runner : TaskRunner{});
  }
  return sol;
}

}  // namespace drainwise::sim
