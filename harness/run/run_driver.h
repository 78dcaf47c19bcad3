// `faultline run`: drives one scenario end to end on a lab (harness/lab/lab.h: the local lab,
// real hosts that dial in, or a Slurm allocation; the driver only sees the Lab contract).
//
//   load + validate (scenario, lab file, targets, injector parameters; nothing is created
//   before all of it passed) -> provision or attach the lab -> control server; the lab starts
//   its agents (or they dial in) -> clock sync -> launch ranks (rendezvous: a directory or a
//   TCP store served here) -> warm-up -> fault timeline (seeded plan) -> job end, failure
//   (restart policy) or hang -> stop ranks, revert faults -> analyse (reports/metrics) ->
//   verdicts -> store -> teardown.
//
// Ctrl-C (SIGINT), SIGTERM or SIGHUP at any point (a restart delay included): revert, stop,
// tear down, mark the run aborted, exit 130.
// A coordinator that dies without tearing down (SIGKILL) leaves its agents to revert on their
// lease; the next `faultline run` marks its run aborted and removes its lab.
//
// Exit codes: 0 every expectation held, 1 one failed, 2 bad input, 3 infrastructure error,
// 130 interrupted.
#pragma once

#include <string>

#include "common/status.h"
#include "harness/run/run_options.h"

namespace fl::harness {

int RunScenario(const RunOptions& options);

// Validates the scenario (or the stored run to replay) against its lab and returns the seeded
// plan, one line per fault (DescribePlan). Touches nothing outside the process.
StatusOr<std::string> DescribeRunPlan(const RunOptions& options);

}  // namespace fl::harness
