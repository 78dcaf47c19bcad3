// `faultline shrink RUN`: the smallest scenario that still fails the way a stored run failed.
//
// The reducer (ShrinkScenario) is pure: it edits the scenario's YAML and asks a predicate
// whether a candidate still fails the same expectation, keeping each edit that does:
//   1. fewer faults: whole halves first, then quarters, ... then single faults (ddmin);
//   2. one target instead of a class: `target_class: nic` becomes the target the failing run
//      drew (`target: h1.nic0`);
//   3. one firing instead of many: `count: N` becomes 1;
//   4. shorter faults: `duration` halved, down to 100 ms, while it still fails;
//   5. earlier faults: `at` halved, down to 100 ms, while it still fails.
// It stops when nothing more helps or the budget (runs, time, a stop request) is spent, and
// returns the smallest candidate that failed.
//
// The runner (RunShrink) replays candidates as `faultline run CANDIDATE --json` children on the
// run's own lab (its stored lab text), seed and CCL overrides, tagged shrink_of=RUN, into the
// same results database: a candidate "fails the same" when it exits 1 with a failed verdict of
// an expectation the original run failed. The first replay is the scenario unchanged: a run
// that does not fail again the same way is not shrunk (a flaky failure). The result is written
// as a scenario file with the seed.
//
// Thread-safety: RunShrink installs SIGINT/SIGTERM handlers for its duration (a stop request
// ends the child run, which tears its lab down, and keeps the smallest scenario found so far).
#pragma once

#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace fl::harness::suite {

// Whether a candidate scenario (YAML text) still fails the same way; `what` says what the
// candidate changed, for progress lines. An error status ends the shrink.
using FailsSame = std::function<StatusOr<bool>(const std::string& yaml, const std::string& what)>;

struct ShrinkBudget {
  int max_runs = 40;  // predicate calls
  Deadline deadline = Deadline::Never();
  std::function<bool()> stop;  // true: stop now (Ctrl-C)
};

struct ShrinkResult {
  std::string yaml;  // the smallest candidate that failed (the input if none did)
  int runs = 0;      // predicate calls made
  size_t faults_before = 0, faults_after = 0;
  bool budget_spent = false;      // stopped by the budget, not because nothing more helped
  std::vector<std::string> kept;  // the edits kept, in order
};

// fault_targets: per fault index, the target the failing run resolved it to (for step 2).
// InvalidArgument when yaml is not a mapping with a `faults` sequence.
[[nodiscard]] StatusOr<ShrinkResult> ShrinkScenario(
    const std::string& yaml, const std::map<size_t, std::string>& fault_targets,
    const FailsSame& fails, const ShrinkBudget& budget);

struct ShrinkOptions {
  std::string db_path;
  std::string run_id;
  std::string out_path;  // empty: shrunk-RUN.yaml in the working directory
  int max_runs = 40;
  Nanos time_limit = 30 * 60 * kNsPerSec;
  Nanos run_timeout = 10 * 60 * kNsPerSec;  // each replay
  std::string faultline_bin;                // empty: `faultline` beside this executable
  FILE* progress = stderr;
};

struct ShrinkOutcome {
  int exit_code = 0;  // 0 written; 1 the run does not fail again the same way; 2 bad input;
                      // 3 infrastructure; 130 interrupted (what was found so far is written)
  std::string message;
  std::string out_path;
  ShrinkResult result;
};

ShrinkOutcome RunShrink(const ShrinkOptions& options);

}  // namespace fl::harness::suite
