// `faultline sweep`: a scenario over a grid of its values, mapped (harness/suite/sweep_plan.h,
// sweep_runner.h; reports/compare/sweep_map.h; docs/sweeps.md).
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <memory>

#include "common/file_util.h"
#include "harness/cli/cli.h"
#include "harness/cli/command.h"
#include "harness/suite/sweep_runner.h"
#include "reports/analysis/stats.h"

namespace fl::harness {

namespace {

struct SweepArgs {
  std::string file, db, resume, html, json_path, ccl;
  std::vector<std::string> vary, tags, ccl_options;
  uint32_t repeats = 0;
  std::string window;
  bool no_keep_lab = false, map_only = false;
};

void PrintOverhead(const suite::SweepResult& r) {
  std::vector<double> all, start, end;
  for (const auto& run : r.runs)
    if (std::isfinite(run.overhead_s)) {
      all.push_back(run.overhead_s);
      start.push_back(run.start_s);
      end.push_back(run.end_s);
    }
  if (all.empty()) return;
  std::fprintf(stderr,
               "point overhead (command start to first iteration, plus last iteration to "
               "stored): median %.2f s over %zu run(s) (start %.2f s, end %.2f s; max %.2f s)\n",
               reports::analysis::Median(all), all.size(), reports::analysis::Median(start),
               reports::analysis::Median(end), *std::max_element(all.begin(), all.end()));
}

int Sweep(const SweepArgs& a) {
  QuietLogsUnlessAsked();
  auto spec = suite::LooksLikeSweepFile(a.file) ? suite::LoadSweepFile(a.file)
                                                : suite::SweepOfScenario(a.file);
  if (!spec.ok()) return ErrorExit("sweep", spec.status());
  if (Status st = suite::ApplyVaryFlags(a.vary, &*spec); !st.ok()) return ErrorExit("sweep", st);
  if (a.repeats) spec->repeats = a.repeats;
  if (!a.window.empty()) {
    auto w = ParseDurationFlag("--window", a.window);
    if (!w.ok()) return ErrorExit("sweep", w.status());
    spec->window_ns = *w;
  }
  if (!a.ccl.empty()) {
    suite::CclSpec c;
    c.name = a.ccl;
    if (!ParseKeyValues("sweep", "--ccl-option", a.ccl_options, &c.options)) return 2;
    spec->ccls = {c};
    spec->ccl_sets.clear();
  }
  if (Status st = suite::CheckSweep(*spec); !st.ok()) return ErrorExit("sweep", st);
  suite::SweepResult result;
  if (a.map_only) {
    if (a.resume.empty()) {
      std::fprintf(stderr, "faultline sweep: --map-only needs --resume SWEEP_ID\n");
      return 2;
    }
    auto in = suite::LoadSweepInput(*spec, a.db, a.resume);
    if (!in.ok()) return ErrorExit("sweep", in.status());
    result.sweep_id = a.resume;
    result.maps = reports::compare::BuildSweepMaps(std::move(*in));
  } else {
    suite::SweepOptions o;
    o.db_path = a.db;
    o.resume = a.resume;
    o.keep_lab = !a.no_keep_lab;
    if (!ParseKeyValues("sweep", "--tag", a.tags, &o.tags)) return 2;
    result = suite::RunSweep(*spec, o);
    if (result.exit_code == 2 && result.runs.empty() && result.already_done == 0) {
      std::fprintf(stderr, "faultline sweep: %s\n", result.message.c_str());
      return 2;
    }
  }
  if (a.json_path != "-") {  // standard output holds one of them
    std::string text = reports::compare::RenderSweepText(result.maps);
    std::fwrite(text.data(), 1, text.size(), stdout);
  }
  if (!a.html.empty()) {
    if (Status st = WriteFileAtomic(a.html, reports::compare::RenderSweepHtml(result.maps));
        !st.ok())
      return ErrorExit("sweep", st);
    std::fprintf(stderr, "map: %s\n", a.html.c_str());
  }
  if (!a.json_path.empty()) {
    std::string j = reports::compare::SweepMapsJson(result.maps) + "\n";
    if (a.json_path == "-")
      std::fwrite(j.data(), 1, j.size(), stdout);
    else if (Status st = WriteFileAtomic(a.json_path, j); !st.ok())
      return ErrorExit("sweep", st);
  }
  if (!a.map_only) {
    PrintOverhead(result);
    std::fprintf(stderr,
                 "sweep %s: %zu run(s) this time, %zu before, %zu point(s) n/a, %d lab rebuild(s); "
                 "%.1f s\n",
                 result.sweep_id.c_str(), result.runs.size(), result.already_done,
                 result.invalid_points, result.lab_rebuilds, result.seconds);
    if (!result.message.empty())
      std::fprintf(stderr, "faultline sweep: %s\n", result.message.c_str());
  }
  return result.exit_code;
}

}  // namespace

void AddSweepCommands(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<SweepArgs>();
  auto* c = app.add_subcommand("sweep", HelpText(R"(
run a scenario over a grid of its own values (the fault space) and map the results:
each point x CCL x repeat is one `faultline run` (tagged sweep=ID and with its point),
on one local lab kept up across the points and checked before each; then, per metric
(recovery time, throughput loss, failovers, failbacks, wrong results, hangs, restarts),
a map of the repeats' medians with the worst region and the cliffs. Resumable with
--resume ID. Exit 0 every run gave a result (failed expectations are results), 2 bad
input, 3 a run error, 130 interrupted (see docs/sweeps.md))"));
  c->add_option("file", a->file,
                "a sweep file (configs/sweeps/*.yaml) or a scenario (then --vary gives the axes)")
      ->required()
      ->check(CLI::ExistingFile);
  c->add_option("--vary", a->vary,
                "an axis (repeatable): PATH=LO..HI:log:N, PATH=LO..HI:lin:N or PATH=V1,V2,...;\n"
                "PATH names a scenario key, e.g. faults[0].every, faults[0].duration, job.size.\n"
                "Replaces the sweep file's axis of the same path");
  c->add_option("--repeats", a->repeats, "runs per point and CCL (default: the file's, else 1)")
      ->check(CLI::Range(1, 100));
  c->add_option("--window", a->window,
                "a varied fault period fires for this long: count = window / every (e.g. 2s)");
  c->add_option("--ccl", a->ccl, "one CCL instead of the file's ccls");
  c->add_option("--ccl-option", a->ccl_options, "its option key=value (repeatable)");
  AddDbOption(c, &a->db);
  c->add_option("--resume", a->resume,
                "go on with sweep ID (the same plan): only the runs it has not finished");
  c->add_option("--tag", a->tags, "k=v tag on every run (repeatable)");
  c->add_option("--html", a->html, "write the maps as a self-contained HTML page");
  c->add_option("--json", a->json_path, "write the maps as JSON ('-': standard output)");
  c->add_flag("--map-only", a->map_only,
              "only draw the maps of sweep --resume ID from the results database");
  c->add_flag("--no-keep-lab", a->no_keep_lab, "every run builds and removes its own lab");
  RunAfterParse(c, a, exit_code, Sweep);
}

}  // namespace fl::harness
