#include "reports/render/throughput.h"

#include <algorithm>
#include <map>

namespace fl::reports::render {

double ThroughputSeries::BinCenterSeconds(size_t b) const {
  return (static_cast<double>(b) + 0.5) * static_cast<double>(bin_ns) / kNsPerSec;
}

ThroughputSeries BinThroughput(std::span<const SampleRecord> samples, Nanos t0, Nanos t1,
                               size_t max_bins, Nanos min_bin_ns) {
  ThroughputSeries out;
  out.t0 = t0;
  Nanos span = std::max<Nanos>(t1 - t0, 1);
  max_bins = std::max<size_t>(max_bins, 1);
  const Nanos n = static_cast<Nanos>(max_bins);
  Nanos bin = std::max<Nanos>({(span + n - 1) / n, min_bin_ns, 1});
  out.bin_ns = bin;
  out.bins = static_cast<size_t>((span + bin - 1) / bin);

  // Bytes per bin and the first/last bin each rank was active in.
  struct Acc {
    std::vector<double> bytes;
    size_t first = SIZE_MAX, last = 0;
  };
  std::map<int32_t, Acc> acc;
  const double bin_d = static_cast<double>(bin);
  for (const auto& s : samples) {
    Nanos a = std::max(s.start_ns, t0), b = std::min(s.end_ns, t1);
    if (b < a || (b == a && (a < t0 || a >= t1))) continue;
    Acc& r = acc[s.rank];
    if (r.bytes.empty()) r.bytes.assign(out.bins, 0.0);
    // The sample covers [a, b): its last bin is the one holding b - 1 (b itself when empty).
    size_t first = static_cast<size_t>((a - t0) / bin);
    size_t last = std::min(static_cast<size_t>((std::max(b - 1, a) - t0) / bin), out.bins - 1);
    first = std::min(first, out.bins - 1);
    r.first = std::min(r.first, first);
    r.last = std::max(r.last, last);
    double bytes = static_cast<double>(s.bytes);
    if (b == a || first == last) {
      // Whole sample (or what is left of it in range) inside one bin.
      double dur = static_cast<double>(s.end_ns - s.start_ns);
      r.bytes[first] += dur > 0 ? bytes * static_cast<double>(b - a) / dur : bytes;
      continue;
    }
    double rate = bytes / static_cast<double>(s.end_ns - s.start_ns);  // bytes per ns
    for (size_t k = first; k <= last; ++k) {
      Nanos lo = std::max(a, t0 + static_cast<Nanos>(k) * bin);
      Nanos hi = std::min(b, t0 + static_cast<Nanos>(k + 1) * bin);
      if (hi > lo) r.bytes[k] += rate * static_cast<double>(hi - lo);
    }
  }
  for (auto& [rank, r] : acc) {
    out.ranks.push_back(rank);
    std::vector<std::optional<double>> v(out.bins);
    for (size_t k = r.first; k <= r.last && k < out.bins; ++k)
      v[k] = r.bytes[k] / bin_d * kNsPerSec;
    out.values.push_back(std::move(v));
  }
  return out;
}

}  // namespace fl::reports::render
