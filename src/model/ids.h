// Dense typed ids. External names ("leaf-a01", "job-42") are mapped to these
// once, at the edge; inside, everything indexes flat vectors. The tag keeps a
// NodeId from being used where a LinkId is meant.
#pragma once

#include <compare>
#include <concepts>
#include <cstdint>
#include <functional>
#include <limits>

namespace drainwise::model {

template <class Tag>
struct Id {
  static constexpr uint32_t kInvalid = std::numeric_limits<uint32_t>::max();
  uint32_t value = kInvalid;

  constexpr Id() = default;
  template <std::integral I>
  constexpr explicit Id(I v) : value(static_cast<uint32_t>(v)) {}
  constexpr bool valid() const { return value != kInvalid; }
  constexpr auto operator<=>(const Id&) const = default;
};

using NodeId = Id<struct NodeTag>;
using LinkId = Id<struct LinkTag>;
using JobId = Id<struct JobTag>;

}  // namespace drainwise::model

template <class Tag>
struct std::hash<drainwise::model::Id<Tag>> {
  size_t operator()(const drainwise::model::Id<Tag>& id) const noexcept { return std::hash<uint32_t>{}(id.value); }
};
