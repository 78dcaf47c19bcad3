// The maps of a sweep (`faultline sweep`, docs/sweeps.md): for every metric of resilience, its
// value at each grid point (the median of the point's repeats, with their spread), per CCL,
// the worst point and the region around it, and the cliffs: neighbouring points between which
// the metric jumps. Rendered as text, as a self-contained HTML page (sweep_page.cc) and as
// JSON.
//
// Thread-safety: pure functions over values.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "reports/compare/repeats.h"
#include "reports/compare/run_metrics.h"

namespace fl::reports::compare {

struct SweepMapAxis {
  std::string label;  // "every"
  std::string path;   // "faults[0].every"
  std::vector<std::string> values;
  bool log = false;
};

// One metric a map shows. Every one is worse when higher.
struct SweepMetricDef {
  std::string key;    // "recovery_ms"
  std::string title;  // "recovery time"
  std::string unit;   // "ms", "s", "count", "ratio"
  std::string how;    // how a run's value is made from its metrics, for the page
};
const std::vector<SweepMetricDef>& SweepMetricDefs();

// A run's values of the map metrics from its stored metrics (keys "fN/name" and "name"):
// recovery_ms the longest recovery of its faults, throughput_loss_s their sum, failovers the
// faults a rank failed over from, failbacks those it failed back after, mismatches, hung
// (1 when the job hung), not_survived (1 when it failed or hung), restart_cost_ms the sum.
// A metric no fault of the run has is absent.
std::map<std::string, double> SweepRunValues(const RunMetricSet& run);

struct SweepMapCell {
  size_t point = 0;   // row-major over the axes, the last fastest
  std::string panel;  // the CCL (and the third axis' value): one map per panel
  std::vector<std::string> run_ids;
  std::vector<std::map<std::string, double>> runs;  // SweepRunValues per repeat that finished
  int errors = 0;       // repeats that gave no result (infrastructure, timeout)
  std::string invalid;  // why the point cannot run (the scenario refuses its values)
  // The repeats as suites show them (repeats.h): every metric's median, spread and interval,
  // and how many of the repeats met each expectation. Unset without a finished repeat.
  std::optional<RepeatSummary> repeats;
};

struct SweepMapInput {
  std::string name;
  std::string sweep_id;
  std::vector<SweepMapAxis> axes;   // 1 or 2 drawn; a third becomes part of the panel
  std::vector<std::string> panels;  // in order
  std::vector<SweepMapCell> cells;
};

struct CellValue {
  bool has = false;
  double median = 0, lo = 0, hi = 0;  // the repeats' median, min and max
  size_t n = 0;
};

struct Cliff {
  size_t axis = 0;          // along which axis
  size_t from = 0, to = 0;  // points (neighbours along that axis)
  double a = 0, b = 0;      // the medians at from and to
};

struct PanelMap {
  std::string panel;
  std::vector<CellValue> values;  // by point
  bool any = false;
  size_t worst = 0;            // the point of the highest median (first when tied)
  std::vector<size_t> region;  // points within 20% of the worst (the worst included)
  std::vector<Cliff> cliffs;   // largest jumps first, at most 3
};

struct MetricMap {
  SweepMetricDef def;
  std::vector<PanelMap> panels;
};

struct SweepMaps {
  SweepMapInput input;
  std::vector<MetricMap> metrics;
};

// A jump between neighbours is a cliff when it is at least half of the metric's spread over
// the panel, the larger value is at least 3 times the smaller (or the smaller is 0 or less),
// and the two points' repeats do not overlap (their ranges are apart: not noise).
SweepMaps BuildSweepMaps(SweepMapInput input);

// "every=100ms duration=20ms" of a point.
std::string PointLabel(const SweepMapInput& in, size_t point);
// "1.2 s", "80 ms", "3", "0.93": a metric's value with its unit.
std::string FormatMapValue(double v, const std::string& unit);

// A grid per metric and panel (rows: the first axis, columns: the second), then the worst
// point, its region and the cliffs.
std::string RenderSweepText(const SweepMaps& maps);
// "2/3 met survives, 1/3 met max_detection_ms f0": the expectations not every repeat met.
std::string VerdictShortfall(const RepeatSummary& r);
// The worst point, its region and the cliffs of one panel, as indented lines.
std::string SweepCallouts(const SweepMaps& maps, const MetricMap& mm, const PanelMap& pm);
std::string SweepMapsJson(const SweepMaps& maps);
// sweep_page.cc: the maps as one self-contained HTML page (heat maps, callouts, run ids).
std::string RenderSweepHtml(const SweepMaps& maps);

}  // namespace fl::reports::compare
