// `faultline suite`: runs every scenario of a suite file on each of its CCLs, each the given
// number of times, as child processes (`faultline run SCENARIO --json ...`), so that a crash
// or a hang of one run stays contained and the suite goes on. Afterwards it judges each
// scenario x CCL group against the run history (regression.h), writes one JUnit file, and
// returns an exit code.
//
// Ctrl-C: SIGINT/SIGTERM to the suite is forwarded (once) to the running child, which tears
// its lab down and marks its run aborted; the suite then stops starting runs and returns 130.
// Children run in their own process group, so a terminal's Ctrl-C reaches them only through
// the suite (one signal, not two).
//
// Thread-safety: RunSuite installs process-wide SIGINT/SIGTERM handlers for its duration
// (restored on return); call it from one thread. Blocking: each run is bounded by the suite's
// run_timeout (then SIGINT, then SIGKILL after 60 s).
#pragma once

#include <signal.h>

#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "harness/suite/regression.h"
#include "harness/suite/suite_file.h"
#include "reports/compare/repeats.h"
#include "reports/store/records.h"

namespace fl::harness::suite {

struct SuiteOptions {
  std::string db_path = "results.db";
  uint32_t repeat = 0;  // 0: the suite file's (and each scenario's own repeat)
  std::string junit_path;
  std::map<std::string, std::string> tags;  // --tag, over the file's
  std::string faultline_bin;                // empty: `faultline` beside this executable
  std::vector<std::string> extra_run_args;  // passed to every `faultline run` (e.g. --policy)
  FILE* progress = stdout;                  // progress lines; nullptr: silent
};

// One planned `faultline run`.
struct PlannedRun {
  size_t scenario_index = 0;   // into Suite::scenarios
  std::optional<CclSpec> ccl;  // unset: the scenario's own
  std::string group;           // "path [ccl k=v]": what regression checks compare within
  uint32_t rep = 1, reps = 1;
  std::vector<std::string> args;  // after the binary: run PATH --json --db ...
};

// The runs of a suite in order: scenario by scenario, CCL by CCL, repetition by repetition.
// suite_run is this invocation's id (tag suite_run=ID on every run).
std::vector<PlannedRun> PlanSuite(const Suite& suite, const SuiteOptions& options,
                                  const std::string& suite_run);

struct RunOutcome {
  PlannedRun plan;
  int exit_code = 0;   // of `faultline run`; negative: killed by that signal
  std::string run_id;  // empty when the run never reached the store (bad input)
  std::optional<reports::RunRecord> run;
  std::vector<reports::VerdictRecord> verdicts;
  std::vector<reports::FaultRecord> faults;  // for the JUnit cases' times and names
  double seconds = 0;
  std::string error;  // why it did not give verdicts (stderr tail), when it did not
};

// Stop requests (SIGINT/SIGTERM) for as long as one of these lives: the handlers are
// installed at construction and the old ones restored at destruction; Requested() tells
// whether a signal came meanwhile. RunSuite and the shrinker hold one.
class StopOnSignals {
 public:
  StopOnSignals();
  ~StopOnSignals();
  StopOnSignals(const StopOnSignals&) = delete;
  StopOnSignals& operator=(const StopOnSignals&) = delete;
  static bool Requested();

 private:
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
};

// One `faultline run` as a child process: `bin args...` (args must hold --json and --db
// db_path), bounded by timeout (SIGINT, then SIGKILL 60 s later; a stop request is forwarded
// as one SIGINT). Its outputs go to files in tmp_dir. The run's id comes from its JSON
// summary, else is the newest run tagged tag (k=v) that is not in *seen; the run's record,
// verdicts and faults are then read from db_path. Fills everything of RunOutcome but plan.
RunOutcome RunChildScenario(const std::string& bin, const std::vector<std::string>& args,
                            const std::string& db_path, Nanos timeout, const std::string& tmp_dir,
                            const std::pair<std::string, std::string>& tag,
                            std::set<std::string>* seen, bool* interrupted);

// "expectation [fault]: message", the line a failed verdict is shown as.
std::string VerdictLine(const reports::VerdictRecord& v);

// A group's repeats (reports/compare/repeats.h): for each group with two or more finished runs.
struct GroupRepeats {
  std::string group;
  reports::compare::RepeatSummary summary;
};

struct SuiteResult {
  std::string suite_run;
  Nanos start_wall_ns = 0;
  double seconds = 0;
  std::vector<RunOutcome> runs;
  std::vector<GroupRegression> regressions;  // one per group with finished runs
  std::vector<GroupRepeats> repeats;
  bool interrupted = false;
  int exit_code = 0;
};

// Exit codes: 130 interrupted; 1 an expectation failed or a metric regressed; 2 a scenario
// was bad input; 3 another run error (infrastructure, crash, timeout); 0 all passed.
SuiteResult RunSuite(const Suite& suite, const SuiteOptions& options);

// The JUnit XML of a suite result: one <testsuite> per group; one <testcase> per verdict row
// of each run (a failed verdict is a <failure>), one per run that ended without verdicts
// (an <error>), and one "regression" testcase per group (a <failure> listing the regressed
// metrics, <skipped> when there was no baseline).
// `faultline suite --json`: {"suite", "suite_run", "seconds", "exit_code", "interrupted",
// "runs": [{group, rep, run_id, exit_code, seconds, error, status, verdicts: [...]}],
// "regressions": [{group, baseline_runs, current_runs, regressed: [keys], comparison}],
// "repeats": [{group, summary: {runs, confidence, metrics: [...], verdicts: [...]}}]}.
std::string SuiteResultJson(const Suite& suite, const SuiteResult& result);

std::string SuiteJUnit(const Suite& suite, const SuiteResult& result,
                       const std::string& db_path = {});

}  // namespace fl::harness::suite
