#include "reports/render/junit.h"

#include <algorithm>
#include <cstdio>

#include "common/process.h"
#include "reports/render/escape.h"
#include "reports/render/run_view.h"

namespace fl::reports::render {
namespace {

std::string X(std::string_view s) { return XmlEscape(s); }

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", s < 0 ? 0 : s);
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

// The fault's window: its injection to its revert, or to the run's end.
double FaultSeconds(const RunView& view, const std::string& fault_id, double run_seconds) {
  const FaultView* f = view.FindFault(fault_id);
  if (!f) return 0;
  auto t = f->InjectionTime();
  if (!t) return 0;
  Nanos end = f->fault->reverted_wall_ns.value_or(view.data().run.end_wall_ns.value_or(*t));
  double s = static_cast<double>(end - *t) / kNsPerSec;
  return s < 0 ? 0 : std::min(s, run_seconds > 0 ? run_seconds : s);
}

struct Counts {
  size_t tests = 0, failures = 0, errors = 0, skipped = 0;
  double seconds = 0;
  void Add(const JUnitDocument::Case& c) {
    ++tests;
    failures += c.failure.has_value();
    errors += c.error.has_value();
    skipped += c.skipped.has_value();
    seconds += c.seconds;
  }
  std::string Attrs(std::optional<double> time) const {
    return " tests=\"" + std::to_string(tests) + "\" failures=\"" + std::to_string(failures) +
           "\" errors=\"" + std::to_string(errors) + "\" skipped=\"" + std::to_string(skipped) +
           "\" time=\"" + Seconds(time.value_or(seconds)) + "\"";
  }
};

std::string FirstLine(const std::string& m) { return m.substr(0, m.find('\n')); }

}  // namespace

std::string JUnitDocument::Xml() const {
  Counts total;
  double total_seconds = 0;
  std::string body;
  for (const Suite& s : suites_) {
    Counts counts;
    for (const Case& c : s.cases) counts.Add(c), total.Add(c);
    total_seconds += s.seconds.value_or(counts.seconds);
    body += "  <testsuite name=\"" + X(s.name) + "\"";
    for (const auto& [k, v] : s.attributes) {
      if (k == "id") body += " id=\"" + X(v) + "\"";
    }
    body += counts.Attrs(s.seconds);
    for (const auto& [k, v] : s.attributes)
      if (k != "id") body += " " + k + "=\"" + X(v) + "\"";
    body += ">\n";
    if (!s.properties.empty()) {
      body += "    <properties>\n";
      for (const auto& [k, v] : s.properties)
        body += "      <property name=\"" + X(k) + "\" value=\"" + X(v) + "\"/>\n";
      body += "    </properties>\n";
    }
    for (const Case& c : s.cases) {
      body += "    <testcase classname=\"" + X(c.classname) + "\" name=\"" + X(c.name) +
              "\" time=\"" + Seconds(c.seconds) + "\"";
      if (!c.failure && !c.error && !c.skipped && c.system_out.empty()) {
        body += "/>\n";
        continue;
      }
      body += ">\n";
      auto element = [&](const char* tag, const std::string& type,
                         const std::optional<std::string>& message, const std::string& text) {
        body += "      <" + std::string(tag) +
                (type.empty() ? std::string() : " type=\"" + X(type) + "\"") + " message=\"" +
                X(message.value_or(FirstLine(text))) + "\">" + X(text) + "</" + tag + ">\n";
      };
      if (c.failure) element("failure", c.failure_type, c.failure_message, *c.failure);
      if (c.error) element("error", c.error_type, std::nullopt, *c.error);
      if (c.skipped) body += "      <skipped message=\"" + X(*c.skipped) + "\"/>\n";
      if (!c.system_out.empty()) body += "      <system-out>" + X(c.system_out) + "</system-out>\n";
      body += "    </testcase>\n";
    }
    body += "  </testsuite>\n";
  }
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"" + X(name_) + "\"" +
         total.Attrs(total_seconds) + ">\n" + body + "</testsuites>\n";
}

std::string ReplayCommand(const std::string& run_id, const std::string& db_path) {
  std::string cmd = "faultline replay " + PosixShellQuote(run_id);
  if (!db_path.empty()) cmd += " --db " + PosixShellQuote(db_path);
  return cmd;
}

std::vector<JUnitDocument::Case> JUnitCasesForRun(const RunData& run, const std::string& classname,
                                                  const JUnitContext& context) {
  RunView view(run);
  const RunRecord& r = run.run;
  const double secs = RunSeconds(r);
  std::string out = "run: " + r.id + " (seed " + std::to_string(r.seed) +
                    ")\nreplay: " + ReplayCommand(r.id, context.db_path) + "\n";
  if (!context.report_path.empty()) out += "report: " + context.report_path + "\n";
  std::vector<JUnitDocument::Case> cases;
  for (const auto& v : run.verdicts) {
    JUnitDocument::Case c;
    c.classname = classname;
    c.name = TestcaseName(view, v);
    c.seconds = v.fault_id ? FaultSeconds(view, *v.fault_id, secs) : secs;
    c.system_out = out;
    if (!v.passed) {
      VerdictText t = ExplainVerdict(v);
      std::string body = "expected: " + t.expected + "\nmeasured: " + t.measured;
      if (!v.message.empty()) body += "\n" + v.message;
      std::string where = view.FaultLabel(v.fault_id);
      if (!where.empty()) body += "\nfault: " + where;
      body += "\nrun: " + r.id + " (seed " + std::to_string(r.seed) + ")";
      c.failure = body;
      c.failure_type = v.expectation;
      c.failure_message =
          v.message.empty() ? "expected " + t.expected + ", measured " + t.measured : v.message;
    }
    cases.push_back(std::move(c));
  }
  RunCase rc = RunCaseOf(run);
  if (rc != RunCase::kNone) {
    JUnitDocument::Case c;
    c.classname = classname;
    c.name = "run";
    c.seconds = secs;
    c.system_out = out;
    std::string status(RunStatusName(r.status));
    std::string message = "run " + status + (r.message.empty() ? "" : ": " + r.message);
    if (rc == RunCase::kError) {
      c.error = message + "\nrun: " + r.id;
      c.error_type = status;
    } else if (rc == RunCase::kFailure) {
      c.failure = message + "\nrun: " + r.id;
      c.failure_type = status;
      c.failure_message = message;
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

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
  const RunRecord& r = run.run;
  const std::string classname =
      r.scenario_name.empty() ? std::string("faultline") : r.scenario_name;
  JUnitDocument::Suite& s = doc_.AddSuite(classname);
  s.attributes.emplace_back("id", r.id);
  s.attributes.emplace_back("timestamp", FormatWallIso(r.start_wall_ns));
  if (!r.coordinator_host.empty()) s.attributes.emplace_back("hostname", r.coordinator_host);
  s.properties = {{"run_id", r.id},
                  {"seed", std::to_string(r.seed)},
                  {"status", std::string(RunStatusName(r.status))}};
  if (!r.git_revision.empty()) s.properties.emplace_back("git_revision", r.git_revision);
  if (!r.scenario_hash.empty()) s.properties.emplace_back("scenario_hash", r.scenario_hash);
  for (const auto& [k, v] : r.tags) s.properties.emplace_back("tag." + k, v);
  s.cases = JUnitCasesForRun(run, classname, context_);
  s.seconds = RunSeconds(r);  // faults overlap the run: the suite's time is the run's
  JUnitCounts c = CountJUnit(run);
  counts_.tests += c.tests;
  counts_.failures += c.failures;
  counts_.errors += c.errors;
}

std::string RenderJUnit(std::span<const RunData> runs, const JUnitContext& context) {
  JUnitBuilder b("faultline", context);
  for (const auto& r : runs) b.AddRun(r);
  return b.Finish();
}

std::string RenderJUnit(const RunData& run, const JUnitContext& context) {
  return RenderJUnit(std::span<const RunData>(&run, 1), context);
}

}  // namespace fl::reports::render
