// Per-rank throughput over time, resampled onto a fixed number of time bins: the chart data of
// the HTML report. A 10-minute run of 8 ranks at 100 iterations/s is 480,000 samples; the page
// gets at most `max_bins` points per rank whatever the run's length, so it stays small and
// draws fast.
//
// Each sample moves `bytes` between its start and end at the constant rate bytes/(end-start);
// a bin's value is the bytes a rank moved inside the bin divided by the bin's width. So the
// series keeps the total bytes (area under the curve), shows a stall as a drop to zero for
// as long as it lasts, and equals the per-sample algorithm bandwidth when bins are shorter
// than iterations. Before a rank's first sample and after its last one its bins are empty
// (nullopt: no line drawn), so a rank that died stops instead of dropping to zero forever.
//
// Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/clock.h"
#include "reports/store/records.h"

namespace fl::reports::render {

struct ThroughputSeries {
  Nanos t0 = 0;      // start of bin 0
  Nanos bin_ns = 0;  // width of every bin
  size_t bins = 0;
  std::vector<int32_t> ranks;  // ascending
  // values[r][b]: bytes per second of ranks[r] in bin b; nullopt outside the rank's samples.
  std::vector<std::vector<std::optional<double>>> values;

  // Centre of bin b in seconds since t0.
  double BinCenterSeconds(size_t b) const;
};

// REQUIRES: t1 > t0, max_bins >= 1. Bins are at least min_bin_ns wide (so a short run is not
// cut into bins much shorter than its iterations' timestamps resolve). Samples outside
// [t0, t1) contribute only their part inside it.
ThroughputSeries BinThroughput(std::span<const SampleRecord> samples, Nanos t0, Nanos t1,
                               size_t max_bins, Nanos min_bin_ns = kNsPerMs);

// The job's throughput on the bins of `bins`: iteration i of the job spans [S_i, C_i] (the
// earliest start and the latest end over its ranks) at algbw_i = bytes / (C_i - S_i), as
// reports/metrics defines it (docs/metrics.md), for the iterations every rank reported; a bin's
// value is the mean of the algbw of the iterations overlapping it, weighted by the overlap, so
// its median over the baseline period is the baseline_algbw metric and a stall shows as the
// low algbw of the iteration that spans it. nullopt where no iteration overlaps the bin.
std::vector<std::optional<double>> BinJobThroughput(std::span<const SampleRecord> samples,
                                                    const ThroughputSeries& bins);

// Per-NIC traffic over time from cumulative counters (RunData::nics): between two successive
// samples of one host's NIC, its rx + tx bytes moved at a constant rate; each bin's value is
// the bytes moved inside the bin divided by the time of the bin those intervals cover (so a bin
// half covered at the edge of the sampling is not halved). Bins no interval covers are nullopt
// (no line). An interval whose counters went down (the NIC was reset or recreated) or whose
// time does not advance is left out. Bins are at least one median sampling interval wide.
struct NicTrafficSeries {
  Nanos t0 = 0;
  Nanos bin_ns = 0;
  size_t bins = 0;
  std::vector<std::string> labels;  // "h1.nic0", by host then NIC name
  // values[s][b]: rx + tx bytes per second of labels[s] in bin b.
  std::vector<std::vector<std::optional<double>>> values;

  double BinCenterSeconds(size_t b) const;
};

// REQUIRES: t1 > t0, max_bins >= 1. The samples in any order.
NicTrafficSeries BinNicTraffic(std::span<const NicSampleRecord> samples, Nanos t0, Nanos t1,
                               size_t max_bins);

}  // namespace fl::reports::render
