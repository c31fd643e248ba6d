// Replays, in every ordinary build (and under ASan + UBSan in CI), each fuzz
// target on its seed corpus (tests/fuzz/corpus/<target>/) and on every input
// that once crashed it (tests/data/fuzz-regressions/<target>/). A crash here
// is a crash of the daemon's parser on that input.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>

#include "targets.h"

namespace fs = std::filesystem;
using drainwise::fuzz::Targets;

namespace {
std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Runs `target` on every file under dir/<target>; returns how many.
int ReplayAll(const fs::path& dir) {
  int n = 0;
  if (!fs::exists(dir)) return 0;
  for (const auto& sub : fs::directory_iterator(dir)) {
    if (!sub.is_directory()) continue;
    const auto* t = drainwise::fuzz::FindTarget(sub.path().filename().string());
    REQUIRE_MESSAGE(t != nullptr, "no fuzz target named " << sub.path().filename() << " (folder " << sub.path() << ")");
    for (const auto& f : fs::directory_iterator(sub.path())) {
      if (!f.is_regular_file() || f.path().filename().string()[0] == '.') continue;
      INFO("replaying " << f.path());
      std::string bytes = Slurp(f.path());
      t->run(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++n;
    }
  }
  return n;
}
}  // namespace

TEST_CASE("every fuzz target has a seed corpus, and replays it") {
  std::set<std::string> seeded;
  for (const auto& sub : fs::directory_iterator(DRAINWISE_FUZZ_CORPUS_DIR)) {
    if (sub.is_directory() && !fs::is_empty(sub.path())) seeded.insert(sub.path().filename().string());
  }
  for (const auto& t : Targets()) CHECK_MESSAGE(seeded.count(t.name), "no seeds in tests/fuzz/corpus/" << t.name);
  CHECK(ReplayAll(DRAINWISE_FUZZ_CORPUS_DIR) >= static_cast<int>(Targets().size()));
}

TEST_CASE("inputs that once crashed a parser no longer do") {
  int n = ReplayAll(DRAINWISE_FUZZ_REGRESSIONS_DIR);
  MESSAGE(n << " regression inputs replayed");
}
