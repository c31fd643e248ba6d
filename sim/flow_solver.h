// The fluid core of the flow-level simulator: weighted max-min fair rates
// with fixed split fractions, recomputed whenever flows finish.
//
// Problem. An aggregate is `weight` identical flows of `bits` each, all
// starting at t = 0. A flow of an aggregate at rate r puts share * r on each
// directed link of its route. Its route is the sum of
//   - private links: (link, share) pairs of this aggregate only (NIC links,
//     or a hashed path), and
//   - class terms: (class, scale) pairs, a class being a (link, share) list
//     shared by many aggregates (the fabric part of a leaf-to-leaf route);
//     the aggregate puts scale * share * r on every link of the class.
// Rates are max-min fair (progressive filling: every unfrozen flow grows at
// the same rate until a link saturates; the flows crossing it freeze), and
// are recomputed after each batch of completions (flows finishing within a
// relative 1e-9 of each other finish together): only the aggregates whose
// rates a batch can change are re-filled (FluidOptions::incremental).
//
// Speed. Links that can never saturate are dropped first: a class link
// whose load is bounded below its capacity by the capacities of the NIC
// links feeding it (each aggregate's first and last private link) is
// implied by those constraints and cannot change a max-min allocation.
// The remaining links split the aggregates into independent components,
// each simulated on its own; with a ReuseHint a component whose aggregates
// are all unchanged from a previous solution (and form the same component
// there) is copied instead of simulated.
//
// Pure; safe to call concurrently. Errors: kCancelled when `stop` fires.
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <limits>
#include <memory>
#include <span>
#include <stop_token>
#include <vector>

#include "model/error.h"
#include "sim/task_runner.h"

namespace drainwise::sim {

inline constexpr uint32_t kNoLink = std::numeric_limits<uint32_t>::max();

struct LinkShare {
  uint32_t link = 0;  // directed link id
  double share = 0;
};

struct ClassTerm {
  uint32_t cls = 0;
  double scale = 1;
};

// Appends `v` to `values`, a list that stays empty while every value is 1:
// `before` is the count of entries so far (the list's size once it holds any).
inline void AppendValue(std::vector<double>& values, size_t before, double v) {
  if (values.empty()) {
    if (v == 1.0) return;
    values.assign(before, 1.0);
  }
  values.push_back(v);
}

struct FluidProblem {
  FluidProblem() = default;
  FluidProblem(FluidProblem&&) = default;
  FluidProblem& operator=(FluidProblem&&) = default;
  FluidProblem(const FluidProblem&) = delete;  // classes may view owned storage

  std::vector<double> capacity_bps;  // per directed link, > 0 where used

  // Class c's links. The spans view storage that outlives the problem (a
  // cached baseline's routes, shared by every drained run) or owned_classes.
  std::vector<std::span<const LinkShare>> classes;
  // Owned class links, in chunks that never reallocate (a class is a span
  // into one chunk): millions of hashed paths cost no allocation each.
  std::deque<std::vector<LinkShare>> owned_classes;

  std::vector<double> weight;  // per aggregate: number of identical flows (> 0)
  std::vector<double> bits;    // per aggregate: size of each flow
  // Aggregate a's private links are [private_offsets[a], private_offsets[a + 1])
  // and its class terms [term_offsets[a], term_offsets[a + 1]). Ids and
  // shares (scales) are apart, and the shares empty while every one is 1:
  // always in the hash modes, whose millions of aggregates then take 4 B
  // per link and per term instead of 16 (32k MoE, one seed: peak 1.00 → 0.79 GB).
  std::vector<uint32_t> private_offsets{0};
  std::vector<uint32_t> private_links;  // directed link ids
  std::vector<double> private_shares;   // per private link, or empty: all 1
  std::vector<uint32_t> term_offsets{0};
  std::vector<uint32_t> terms;      // class ids
  std::vector<double> term_scales;  // per term, or empty: all 1
  double private_share(size_t k) const { return private_shares.empty() ? 1.0 : private_shares[k]; }
  double term_scale(size_t k) const { return term_scales.empty() ? 1.0 : term_scales[k]; }
  // Every private share and term scale 1 (always in the hash modes).
  bool unit_shares() const { return private_shares.empty() && term_scales.empty(); }
  void AddPrivate(uint32_t link, double share) {
    AppendValue(private_shares, private_links.size(), share);
    private_links.push_back(link);
  }
  void AddTerm(uint32_t cls, double scale) {
    AppendValue(term_scales, terms.size(), scale);
    terms.push_back(cls);
  }

  // Per class, optional (empty: none): the NIC capacity feeding the class
  // from aggregates outside this problem, on the source and destination
  // side (the two sums of ClassRateBounds). A drained run that routes only
  // the components a drain touches adds the untouched ones' here, so that
  // the links it finds tight are those of the whole problem.
  std::vector<double> outside_side0, outside_side1;

  size_t aggregate_count() const { return weight.size(); }
  size_t class_count() const { return classes.size(); }
  // Empties the problem, keeping the capacity of its arrays for the next.
  void Clear();
  // Appends a class that the problem owns; returns its index.
  uint32_t AddClass(std::span<const LinkShare> links);
  // Appends an aggregate; returns its index.
  uint32_t AddAggregate(double weight, double bits, const std::vector<LinkShare>& private_links,
                        const std::vector<ClassTerm>& terms);
};

// A column of ids kept in 1, 2 or 4 B each, as its largest id needs: a
// solved problem's component ids, a few per job, for millions of aggregates.
class PackedIds {
 public:
  PackedIds() = default;
  explicit PackedIds(std::span<const uint32_t> ids);

  size_t size() const { return size_; }
  uint32_t operator[](size_t i) const {
    switch (width_) {
      case 1:
        return codes_[i];
      case 2: {
        uint16_t v;
        std::memcpy(&v, codes_.data() + 2 * i, 2);
        return v;
      }
      default: {
        uint32_t v;
        std::memcpy(&v, codes_.data() + 4 * i, 4);
        return v;
      }
    }
  }
  unsigned width() const { return width_; }
  size_t bytes() const { return codes_.capacity(); }

 private:
  std::vector<uint8_t> codes_;  // width_ bytes per entry, native byte order
  size_t size_ = 0;
  unsigned width_ = 4;
};

// A column of doubles kept losslessly in fewer bytes: each entry is the
// index of its bit pattern among the column's distinct ones (in order of
// first appearance), 1, 2 or 4 B wide as the count of distinct values needs;
// raw when that would not be smaller. A solved problem's finish times are
// its completion batches' times and its t = 0 rates its fill levels, so
// they take far fewer distinct values than there are aggregates.
class PackedDoubles {
 public:
  PackedDoubles() = default;
  explicit PackedDoubles(std::span<const double> values);

  size_t size() const { return size_; }
  double operator[](size_t i) const { return raw_ ? values_[i] : values_[codes_[i]]; }
  // Distinct values kept (the raw form: every entry), and bytes per entry.
  size_t distinct() const { return values_.size(); }
  unsigned width() const { return raw_ ? 8 : codes_.width(); }
  size_t bytes() const { return values_.size() * sizeof(double) + codes_.bytes(); }

 private:
  std::vector<double> values_;  // the distinct values, or every entry when raw
  PackedIds codes_;             // per entry, unless raw
  size_t size_ = 0;
  bool raw_ = true;
};

struct FluidSolution {
  std::vector<double> finish_s;       // per aggregate
  std::vector<double> rate0_bps;      // per aggregate: rate of one flow at t = 0
  std::vector<uint32_t> bottleneck0;  // per aggregate: directed link that froze it at t = 0
  std::vector<double> load0_bps;      // per directed link: load at t = 0
  std::vector<uint32_t> component;    // per aggregate
  std::vector<uint32_t> component_size;
  // Statistics.
  size_t tight_links = 0;      // links kept after dropping those that cannot saturate
  size_t redundant_links = 0;  // class links dropped: loaded, but provably never full
  size_t components_solved = 0;
  size_t components_reused = 0;
  size_t events = 0;  // completion batches, summed over components
  // Incremental solves: aggregates re-filled after completions, summed over
  // batches, and (without classes) re-fills started again with more, and
  // batches that fell back to the shared-link rule (FluidOptions::refill_restarts).
  size_t refilled = 0, refills_widened = 0, refills_shared = 0;
  size_t max_component = 0;  // aggregates in the largest solved component
  double makespan_s = 0;

  // The per-aggregate arrays as storage for another solve
  // (FluidOptions::storage): a seed's solve then fills the memory the one
  // before it used instead of fresh pages.
  struct Columns {
    std::vector<double> finish_s, rate0_bps;
    std::vector<uint32_t> bottleneck0, component;
  };
  // Moves those of the arrays that are not empty into `out` (left empty here).
  void GiveColumns(Columns& out);

  // A cached baseline keeps finish_s, rate0_bps and component packed (Pack
  // empties the vectors: freed, or moved into `spare` when given);
  // finish(a), rate0(a) and component_of(a) read either form.
  PackedDoubles packed_finish_s, packed_rate0_bps;
  PackedIds packed_component;
  void Pack(const TaskRunner& runner = {}, Columns* spare = nullptr);  // the columns at once through `runner`
  size_t bytes() const;                                                // held by the arrays above (their capacities)
  double finish(size_t a) const { return finish_s.empty() ? packed_finish_s[a] : finish_s[a]; }
  double rate0(size_t a) const { return rate0_bps.empty() ? packed_rate0_bps[a] : rate0_bps[a]; }
  uint32_t component_of(size_t a) const { return component.empty() ? packed_component[a] : component[a]; }
  // Each component's aggregates, ascending (a counting sort by component):
  // component c's are members[off[c] .. off[c + 1]).
  void MembersByComponent(std::vector<uint32_t>& off, std::vector<uint32_t>& members) const;
  // With `off` from MembersByComponent: the components in `runs` runs of
  // about equal aggregate counts, run k from begin[k] to begin[k + 1] (run k
  // from the first component that starts at or past k / runs of the
  // aggregates, and no run empty while there are components for it), for
  // work per component done in runs at once and joined in order.
  static std::vector<size_t> ComponentRuns(const std::vector<uint32_t>& off, size_t runs);
  size_t aggregate_count() const { return component.empty() ? packed_component.size() : component.size(); }
};

// Per class, an upper bound on its total rate: on each side, the sum over
// the distinct NIC links feeding it (each aggregate's first private link
// on the source side, its last on the destination side) of the link's
// capacity times the largest scale / share of its aggregates there, in
// ascending order of link (plus the problem's outside side); the smaller
// side. Unbounded (infinite) for a class an aggregate without private
// links reaches. Through `runner`, the two sides are summed at once.
std::vector<double> ClassRateBounds(const FluidProblem& problem, const TaskRunner& runner = {});

// Whether a class link whose load is bounded by `bound` (ClassRateBounds,
// summed over the link's classes) can exceed `capacity`: TightLinks's test,
// with a margin so that a bound meeting the capacity only by rounding does
// not count.
inline bool BoundCanSaturate(double bound, double capacity) { return bound > capacity * (1 + 1e-9); }

// Links that can saturate (1) and the others (0), per directed link: every
// private link, and each class link whose load, bounded by the NIC links
// feeding it (with the problem's outside sides), can exceed its capacity.
// `redundant`, when given, counts the loaded class links left out.
// Through `runner`, the bounds of the two sides are summed at once (the
// same bits either way).
std::vector<uint8_t> TightLinks(const FluidProblem& problem, size_t* redundant = nullptr,
                                const TaskRunner& runner = {});

// A solved problem's components as seen from outside (FootprintOf): per
// component, every directed link its aggregates use, in ascending order,
// with the NIC capacity the component feeds into it on either side (its
// part of ClassRateBounds's sums; 0 on a private link) and its load at
// t = 0. What a partial drained run needs of the components it leaves alone.
struct ComponentFootprint {
  struct Entry {
    uint32_t link = 0;
    double side0 = 0, side1 = 0, load = 0;
  };
  std::vector<uint32_t> offsets;  // per component: [offsets[c], offsets[c + 1]) in entries; empty: none
  std::vector<Entry> entries;
  bool empty() const { return offsets.empty(); }
  size_t component_count() const { return offsets.empty() ? 0 : offsets.size() - 1; }
  std::span<const Entry> of(size_t c) const {
    return std::span<const Entry>(entries.data() + offsets[c], entries.data() + offsets[c + 1]);
  }
};

// The footprint of `solution`'s components. Only for problems whose classes
// are each one link at share 1 and whose aggregates all have private links
// (the hash modes'), where a class's sides are its link's; empty otherwise,
// and when it would take more than `max_entries` entries. The components in
// four runs through `runner`, each component's sides from its own aggregates.
// The simulator takes its footprints from the solve (FluidOptions::footprint,
// the same to the bit); this is the reference the tests check it against.
ComponentFootprint FootprintOf(const FluidProblem& problem, const FluidSolution& solution, size_t max_entries,
                               const TaskRunner& runner = {});

// Reuse a previous solution for the components whose aggregates are all
// unchanged and that form exactly one component of `previous`.
// previous_index[a] is aggregate a's index in the previous problem when it is
// identical there (same weight, size and route), kNoLink when it changed.
// A previous solution may come without bottleneck0 (a cached baseline whose
// bottlenecks no report reads): reused aggregates then get kNoLink.
struct ReuseHint {
  const FluidSolution* previous = nullptr;
  const std::vector<uint32_t>* previous_index = nullptr;
};

// Working memory of SolveFluid that a caller may keep from one solve to the
// next (the local copy of a component, the event state, the component
// search): its arrays keep their capacity, so consecutive solves (the hash
// seeds) write into pages already faulted in. One solve at a time.
class SolverScratch {
 public:
  SolverScratch();
  ~SolverScratch();
  SolverScratch(SolverScratch&&) noexcept;
  SolverScratch& operator=(SolverScratch&&) noexcept;

  struct Impl;  // flow_solver.cpp
  Impl& impl() { return *impl_; }

 private:
  std::unique_ptr<Impl> impl_;
};

struct FluidOptions {
  // true: after each batch of completions, re-fill only the aggregates whose
  // rate can change (those at or above the lowest rate that finished; without
  // classes, only those whose bottleneck a chain of changes reaches; see
  // flow_solver.cpp). false: re-fill the whole component at every batch,
  // the previous solver, kept as the reference of the exactness tests.
  bool incremental = true;
  // Where SolveFluid's working arrays live; null: its own, freed on return.
  SolverScratch* scratch = nullptr;
  // Where independent components are solved, several at once; null or
  // empty: one after another on the calling thread. The solution is the
  // same to the last bit either way. Not called from inside a task.
  const TaskRunner* runner = nullptr;
  // When set, SolveFluid also writes there what FootprintOf(problem,
  // solution, footprint_max_entries) would return, the same to the bit: a
  // component's part as soon as its rates are known, on a thread that has
  // no component left to solve (while another solves the last ones).
  ComponentFootprint* footprint = nullptr;
  size_t footprint_max_entries = SIZE_MAX;
  // Without classes, a batch whose re-fill had to start again this many
  // times re-fills instead every aggregate at or above its lowest finished
  // rate that a chain of shared links joins to a finished one (exact
  // without the check): a bound on what one batch can cost. Tests set it
  // low to take that path.
  int refill_restarts = 16;
  // When set, the solution's per-aggregate arrays are made from these
  // (their memory, not their contents: every entry is written), taken.
  FluidSolution::Columns* storage = nullptr;
};

Result<FluidSolution> SolveFluid(const FluidProblem& problem, std::stop_token stop = {}, const ReuseHint& reuse = {},
                                 const FluidOptions& options = {});

}  // namespace drainwise::sim
