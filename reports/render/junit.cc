#include "reports/render/junit.h"

#include <cstdio>

#include "reports/render/escape.h"
#include "reports/render/run_view.h"

namespace fl::reports::render {
namespace {

std::string X(std::string_view s) { return XmlEscape(s); }

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", s);
  return buf;
}

double RunSeconds(const RunRecord& r) {
  if (!r.end_wall_ns || *r.end_wall_ns < r.start_wall_ns) return 0;
  return static_cast<double>(*r.end_wall_ns - r.start_wall_ns) / kNsPerSec;
}

// What the "run" testcase says, if the run gets one: an error for a run that did not finish
// normally, a failure or a pass for a finished run without verdicts.
enum class RunCase { kNone, kPass, kFailure, kError };

RunCase RunCaseOf(const RunData& run) {
  switch (run.run.status) {
    case RunStatus::kRunning:
    case RunStatus::kAborted:
    case RunStatus::kError:
      return RunCase::kError;
    case RunStatus::kPassed:
      return run.verdicts.empty() ? RunCase::kPass : RunCase::kNone;
    case RunStatus::kFailed:
      return run.verdicts.empty() ? RunCase::kFailure : RunCase::kNone;
  }
  return RunCase::kNone;
}

std::string TestcaseName(const RunView& view, const VerdictRecord& v) {
  std::string label = view.FaultLabel(v.fault_id);
  return label.empty() ? v.expectation : v.expectation + " " + label;
}

}  // namespace

JUnitCounts CountJUnit(const RunData& run) {
  JUnitCounts c;
  c.tests = run.verdicts.size();
  for (const auto& v : run.verdicts) c.failures += v.passed ? 0 : 1;
  switch (RunCaseOf(run)) {
    case RunCase::kNone:
      break;
    case RunCase::kPass:
      c.tests++;
      break;
    case RunCase::kFailure:
      c.tests++, c.failures++;
      break;
    case RunCase::kError:
      c.tests++, c.errors++;
      break;
  }
  return c;
}

void JUnitBuilder::AddRun(const RunData& run) {
  RunView view(run);
  const RunRecord& r = run.run;
  JUnitCounts c = CountJUnit(run);
  double secs = RunSeconds(r);
  std::string classname = X(r.scenario_name.empty() ? std::string("faultline") : r.scenario_name);
  std::string& o = suites_;
  o += "  <testsuite name=\"" + classname + "\" id=\"" + X(r.id) + "\" tests=\"" +
       std::to_string(c.tests) + "\" failures=\"" + std::to_string(c.failures) + "\" errors=\"" +
       std::to_string(c.errors) + "\" skipped=\"0\" time=\"" + Seconds(secs) + "\" timestamp=\"" +
       X(FormatWallIso(r.start_wall_ns)) + "\"";
  if (!r.coordinator_host.empty()) o += " hostname=\"" + X(r.coordinator_host) + "\"";
  o += ">\n    <properties>\n";
  auto prop = [&](std::string_view k, std::string_view v) {
    o += "      <property name=\"" + X(k) + "\" value=\"" + X(v) + "\"/>\n";
  };
  prop("run_id", r.id);
  prop("seed", std::to_string(r.seed));
  prop("status", RunStatusName(r.status));
  if (!r.git_revision.empty()) prop("git_revision", r.git_revision);
  if (!r.scenario_hash.empty()) prop("scenario_hash", r.scenario_hash);
  for (const auto& [k, v] : r.tags) prop("tag." + k, v);
  o += "    </properties>\n";

  for (const auto& v : run.verdicts) {
    o += "    <testcase classname=\"" + classname + "\" name=\"" + X(TestcaseName(view, v)) +
         "\" time=\"0\"";
    if (v.passed) {
      o += "/>\n";
      continue;
    }
    VerdictText t = ExplainVerdict(v);
    std::string body = "expected: " + t.expected + "\nmeasured: " + t.measured;
    if (!v.message.empty()) body += "\n" + v.message;
    std::string where = view.FaultLabel(v.fault_id);
    if (!where.empty()) body += "\nfault: " + where;
    body += "\nrun: " + r.id + " (seed " + std::to_string(r.seed) + ")";
    std::string message =
        v.message.empty() ? "expected " + t.expected + ", measured " + t.measured : v.message;
    o += ">\n      <failure type=\"" + X(v.expectation) + "\" message=\"" + X(message) + "\">" +
         X(body) + "</failure>\n    </testcase>\n";
  }
  RunCase rc = RunCaseOf(run);
  if (rc != RunCase::kNone) {
    std::string status(RunStatusName(r.status));
    std::string message = "run " + status + (r.message.empty() ? "" : ": " + r.message);
    o +=
        "    <testcase classname=\"" + classname + "\" name=\"run\" time=\"" + Seconds(secs) + "\"";
    if (rc == RunCase::kPass) {
      o += "/>\n";
    } else {
      const char* element = rc == RunCase::kError ? "error" : "failure";
      o += ">\n      <" + std::string(element) + " type=\"" + X(status) + "\" message=\"" +
           X(message) + "\">" + X(message + "\nrun: " + r.id) + "</" + element +
           ">\n    </testcase>\n";
    }
  }
  o += "  </testsuite>\n";
  counts_.tests += c.tests;
  counts_.failures += c.failures;
  counts_.errors += c.errors;
  time_s_ += secs;
}

std::string JUnitBuilder::Finish() const {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"" + X(name_) +
         "\" tests=\"" + std::to_string(counts_.tests) + "\" failures=\"" +
         std::to_string(counts_.failures) + "\" errors=\"" + std::to_string(counts_.errors) +
         "\" skipped=\"0\" time=\"" + Seconds(time_s_) + "\">\n" + suites_ + "</testsuites>\n";
}

std::string RenderJUnit(std::span<const RunData> runs) {
  JUnitBuilder b;
  for (const auto& r : runs) b.AddRun(r);
  return b.Finish();
}

std::string RenderJUnit(const RunData& run) {
  return RenderJUnit(std::span<const RunData>(&run, 1));
}

}  // namespace fl::reports::render
