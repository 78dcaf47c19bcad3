#include "reports/analysis/change_points.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <queue>
#include <vector>

#include "reports/analysis/stats.h"

namespace fl::reports::analysis {
namespace {

std::vector<double> Slice(const std::vector<double>& x, size_t a, size_t b) {
  return {x.begin() + static_cast<std::ptrdiff_t>(a), x.begin() + static_cast<std::ptrdiff_t>(b)};
}

// The sums of absolute deviations from the median of x[s, t) for a fixed s and growing t,
// in O(log n) per step: the lower half in a max-heap, the upper in a min-heap, and their sums.
// SAD = (sum of the upper half - m x its size) + (m x the lower half's size - its sum), m the
// lower half's top (any value between the two middle ones gives the same sum).
class RunningSad {
 public:
  void Add(double v) {
    if (lo_.empty() || v <= lo_.top()) {
      lo_.push(v);
      lo_sum_ += v;
    } else {
      hi_.push(v);
      hi_sum_ += v;
    }
    if (lo_.size() > hi_.size() + 1) {
      const double t = lo_.top();
      lo_.pop();
      lo_sum_ -= t;
      hi_.push(t);
      hi_sum_ += t;
    } else if (hi_.size() > lo_.size()) {
      const double t = hi_.top();
      hi_.pop();
      hi_sum_ -= t;
      lo_.push(t);
      lo_sum_ += t;
    }
  }
  double Sad() const {
    const double m = lo_.top();
    return (hi_sum_ - m * static_cast<double>(hi_.size())) +
           (m * static_cast<double>(lo_.size()) - lo_sum_);
  }

 private:
  std::priority_queue<double> lo_;
  std::priority_queue<double, std::vector<double>, std::greater<double>> hi_;
  double lo_sum_ = 0, hi_sum_ = 0;
};

}  // namespace

std::vector<ChangePoint> FindChangePoints(const std::vector<double>& x,
                                          const ChangePointOptions& o) {
  const size_t n = x.size();
  const size_t m = std::max<size_t>(o.min_side, 1);
  if (n < 2 * m) return {};
  std::vector<double> diffs;
  for (size_t i = 1; i < n; ++i) diffs.push_back(std::fabs(x[i] - x[i - 1]));
  const double sigma = std::max(
      {1.4826 * Median(diffs) / std::sqrt(2.0), o.floor_relative * std::fabs(Median(x)), 1e-12});
  const double penalty = 3 * sigma * std::log(static_cast<double>(n) + 1);

  // best[t]: the least cost of x[0, t) cut into segments of at least m; from[t]: where its
  // last segment starts. best[s] is final once every start before s was tried, so the starts
  // go in order, each growing its segment's running median to the end.
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> best(n + 1, inf);
  std::vector<size_t> from(n + 1, 0);
  best[0] = 0;
  for (size_t s = 0; s + m <= n; ++s) {
    if ((s != 0 && s < m) || best[s] == inf) continue;
    RunningSad sad;
    for (size_t t = s + 1; t <= n; ++t) {
      sad.Add(x[t - 1]);
      if (t - s < m) continue;
      const double c = best[s] + sad.Sad() + penalty;
      if (c < best[t]) {
        best[t] = c;
        from[t] = s;
      }
    }
  }
  std::vector<size_t> cuts;  // segment starts after the first
  for (size_t t = n; t > 0; t = from[t])
    if (from[t] > 0) cuts.push_back(from[t]);
  std::sort(cuts.begin(), cuts.end());

  // Keep only boundaries that are large against the noise and the level; merge the weakest
  // that is not, until all are.
  for (;;) {
    std::vector<ChangePoint> cps;
    size_t weakest = cuts.size();
    double weakest_score = inf;
    for (size_t i = 0; i < cuts.size(); ++i) {
      const size_t a = i == 0 ? 0 : cuts[i - 1];
      const size_t b = i + 1 < cuts.size() ? cuts[i + 1] : n;
      ChangePoint cp;
      cp.index = cuts[i];
      cp.before = Median(Slice(x, a, cuts[i]));
      cp.after = Median(Slice(x, cuts[i], b));
      cp.shift = cp.after - cp.before;
      cp.relative = cp.before != 0 ? cp.shift / std::fabs(cp.before) : 0;
      cp.score = std::fabs(cp.shift) / sigma;
      const bool holds =
          cp.score >= o.min_score &&
          (cp.before != 0 ? std::fabs(cp.relative) >= o.min_relative : cp.shift != 0);
      if (!holds && cp.score < weakest_score) {
        weakest = i;
        weakest_score = cp.score;
      }
      cps.push_back(cp);
    }
    if (weakest == cuts.size()) return cps;
    cuts.erase(cuts.begin() + static_cast<std::ptrdiff_t>(weakest));
  }
}

}  // namespace fl::reports::analysis
