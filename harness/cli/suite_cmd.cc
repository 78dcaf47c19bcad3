// `faultline suite`, `compare`, `history` and `shrink` (harness/suite, reports/compare).
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "common/file_util.h"
#include "common/log.h"
#include "common/units.h"
#include "common/yaml_util.h"
#include "harness/cli/cli.h"
#include "harness/run/cleanup.h"
#include "harness/suite/shrink.h"
#include "harness/suite/suite_file.h"
#include "harness/suite/suite_runner.h"
#include "reports/compare/acceptance.h"
#include "reports/compare/compare.h"
#include "reports/compare/history.h"
#include "reports/compare/json.h"
#include "reports/compare/run_metrics.h"

namespace fl::harness {
namespace {

namespace cmp = reports::compare;

bool WriteOut(const char* cmd, const std::string& path, const std::string& text) {
  Status st = WriteFileAtomic(path, text);
  if (!st.ok()) {
    std::fprintf(stderr, "faultline %s: cannot write %s: %s\n", cmd, path.c_str(),
                 st.ToUserString().c_str());
    return false;
  }
  std::fprintf(stderr, "wrote %s\n", path.c_str());  // stdout stays clean for --json
  return true;
}

void AddSuite(CLI::App& app, int* exit_code) {
  struct Args {
    std::string file, db, junit, policy, lab;
    uint32_t repeat = 0;
    std::vector<std::string> tags;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  auto* c = app.add_subcommand("suite", HelpText(R"(
run a suite file: every scenario x CCL x repetition as its own `faultline run`, going on
past failures; then check each group against the last passing runs with the same tags.
Exit 0 all passed, 1 an expectation failed or a metric regressed, 2 bad input,
3 a run error, 130 interrupted (see docs/suites.md))"));
  c->add_option("suite", a->file, "suite file (configs/suites/*.yaml)")->required();
  c->add_option("--repeat", a->repeat, "repetitions of each scenario x CCL (default: the file's)")
      ->check(CLI::Range(1, 1000));
  c->add_option("--junit", a->junit, "write one JUnit XML file for the whole suite");
  AddDbOption(c, &a->db);
  c->add_option("--tag", a->tags, "k=v tag on every run (repeatable), e.g. fw=22.41");
  c->add_option("--policy", a->policy, "agent policy file passed to every run");
  c->add_flag("--json", a->json,
              "print the result as JSON on stdout (progress lines go to stderr)");
  c->add_option("--lab", a->lab,
                "run every scenario on this lab (a topology or an inventory of real hosts)\n"
                "instead of each scenario's own `lab:`")
      ->check(CLI::ExistingFile);
  c->callback([a, exit_code] {
    QuietLogsUnlessAsked();
    suite::SuiteOptions o;
    o.db_path = a->db;
    o.repeat = a->repeat;
    o.junit_path = a->junit;
    if (a->json) o.progress = stderr;
    if (!ParseKeyValues("suite", "--tag", a->tags, &o.tags)) {
      *exit_code = 2;
      return;
    }
    if (o.tags.count(suite::kSuiteRunTag)) {
      std::fprintf(stderr, "faultline suite: tag 'suite_run' is set by the suite itself\n");
      *exit_code = 2;
      return;
    }
    if (!a->policy.empty()) o.extra_run_args = {"--policy", a->policy};
    if (!a->lab.empty()) {
      // Absolute: the runs are started with the same working directory, but a path in the
      // stored command should not depend on it.
      std::error_code ec;
      auto abs = std::filesystem::absolute(a->lab, ec);
      o.extra_run_args.insert(o.extra_run_args.end(), {"--lab", ec ? a->lab : abs.string()});
    }
    auto s = suite::LoadSuiteFile(a->file);
    if (!s.ok()) {
      std::fprintf(stderr, "faultline suite: %s\n", s.status().ToUserString().c_str());
      *exit_code = 2;
      return;
    }
    CleanUpDeadRuns(o.db_path);
    suite::SuiteResult result = suite::RunSuite(*s, o);
    if (a->json) std::printf("%s\n", suite::SuiteResultJson(*s, result).c_str());
    *exit_code = result.exit_code;
  });
}

// The tolerances of compare and accept: --suite's policies, then each --tolerance (flags win).
Status LoadTolerances(const std::string& suite_file, const std::vector<std::string>& flags,
                      cmp::PolicyTable* policies) {
  if (!suite_file.empty()) {
    FL_ASSIGN_OR_RETURN(auto s, suite::LoadSuiteFile(suite_file));
    *policies = s.policies;
  }
  for (const auto& t : flags) FL_RETURN_IF_ERROR(cmp::ParseToleranceFlag(t, *policies));
  return OkStatus();
}

// The bootstrap's resamples and seed, as compare and accept both take them.
struct BootstrapArgs {
  int resamples = 4000;
  uint64_t seed = 1;
};

void AddBootstrapOptions(CLI::App* c, BootstrapArgs* b) {
  c->add_option("--resamples", b->resamples, "bootstrap resamples")
      ->capture_default_str()
      ->check(CLI::Range(100, 1000000));
  c->add_option("--seed", b->seed, "bootstrap seed (same seed, same intervals)")
      ->capture_default_str();
}

void AddCompare(CLI::App& app, int* exit_code) {
  struct Args {
    std::string a, b, db, md, html, suite, scenario;
    std::vector<std::string> metrics, tolerances;
    bool json = false;
    double confidence = 0.95;
    BootstrapArgs bootstrap;
  };
  auto a = std::make_shared<Args>();
  auto* c = app.add_subcommand("compare", HelpText(R"(
compare two sets of runs (A = before, B = after): per scenario and metric the medians,
spread (IQR), a bootstrap interval of the difference of medians and a verdict against
the metric's tolerance in its worse direction. Exit 0 nothing regressed, 1 a metric
regressed, 2 bad input (see docs/suites.md))"));
  c->add_option("A", a->a, "run id, 'latest', or tag:k=v[,k=v] (e.g. tag:fw=22.39)")->required();
  c->add_option("B", a->b, "run id, 'latest', or tag:k=v[,k=v] (e.g. tag:fw=22.41)")->required();
  AddDbOption(c, &a->db);
  c->add_option("--md", a->md, "also write a Markdown table to this file");
  c->add_option("--html", a->html, "also write a self-contained HTML page to this file");
  c->add_flag("--json", a->json, "print the comparison as JSON instead of the table");
  c->add_option("--metric", a->metrics,
                "only this metric (repeatable): a name (detection_latency_ms) or a key "
                "(f0/detection_latency_ms)");
  c->add_option("--tolerance", a->tolerances,
                "METRIC=VALUE (repeatable): 20% relative, 50 absolute in the metric's unit, or "
                "20%,50 (the larger allowance wins)");
  c->add_option("--suite", a->suite, "take tolerances from this suite file (flags win)");
  c->add_option("--scenario", a->scenario, "only runs of this scenario (for tag selectors)");
  c->add_option("--confidence", a->confidence, "confidence of the interval")
      ->capture_default_str()
      ->check(CLI::Range(0.5, 0.999));
  AddBootstrapOptions(c, &a->bootstrap);
  c->callback([a, exit_code] {
    QuietLogsUnlessAsked();
    // CLI::Range lets NaN through (every comparison with it is false).
    if (std::string p = BoundsProblem("--confidence", a->confidence, 0.5, 0.999); !p.empty()) {
      std::fprintf(stderr, "faultline compare: %s\n", p.c_str());
      *exit_code = 2;
      return;
    }
    cmp::CompareOptions o;
    o.metrics = a->metrics;
    o.bootstrap = {a->bootstrap.resamples, a->confidence, a->bootstrap.seed};
    if (Status st = LoadTolerances(a->suite, a->tolerances, &o.policies); !st.ok()) {
      *exit_code = ErrorExit("compare", st);
      return;
    }
    auto reader = cmp::RunReader::Open(a->db);
    if (!reader.ok()) {
      *exit_code = ErrorExit("compare", reader.status());
      return;
    }
    std::optional<std::string> scenario;
    if (!a->scenario.empty()) scenario = a->scenario;
    auto ra = (*reader)->Select(a->a, scenario);
    if (!ra.ok()) {
      *exit_code = ErrorExit("compare", ra.status());
      return;
    }
    auto rb = (*reader)->Select(a->b, scenario);
    if (!rb.ok()) {
      *exit_code = ErrorExit("compare", rb.status());
      return;
    }
    cmp::Comparison result = cmp::Compare(*ra, *rb, o, a->a, a->b);
    auto ledger = cmp::SummariseLedgers(**reader, *ra, *rb);
    if (!ledger.ok()) {
      *exit_code = ErrorExit("compare", ledger.status());
      return;
    }
    result.ledger = std::move(*ledger);
    if (result.rows.empty()) {
      std::fprintf(stderr,
                   "faultline compare: nothing to compare (no scenario has runs on both sides%s)\n",
                   o.metrics.empty() ? "" : " with those metrics");
      for (const auto& n : result.notes) std::fprintf(stderr, "  %s\n", n.c_str());
      *exit_code = 2;
      return;
    }
    if (a->json) {
      std::printf("%s\n", cmp::ComparisonJson(result).c_str());
    } else {
      std::fputs(cmp::RenderText(result).c_str(), stdout);
    }
    bool ok = true;
    if (!a->md.empty()) ok = WriteOut("compare", a->md, cmp::RenderMarkdown(result)) && ok;
    if (!a->html.empty()) ok = WriteOut("compare", a->html, cmp::RenderHtml(result)) && ok;
    *exit_code = !ok ? 3 : result.Count(cmp::Verdict::kRegressed) > 0 ? 1 : 0;
  });
}

// `faultline accept`: compare's method as one verdict over a suite's scenarios
// (reports/compare/acceptance.h); exit 1 when a metric regressed.
void AddAccept(CLI::App& app, int* exit_code) {
  struct Args {
    std::string baseline, candidate, db, md, html, json, suite, scenario;
    std::vector<std::string> tolerances;
    BootstrapArgs bootstrap;
  };
  auto a = std::make_shared<Args>();
  auto* c = app.add_subcommand("accept", HelpText(R"(
firmware acceptance: the candidate's runs against the baseline's over the same
scenarios, as one verdict (ACCEPTED when no metric of any scenario regressed; the method
is compare's, docs/suites.md), one line per scenario, and a page to hand a vendor
(--html prints well; also --md, --json; `faultline serve` shows the same at /accept).
Exit 0 accepted, 1 rejected, 2 bad input)"));
  c->add_option("--baseline", a->baseline, "run id, 'latest', or tag:k=v[,k=v] (tag:fw=22.39)")
      ->required();
  c->add_option("--candidate", a->candidate, "the same for the candidate (tag:fw=22.41)")
      ->required();
  AddDbOption(c, &a->db);
  c->add_option("--html", a->html, "write the acceptance page (self-contained, printable)");
  c->add_option("--md", a->md, "write it as Markdown");
  c->add_option("--json", a->json, "write it as JSON");
  c->add_option("--suite", a->suite, "take tolerances from this suite file (flags win)");
  c->add_option("--tolerance", a->tolerances, "METRIC=VALUE (repeatable), as compare's");
  c->add_option("--scenario", a->scenario, "only this scenario");
  AddBootstrapOptions(c, &a->bootstrap);
  c->callback([a, exit_code] {
    QuietLogsUnlessAsked();
    cmp::AcceptanceOptions o;
    o.baseline = a->baseline;
    o.candidate = a->candidate;
    if (!a->scenario.empty()) o.scenario = a->scenario;
    o.compare.bootstrap = {a->bootstrap.resamples, 0.95, a->bootstrap.seed};
    if (Status st = LoadTolerances(a->suite, a->tolerances, &o.compare.policies); !st.ok()) {
      *exit_code = ErrorExit("accept", st);
      return;
    }
    auto reader = cmp::RunReader::Open(a->db);
    if (!reader.ok()) {
      *exit_code = ErrorExit("accept", reader.status());
      return;
    }
    auto result = cmp::RunAcceptance(**reader, o);
    if (!result.ok()) {
      *exit_code = ErrorExit("accept", result.status());
      return;
    }
    std::fputs(cmp::AcceptanceText(*result).c_str(), stdout);
    bool ok = true;
    if (!a->html.empty()) ok = WriteOut("accept", a->html, cmp::AcceptanceHtml(*result)) && ok;
    if (!a->md.empty()) ok = WriteOut("accept", a->md, cmp::AcceptanceMarkdown(*result)) && ok;
    if (!a->json.empty()) ok = WriteOut("accept", a->json, cmp::AcceptanceJson(*result)) && ok;
    *exit_code = !ok ? 3 : result->accepted() ? 0 : 1;
  });
}

void AddHistory(CLI::App& app, int* exit_code) {
  struct Args {
    std::string scenario, db, html;
    std::vector<std::string> metrics, tags;
    size_t limit = 50;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  auto* c = app.add_subcommand(
      "history", "a metric's trend over the stored runs of a scenario: a table and a chart");
  c->add_option("scenario", a->scenario, "scenario name (as in `faultline runs`)")->required();
  c->add_option("--metric", a->metrics,
                "metric name or key (repeatable; default: detection, recovery, degraded ratio, "
                "throughput loss, baseline algbw)");
  AddDbOption(c, &a->db);
  c->add_option(
      "--html", a->html,
      "write a self-contained HTML page with a chart per metric (uPlot, as the run report)");
  c->add_option("--tag", a->tags, "only runs with this k=v tag (repeatable)");
  c->add_option("--limit", a->limit, "the newest N finished runs (0: all)")->capture_default_str();
  c->add_flag("--json", a->json, "print the series as JSON instead of the table");
  c->callback([a, exit_code] {
    QuietLogsUnlessAsked();
    cmp::HistoryOptions o;
    o.metrics = a->metrics;
    o.limit = a->limit;
    if (!ParseKeyValues("history", "--tag", a->tags, &o.tags)) {
      *exit_code = 2;
      return;
    }
    auto reader = cmp::RunReader::Open(a->db);
    if (!reader.ok()) {
      *exit_code = ErrorExit("history", reader.status());
      return;
    }
    auto series = cmp::LoadHistory(**reader, a->scenario, o);
    if (!series.ok()) {
      *exit_code = ErrorExit("history", series.status());
      return;
    }
    if (a->json) {
      std::printf("%s\n", cmp::HistoryJson(a->scenario, *series).c_str());
    } else {
      std::fputs(cmp::RenderHistoryText(a->scenario, *series).c_str(), stdout);
    }
    if (!a->html.empty() &&
        !WriteOut("history", a->html, cmp::RenderHistoryHtml(a->scenario, *series))) {
      *exit_code = 3;
      return;
    }
    *exit_code = 0;
  });
}

void AddShrink(CLI::App& app, int* exit_code) {
  struct Args {
    std::string run, db, out;
    int max_runs = 40;
    std::string time_limit = "30m", run_timeout = "10m";
  };
  auto a = std::make_shared<Args>();
  auto* c = app.add_subcommand("shrink", HelpText(R"(
the smallest scenario that fails the way a stored run failed: replays reduced variants
of its scenario (fewer faults, a target instead of a class, one firing, shorter and
earlier faults) on its lab and seed, keeps each change that still fails the same
expectation, and writes the result as a scenario file with the seed. Exit 0 written,
1 the run does not fail again when replayed, 2 bad input, 3 infrastructure, 130
interrupted (what was found so far is written))"));
  c->add_option("run", a->run, "the failed run (id or 'latest')")->required();
  AddDbOption(c, &a->db);
  c->add_option("--out", a->out, "the scenario file to write (default: shrunk-RUN.yaml)");
  c->add_option("--max-runs", a->max_runs, "at most this many replays, the first included")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  c->add_option("--time-limit", a->time_limit, "stop starting replays after this long")
      ->capture_default_str();
  c->add_option("--run-timeout", a->run_timeout, "each replay at most this long")
      ->capture_default_str();
  c->callback([a, exit_code] {
    QuietLogsUnlessAsked();
    suite::ShrinkOptions o;
    o.db_path = a->db;
    o.run_id = a->run;
    o.out_path = a->out;
    o.max_runs = a->max_runs;
    auto limit = ParseDuration(a->time_limit);
    auto each = ParseDuration(a->run_timeout);
    if (!limit.ok() || !each.ok() || *limit <= 0 || *each <= 0) {
      std::fprintf(stderr,
                   "faultline shrink: --time-limit and --run-timeout want a duration "
                   "like 30m or 90s\n");
      *exit_code = 2;
      return;
    }
    o.time_limit = *limit;
    o.run_timeout = *each;
    suite::ShrinkOutcome r = suite::RunShrink(o);
    std::fprintf(r.exit_code == 0 ? stdout : stderr, "faultline shrink: %s\n", r.message.c_str());
    *exit_code = r.exit_code;
  });
}

}  // namespace

void AddSuiteCommands(CLI::App& app, int* exit_code) {
  AddSuite(app, exit_code);
  AddCompare(app, exit_code);
  AddAccept(app, exit_code);
  AddHistory(app, exit_code);
  AddShrink(app, exit_code);
}

}  // namespace fl::harness
