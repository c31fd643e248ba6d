#include "sim/flow_solver.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <queue>

namespace drainwise::sim {

uint32_t FluidProblem::AddClass(std::vector<LinkShare> links) {
  owned_classes.push_back(std::move(links));
  classes.emplace_back(owned_classes.back());
  return static_cast<uint32_t>(classes.size() - 1);
}

uint32_t FluidProblem::AddAggregate(double w, double b, const std::vector<LinkShare>& priv,
                                    const std::vector<ClassTerm>& t) {
  weight.push_back(w);
  bits.push_back(b);
  private_links.insert(private_links.end(), priv.begin(), priv.end());
  private_offsets.push_back(static_cast<uint32_t>(private_links.size()));
  terms.insert(terms.end(), t.begin(), t.end());
  term_offsets.push_back(static_cast<uint32_t>(terms.size()));
  return static_cast<uint32_t>(weight.size() - 1);
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Completions closer than this (relative) are one batch: exact ties split by
// rounding would otherwise cost one re-solve each.
constexpr double kBatchTolerance = 1e-9;

class UnionFind {
 public:
  explicit UnionFind(size_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), 0u); }
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
  std::vector<uint32_t> parent_;
};

// One component as a self-contained problem with dense local indices.
struct LocalProblem {
  std::vector<uint32_t> aggs;        // global aggregate ids
  std::vector<uint32_t> links;       // global directed link ids
  std::vector<double> capacity;      // per local link
  std::vector<double> weight;        // per local agg
  std::vector<uint32_t> priv_off{0};
  std::vector<LinkShare> priv;       // link = local id
  std::vector<uint32_t> term_off{0};
  std::vector<ClassTerm> terms;      // cls = local id
  std::vector<uint32_t> class_off{0};
  std::vector<LinkShare> class_links;  // link = local id
  // Reverse indices.
  std::vector<uint32_t> link_aggs_off, link_aggs;        // link -> aggs with it private
  std::vector<uint32_t> link_classes_off, link_classes;  // link -> classes containing it
  std::vector<uint32_t> class_aggs_off, class_aggs;      // class -> aggs with a term on it

  void Clear() {
    aggs.clear();
    links.clear();
    capacity.clear();
    weight.clear();
    priv_off.assign(1, 0);
    priv.clear();
    term_off.assign(1, 0);
    terms.clear();
    class_off.assign(1, 0);
    class_links.clear();
  }

  static void Reverse(size_t n, const std::vector<uint32_t>& off, size_t from_count,
                      const auto& target_of, std::vector<uint32_t>& rev_off, std::vector<uint32_t>& rev) {
    rev_off.assign(n + 1, 0);
    for (size_t f = 0; f < from_count; ++f) {
      for (uint32_t k = off[f]; k < off[f + 1]; ++k) ++rev_off[target_of(k) + 1];
    }
    for (size_t i = 0; i < n; ++i) rev_off[i + 1] += rev_off[i];
    rev.resize(rev_off.back());
    std::vector<uint32_t> fill(rev_off.begin(), rev_off.end() - 1);
    for (size_t f = 0; f < from_count; ++f) {
      for (uint32_t k = off[f]; k < off[f + 1]; ++k) rev[fill[target_of(k)]++] = static_cast<uint32_t>(f);
    }
  }

  void BuildReverse() {
    const size_t nl = links.size(), nc = class_off.size() - 1, na = aggs.size();
    Reverse(nl, priv_off, na, [&](uint32_t k) { return priv[k].link; }, link_aggs_off, link_aggs);
    Reverse(nl, class_off, nc, [&](uint32_t k) { return class_links[k].link; }, link_classes_off, link_classes);
    Reverse(nc, term_off, na, [&](uint32_t k) { return terms[k].cls; }, class_aggs_off, class_aggs);
  }
};

// Progressive filling on the active aggregates of a LocalProblem.
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
    class_n_.assign(nc, 0);
    class_dsum_.assign(nc, 0.0);
    class_dn_.assign(nc, 0);
    frozen_.assign(na, 0);
    for (size_t a = 0; a < na; ++a) {
      if (!active[a]) continue;
      const double w = p.weight[a];
      for (uint32_t k = p.priv_off[a]; k < p.priv_off[a + 1]; ++k) {
        slope_[p.priv[k].link] += w * p.priv[k].share;
        ++count_[p.priv[k].link];
      }
      for (uint32_t k = p.term_off[a]; k < p.term_off[a + 1]; ++k) {
        class_sum_[p.terms[k].cls] += w * p.terms[k].scale;
        ++class_n_[p.terms[k].cls];
      }
      if (p.priv_off[a] == p.priv_off[a + 1] && p.term_off[a] == p.term_off[a + 1]) {
        rate[a] = kInf;  // crosses no link that can saturate
        bottleneck[a] = kNoLink;
        frozen_[a] = 1;
      }
    }
    for (size_t c = 0; c < nc; ++c) {
      if (class_n_[c] == 0) continue;
      for (uint32_t k = p.class_off[c]; k < p.class_off[c + 1]; ++k) {
        slope_[p.class_links[k].link] += class_sum_[c] * p.class_links[k].share;
        ++count_[p.class_links[k].link];
      }
    }
    // A link's saturation level only rises as flows freeze (freezing a=wφ
    // at level ℓ <= R/S gives (R - aℓ)/(S - a) >= R/S), so every link keeps
    // one heap entry whose key is a lower bound: a popped entry is
    // re-checked and pushed back with its current level when that is
    // higher. Far fewer heap operations than one push per touch.
    heap_ = {};
    for (uint32_t l = 0; l < nl; ++l) {
      if (count_[l] > 0 && slope_[l] > 0) heap_.push({p.capacity[l] / slope_[l], l});
    }
    double level = 0;
    while (!heap_.empty()) {
      Entry e = heap_.top();
      heap_.pop();
      if (count_[e.link] == 0) continue;
      const double now = slope_[e.link] > 0 ? std::max(level, (p.capacity[e.link] - used_[e.link]) / slope_[e.link]) : level;
      if (now > e.level * (1 + 1e-12)) {
        heap_.push({now, e.link});
        continue;
      }
      level = std::max(level, now);
      touched_classes_.clear();
      auto freeze = [&](uint32_t a) {
        if (!active[a] || frozen_[a]) return;
        frozen_[a] = 1;
        rate[a] = level;
        bottleneck[a] = e.link;
        const double w = p.weight[a];
        for (uint32_t k = p.priv_off[a]; k < p.priv_off[a + 1]; ++k) {
          uint32_t m = p.priv[k].link;
          used_[m] += w * p.priv[k].share * level;
          slope_[m] -= w * p.priv[k].share;
          --count_[m];
        }
        for (uint32_t k = p.term_off[a]; k < p.term_off[a + 1]; ++k) {
          uint32_t c = p.terms[k].cls;
          if (class_dn_[c] == 0) touched_classes_.push_back(c);
          class_dsum_[c] += w * p.terms[k].scale;
          ++class_dn_[c];
        }
      };
      for (uint32_t k = p.link_aggs_off[e.link]; k < p.link_aggs_off[e.link + 1]; ++k) freeze(p.link_aggs[k]);
      for (uint32_t k = p.link_classes_off[e.link]; k < p.link_classes_off[e.link + 1]; ++k) {
        uint32_t c = p.link_classes[k];
        if (class_n_[c] == 0) continue;
        for (uint32_t j = p.class_aggs_off[c]; j < p.class_aggs_off[c + 1]; ++j) freeze(p.class_aggs[j]);
      }
      for (uint32_t c : touched_classes_) {
        const double ds = class_dsum_[c];
        class_sum_[c] -= ds;
        class_n_[c] -= class_dn_[c];
        const bool emptied = class_n_[c] == 0;
        for (uint32_t k = p.class_off[c]; k < p.class_off[c + 1]; ++k) {
          uint32_t m = p.class_links[k].link;
          used_[m] += ds * p.class_links[k].share * level;
          slope_[m] -= ds * p.class_links[k].share;
          if (emptied) --count_[m];
        }
        class_dsum_[c] = 0;
        class_dn_[c] = 0;
      }
      count_[e.link] = 0;  // saturated: every flow on it is frozen
    }
  }

 private:
  struct Entry {
    double level;
    uint32_t link;
    bool operator<(const Entry& o) const {
      return level != o.level ? level > o.level : link > o.link;  // min-heap, ties by link id
    }
  };
  std::vector<double> slope_, used_;
  std::vector<uint32_t> count_;
  std::vector<double> class_sum_, class_dsum_;
  std::vector<uint32_t> class_n_, class_dn_;
  std::vector<uint8_t> frozen_;
  std::vector<uint32_t> touched_classes_;
  std::priority_queue<Entry> heap_;
};

// Upper bound on the total rate of each class from the capacity of the
// private links feeding it: aggregates sharing a cover link m carry at most
// max(scale / share_m) * c_m into the class. Taken over the first and the
// last private link (source and destination NICs), whichever is smaller.
std::vector<double> ClassRateBounds(const FluidProblem& p) {
  const size_t nc = p.class_count();
  std::vector<double> bound(nc, 0.0);
  std::vector<uint8_t> unbounded(nc, 0);
  struct Cover {
    uint32_t cls, link;
    double ratio;
  };
  std::vector<Cover> covers[2];
  for (size_t a = 0; a < p.aggregate_count(); ++a) {
    uint32_t pb = p.private_offsets[a], pe = p.private_offsets[a + 1];
    for (uint32_t k = p.term_offsets[a]; k < p.term_offsets[a + 1]; ++k) {
      const ClassTerm& t = p.terms[k];
      if (pb == pe) {
        unbounded[t.cls] = 1;
        continue;
      }
      covers[0].push_back({t.cls, p.private_links[pb].link, t.scale / p.private_links[pb].share});
      covers[1].push_back({t.cls, p.private_links[pe - 1].link, t.scale / p.private_links[pe - 1].share});
    }
  }
  std::vector<double> side(nc);
  for (int s = 0; s < 2; ++s) {
    auto& v = covers[s];
    std::sort(v.begin(), v.end(), [](const Cover& x, const Cover& y) {
      return x.cls != y.cls ? x.cls < y.cls : x.link < y.link;
    });
    std::fill(side.begin(), side.end(), 0.0);
    for (size_t i = 0; i < v.size();) {
      size_t j = i;
      double ratio = 0;
      for (; j < v.size() && v[j].cls == v[i].cls && v[j].link == v[i].link; ++j) ratio = std::max(ratio, v[j].ratio);
      side[v[i].cls] += ratio * p.capacity_bps[v[i].link];
      i = j;
    }
    for (size_t c = 0; c < nc; ++c) bound[c] = s == 0 ? side[c] : std::min(bound[c], side[c]);
    v.clear();
    v.shrink_to_fit();
  }
  for (size_t c = 0; c < nc; ++c) {
    if (unbounded[c]) bound[c] = kInf;
  }
  return bound;
}

}  // namespace

Result<FluidSolution> SolveFluid(const FluidProblem& p, std::stop_token stop, const ReuseHint& reuse) {
  const size_t na = p.aggregate_count(), nc = p.class_count(), nl = p.capacity_bps.size();
  FluidSolution sol;
  sol.finish_s.assign(na, 0.0);
  sol.rate0_bps.assign(na, 0.0);
  sol.bottleneck0.assign(na, kNoLink);
  sol.load0_bps.assign(nl, 0.0);
  sol.component.assign(na, 0);

  // 1. Tight links: private links always; class links whose bounded load can
  //    exceed their capacity.
  std::vector<uint8_t> tight(nl, 0);
  for (const LinkShare& ls : p.private_links) tight[ls.link] = 1;
  {
    std::vector<double> class_bound = ClassRateBounds(p);
    std::vector<double> link_bound(nl, 0.0);
    for (size_t c = 0; c < nc; ++c) {
      for (const LinkShare& ls : p.classes[c]) link_bound[ls.link] += ls.share * class_bound[c];
    }
    for (size_t l = 0; l < nl; ++l) {
      if (link_bound[l] > p.capacity_bps[l] * (1 + 1e-9)) tight[l] = 1;
      if (!tight[l] && link_bound[l] > 0) ++sol.redundant_links;
    }
  }
  for (size_t l = 0; l < nl; ++l) sol.tight_links += tight[l];
  std::vector<uint8_t> class_tight(nc, 0);
  for (size_t c = 0; c < nc; ++c) {
    for (const LinkShare& ls : p.classes[c]) {
      if (tight[ls.link]) {
        class_tight[c] = 1;
        break;
      }
    }
  }
  if (stop.stop_requested()) return MakeError(ErrorCode::kCancelled, "flow simulation cancelled");

  // 2. Components over aggregates (ids 0..na), classes (na..na+nc) and links.
  UnionFind uf(na + nc + nl);
  for (uint32_t a = 0; a < na; ++a) {
    for (uint32_t k = p.private_offsets[a]; k < p.private_offsets[a + 1]; ++k) {
      uf.Union(a, static_cast<uint32_t>(na + nc + p.private_links[k].link));
    }
    for (uint32_t k = p.term_offsets[a]; k < p.term_offsets[a + 1]; ++k) {
      if (class_tight[p.terms[k].cls]) uf.Union(a, static_cast<uint32_t>(na + p.terms[k].cls));
    }
  }
  for (uint32_t c = 0; c < nc; ++c) {
    if (!class_tight[c]) continue;
    for (const LinkShare& ls : p.classes[c]) {
      if (tight[ls.link]) uf.Union(static_cast<uint32_t>(na + c), static_cast<uint32_t>(na + nc + ls.link));
    }
  }
  // Dense component ids in order of first aggregate; members grouped.
  std::vector<uint32_t> comp_of_root;  // indexed by root id, lazily sized
  comp_of_root.assign(na + nc + nl, UINT32_MAX);
  for (uint32_t a = 0; a < na; ++a) {
    uint32_t r = uf.Find(a);
    if (comp_of_root[r] == UINT32_MAX) {
      comp_of_root[r] = static_cast<uint32_t>(sol.component_size.size());
      sol.component_size.push_back(0);
    }
    sol.component[a] = comp_of_root[r];
    ++sol.component_size[comp_of_root[r]];
  }
  comp_of_root.clear();
  comp_of_root.shrink_to_fit();
  const size_t ncomp = sol.component_size.size();
  std::vector<uint32_t> comp_off(ncomp + 1, 0);
  for (size_t c = 0; c < ncomp; ++c) comp_off[c + 1] = comp_off[c] + sol.component_size[c];
  std::vector<uint32_t> members(na);
  {
    std::vector<uint32_t> fill(comp_off.begin(), comp_off.end() - 1);
    for (uint32_t a = 0; a < na; ++a) members[fill[sol.component[a]]++] = a;
  }

  // 3. Simulate each component.
  LocalProblem lp;
  WaterFiller filler;
  std::vector<uint32_t> link_local(nl, UINT32_MAX), class_local(nc, UINT32_MAX);
  std::vector<uint8_t> active;
  std::vector<double> rate, remaining;
  std::vector<uint32_t> bottleneck;
  for (size_t comp = 0; comp < ncomp; ++comp) {
    const uint32_t* mb = members.data() + comp_off[comp];
    const uint32_t* me = members.data() + comp_off[comp + 1];
    if (stop.stop_requested()) return MakeError(ErrorCode::kCancelled, "flow simulation cancelled");

    if (reuse.previous != nullptr && reuse.previous_index != nullptr) {
      const FluidSolution& prev = *reuse.previous;
      const auto& idx = *reuse.previous_index;
      bool same = idx[*mb] != kNoLink;
      const uint32_t pc = same ? prev.component[idx[*mb]] : 0;
      same = same && prev.component_size[pc] == static_cast<uint32_t>(me - mb);
      for (const uint32_t* it = mb; same && it != me; ++it) {
        same = idx[*it] != kNoLink && prev.component[idx[*it]] == pc;
      }
      if (same) {
        for (const uint32_t* it = mb; it != me; ++it) {
          sol.finish_s[*it] = prev.finish_s[idx[*it]];
          sol.rate0_bps[*it] = prev.rate0_bps[idx[*it]];
          sol.bottleneck0[*it] = prev.bottleneck0[idx[*it]];
        }
        ++sol.components_reused;
        continue;
      }
    }

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
    std::vector<uint32_t> classes_used;
    for (const uint32_t* it = mb; it != me; ++it) {
      uint32_t a = *it;
      lp.aggs.push_back(a);
      lp.weight.push_back(p.weight[a]);
      for (uint32_t k = p.private_offsets[a]; k < p.private_offsets[a + 1]; ++k) {
        lp.priv.push_back({local_link(p.private_links[k].link), p.private_links[k].share});
      }
      lp.priv_off.push_back(static_cast<uint32_t>(lp.priv.size()));
      for (uint32_t k = p.term_offsets[a]; k < p.term_offsets[a + 1]; ++k) {
        uint32_t c = p.terms[k].cls;
        if (!class_tight[c]) continue;
        if (class_local[c] == UINT32_MAX) {
          class_local[c] = static_cast<uint32_t>(classes_used.size());
          classes_used.push_back(c);
        }
        lp.terms.push_back({class_local[c], p.terms[k].scale});
      }
      lp.term_off.push_back(static_cast<uint32_t>(lp.terms.size()));
    }
    for (uint32_t c : classes_used) {
      for (const LinkShare& ls : p.classes[c]) {
        if (tight[ls.link]) lp.class_links.push_back({local_link(ls.link), ls.share});
      }
      lp.class_off.push_back(static_cast<uint32_t>(lp.class_links.size()));
      class_local[c] = UINT32_MAX;
    }
    for (uint32_t l : lp.links) link_local[l] = UINT32_MAX;
    lp.BuildReverse();

    // Event loop: fill, advance to the next batch of completions, repeat.
    const size_t n = lp.aggs.size();
    sol.max_component = std::max(sol.max_component, n);
    ++sol.components_solved;
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
      }
    }
    double now = 0;
    bool first = true;
    while (live > 0) {
      if (stop.stop_requested()) return MakeError(ErrorCode::kCancelled, "flow simulation cancelled");
      filler.Fill(lp, active, rate, bottleneck);
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
      ++sol.events;
      if (!std::isfinite(dt)) {  // nothing can progress (zero capacity): never finishes
        for (size_t i = 0; i < n; ++i) {
          if (active[i]) sol.finish_s[lp.aggs[i]] = kInf;
        }
        break;
      }
      const double cutoff = dt * (1 + kBatchTolerance);
      now += dt;
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
  }

  // 4. Loads at t = 0 on every link (tight or not).
  std::vector<double> class_rate(nc, 0.0);
  for (size_t a = 0; a < na; ++a) {
    const double r = sol.rate0_bps[a] * p.weight[a];
    if (!(r > 0) || !std::isfinite(r)) continue;
    for (uint32_t k = p.private_offsets[a]; k < p.private_offsets[a + 1]; ++k) {
      sol.load0_bps[p.private_links[k].link] += r * p.private_links[k].share;
    }
    for (uint32_t k = p.term_offsets[a]; k < p.term_offsets[a + 1]; ++k) class_rate[p.terms[k].cls] += r * p.terms[k].scale;
  }
  for (size_t c = 0; c < nc; ++c) {
    if (class_rate[c] == 0) continue;
    for (const LinkShare& ls : p.classes[c]) sol.load0_bps[ls.link] += class_rate[c] * ls.share;
  }
  for (double f : sol.finish_s) {
    if (std::isfinite(f)) sol.makespan_s = std::max(sol.makespan_s, f);
  }
  return sol;
}

}  // namespace drainwise::sim
