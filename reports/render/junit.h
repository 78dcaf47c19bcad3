// JUnit XML for CI systems (the schema Jenkins, GitLab and GitHub test reporters read). One
// writer for every JUnit file faultline produces: `faultline report --junit` (one run) and
// `faultline suite --junit` (many runs, harness/suite) both build a JUnitDocument.
//
// JUnitDocument: <testsuites> of <testsuite> of <testcase>, each case passed, failed
// (<failure>), errored (<error>) or skipped (<skipped>), with its time and an optional
// <system-out>. Counts and times of the suites and of the document are computed from the cases.
//
// A run's cases (JUnitCasesForRun, docs/reports.md):
//   <testcase classname=SCENARIO name="EXPECTATION" (run-level) or
//             name="EXPECTATION FAULT_ID KIND TARGET" (per fault) time=T>
//     T: the run's duration for a run-level expectation; the fault's window (its injection to
//     its revert, or to the run's end) for a per-fault one.
//     <failure type=EXPECTATION message=VERDICT_MESSAGE>expected ...; measured ...
//     <system-out>: the run id, the replay command and the report's path (when known)
//   A run that ended `aborted` or `error`, or is still `running`, adds one testcase named
//   "run" with an <error> carrying the run's message, so an infrastructure failure is never
//   reported as green; a passed or failed run with no verdicts adds a "run" testcase that
//   fails when the run failed and passes otherwise.
// JUnitBuilder::AddRun: one <testsuite name=SCENARIO id=RUN_ID timestamp hostname> per run,
//   with <properties> run_id, seed, status, git_revision, scenario_hash, tag.K = V.
//
// Only RunData::run, ::faults and ::verdicts are read: a caller may leave samples, events and
// metrics empty (they can be large).
//
// Thread-safety: values; build one from one thread. The free functions are pure.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "reports/store/records.h"

namespace fl::reports::render {

class JUnitDocument {
 public:
  struct Case {
    std::string classname;
    std::string name;
    double seconds = 0;
    std::optional<std::string> failure;  // the text; its first line is the message attribute
    std::string failure_type;            // the failure's type attribute ("" = none)
    std::optional<std::string> failure_message;  // replaces the first line as the message
    std::optional<std::string> error;
    std::string error_type;
    std::optional<std::string> skipped;
    std::string system_out;
  };
  struct Suite {
    std::string name;
    std::vector<std::pair<std::string, std::string>> attributes;  // id, timestamp, hostname
    std::vector<std::pair<std::string, std::string>> properties;
    std::vector<Case> cases;
    std::optional<double> seconds;  // the suite's time; unset: the sum of its cases
  };

  explicit JUnitDocument(std::string name) : name_(std::move(name)) {}
  Suite& AddSuite(std::string name) {
    suites_.push_back(Suite{std::move(name), {}, {}, {}, std::nullopt});
    return suites_.back();
  }
  std::string Xml() const;

 private:
  std::string name_;
  std::vector<Suite> suites_;
};

// Where the run's views are, for the cases' <system-out>.
struct JUnitContext {
  std::string db_path;      // the results database: the replay command names it ("" = default)
  std::string report_path;  // the HTML report written beside (empty: none)
};

// The run's testcases, as described above, with this classname.
std::vector<JUnitDocument::Case> JUnitCasesForRun(const RunData& run, const std::string& classname,
                                                  const JUnitContext& context = {});

// "faultline replay RUN --db DB" (a shell-safe command line).
std::string ReplayCommand(const std::string& run_id, const std::string& db_path);

struct JUnitCounts {
  size_t tests = 0;
  size_t failures = 0;
  size_t errors = 0;
  bool operator==(const JUnitCounts&) const = default;
};

class JUnitBuilder {
 public:
  explicit JUnitBuilder(std::string name = "faultline", JUnitContext context = {})
      : doc_(std::move(name)), context_(std::move(context)) {}
  // Appends one <testsuite> for the run.
  void AddRun(const RunData& run);
  // The whole document (may be called more than once).
  std::string Finish() const { return doc_.Xml(); }
  // What the document's <testsuites> element says so far.
  const JUnitCounts& counts() const { return counts_; }

 private:
  JUnitDocument doc_;
  JUnitContext context_;
  JUnitCounts counts_;
};

// The counts one run contributes (what its <testsuite> element says).
JUnitCounts CountJUnit(const RunData& run);

std::string RenderJUnit(std::span<const RunData> runs, const JUnitContext& context = {});
std::string RenderJUnit(const RunData& run, const JUnitContext& context = {});

}  // namespace fl::reports::render
