// Change points in a nightly series (`faultline serve`'s trends, docs/serve.md "Change
// points"): where a metric's level shifted, robust to the noise of shared machines.
//
// Method: optimal partitioning with a robust cost. The noise is estimated from the night-to-
// night differences, sigma = 1.4826 x median(|x[i] - x[i-1]|) / sqrt(2) (a level shift moves
// one difference, not the median of them), floored at floor_relative x |median(x)| so that a
// series of identical values is not split by rounding. The series is cut into segments of at
// least min_side nights minimising the sum over segments of the absolute deviations from the
// segment's median, plus a penalty of 3 x sigma x ln(n + 1) per segment (dynamic programming,
// exact; O(n^3) for n nights, a few milliseconds for a year). Every boundary is then checked:
// the medians on either side must differ by at least min_score x sigma and by min_relative of
// the level before; the weakest boundary that fails is merged away and the check repeated.
// Medians and absolute deviations make one wild night (a machine shared with another job)
// move nothing, and a level that goes up and comes back down is two change points.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <vector>

namespace fl::reports::analysis {

struct ChangePointOptions {
  size_t min_side = 3;            // nights on each side of a split
  double min_score = 4.0;         // shift in robust standard deviations
  double min_relative = 0.05;     // and at least 5% of the level before
  double floor_relative = 0.005;  // sigma is at least 0.5% of the level before
};

struct ChangePoint {
  size_t index = 0;              // the first value of the new level
  double before = 0, after = 0;  // the medians of the segments on either side
  double shift = 0;              // after - before
  double relative = 0;           // shift / |before| (0 when before is 0)
  double score = 0;
};

// By index. Values are in time order; NaN values are not allowed (the caller leaves nights
// without a value out).
std::vector<ChangePoint> FindChangePoints(const std::vector<double>& values,
                                          const ChangePointOptions& options = {});

}  // namespace fl::reports::analysis
