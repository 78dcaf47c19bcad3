#include "common/rng.h"

#include <catch2/catch.hpp>
#include <set>

#include "common/ids.h"

namespace fl {
namespace {

TEST_CASE("rng: the same seed gives the same sequence, forks are independent", "[unit]") {
  Rng a(42), b(42), c(43);
  std::vector<uint64_t> va, vb, vc;
  for (int i = 0; i < 16; ++i) {
    va.push_back(a.Next());
    vb.push_back(b.Next());
    vc.push_back(c.Next());
  }
  CHECK(va == vb);
  CHECK(va != vc);
  // The sequence is pinned by this file, not by the standard library: a replay on any build
  // must pick the same targets. First SplitMix64 output for seed 42:
  CHECK(Rng(42).Next() == 0xbdd732262feb6e95ull);
  Rng base(7);
  Rng f1 = base.Fork("fault/0/target"), f2 = base.Fork("fault/1/target");
  CHECK(f1.Next() != f2.Next());
  CHECK(base.Fork("x").Next() == Rng(7).Fork("x").Next());
}

TEST_CASE("rng: bounded draws stay in range and cover it", "[unit]") {
  Rng r(1);
  std::set<int64_t> seen;
  for (int i = 0; i < 2000; ++i) {
    int64_t v = r.Between(-3, 3);
    REQUIRE(v >= -3);
    REQUIRE(v <= 3);
    seen.insert(v);
    double u = r.Unit();
    REQUIRE(u >= 0.0);
    REQUIRE(u < 1.0);
  }
  CHECK(seen.size() == 7);
  CHECK(r.Below(1) == 0);
}

TEST_CASE("ids: run ids sort by time and differ", "[unit]") {
  std::string a = NewRunId(1'764'464'523 * kNsPerSec);
  CHECK(a.rfind("r20251130-010203-", 0) == 0);
  CHECK(a.size() == std::string("r20251130-010203-").size() + 6);
  CHECK(NewRunId() != NewRunId());
  CHECK(RandomHex(16).size() == 32);
}

}  // namespace
}  // namespace fl
