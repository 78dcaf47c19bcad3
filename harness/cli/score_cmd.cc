// `faultline score`: detectors (alert rules, hang detectors, vendors' health checks) scored
// against the faults stored runs injected (reports/analysis/detector_score.h,
// docs/detectors.md).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>

#include "common/units.h"
#include "harness/cli/cli.h"
#include "harness/cli/command.h"
#include "reports/analysis/alerts.h"
#include "reports/analysis/detector_score.h"
#include "reports/compare/run_metrics.h"
#include "reports/compare/truth.h"

namespace fl::harness {

namespace {

struct ScoreArgs {
  std::vector<std::string> runs, alerts, detectors, rules;
  std::string db, scenario, grace = "60s", skew = "1s";
  bool json = false;
};

Status Score(const ScoreArgs& a) {
  reports::analysis::ScoreOptions o;
  FL_ASSIGN_OR_RETURN(o.grace_ns, ParseDurationFlag("--grace", a.grace));
  FL_ASSIGN_OR_RETURN(o.skew_ns, ParseDurationFlag("--skew", a.skew));
  std::vector<reports::analysis::Alert> alerts;
  size_t copies = 0;
  for (const auto& path : a.alerts) {
    FL_ASSIGN_OR_RETURN(auto set, reports::analysis::LoadAlerts(path));
    copies += set.copies;
    alerts.insert(alerts.end(), set.alerts.begin(), set.alerts.end());
  }
  std::vector<std::string> known = a.detectors;
  for (const auto& path : a.rules) {
    FL_ASSIGN_OR_RETURN(auto names, reports::analysis::LoadAlertRuleNames(path));
    known.insert(known.end(), names.begin(), names.end());
  }
  FL_ASSIGN_OR_RETURN(auto reader, reports::compare::RunReader::Open(a.db));
  FL_ASSIGN_OR_RETURN(auto runs, reader->SelectAll(a.runs, OptionalFlag(a.scenario)));
  FL_ASSIGN_OR_RETURN(auto truth, reports::compare::LoadTruth(*reader, runs));
  std::fprintf(stderr, "faultline score: %zu run(s); %zu alert(s) read, %zu distinct\n",
               runs.size(), copies, alerts.size());
  auto report = reports::analysis::ScoreDetectors(truth, alerts, known, o);
  std::string out = a.json ? reports::analysis::ScoreJson(report) + "\n"
                           : reports::analysis::RenderScoreText(report);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return OkStatus();
}

}  // namespace

void AddScoreCommands(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<ScoreArgs>();
  auto* c = app.add_subcommand("score", HelpText(R"(
score detectors against the faults the selected runs injected: each alert (from
--alerts files: a detector's JSON lines or Alertmanager's webhook notifications) is
matched to the faults whose window holds its start and whose target it names; per
detector it prints precision, recall (also per fault kind), F1, the detection latency
and false alarms per hour. Method: docs/detectors.md. Exit 0 scored, 2 bad input
(nothing selected, a bad file or flag), 3 store error)"));
  c->add_option("runs", a->runs,
                "runs whose faults are the ground truth: a run id, 'latest', or\n"
                "tag:k=v[,k=v] (every finished run with those tags)")
      ->required();
  c->add_option("--alerts", a->alerts, "a file of alerts, JSON lines (repeatable)")->required();
  c->add_option("--detector", a->detectors,
                "a detector to score even if it never fired (repeatable)");
  c->add_option("--rules", a->rules,
                "a Prometheus rules file: each alerting rule is scored even if it never fired\n"
                "(repeatable)");
  AddDbOption(c, &a->db);
  c->add_option("--scenario", a->scenario, "only runs of this scenario (for tag selectors)");
  c->add_option("--grace", a->grace, "an alert this long after a fault's revert still counts")
      ->capture_default_str();
  c->add_option("--skew", a->skew, "... and this long before the fault took hold")
      ->capture_default_str();
  c->add_flag("--json", a->json, "print the scores as JSON");
  RunStatusAfterParse(c, a, exit_code, "score", Score);
}

}  // namespace fl::harness
