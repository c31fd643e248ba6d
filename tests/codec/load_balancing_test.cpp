// The topology document's `load_balancing` (docs/formats.md): parsed, kept
// through the model and written back; bad values refused naming the field.
#include <doctest/doctest.h>

#include "codec/native.h"
#include "model/topology.h"

namespace drainwise {
namespace {

using nlohmann::json;

json Topo(json load_balancing) {
  json t = {{"format", "drainwise.topology/v1"},
            {"name", "t"},
            {"nodes", json::array({{{"id", "s"}, {"kind", "switch"}, {"tier", "leaf"}},
                                   {{"id", "h"}, {"kind", "host"}, {"gpus", 1}}})},
            {"links", json::array({{{"a", "h"}, {"b", "s"}, {"gbps", 100}}})}};
  if (!load_balancing.is_null()) t["load_balancing"] = std::move(load_balancing);
  return t;
}

TEST_CASE("load_balancing: each mode parses, survives the model and round-trips") {
  struct Case {
    json doc;
    std::string routing;
    int seeds;
  };
  const Case cases[] = {
      {{{"mode", "spray"}}, "spray", 0},
      {{{"mode", "spray-path"}}, "spray-path", 0},
      {{{"mode", "adaptive"}}, "adaptive", 0},
      {{{"mode", "hash"}}, "hash", 0},
      {{{"mode", "hash"}, {"rehash", false}, {"hash_seeds", 4}}, "hash", 4},
      {{{"mode", "hash"}, {"rehash", true}, {"hash_seeds", 16}}, "hash-rehash", 16},
      {{{"mode", "hash-rehash"}}, "hash-rehash", 0},
  };
  for (const Case& c : cases) {
    CAPTURE(c.doc.dump());
    auto spec = codec::ParseTopology(Topo(c.doc));
    REQUIRE(spec.has_value());
    CHECK(spec->load_balancing.routing == c.routing);
    CHECK(spec->load_balancing.hash_seeds == c.seeds);
    auto topo = model::BuildTopology(*spec);
    REQUIRE(topo.has_value());
    CHECK(topo->load_balancing().routing == c.routing);
    // Written back in its canonical form, which parses to the same.
    json out = codec::TopologyToJson(*topo);
    auto again = codec::ParseTopology(out);
    REQUIRE(again.has_value());
    CHECK(again->load_balancing.routing == c.routing);
    CHECK(again->load_balancing.hash_seeds == c.seeds);
    CHECK(out == codec::TopologySpecToJson(*spec));
  }
  // Not declared: nothing written, nothing declared.
  auto none = codec::ParseTopology(Topo(nullptr));
  REQUIRE(none.has_value());
  CHECK_FALSE(none->load_balancing.declared());
  CHECK_FALSE(codec::TopologySpecToJson(*none).contains("load_balancing"));
}

TEST_CASE("load_balancing: refusals name the field") {
  struct Case {
    json doc;
    std::string message;
  };
  const Case cases[] = {
      {{{"mode", "ecmp"}}, "load_balancing.mode: unknown mode 'ecmp'"},
      {{{"mode", "spray"}, {"rehash", true}}, "load_balancing.rehash: only with mode 'hash'"},
      {{{"mode", "adaptive"}, {"hash_seeds", 2}}, "load_balancing.hash_seeds: only with mode 'hash'"},
      {{{"mode", "hash"}, {"hash_seeds", 0}}, "load_balancing.hash_seeds: must be 1..1024"},
      {{{"mode", "hash"}, {"seeds", 8}}, "seeds"},
      {{{"rehash", true}}, "load_balancing.mode"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.doc.dump());
    auto spec = codec::ParseTopology(Topo(c.doc));
    REQUIRE_FALSE(spec.has_value());
    CHECK(spec.error().message.find(c.message) != std::string::npos);
  }
}

}  // namespace
}  // namespace drainwise
