// Regression of a suite's runs against the run history: the runs of one scenario x CCL group
// made by this suite invocation (B) against the newest passing runs with the same scenario
// and exactly the same tags made before it (A), compared as `faultline compare` does
// (reports/compare/compare.h) with the suite's tolerances.
//
// Thread-safety: uses the reader (one thread at a time).
#pragma once

#include <string>
#include <vector>

#include "harness/suite/suite_file.h"
#include "reports/compare/compare.h"
#include "reports/compare/run_metrics.h"

namespace fl::harness::suite {

// The tag that ties runs to one suite invocation; left out when tags are matched.
inline constexpr char kSuiteRunTag[] = "suite_run";

// A sustained level shift in the group's nightly history (RegressionSpec::shift_nights).
struct LevelShift {
  std::string key;  // "f0/recovery_ms"
  std::string unit;
  std::string night;                 // the first night of the new level ("2026-12-07")
  size_t nights_ago = 0;             // 0: tonight
  double before = 0, after = 0;      // the nightly medians' levels either side
  double allowed = 0;                // the tolerance at the level before
  std::vector<std::string> changed;  // tags that changed that night ("kernel: 6.1 -> 6.5")
  std::string Text() const;  // "f0/recovery_ms: level 800 ms -> 1120 ms since 2026-12-05 ..."
};

struct GroupRegression {
  std::string group;
  std::vector<std::string> baseline_runs;  // ids, newest first; empty: no baseline yet
  std::vector<std::string> current_runs;
  reports::compare::Comparison comparison;  // empty when there is no baseline
  std::vector<LevelShift> shifts;           // keys the comparison flags already are left out
  std::vector<const reports::compare::MetricComparison*> Regressed() const {
    return comparison.Regressions();
  }
  bool Failed() const { return !Regressed().empty() || !shifts.empty(); }
};

// current: this invocation's finished runs (passed or failed) of one group, all with the same
// scenario and tags apart from suite_run. Baseline: up to spec.baseline_runs passing runs of
// that scenario whose tags equal theirs (suite_run aside), not from this invocation, started
// before the first current run.
// The level shifts: the finished runs (passed or failed, this invocation's too) of the
// scenario with exactly those tags (suite_run aside), newest 2000, by UTC night.
// REQUIRES: !current.empty().
[[nodiscard]] StatusOr<GroupRegression> CheckRegression(
    reports::compare::RunReader& reader, const std::string& group,
    const std::vector<reports::RunRecord>& current, const RegressionSpec& spec,
    const reports::compare::PolicyTable& policies);

}  // namespace fl::harness::suite
