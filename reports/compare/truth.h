// The ground truth of stored runs for `faultline score` (reports/analysis/detector_score.h):
// each run's time and its applied faults with their targets, effective and revert times.
//
// Thread-safety: uses the reader (one thread at a time). Blocking: the store's reads.
#pragma once

#include <vector>

#include "reports/analysis/detector_score.h"
#include "reports/compare/run_metrics.h"

namespace fl::reports::compare {

// A fault without an effective time never took hold and is left out. A run that has not
// ended (aborted without a final status) is observed until its last fault's revert.
[[nodiscard]] StatusOr<std::vector<analysis::TruthRun>> LoadTruth(
    RunReader& reader, const std::vector<RunMetricSet>& runs);

}  // namespace fl::reports::compare
