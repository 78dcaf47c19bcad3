// Statistics of reports/analysis on samples with known answers.
#include "reports/analysis/stats.h"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "common/rng.h"

namespace fl::reports::analysis {
namespace {

using V = std::vector<double>;

TEST_CASE("mean", "[unit]") {
  CHECK(Mean(V{3, 1, 2}) == 2);
  CHECK(Mean(V{-1, 1, 10, 2}) == 3);
  CHECK(Mean(V{7}) == 7);
}

TEST_CASE("median of odd and even counts", "[unit]") {
  CHECK(Median(V{3, 1, 2}) == 2);
  CHECK(Median(V{4, 1, 3, 2}) == 2.5);
  CHECK(Median(V{7}) == 7);
  CHECK(Median(V{-1, -1, 10}) == -1);
}

TEST_CASE("quantiles interpolate between order statistics (type 7)", "[unit]") {
  V v{5, 1, 4, 2, 3};
  CHECK(Quantile(v, 0) == 1);
  CHECK(Quantile(v, 1) == 5);
  CHECK(Quantile(v, 0.25) == 2);
  CHECK(Quantile(v, 0.75) == 4);
  CHECK(Quantile(V{10, 20}, 0.3) == Approx(13));
  CHECK(Iqr(v) == 2);
  CHECK(Iqr(V{1, 2, 3, 4}) == Approx(1.5));  // 3.25 - 1.75
  CHECK(Iqr(V{42}) == 0);
}

TEST_CASE("median absolute deviation", "[unit]") {
  // median 2, deviations {1,1,0,0,2,4,7} -> 1
  CHECK(Mad(V{1, 1, 2, 2, 4, 6, 9}) == 1);
  CHECK(Mad(V{5, 5, 5}) == 0);
  // an outlier does not move it: median 3, deviations {2,1,0,1,997} -> 1
  CHECK(Mad(V{1, 2, 3, 4, 1000}) == 1);
}

TEST_CASE("Cliff's delta against the pairwise definition, ties, and its magnitudes", "[unit]") {
  CHECK(CliffsDelta(V{1, 2, 3}, V{4, 5}) == 1.0);
  CHECK(CliffsDelta(V{4, 5}, V{1, 2, 3}) == -1.0);
  CHECK(CliffsDelta(V{1, 2, 3}, V{1, 2, 3}) == 0.0);
  // Pairs (a, b): b=2 beats 1, ties 2, loses to 3; b=3 beats 1 and 2, ties 3: (1-1+2-0)/6.
  CHECK(CliffsDelta(V{1, 2, 3}, V{2, 3}) == Approx(2.0 / 6));
  // Against the O(n m) definition on random samples with ties.
  Rng rng(7);
  for (int t = 0; t < 20; ++t) {
    V a, b;
    for (int i = 0; i < 15; ++i) a.push_back(static_cast<double>(rng.Next() % 10));
    for (int i = 0; i < 9; ++i) b.push_back(static_cast<double>(rng.Next() % 12));
    double net = 0;
    for (double x : a)
      for (double y : b) net += (y > x) - (y < x);
    CHECK(CliffsDelta(a, b) == Approx(net / (a.size() * b.size())));
  }
  CHECK(std::string(EffectMagnitude(0.1)) == "negligible");
  CHECK(std::string(EffectMagnitude(-0.2)) == "small");
  CHECK(std::string(EffectMagnitude(0.4)) == "medium");
  CHECK(std::string(EffectMagnitude(-0.9)) == "large");
}

TEST_CASE("bootstrap of constant samples is the point difference", "[unit]") {
  Interval ci = BootstrapMedianDiff(V{1, 1, 1}, V{3, 3, 3, 3}, {});
  CHECK(ci.lo == 2);
  CHECK(ci.hi == 2);
  ci = BootstrapMedianDiff(V{10}, V{4}, {});
  CHECK(ci.lo == -6);
  CHECK(ci.hi == -6);
}

TEST_CASE("bootstrap interval of separated samples lies within the possible differences",
          "[unit]") {
  V a{1, 2, 3, 4, 5}, b{11, 12, 13, 14, 15};
  Interval ci = BootstrapMedianDiff(a, b, {});
  // every resampled median of a is in [1,5] and of b in [11,15]
  CHECK(ci.lo >= 6);
  CHECK(ci.hi <= 14);
  CHECK(ci.lo <= 10);
  CHECK(ci.hi >= 10);
  CHECK_FALSE(ci.Contains(0));
}

TEST_CASE("bootstrap interval of overlapping samples contains zero", "[unit]") {
  V a{10, 12, 9, 11, 10.5}, b{10.2, 11.5, 9.5, 10.8, 10};
  Interval ci = BootstrapMedianDiff(a, b, {});
  CHECK(ci.Contains(0));
}

TEST_CASE("bootstrap interval covers a known shift on large samples", "[unit]") {
  Rng rng(7);
  V a, b;
  for (int i = 0; i < 300; ++i) a.push_back(rng.Unit());
  for (int i = 0; i < 300; ++i) b.push_back(rng.Unit() + 0.5);
  Interval ci = BootstrapMedianDiff(a, b, {.resamples = 2000, .confidence = 0.95, .seed = 3});
  CHECK(ci.Contains(0.5));
  CHECK(ci.hi - ci.lo < 0.25);
  CHECK(ci.lo > 0.3);
}

TEST_CASE("bootstrap is deterministic for a seed and nested by confidence", "[unit]") {
  // Enough distinct values that the resampled medians are nearly continuous: with a handful
  // the interval's ends are a few order statistics that other seeds hit as well.
  Rng rng(5);
  V a, b;
  for (int i = 0; i < 41; ++i) a.push_back(rng.Unit());
  for (int i = 0; i < 41; ++i) b.push_back(rng.Unit() + 0.1);
  BootstrapOptions o{.resamples = 1000, .confidence = 0.95, .seed = 11};
  Interval x = BootstrapMedianDiff(a, b, o);
  Interval y = BootstrapMedianDiff(a, b, o);
  CHECK(x.lo == y.lo);
  CHECK(x.hi == y.hi);
  o.seed = 12;
  Interval z = BootstrapMedianDiff(a, b, o);
  CHECK((z.lo != x.lo || z.hi != x.hi));
  o.seed = 11;
  o.confidence = 0.8;
  Interval narrow = BootstrapMedianDiff(a, b, o);
  CHECK(narrow.lo >= x.lo);
  CHECK(narrow.hi <= x.hi);
  CHECK((narrow.lo > x.lo || narrow.hi < x.hi));
}

TEST_CASE("bootstrap interval of one sample's median", "[unit]") {
  BootstrapOptions o;
  const V one = {4.0};
  Interval i1 = BootstrapMedian(one, o);
  CHECK(i1.lo == 4.0);
  CHECK(i1.hi == 4.0);
  const V five = {10, 11, 12, 13, 50};
  Interval i5 = BootstrapMedian(five, o);
  CHECK(i5.Contains(12));
  CHECK(i5.lo >= 10);
  CHECK(i5.hi <= 50);
  // The median of 5 draws is the outlier when 3 of 5 are it: 5.8% of resamples, so the 97.5%
  // point is the outlier; the 2.5% point is the lowest value only when 3 of 5 are it too.
  CHECK(i5.hi == 50);
  CHECK(i5.lo == 10);
  Interval again = BootstrapMedian(five, o);
  CHECK(again.lo == i5.lo);  // deterministic for a seed
  CHECK(again.hi == i5.hi);
}

}  // namespace
}  // namespace fl::reports::analysis
