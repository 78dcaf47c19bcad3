// JUnit XML for CI systems: one <testsuite> per run, one <testcase> per verdict (per
// expectation, per fault), so a run's result shows up in Jenkins, GitLab or GitHub test views.
//
// Mapping (docs/reports.md):
//   <testsuites name="faultline" tests failures errors skipped time>   sums over the runs
//   <testsuite name=SCENARIO id=RUN_ID tests failures errors skipped=0 time timestamp>
//     <properties>: run_id, seed, status, git_revision, scenario_hash, tag.K = V
//     <testcase classname=SCENARIO name="EXPECTATION" (run-level) or
//               name="EXPECTATION FAULT_ID KIND TARGET" (per fault)>
//       <failure type=EXPECTATION message=VERDICT_MESSAGE>expected ...; measured ...
//     A run that ended `aborted` or `error`, or is still `running`, adds one testcase named
//     "run" with an <error> carrying the run's message, so an infrastructure failure is never
//     reported as green; a passed or failed run with no verdicts adds a "run" testcase that
//     fails when the run failed and passes otherwise.
//   tests = testcases, failures = <failure> elements, errors = <error> elements.
//
// For many runs (`faultline suite`), build one document with JUnitBuilder::AddRun per run, or
// call RenderJUnit with them all. Only RunData::run, ::faults and ::verdicts are read: a
// caller may leave samples, events and metrics empty (they can be large).
//
// Thread-safety: JUnitBuilder is a value; use one per thread. RenderJUnit is a pure function.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "reports/store/records.h"

namespace fl::reports::render {

struct JUnitCounts {
  size_t tests = 0;
  size_t failures = 0;
  size_t errors = 0;
  bool operator==(const JUnitCounts&) const = default;
};

class JUnitBuilder {
 public:
  explicit JUnitBuilder(std::string name = "faultline") : name_(std::move(name)) {}
  // Appends one <testsuite> for the run.
  void AddRun(const RunData& run);
  // The whole document (may be called more than once).
  std::string Finish() const;
  // What the document's <testsuites> element says so far.
  const JUnitCounts& counts() const { return counts_; }

 private:
  std::string name_;
  std::string suites_;
  JUnitCounts counts_;
  double time_s_ = 0;
};

// The counts one run contributes (what its <testsuite> element says).
JUnitCounts CountJUnit(const RunData& run);

std::string RenderJUnit(std::span<const RunData> runs);
std::string RenderJUnit(const RunData& run);

}  // namespace fl::reports::render
