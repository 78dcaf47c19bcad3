// A metric's trend over the stored runs of one scenario: `faultline history`.
//
// Thread-safety: LoadHistory uses the reader (one thread at a time); the renderings are pure.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "reports/compare/run_metrics.h"

namespace fl::reports::compare {

struct HistoryPoint {
  std::string run_id;
  Nanos start_wall_ns = 0;
  RunStatus status = RunStatus::kRunning;
  std::map<std::string, std::string> tags;
  std::optional<double> value;  // unset: the run has no such metric (e.g. never detected)
};

struct HistorySeries {
  std::string key;  // "f0/detection_latency_ms"
  std::string unit;
  std::vector<HistoryPoint> points;  // oldest first
};

struct HistoryOptions {
  // Bare names ("recovery_ms": every fault's) or full keys ("f0/recovery_ms").
  // Empty: detection_latency_ms, recovery_ms, degraded_ratio, throughput_loss_s,
  // baseline_algbw.
  std::vector<std::string> metrics;
  std::map<std::string, std::string> tags;  // only runs with these tags
  size_t limit = 50;                        // the newest runs; 0: all
};

// The finished (passed or failed) runs of scenario, oldest first, one series per metric key
// found in any of them. NotFound when the scenario has no finished run.
[[nodiscard]] StatusOr<std::vector<HistorySeries>> LoadHistory(RunReader& reader,
                                                               const std::string& scenario,
                                                               const HistoryOptions& options);

std::string RenderHistoryText(const std::string& scenario,
                              const std::vector<HistorySeries>& series);
// A self-contained page: one chart per series drawn by uPlot, as in the run report
// (reports/render: the same inlined library and style; the script is render/web/history.js),
// failed runs in red, runs without a value as a red x, and the table under each chart.
std::string RenderHistoryHtml(const std::string& scenario,
                              const std::vector<HistorySeries>& series);

}  // namespace fl::reports::compare
