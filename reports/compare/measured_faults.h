// The applied faults of stored runs with what their metrics say they cost: the input of the
// goodput projection (`faultline project`, reports/analysis/goodput.h).
//
// Thread-safety: uses the reader (one thread at a time). Blocking: the store's reads.
#pragma once

#include <vector>

#include "reports/analysis/goodput.h"
#include "reports/compare/run_metrics.h"

namespace fl::reports::compare {

// Each applied fault of each run, in the order of its faults (effective time): its kind (from
// the faults table), throughput_loss_s and restart_cost_ms, and whether it ended the job (the
// run's outcome is failed or hung and it is the run's last applied fault; then, when hung, the
// run's hang_timeout_ms as hang_s). A fault whose fault_applied is not 1 is left out.
[[nodiscard]] StatusOr<std::vector<analysis::MeasuredFault>> LoadMeasuredFaults(
    RunReader& reader, const std::vector<RunMetricSet>& runs);

}  // namespace fl::reports::compare
