#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "connectors/hostlist.h"

namespace drainwise::connectors {
namespace {

using Hosts = std::vector<std::string>;

TEST_CASE("hostlist expansion follows Slurm's table") {
  struct Case {
    const char* input;
    Hosts expected;
  };
  // The first seven rows are the fixtures README table (from Slurm's hostlist.c).
  const Case cases[] = {
      {"gpu[001-004,010]", {"gpu001", "gpu002", "gpu003", "gpu004", "gpu010"}},
      {"node[8-11]", {"node8", "node9", "node10", "node11"}},
      {"node[08-11]", {"node08", "node09", "node10", "node11"}},
      {"rack[0-1]_gpu[1-2]", {"rack0_gpu1", "rack0_gpu2", "rack1_gpu1", "rack1_gpu2"}},
      {"gpu01,gpu02 gpu03", {"gpu01", "gpu02", "gpu03"}},
      {"gpu01\tgpu02", {"gpu01", "gpu02"}},
      {"single", {"single"}},
      {"", {}},
      {"a[1],b[2-3]", {"a1", "b2", "b3"}},
      {"n[098-101]", {"n098", "n099", "n100", "n101"}},  // width stays from the lower bound
      {"leaf-a[01-02]", {"leaf-a01", "leaf-a02"}},
      {"x[5]", {"x5"}},
      {"gpu[1-2],,gpu3", {"gpu1", "gpu2", "gpu3"}},  // empty items are skipped
  };
  for (const auto& c : cases) {
    CAPTURE(c.input);
    auto hosts = ExpandHostlist(c.input);
    REQUIRE(hosts.has_value());
    CHECK(*hosts == c.expected);
  }
}

TEST_CASE("hostlist rejects what Slurm rejects, naming the problem") {
  struct Case {
    const char* input;
    const char* message_part;
  };
  const Case cases[] = {
      {"gpu[01-02]-ib", "after the last ']'"},
      {"gpu[5-1]", "reversed range '5-1'"},
      {"gpu[1-2", "'[' without ']'"},
      {"gpu1-2]", "']' without '['"},
      {"gpu[]", "bad range ''"},
      {"gpu[a-b]", "bad range 'a-b'"},
      {"gpu[1-2-3]", "bad range"},
      {"gpu[1,[2]]", "nested"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.input);
    auto hosts = ExpandHostlist(c.input);
    REQUIRE_FALSE(hosts.has_value());
    CHECK(hosts.error().code == ErrorCode::kInvalidArgument);
    CHECK(hosts.error().message.find(c.message_part) != std::string::npos);
    CHECK(hosts.error().message.find(c.input) != std::string::npos);
  }
}

TEST_CASE("hostlist bounds the expansion") {
  CHECK(ExpandHostlist("n[1-10]", 10).has_value());
  auto big = ExpandHostlist("n[1-10]", 9);
  REQUIRE_FALSE(big.has_value());
  CHECK(big.error().message.find("more than 9 hosts") != std::string::npos);
  // Multiplying groups counts too: 1000 x 1000 > default limit of 1e6? equal is allowed, beyond is not.
  CHECK_FALSE(ExpandHostlist("a[0-999]b[0-1000]").has_value());
}

}  // namespace
}  // namespace drainwise::connectors
