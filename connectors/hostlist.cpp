#include "connectors/hostlist.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>

#include <fmt/format.h>

namespace drainwise::connectors {
namespace {

struct Range {
  uint64_t lo = 0;
  uint64_t hi = 0;
  size_t width = 0;  // zero-padded width, from the lower bound as written
};

// An item as messages show it: a malformed line can be kilobytes long.
std::string Shown(std::string_view s) {
  constexpr size_t kShown = 96;
  if (s.size() <= kShown) return std::string(s);
  return fmt::format("{}... ({} characters)", s.substr(0, kShown), s.size());
}

size_t Digits(uint64_t v) {
  size_t n = 1;
  while (v >= 10) {
    v /= 10;
    ++n;
  }
  return n;
}

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

Result<uint64_t> ToNumber(std::string_view s, std::string_view item) {
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v > 999'999'999'999ull) {
    return InvalidArgument(fmt::format("hostlist '{}': bad number '{}'", Shown(item), Shown(s)));
  }
  return v;
}

// "001-004,010" -> ranges.
Result<std::vector<Range>> ParseBracket(std::string_view body, std::string_view item) {
  std::vector<Range> out;
  size_t start = 0;
  while (start <= body.size()) {
    size_t comma = body.find(',', start);
    std::string_view part =
        body.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    size_t dash = part.find('-');
    std::string_view lo_s = part.substr(0, dash);
    std::string_view hi_s = dash == std::string_view::npos ? lo_s : part.substr(dash + 1);
    if (!AllDigits(lo_s) || !AllDigits(hi_s)) {
      return InvalidArgument(
          fmt::format("hostlist '{}': bad range '{}' (expected N or N-M)", Shown(item), Shown(part)));
    }
    auto lo = ToNumber(lo_s, item);
    if (!lo) return tl::unexpected(lo.error());
    auto hi = ToNumber(hi_s, item);
    if (!hi) return tl::unexpected(hi.error());
    if (*hi < *lo) {
      return InvalidArgument(fmt::format("hostlist '{}': reversed range '{}'", Shown(item), part));
    }
    if (*hi - *lo + 1 > kMaxHostlistRange) {
      return InvalidArgument(
          fmt::format("hostlist '{}': range '{}' has {} hosts, more than {} (Slurm's limit for one range)", Shown(item),
                      part, *hi - *lo + 1, kMaxHostlistRange));
    }
    out.push_back({*lo, *hi, lo_s.size()});
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

// One top-level item: literal text and bracket groups, no trailing text.
// `max_hosts`: the expression's bound; `document`: the document's budget
// before this expression. Both count `out` (the hosts of earlier items).
Status ExpandItem(std::string_view item, size_t max_hosts, const HostlistBudget& document,
                  std::vector<std::string>& out) {
  auto bounded = [&](uint64_t total) -> Status {
    if (total + out.size() > max_hosts) {
      return InvalidArgument(fmt::format("hostlist '{}': expands to more than {} hosts (the limit for one expression)",
                                         Shown(item), max_hosts));
    }
    if (total + out.size() + document.used > document.limit) {
      return InvalidArgument(fmt::format("hostlist '{}': the document's hostlists expand to more than {} hosts in all",
                                         Shown(item), document.limit));
    }
    return {};
  };
  // Pieces alternate: prefix literal, bracket, literal, bracket ...
  std::vector<std::string> literals;
  std::vector<std::vector<Range>> groups;
  size_t pos = 0;
  std::string literal;
  while (pos < item.size()) {
    char c = item[pos];
    if (c == ']') return InvalidArgument(fmt::format("hostlist '{}': ']' without '['", Shown(item)));
    if (c != '[') {
      literal += c;
      ++pos;
      continue;
    }
    size_t close = item.find(']', pos);
    if (close == std::string_view::npos) {
      return InvalidArgument(fmt::format("hostlist '{}': '[' without ']'", Shown(item)));
    }
    std::string_view body = item.substr(pos + 1, close - pos - 1);
    if (body.find('[') != std::string_view::npos) {
      return InvalidArgument(fmt::format("hostlist '{}': nested '['", Shown(item)));
    }
    auto ranges = ParseBracket(body, item);
    if (!ranges) return tl::unexpected(ranges.error());
    literals.push_back(std::move(literal));
    literal.clear();
    groups.push_back(std::move(*ranges));
    pos = close + 1;
  }
  if (groups.empty()) {
    if (literal.size() > kMaxHostNameLength) {
      return InvalidArgument(
          fmt::format("hostlist '{}': host name longer than {} characters", Shown(item), kMaxHostNameLength));
    }
    if (auto st = bounded(1); !st) return st;
    out.push_back(std::move(literal));
    return {};
  }
  if (!literal.empty()) {
    // Slurm's table (fixtures README): a suffix after the last bracket is an error.
    return InvalidArgument(fmt::format("hostlist '{}': text '{}' after the last ']'", Shown(item), Shown(literal)));
  }
  // Size checks before expanding anything. A group holds at most item.size()
  // ranges of at most kMaxHostlistRange hosts (< 2^33 hosts), and `total` is
  // checked against the bounds after each product: with bounds below 2^31,
  // no product overflows 64 bits.
  uint64_t total = 1;
  size_t longest = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    uint64_t n = 0;
    size_t width = 0;
    for (const auto& r : groups[g]) {
      n += r.hi - r.lo + 1;
      width = std::max({width, r.width, Digits(r.hi)});
    }
    total *= n;
    if (auto st = bounded(total); !st) return st;
    longest += literals[g].size() + width;
  }
  if (longest > kMaxHostNameLength) {
    return InvalidArgument(
        fmt::format("hostlist '{}': host names longer than {} characters", Shown(item), kMaxHostNameLength));
  }
  // Odometer over the groups; the last group turns fastest (earlier = outer).
  std::vector<std::vector<std::string>> values(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    for (const auto& r : groups[g]) {
      for (uint64_t v = r.lo; v <= r.hi; ++v) values[g].push_back(fmt::format("{:0{}}", v, r.width));
    }
  }
  std::vector<size_t> idx(groups.size(), 0);
  while (true) {
    std::string name;
    for (size_t g = 0; g < groups.size(); ++g) name += literals[g] + values[g][idx[g]];
    out.push_back(std::move(name));
    size_t g = groups.size();
    while (g > 0) {
      --g;
      if (++idx[g] < values[g].size()) break;
      idx[g] = 0;
      if (g == 0) return {};
    }
  }
}

}  // namespace

Result<std::vector<std::string>> ExpandHostlist(std::string_view hostlist, size_t max_hosts) {
  HostlistBudget unlimited{SIZE_MAX, 0};
  return ExpandHostlist(hostlist, unlimited, max_hosts);
}

Result<std::vector<std::string>> ExpandHostlist(std::string_view hostlist, HostlistBudget& document, size_t max_hosts) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < hostlist.size()) {
    // Split at top-level separators only: commas inside brackets separate ranges.
    size_t end = pos;
    int depth = 0;
    for (; end < hostlist.size(); ++end) {
      char c = hostlist[end];
      if (c == '[')
        ++depth;
      else if (c == ']')
        --depth;
      else if (depth == 0 && (c == ',' || c == ' ' || c == '\t' || c == '\n'))
        break;
    }
    std::string_view item = hostlist.substr(pos, end - pos);
    if (!item.empty()) {
      auto st = ExpandItem(item, max_hosts, document, out);
      if (!st) return tl::unexpected(st.error());
    }
    pos = end + 1;
  }
  document.used += out.size();
  return out;
}

}  // namespace drainwise::connectors
