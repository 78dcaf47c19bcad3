// `faultline report`: HTML, JUnit and Markdown views of a stored run (reports/render).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>

#include "common/file_util.h"
#include "harness/coordinator/run_driver.h"
#include "reports/render/html.h"
#include "reports/render/junit.h"
#include "reports/render/markdown.h"
#include "reports/store/store.h"

namespace fl::harness {
namespace {

constexpr int kExitBadInput = 2;
constexpr int kExitInfra = 3;

// Writes content to path ("-": standard output). Reports what it wrote on stderr so that
// `--md -` output stays clean for a CI comment.
bool WriteOutput(const std::string& what, const std::string& path, const std::string& content) {
  if (path == "-") {
    std::fwrite(content.data(), 1, content.size(), stdout);
    std::fflush(stdout);
    return true;
  }
  Status st = WriteFileAtomic(path, content);
  if (!st.ok()) {
    std::fprintf(stderr, "faultline report: cannot write the %s to %s: %s\n", what.c_str(),
                 path.c_str(), st.ToUserString().c_str());
    return false;
  }
  std::fprintf(stderr, "faultline report: wrote %s (%s, %zu KiB)\n", path.c_str(), what.c_str(),
               (content.size() + 1023) / 1024);
  return true;
}

}  // namespace

void AddReportCommands(CLI::App& app, int* exit_code) {
  struct Args {
    std::string run, db = "results.db", html, junit, md;
  };
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand(
      "report",
      "views of a stored run: a self-contained HTML page (summary, verdicts, environment,\n"
      "throughput chart with fault windows and CCL events, detection/recovery per fault),\n"
      "JUnit XML (one testcase per expectation per fault) and a Markdown summary for CI\n"
      "comments. Without an output option it prints a short text summary. Several outputs\n"
      "may be written at once; '-' writes to standard output. Exit 0 when the outputs were\n"
      "written, whatever the verdicts (the run's own exit status carries those).");
  cmd->add_option("run", args->run, "run id (see faultline runs) or 'latest'")->required();
  cmd->add_option("--db", args->db, "results database (SQLite)")->capture_default_str();
  cmd->add_option("--html", args->html, "write the HTML report to this file");
  cmd->add_option("--junit", args->junit, "write JUnit XML to this file");
  cmd->add_option("--md", args->md, "write the Markdown summary to this file");
  cmd->callback([args, exit_code] {
    CleanUpDeadRuns(args->db);
    auto store = reports::Store::Open(args->db, {.create = false});
    if (!store.ok()) {
      std::fprintf(stderr, "faultline report: cannot open %s: %s\n", args->db.c_str(),
                   store.status().ToUserString().c_str());
      *exit_code = store.status().code() == Code::kNotFound ? kExitBadInput : kExitInfra;
      return;
    }
    auto data = (*store)->LoadRun(args->run);
    if (!data.ok()) {
      std::fprintf(stderr, "faultline report: run '%s' in %s: %s\n", args->run.c_str(),
                   args->db.c_str(), data.status().ToUserString().c_str());
      *exit_code = data.status().code() == Code::kNotFound ? kExitBadInput : kExitInfra;
      return;
    }
    if (args->html.empty() && args->junit.empty() && args->md.empty()) {
      std::string text = reports::render::RenderTextSummary(*data);
      std::fwrite(text.data(), 1, text.size(), stdout);
      *exit_code = 0;
      return;
    }
    bool ok = true;
    if (!args->html.empty())
      ok &= WriteOutput("HTML report", args->html, reports::render::RenderHtml(*data));
    if (!args->junit.empty())
      ok &= WriteOutput("JUnit XML", args->junit, reports::render::RenderJUnit(*data));
    if (!args->md.empty())
      ok &= WriteOutput("Markdown summary", args->md, reports::render::RenderMarkdown(*data));
    *exit_code = ok ? 0 : kExitInfra;
  });
}

}  // namespace fl::harness
