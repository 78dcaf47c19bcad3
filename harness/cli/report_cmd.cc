// `faultline report`: HTML, JUnit and Markdown views of a stored run (reports/render).
#include <CLI/CLI.hpp>

#include <cstdint>
#include <cstdio>
#include <string>

#include "common/file_util.h"
#include "common/http_put.h"
#include "harness/cli/cli.h"
#include "harness/run/cleanup.h"
#include "reports/render/html.h"
#include "reports/render/json_view.h"
#include "reports/render/junit.h"
#include "reports/render/markdown.h"
#include "reports/render/openmetrics.h"
#include "reports/store/store.h"

namespace fl::harness {
namespace {

constexpr int kReportBadInput = 2;
constexpr int kReportInfra = 3;

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

// RFC 4648 §5 (URL-safe, no padding is needed by the Pushgateway but it accepts it).
std::string Base64Url(const std::string& in) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    for (int k = 18; k >= 0; k -= 6) out += kAlphabet[(v >> k) & 63];
  }
  if (i + 1 == in.size()) {
    uint32_t v = uint8_t(in[i]) << 16;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += "=";
  }
  return out;
}

// PUT replaces the group job=faultline, scenario=NAME (and cluster=C when the run has that
// tag): a dashboard sees each scenario's latest run.
bool Push(const std::string& gateway, const reports::RunData& run, const std::string& text) {
  auto url = ParseHttpUrl(gateway);
  if (!url.ok()) {
    std::fprintf(stderr, "faultline report: --pushgateway %s\n",
                 url.status().ToUserString().c_str());
    return false;
  }
  std::string path = url->path;
  while (!path.empty() && path.back() == '/') path.pop_back();
  path += "/metrics/job/faultline/scenario@base64/" + Base64Url(run.run.scenario_name);
  if (auto it = run.run.tags.find("cluster"); it != run.run.tags.end())
    path += "/cluster@base64/" + Base64Url(it->second);
  url->path = path;
  auto reply = HttpSend("PUT", *url, "text/plain; version=0.0.4; charset=utf-8", text,
                        Deadline::After(10 * kNsPerSec));
  if (!reply.ok()) {
    std::fprintf(stderr, "faultline report: pushing to %s: %s\n", gateway.c_str(),
                 reply.status().ToUserString().c_str());
    return false;
  }
  if (reply->status < 200 || reply->status > 299) {
    std::fprintf(stderr, "faultline report: the Pushgateway at %s answered %d: %s\n",
                 gateway.c_str(), reply->status, reply->body.substr(0, 300).c_str());
    return false;
  }
  std::fprintf(stderr, "faultline report: pushed the metrics to %s%s (HTTP %d)\n", gateway.c_str(),
               path.c_str(), reply->status);
  return true;
}

}  // namespace

void AddReportCommands(CLI::App& app, int* exit_code) {
  struct Args {
    std::string run, db, html, junit, md, openmetrics, pushgateway;
    bool json = false;
  };
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("report", HelpText(R"(
views of a stored run: a self-contained HTML page (summary, verdicts, environment,
throughput chart with fault windows and CCL events, detection/recovery per fault),
JUnit XML (one testcase per expectation per fault) and a Markdown summary for CI
comments, and the metrics for dashboards (Prometheus text format, as node_exporter's
textfile collector reads it, or pushed to a Pushgateway), or JSON (--json).
Without an output option it prints a short text summary. Several outputs may be
written at once; '-' writes to standard output. Exit 0 when the outputs were written,
whatever the verdicts (the run's own exit status carries those).)"));
  cmd->add_option("run", args->run, "run id (see faultline runs) or 'latest'")->required();
  AddDbOption(cmd, &args->db);
  cmd->add_option("--html", args->html, "write the HTML report to this file");
  cmd->add_option("--junit", args->junit, "write JUnit XML to this file");
  cmd->add_option("--md", args->md, "write the Markdown summary to this file");
  cmd->add_flag("--json", args->json,
                "print the run as JSON (record, hosts, faults with their metrics, verdicts)\n"
                "instead of the text summary");
  cmd->add_option("--openmetrics", args->openmetrics,
                  "write the metrics in the Prometheus text format to this file (for\n"
                  "node_exporter's textfile collector: name it *.prom in its directory)");
  cmd->add_option("--pushgateway", args->pushgateway,
                  "push the metrics to this Prometheus Pushgateway (http://HOST:PORT), group\n"
                  "job=faultline, scenario=NAME (and cluster= when the run has that tag)");
  cmd->callback([args, exit_code] {
    CleanUpDeadRuns(args->db);
    auto store = reports::Store::Open(args->db, {.create = false});
    if (!store.ok()) {
      std::fprintf(stderr, "faultline report: cannot open %s: %s\n", args->db.c_str(),
                   store.status().ToUserString().c_str());
      *exit_code = store.status().code() == Code::kNotFound ? kReportBadInput : kReportInfra;
      return;
    }
    auto data = (*store)->LoadRun(args->run);
    if (!data.ok()) {
      std::fprintf(stderr, "faultline report: run '%s' in %s: %s\n", args->run.c_str(),
                   args->db.c_str(), data.status().ToUserString().c_str());
      *exit_code = data.status().code() == Code::kNotFound ? kReportBadInput : kReportInfra;
      return;
    }
    if (args->html.empty() && args->junit.empty() && args->md.empty() &&
        args->openmetrics.empty() && args->pushgateway.empty()) {
      std::string text = args->json ? reports::render::RunJson(*data) + "\n"
                                    : reports::render::RenderTextSummary(*data);
      std::fwrite(text.data(), 1, text.size(), stdout);
      *exit_code = 0;
      return;
    }
    bool ok = true;
    if (!args->html.empty()) {
      reports::render::HtmlOptions html_options;
      html_options.db_path = args->db;  // for the replay command in the page's header
      ok &=
          WriteOutput("HTML report", args->html, reports::render::RenderHtml(*data, html_options));
    }
    if (!args->junit.empty())
      ok &= WriteOutput("JUnit XML", args->junit,
                        reports::render::RenderJUnit(*data, {args->db, args->html}));
    if (!args->md.empty())
      ok &= WriteOutput("Markdown summary", args->md, reports::render::RenderMarkdown(*data));
    if (!args->openmetrics.empty() || !args->pushgateway.empty()) {
      const std::string text = reports::render::RenderOpenMetrics(*data);
      if (!args->openmetrics.empty()) ok &= WriteOutput("metrics", args->openmetrics, text);
      if (!args->pushgateway.empty()) ok &= Push(args->pushgateway, *data, text);
    }
    *exit_code = ok ? 0 : kReportInfra;
  });
}

}  // namespace fl::harness
