#include "reports/render/throughput.h"

#include <algorithm>
#include <climits>
#include <map>
#include <utility>

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

std::vector<std::optional<double>> BinJobThroughput(std::span<const SampleRecord> samples,
                                                    const ThroughputSeries& bins) {
  std::vector<std::optional<double>> out(bins.bins);
  if (bins.bins == 0 || bins.bin_ns <= 0) return out;
  struct Iteration {
    Nanos start = 0, end = 0;
    uint64_t bytes = 0;
    size_t ranks = 0;
  };
  // Iteration indexes are dense from 0 in practice: a vector over their range, unless the
  // range is far larger than the samples (then a map).
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  std::vector<int32_t> ranks;  // samples come by rank: a push per change, deduplicated after
  for (const auto& s : samples) {
    lo = std::min(lo, s.iteration);
    hi = std::max(hi, s.iteration);
    if (ranks.empty() || ranks.back() != s.rank) ranks.push_back(s.rank);
  }
  if (samples.empty()) return out;
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  auto add = [](Iteration& it, const SampleRecord& s) {
    if (it.ranks == 0) {
      it.start = s.start_ns;
      it.end = s.end_ns;
    } else {
      it.start = std::min(it.start, s.start_ns);
      it.end = std::max(it.end, s.end_ns);
    }
    it.bytes = std::max(it.bytes, s.bytes);
    ++it.ranks;
  };
  std::vector<Iteration> iterations;
  if (static_cast<uint64_t>(hi - lo) <= 2 * samples.size() + 1024) {
    iterations.resize(static_cast<size_t>(hi - lo) + 1);
    for (const auto& s : samples) add(iterations[static_cast<size_t>(s.iteration - lo)], s);
  } else {
    std::map<int64_t, Iteration> sparse;
    for (const auto& s : samples) add(sparse[s.iteration], s);
    for (auto& [index, it] : sparse) iterations.push_back(it);
  }
  std::vector<double> weighted(bins.bins, 0.0), weight(bins.bins, 0.0);
  const Nanos t1 = bins.t0 + static_cast<Nanos>(bins.bins) * bins.bin_ns;
  for (const auto& it : iterations) {
    if (it.ranks < ranks.size() || it.end <= it.start) continue;
    const double algbw =
        static_cast<double>(it.bytes) / static_cast<double>(it.end - it.start) * kNsPerSec;
    const Nanos a = std::max(it.start, bins.t0), b = std::min(it.end, t1);
    if (b <= a) continue;
    const size_t first = static_cast<size_t>((a - bins.t0) / bins.bin_ns);
    const size_t last =
        std::min(static_cast<size_t>((b - 1 - bins.t0) / bins.bin_ns), bins.bins - 1);
    for (size_t k = first; k <= last; ++k) {
      const Nanos lo = std::max(a, bins.t0 + static_cast<Nanos>(k) * bins.bin_ns);
      const Nanos hi = std::min(b, bins.t0 + static_cast<Nanos>(k + 1) * bins.bin_ns);
      if (hi <= lo) continue;
      weighted[k] += algbw * static_cast<double>(hi - lo);
      weight[k] += static_cast<double>(hi - lo);
    }
  }
  for (size_t k = 0; k < bins.bins; ++k)
    if (weight[k] > 0) out[k] = weighted[k] / weight[k];
  return out;
}

double NicTrafficSeries::BinCenterSeconds(size_t b) const {
  return (static_cast<double>(b) + 0.5) * static_cast<double>(bin_ns) / kNsPerSec;
}

NicTrafficSeries BinNicTraffic(std::span<const NicSampleRecord> samples, Nanos t0, Nanos t1,
                               size_t max_bins) {
  NicTrafficSeries out;
  out.t0 = t0;
  const Nanos span = std::max<Nanos>(t1 - t0, 1);
  max_bins = std::max<size_t>(max_bins, 1);
  // Each NIC's samples in time order.
  std::map<std::pair<std::string, std::string>, std::vector<const NicSampleRecord*>> by_nic;
  for (const auto& s : samples) by_nic[{s.host, s.nic}].push_back(&s);
  std::vector<Nanos> intervals;
  for (auto& [key, list] : by_nic) {
    std::stable_sort(
        list.begin(), list.end(),
        [](const NicSampleRecord* a, const NicSampleRecord* b) { return a->wall_ns < b->wall_ns; });
    for (size_t i = 1; i < list.size(); ++i)
      if (list[i]->wall_ns > list[i - 1]->wall_ns)
        intervals.push_back(list[i]->wall_ns - list[i - 1]->wall_ns);
  }
  Nanos min_bin = 1;
  if (!intervals.empty()) {
    std::nth_element(intervals.begin(), intervals.begin() + intervals.size() / 2, intervals.end());
    min_bin = intervals[intervals.size() / 2];
  }
  const Nanos n = static_cast<Nanos>(max_bins);
  const Nanos bin = std::max<Nanos>({(span + n - 1) / n, min_bin, 1});
  out.bin_ns = bin;
  out.bins = static_cast<size_t>((span + bin - 1) / bin);

  for (const auto& [key, list] : by_nic) {
    std::vector<double> bytes(out.bins, 0.0), covered(out.bins, 0.0);
    for (size_t i = 1; i < list.size(); ++i) {
      const NicSampleRecord& p = *list[i - 1];
      const NicSampleRecord& c = *list[i];
      if (c.wall_ns <= p.wall_ns || c.rx_bytes < p.rx_bytes || c.tx_bytes < p.tx_bytes) continue;
      const Nanos a = std::max(p.wall_ns, t0), b = std::min(c.wall_ns, t1);
      if (b <= a) continue;
      const double rate =
          static_cast<double>((c.rx_bytes - p.rx_bytes) + (c.tx_bytes - p.tx_bytes)) /
          static_cast<double>(c.wall_ns - p.wall_ns);  // bytes per ns
      const size_t first = static_cast<size_t>((a - t0) / bin);
      const size_t last = std::min(static_cast<size_t>((b - 1 - t0) / bin), out.bins - 1);
      for (size_t k = first; k <= last; ++k) {
        const Nanos lo = std::max(a, t0 + static_cast<Nanos>(k) * bin);
        const Nanos hi = std::min(b, t0 + static_cast<Nanos>(k + 1) * bin);
        if (hi <= lo) continue;
        bytes[k] += rate * static_cast<double>(hi - lo);
        covered[k] += static_cast<double>(hi - lo);
      }
    }
    std::vector<std::optional<double>> v(out.bins);
    for (size_t k = 0; k < out.bins; ++k)
      if (covered[k] > 0) v[k] = bytes[k] / covered[k] * kNsPerSec;
    out.labels.push_back(key.first + "." + key.second);
    out.values.push_back(std::move(v));
  }
  return out;
}

}  // namespace fl::reports::render
