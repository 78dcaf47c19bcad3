// `faultline report --html` on a 10-minute run: the time from the command's start to the
// written page (open the database, load the run, render, write), as a user sees it. The run is
// synthetic but full-sized: 8 ranks at 100 iterations/s for 10 minutes (480,000 samples), a
// fault every 30 s with its CCL events, metrics and verdicts from reports/metrics, written into
// a real SQLite file. The figure is the median over the repetitions; the load, render and
// write phases are also timed in-process for the breakdown.
//
//   bench_report_render [--minutes M] [--ranks R] [--rate IT_PER_S] [--runs N] [--dir DIR]
//                       [--keep]   (leave the database and the page in DIR)
//   the 1-hour, 64-rank case (issue 16: <= 5 s, <= 512 MiB):
//   bench_report_render --minutes 60 --ranks 64 --rate 10    (2,304,000 samples)
// The command's peak RSS (ru_maxrss from wait4) is printed beside its time.
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "common/clock.h"
#include "common/file_util.h"
#include "reports/render/html.h"
#include "reports/store/store.h"
#include "tests/reports/render/helpers.h"
#include "tests/reports/render/synthetic_run.h"

namespace fl::reports {
namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double MsSince(Nanos start) { return static_cast<double>(MonoNowNs() - start) / 1e6; }

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "bench_report_render: %s\n", what.c_str());
  std::exit(1);
}

}  // namespace
}  // namespace fl::reports

int main(int argc, char** argv) {
  using namespace fl;
  using namespace fl::reports;
  double minutes = 10, rate = 100;
  int ranks = 8, runs = 5;
  std::string dir = std::filesystem::temp_directory_path().string();
  bool keep = false;
  CLI::App app{"faultline report --html on a synthetic 10-minute run: median wall time"};
  app.add_option("--minutes", minutes, "run length")->capture_default_str();
  app.add_option("--ranks", ranks, "ranks")->capture_default_str();
  app.add_option("--rate", rate, "iterations per second per rank")->capture_default_str();
  app.add_option("--runs", runs, "repetitions (the median is reported)")->capture_default_str();
  app.add_option("--dir", dir, "where the database and the page go")->capture_default_str();
  app.add_flag("--keep", keep, "leave the database and the page in --dir");
  CLI11_PARSE(app, argc, argv);

  testing::SyntheticRunSpec spec;
  spec.run_id = "bench-report-render";
  spec.ranks = ranks;
  spec.duration_s = minutes * 60;
  spec.iterations_per_s = rate;
  spec.fault_every_s = 30;
  spec.first_fault_s = 15;
  const std::string base = dir + "/fl_bench_report_" + std::to_string(getpid());
  const std::string db = base + ".db", html = base + ".html";
  auto cleanup = [&] {
    for (const char* ext : {".db", ".db-wal", ".db-shm", ".html", ".log"})
      std::filesystem::remove(base + ext);
  };
  cleanup();

  Nanos t = MonoNowNs();
  RunData run = testing::MakeSyntheticRun(spec);
  Status st = testing::WriteRun(db, run);
  if (!st.ok()) Die(st.ToUserString());
  std::printf(
      "synthetic run: %.0f min, %d ranks, %zu samples, %zu events, %zu faults, "
      "%zu verdicts; database %.1f MiB (written in %.1f s)\n",
      minutes, ranks, run.samples.size(), run.events.size(), run.faults.size(), run.verdicts.size(),
      static_cast<double>(std::filesystem::file_size(db)) / (1 << 20), MsSince(t) / 1000);
  run = RunData{};

  // The command, as a user runs it.
  const std::string faultline = SelfExeDir() + "/faultline";
  std::vector<double> cmd_ms, cmd_cpu_ms, cmd_rss_mib;
  for (int i = 0; i < runs; ++i) {
    t = MonoNowNs();
    auto res = testing::RunProcess({faultline, "report", spec.run_id, "--db", db, "--html", html},
                                   base + ".log", std::chrono::seconds(120));
    double ms = MsSince(t);
    if (res.exit_code != 0) Die(faultline + " report failed; see " + base + ".log");
    cmd_ms.push_back(ms);
    cmd_cpu_ms.push_back(res.cpu_s * 1000);
    cmd_rss_mib.push_back(static_cast<double>(res.max_rss_kib) / 1024);
  }

  // The phases, in-process.
  std::vector<double> load_ms, render_ms, write_ms;
  size_t page_bytes = 0;
  for (int i = 0; i < runs; ++i) {
    t = MonoNowNs();
    auto store = Store::Open(db, {.create = false});
    if (!store.ok()) Die(store.status().ToUserString());
    auto data = (*store)->LoadRun(spec.run_id);
    if (!data.ok()) Die(data.status().ToUserString());
    load_ms.push_back(MsSince(t));
    t = MonoNowNs();
    std::string page = render::RenderHtml(*data);
    render_ms.push_back(MsSince(t));
    t = MonoNowNs();
    if (Status w = WriteFileAtomic(html, page); !w.ok()) Die(w.ToUserString());
    write_ms.push_back(MsSince(t));
    page_bytes = page.size();
  }
  std::printf(
      "faultline report --html, median of %d: %.0f ms wall (min %.0f, max %.0f), "
      "%.0f ms CPU, peak RSS %.0f MiB (max %.0f)\n",
      runs, Median(cmd_ms), *std::min_element(cmd_ms.begin(), cmd_ms.end()),
      *std::max_element(cmd_ms.begin(), cmd_ms.end()), Median(cmd_cpu_ms), Median(cmd_rss_mib),
      *std::max_element(cmd_rss_mib.begin(), cmd_rss_mib.end()));
  std::printf("in-process medians: load %.0f ms, render %.0f ms, write %.0f ms; page %.0f KiB\n",
              Median(load_ms), Median(render_ms), Median(write_ms),
              static_cast<double>(page_bytes) / 1024);
  if (keep) {
    std::printf("kept %s and %s\n", db.c_str(), html.c_str());
  } else {
    cleanup();
  }
  return 0;
}
