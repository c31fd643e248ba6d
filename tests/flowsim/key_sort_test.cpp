// The flow solver's stable key sorts (sim/key_sort.h) against std::stable_sort:
// the same order to the element, ties kept in input order, whichever path
// SortByFewKeys takes (small arrays, few distinct keys, or the fallback to
// RadixSort once past its distinct-key limit mid-array).
#include "sim/key_sort.h"

#include <limits>
#include <random>
#include <vector>

#include <doctest/doctest.h>

namespace drainwise {
namespace {

struct Entry {
  double at;
  uint32_t index;
  bool operator==(const Entry&) const = default;
};

uint64_t KeyOf(const Entry& e) { return sim::OrderKey(e.at); }

// `n` entries whose values are drawn from `distinct` values (with -0, +0,
// inf and negatives among them), indices in input order.
std::vector<Entry> Entries(size_t n, size_t distinct, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> values;
  std::uniform_real_distribution<double> real(-1e3, 1e9);
  for (size_t i = 0; i < distinct; ++i) values.push_back(real(rng));
  if (distinct >= 4) {
    values[0] = 0.0;
    values[1] = -0.0;
    values[2] = std::numeric_limits<double>::infinity();
    values[3] = 1e-300;
  }
  std::vector<Entry> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = {values[rng() % values.size()], static_cast<uint32_t>(i)};
  return v;
}

TEST_CASE("key sorts: RadixSort and SortByFewKeys give std::stable_sort's order") {
  struct Case {
    size_t n, distinct;
  };
  // Empty, one and two entries, and either side of the size where RadixSort
  // stops handing small arrays to std::stable_sort (1024); below the size
  // where SortByFewKeys looks up keys; few distinct keys; one; exactly the
  // limit of distinct keys and one past it (the fallback, taken part way
  // through the array); every key distinct.
  const Case cases[] = {{0, 1},         {1, 1},         {2, 2},         {1023, 40},     {1024, 40},
                        {100, 10},      {5000, 5000},   {50000, 1},     {50000, 300},   {200000, 4000},
                        {60000, 16384}, {60000, 16385}, {60000, 60000}, {100000, 40000}};
  for (const Case& c : cases) {
    CAPTURE(c.n);
    CAPTURE(c.distinct);
    const std::vector<Entry> input = Entries(c.n, c.distinct, c.n * 31 + c.distinct);
    std::vector<Entry> want = input;
    std::stable_sort(want.begin(), want.end(), [](const Entry& x, const Entry& y) { return KeyOf(x) < KeyOf(y); });
    std::vector<Entry> few = input, radix = input;
    sim::SortByFewKeys(few, KeyOf);
    sim::RadixSort(radix, KeyOf);
    CHECK(few == want);
    CHECK(radix == want);
  }
}

TEST_CASE("key sorts: OrderKey orders doubles as < does, -0 and +0 as one") {
  const double xs[] = {
      -std::numeric_limits<double>::infinity(), -1e300, -1.0, -1e-300, -0.0, 0.0, 1e-300, 1.0, 1.5, 1e300,
      std::numeric_limits<double>::infinity()};
  for (double a : xs) {
    for (double b : xs) {
      CAPTURE(a);
      CAPTURE(b);
      CHECK((sim::OrderKey(a) < sim::OrderKey(b)) == (a < b));
      CHECK((sim::OrderKey(a) == sim::OrderKey(b)) == (a == b));
    }
  }
}

}  // namespace
}  // namespace drainwise
