// Small-sample statistics for comparing runs: medians, spreads and a seeded bootstrap
// confidence interval of the difference of two medians.
//
// Why medians and a bootstrap: resilience metrics (detection latency, recovery time) come from
// a handful of runs (5 is typical) on a noisy machine and their distributions are skewed by
// the odd slow run; the median resists that, and the percentile bootstrap gives an interval
// for the difference of medians without assuming a distribution. The generator is fl::Rng
// (common/rng.h), so the same samples and seed give the same interval on any build.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace fl::reports::analysis {

// The arithmetic mean. REQUIRES: !values.empty().
double Mean(std::span<const double> values);

// The middle value after sorting; the mean of the two middle values when the count is even.
// REQUIRES: !values.empty().
double Median(std::span<const double> values);

// The q-quantile (0 <= q <= 1) by linear interpolation between order statistics (Hyndman and
// Fan type 7, the default of R and NumPy). REQUIRES: !values.empty().
double Quantile(std::span<const double> values, double q);

// Interquartile range: Quantile(0.75) - Quantile(0.25). REQUIRES: !values.empty().
double Iqr(std::span<const double> values);

// Median absolute deviation from the median (unscaled). REQUIRES: !values.empty().
double Mad(std::span<const double> values);

struct Interval {
  double lo = 0;
  double hi = 0;
  bool Contains(double x) const { return lo <= x && x <= hi; }
};

struct BootstrapOptions {
  int resamples = 4000;
  double confidence = 0.95;  // two-sided; the interval is [(1-c)/2, (1+c)/2] percentiles
  uint64_t seed = 1;
};

// Percentile-bootstrap interval of Median(b) - Median(a): each resample draws |a| values from
// a and |b| values from b with replacement; the interval holds the central `confidence` share
// of the resampled differences. Deterministic for a given seed. With one value on a side that
// side does not vary; with one value on both the interval is the point difference.
// REQUIRES: !a.empty(), !b.empty(), resamples >= 1, 0 < confidence < 1.
Interval BootstrapMedianDiff(std::span<const double> a, std::span<const double> b,
                             const BootstrapOptions& options);

// Cliff's delta of b over a: (#{b_j > a_i} - #{b_j < a_i}) / (|a| |b|), in [-1, 1]; positive
// when b's values tend to be larger. Ordinal, so robust to outliers and to the scale of the
// metric, and meaningful with few runs. O((|a| + |b|) log |a|). REQUIRES: !a.empty(), !b.empty().
double CliffsDelta(std::span<const double> a, std::span<const double> b);

// The size of an effect by |Cliff's delta|, with the thresholds of Romano et al. (2006):
// under 0.147 "negligible", under 0.33 "small", under 0.474 "medium", else "large".
const char* EffectMagnitude(double cliffs_delta);

// Percentile-bootstrap interval of Median(values): the repeats of one configuration. With one
// value, that value. REQUIRES: !values.empty(), as above.
Interval BootstrapMedian(std::span<const double> values, const BootstrapOptions& options);

}  // namespace fl::reports::analysis
