// `faultline sweep`: runs a sweep plan (sweep_plan.h) and draws its maps
// (reports/compare/sweep_map.h).
//
// Every point x CCL x repeat is one `faultline run` child (suite_runner.h's RunChildScenario),
// tagged sweep=ID, sweep.plan=HASH, sweep.point=N, sweep.panel=CCL, sweep.rep=R and
// sweep.LABEL=VALUE per axis, in the results database. On a local lab one lab is built for the
// whole sweep and each run goes on it (`faultline run --on-lab`), which checks that it is as
// it was built before it starts: a lab a run left dirty is rebuilt and that run tried once
// more. A point whose values the scenario refuses (a down time not shorter than its period) is
// marked "n/a" on the map without a run.
//
// Resumable: --resume ID goes on with the runs that sweep ID has not finished (the same plan
// is required: its hash is a tag of every run). Interrupted (Ctrl-C): the running child
// reverts and stops, the lab is torn down, and the command to resume is printed. A sweep killed
// -9 leaves its lab; the next sweep removes the lab of any sweep whose process is gone.
//
// Thread-safety: RunSweep installs SIGINT/SIGTERM handlers for its duration (StopOnSignals);
// call it from one thread.
#pragma once

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "harness/suite/suite_runner.h"
#include "harness/suite/sweep_plan.h"
#include "reports/compare/sweep_map.h"

namespace fl::harness::suite {

struct SweepOptions {
  std::string db_path = "results.db";
  std::string resume;  // a sweep id to go on with
  std::map<std::string, std::string> tags;
  std::string faultline_bin;  // empty: `faultline` beside this executable
  std::vector<std::string> extra_run_args;
  bool keep_lab = true;  // false: every run builds its own lab
  FILE* progress = stderr;
};

struct SweepRun {
  size_t point = 0;  // SweepPoint::index
  std::string panel;
  uint32_t rep = 1;
  int exit_code = 0;
  std::string run_id;
  double seconds = 0;
  // Command start to the first iteration, plus the last iteration to the command's exit: what a
  // point costs beyond its job (NaN when the run gave no iterations).
  double overhead_s = 0;
  double start_s = 0, end_s = 0;  // the two parts
  std::string error;
};

struct SweepResult {
  std::string sweep_id;
  std::vector<SweepRun> runs;  // this invocation's
  size_t already_done = 0;     // runs an earlier invocation of the sweep finished (--resume)
  size_t invalid_points = 0;
  int lab_rebuilds = 0;
  bool interrupted = false;
  double seconds = 0;
  reports::compare::SweepMaps maps;
  int exit_code = 0;    // 0 every run gave a result; 2 bad input; 3 a run error; 130 interrupted
  std::string message;  // why, when not 0
};

SweepResult RunSweep(const SweepSpec& spec, const SweepOptions& options);

// The map input of sweep_id from the runs it stored (and the points the plan refuses).
[[nodiscard]] StatusOr<reports::compare::SweepMapInput> LoadSweepInput(const SweepSpec& spec,
                                                                       const std::string& db_path,
                                                                       const std::string& sweep_id);

// A panel's name: the CCL with its options ("ftccl dead_timeout_ms=900"), or the scenario's.
std::string PanelName(const CclSpec& ccl);

}  // namespace fl::harness::suite
