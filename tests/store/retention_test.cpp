// Retention: the newest keep_versions versions of each document kind are
// kept, and so is every topology or jobs version that a stored assessment or
// an active drain was made on, so every stored assessment can show its
// snapshot.
#include <doctest/doctest.h>

#include <set>

#include "store/store.h"
#include "testing/postgres.h"

using namespace drainwise;

namespace {

std::set<int64_t> Versions(store::Store& s, store::DocKind kind) {
  std::set<int64_t> out;
  auto docs = s.ListDocuments(kind, 1000);
  REQUIRE(docs.has_value());
  for (const auto& d : *docs) out.insert(d.version);
  return out;
}

int64_t Put(store::Store& s, store::DocKind kind, int n) {
  store::DocumentInfo info;
  info.kind = kind;
  auto put = s.PutDocument(info, "{\"n\":" + std::to_string(n) + "}");
  REQUIRE(put.has_value());
  REQUIRE(put->created);
  return put->version;
}

}  // namespace

TEST_CASE("prune with keep_versions = 2 keeps the versions assessments and active drains were made on") {
  FOR_EACH_STORE_BACKEND(backend) {
    auto s = store::Store::Open(backend.NewDatabase(), {.keep_versions = 2});
    REQUIRE(s.has_value());
    auto& st = **s;
    using store::DocKind;
    // topology v1, jobs v1; an assessment on (t1, j1).
    Put(st, DocKind::kTopology, 1);
    Put(st, DocKind::kJobs, 1);
    store::AssessmentRecord a;
    a.id = "a-1";
    a.request = a.result = "{}";
    a.topology_version = 1;
    a.jobs_version = 1;
    REQUIRE(st.PutAssessment(a).has_value());
    // topology v2; a drain started on (t2, j1).
    Put(st, DocKind::kTopology, 2);
    store::DrainRecord d;
    d.id = "d-1";
    d.spec = "{}";
    d.topology_version = 2;
    d.jobs_version = 1;
    REQUIRE(st.PutDrain(d).has_value());
    // topology v3..v6, jobs v2..v5.
    for (int n = 3; n <= 6; ++n) Put(st, DocKind::kTopology, n);
    for (int n = 2; n <= 5; ++n) Put(st, DocKind::kJobs, n);
    // Newest two (5, 6) + v1 (the assessment) + v2 (the active drain).
    CHECK(Versions(st, DocKind::kTopology) == std::set<int64_t>{1, 2, 5, 6});
    // Newest two (4, 5) + v1 (assessment and drain).
    CHECK(Versions(st, DocKind::kJobs) == std::set<int64_t>{1, 4, 5});

    // The drain ends: its versions go with the next put of each kind, the
    // assessment's stay.
    REQUIRE(*st.EndDrain("d-1", 100));
    Put(st, DocKind::kTopology, 7);
    CHECK(Versions(st, DocKind::kTopology) == std::set<int64_t>{1, 6, 7});

    // Every stored assessment can show the snapshot it was made on.
    auto assessments = st.ListAssessments("", 100);
    REQUIRE(assessments->size() == 1);
    for (const auto& r : *assessments) {
      CHECK(st.GetDocument(DocKind::kTopology, r.topology_version)->has_value());
      CHECK(st.GetDocument(DocKind::kJobs, r.jobs_version)->has_value());
    }
    // Kinds nothing refers to keep just the newest two.
    for (int n = 1; n <= 5; ++n) Put(st, DocKind::kPolicy, n);
    CHECK(Versions(st, DocKind::kPolicy) == std::set<int64_t>{4, 5});
  }
}

TEST_CASE("keep_versions = 0 keeps everything; a drain without versions gets the latest stored") {
  FOR_EACH_STORE_BACKEND(backend) {
    auto s = store::Store::Open(backend.NewDatabase(), {.keep_versions = 0});
    REQUIRE(s.has_value());
    auto& st = **s;
    for (int n = 1; n <= 5; ++n) Put(st, store::DocKind::kTopology, n);
    Put(st, store::DocKind::kJobs, 1);
    Put(st, store::DocKind::kJobs, 2);
    CHECK(Versions(st, store::DocKind::kTopology).size() == 5);
    store::DrainRecord d;
    d.id = "d-1";
    d.spec = R"({"switches":["s1"]})";
    REQUIRE(st.PutDrain(d).has_value());
    auto drains = st.ListDrains(true);
    REQUIRE(drains->size() == 1);
    CHECK(drains->front().topology_version == 5);
    CHECK(drains->front().jobs_version == 2);
    CHECK_FALSE(store::Store::Open(backend.NewDatabase(), {.keep_versions = -1}).has_value());
  }
}
