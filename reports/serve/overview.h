// The night at a glance (`faultline serve`'s overview, docs/serve.md): for each cluster x
// suite, its latest night (the UTC day of its newest run) as one cell per scenario: passed,
// failed, a new failure (it passed the night before, or never ran before), or not run (it ran
// on one of the group's earlier nights but not on the latest). New failures first.
//
// Cluster: the run's `cluster` tag (harness/run/run_record.cc gives every run one), else the
// name of the lab it ran on (the `name:` of its topology or inventory), else "local". Suite: its
// `suite` tag ("" for runs outside a suite). A run that ended aborted or error is failed here; a
// run still running is its own state.
//
// Thread-safety: pure functions over values.
#pragma once

#include <string>
#include <vector>

#include "common/clock.h"
#include "reports/store/records.h"

namespace fl::reports::serve {

enum class CellState { kNewFailure, kFailed, kRunning, kNotRun, kPassed };
std::string_view CellStateName(CellState s);  // "new_failure", "failed", "running", ...

struct OverviewCell {
  std::string scenario;
  CellState state = CellState::kPassed;
  std::string run_id;       // the latest night's run (empty: not run)
  std::string status;       // its stored status ("passed", "failed", "aborted", ...)
  std::string message;      // why it ended so (empty when passed)
  std::string previous_id;  // the same scenario's run on an earlier night (empty: none)
};

struct OverviewGroup {
  std::string cluster, suite;
  std::string night;  // "2026-12-07" (UTC)
  Nanos newest_wall_ns = 0;
  std::vector<OverviewCell> cells;  // by state (new failures first), then scenario
  size_t Count(CellState s) const;
};

// The cluster a run belongs to (see above).
std::string ClusterOf(const RunRecord& run);
// "YYYY-MM-DD" of a wall time, UTC.
std::string NightOf(Nanos wall_ns);

// `runs` newest first (as Store::ListRuns returns them); groups by newest night first.
std::vector<OverviewGroup> BuildOverview(const std::vector<RunRecord>& runs);

}  // namespace fl::reports::serve
