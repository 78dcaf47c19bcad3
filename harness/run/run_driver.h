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

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace fl::harness {

struct RunOptions {
  std::string scenario_path;
  std::string db_path = "results.db";
  std::optional<uint64_t> seed;
  std::map<std::string, std::string> tags;
  bool json = false;
  std::string replay_of;    // run id this replays (its scenario text and seed are used)
  std::string bin_dir;      // where faultline-agent and faultline-worker are; empty: beside us
  std::string policy_path;  // policy for agents the lab starts; empty: the lab's default
  Nanos lease_ns = 3 * kNsPerSec;
  bool dry_run = false;  // validate and print the plan; provision nothing, store nothing
  // The run directory (StateDir()/runs/<id>) is removed when the run ends; with this, a
  // failed run's is kept (its token is removed all the same).
  bool keep_run_dir = false;
  // Overrides of the scenario's job.ccl and job.ccl_options (recorded as tags ccl=NAME and
  // ccl.KEY=VALUE; a replay applies the stored run's ones unless given again).
  std::string ccl;
  std::map<std::string, std::string> ccl_options;
  // The lab to run on (a topology, or a file of real hosts), instead of the scenario's `lab:`.
  // A replay without it reuses the stored run's lab file text.
  std::string lab_file;
  // Labs of real hosts speak mutual TLS with the certificates in tls_dir (default: tls/ beside
  // the lab's token file; docs/control_plane.md); no_tls: token only.
  std::string tls_dir;
  bool no_tls = false;
};

int RunScenario(const RunOptions& options);

// Validates the scenario (or the stored run to replay) against its lab and returns the seeded
// plan, one line per fault (DescribePlan). Touches nothing outside the process.
StatusOr<std::string> DescribeRunPlan(const RunOptions& options);

// Marks runs of dead coordinators on this host aborted and removes their labs.
// Returns the run ids marked.
std::vector<std::string> CleanUpDeadRuns(const std::string& db_path);

}  // namespace fl::harness
