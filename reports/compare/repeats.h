// The repeats of one configuration (a suite group's `repeat` runs, later a sweep point's) as
// one result: every metric as a median with its spread and a bootstrap interval of the
// median, and every expectation as how many of the repeats met it (docs/suites.md,
// "Repeats"). A single run shows a gray failure's result as if it were exact; the repeats show
// how much it moves.
//
// Thread-safety: uses the reader (one thread at a time). Blocking: the store's reads.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "reports/analysis/stats.h"
#include "reports/compare/metric_policy.h"
#include "reports/compare/run_metrics.h"

namespace fl::reports::compare {

struct RepeatedMetric {
  std::string key;  // "f0/degraded_ratio", as in compare
  std::string unit;
  Direction direction = Direction::kNeutral;
  std::vector<double> values;  // one per repeat that has it, in run order
  double median = 0, p25 = 0, p75 = 0;
  analysis::Interval interval;  // of the median
};

struct RepeatedVerdict {
  std::string expectation;
  std::string fault_id;  // "" for run-level
  size_t met = 0, runs = 0;
};

struct RepeatSummary {
  std::vector<std::string> run_ids;
  std::vector<RepeatedMetric> metrics;    // by key
  std::vector<RepeatedVerdict> verdicts;  // by fault, then expectation
  double confidence = 0.95;
};

// REQUIRES: !runs.empty().
[[nodiscard]] StatusOr<RepeatSummary> SummariseRepeats(
    RunReader& reader, const std::vector<RunMetricSet>& runs, const PolicyTable& policies,
    const analysis::BootstrapOptions& bootstrap = {});

// "  5 repeats: 4/5 met survives; 5/5 met max_detection_ms f0" and a line per judged metric
// (one with a worse direction): "    f0/degraded_ratio: median 0.97 (IQR 0.95-1.01), 95%
// interval [0.90, 1.02], 5 values". Neutral metrics are in the JSON only.
std::string RenderRepeatsText(const RepeatSummary& s);
std::string RepeatsJson(const RepeatSummary& s);

}  // namespace fl::reports::compare
