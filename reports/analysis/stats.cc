#include "reports/analysis/stats.h"

#include <algorithm>
#include <cmath>

#include "common/rng.h"

namespace fl::reports::analysis {
namespace {

// Type 7 quantile of already sorted values.
double SortedQuantile(const std::vector<double>& s, double q) {
  q = std::clamp(q, 0.0, 1.0);
  double h = (static_cast<double>(s.size()) - 1) * q;
  size_t lo = static_cast<size_t>(std::floor(h));
  size_t hi = std::min(lo + 1, s.size() - 1);
  return s[lo] + (h - static_cast<double>(lo)) * (s[hi] - s[lo]);
}

double SortedMedian(const std::vector<double>& s) {
  size_t n = s.size();
  return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

}  // namespace

double Mean(std::span<const double> values) {
  double sum = 0;
  for (double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

double Median(std::span<const double> values) {
  std::vector<double> s(values.begin(), values.end());
  std::sort(s.begin(), s.end());
  return SortedMedian(s);
}

double Quantile(std::span<const double> values, double q) {
  std::vector<double> s(values.begin(), values.end());
  std::sort(s.begin(), s.end());
  return SortedQuantile(s, q);
}

double Iqr(std::span<const double> values) {
  std::vector<double> s(values.begin(), values.end());
  std::sort(s.begin(), s.end());
  return SortedQuantile(s, 0.75) - SortedQuantile(s, 0.25);
}

double Mad(std::span<const double> values) {
  double m = Median(values);
  std::vector<double> dev;
  dev.reserve(values.size());
  for (double v : values) dev.push_back(std::fabs(v - m));
  return Median(dev);
}

double CliffsDelta(std::span<const double> a, std::span<const double> b) {
  std::vector<double> sorted(a.begin(), a.end());
  std::sort(sorted.begin(), sorted.end());
  double net = 0;  // per b value: a values below it minus a values above it
  for (double x : b) {
    const auto lo = std::lower_bound(sorted.begin(), sorted.end(), x);
    const auto hi = std::upper_bound(lo, sorted.end(), x);
    net += static_cast<double>(lo - sorted.begin()) - static_cast<double>(sorted.end() - hi);
  }
  return net / (static_cast<double>(a.size()) * static_cast<double>(b.size()));
}

const char* EffectMagnitude(double cliffs_delta) {
  const double d = std::fabs(cliffs_delta);
  return d < 0.147 ? "negligible" : d < 0.33 ? "small" : d < 0.474 ? "medium" : "large";
}

Interval BootstrapMedianDiff(std::span<const double> a, std::span<const double> b,
                             const BootstrapOptions& options) {
  Rng rng(options.seed);
  Rng ra = rng.Fork("a");
  Rng rb = rng.Fork("b");
  int n = std::max(1, options.resamples);
  std::vector<double> diffs;
  diffs.reserve(static_cast<size_t>(n));
  std::vector<double> ba(a.size()), bb(b.size());
  for (int i = 0; i < n; ++i) {
    for (auto& x : ba) x = a[ra.Below(a.size())];
    for (auto& x : bb) x = b[rb.Below(b.size())];
    std::sort(ba.begin(), ba.end());
    std::sort(bb.begin(), bb.end());
    diffs.push_back(SortedMedian(bb) - SortedMedian(ba));
  }
  std::sort(diffs.begin(), diffs.end());
  double alpha = (1 - options.confidence) / 2;
  return {SortedQuantile(diffs, alpha), SortedQuantile(diffs, 1 - alpha)};
}

Interval BootstrapMedian(std::span<const double> values, const BootstrapOptions& options) {
  Rng rng = Rng(options.seed).Fork("one");
  const int n = std::max(1, options.resamples);
  std::vector<double> medians;
  medians.reserve(static_cast<size_t>(n));
  std::vector<double> draw(values.size());
  for (int i = 0; i < n; ++i) {
    for (auto& x : draw) x = values[rng.Below(values.size())];
    std::sort(draw.begin(), draw.end());
    medians.push_back(SortedMedian(draw));
  }
  std::sort(medians.begin(), medians.end());
  const double alpha = (1 - options.confidence) / 2;
  return {SortedQuantile(medians, alpha), SortedQuantile(medians, 1 - alpha)};
}

}  // namespace fl::reports::analysis
