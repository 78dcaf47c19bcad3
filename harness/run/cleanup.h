// The end of a run's resources: its agents shut down and stopped, the control server and the
// rendezvous closed, the lab torn down and the run directory removed (Teardown); and the
// clean-up after coordinators that died without it (CleanUpDeadRuns, also run by `faultline
// runs`, `report` and `suite`).
#pragma once

#include <string>
#include <vector>

namespace fl::harness {

// Marks runs of dead coordinators on this host aborted and removes their labs and run
// directories. Returns the run ids marked.
std::vector<std::string> CleanUpDeadRuns(const std::string& db_path);

namespace run {

struct RunContext;
class FaultBook;

// Reverts what is still applied (after taking in lost agents), shuts the agents down and
// stops them, closes the control server and the rendezvous, tears the lab down and removes the
// run directory (keep_run_dir: kept, its token removed all the same). Says on stderr what it
// could not do. Idempotent.
void Teardown(RunContext& run, FaultBook& book, bool keep_run_dir);

}  // namespace run
}  // namespace fl::harness
