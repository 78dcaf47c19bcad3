// The HTML report in a real browser: `faultline report --html` output is opened in headless
// Chromium from file://, and the page's own script reports what it drew into the DOM
// (#fl-render-status, see reports/render/web/report.js), read back with --dump-dom. A
// screenshot is saved next to the test binaries; FL_UPDATE_DOCS_SCREENSHOT=1 copies it to
// docs/img/report.png (the picture in docs/reports.md).
//
// Chromium is a Debian package that scripts/setup.sh installs: when it is missing the test
// fails and says so instead of skipping. FL_CHROMIUM names another browser binary.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "reports/render/html.h"
#include "tests/reports/render/browser.h"
#include "tests/reports/render/helpers.h"
#include "tests/reports/render/synthetic_run.h"
#include "tests/reports/temp_dir.h"

namespace fl::reports::render {
namespace {

using testing::MakeSyntheticRun;
using testing::ReadAll;
using testing::SyntheticRunSpec;

std::string Report(const testing::TempDir& dir, const RunData& run) {
  const std::string db = dir.File("results.db"), html = dir.File("report.html");
  REQUIRE(testing::WriteRun(db, run).ok());
  auto res = testing::RunProcess({FL_FAULTLINE_BIN, "report", "latest", "--db", db, "--html", html},
                                 dir.File("report.log"), std::chrono::seconds(60));
  INFO(ReadAll(dir.File("report.log")));
  REQUIRE(res.exit_code == 0);
  return html;
}

// "job:123,throughput:456" -> {job: 123, throughput: 456}.
std::map<std::string, long> SeriesPixels(const std::string& list) {
  std::map<std::string, long> out;
  std::regex re("([a-z_0-9]+):(-?[0-9]+)");
  for (std::sregex_iterator it(list.begin(), list.end(), re), end; it != end; ++it)
    out[(*it)[1]] = std::stol((*it)[2]);
  return out;
}

// What the page drew, from <div id="fl-drawn"> in a DOM dump (report.js: the NIC chart's data,
// the fault windows, the timeline bars); null when absent or not JSON.
nlohmann::json Drawn(const std::string& dom) {
  const std::string open = "<div id=\"fl-drawn\" hidden=\"\">";
  size_t p = dom.find(open);
  if (p == std::string::npos) return nullptr;
  p += open.size();
  std::string text = dom.substr(p, dom.find("</div>", p) - p);
  // Text as serialized: &amp; &lt; &gt; (and &nbsp;, which JSON.stringify never writes).
  std::string plain;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text.compare(i, 5, "&amp;") == 0) {
      plain += '&';
      i += 4;
    } else if (text.compare(i, 4, "&lt;") == 0) {
      plain += '<';
      i += 3;
    } else if (text.compare(i, 4, "&gt;") == 0) {
      plain += '>';
      i += 3;
    } else {
      plain += text[i];
    }
  }
  auto j = nlohmann::json::parse(plain, nullptr, false);
  return j.is_discarded() ? nlohmann::json(nullptr) : j;
}

// The NIC chart shows a NIC fault's failover: for every fault whose target "HOST/NIC..." has a
// drawn series HOST.NIC, that series falls to about zero inside the fault's window (from
// `settle_s` after it took effect to its revert: under 5% of its level before the fault), the
// host's other NICs together carry more than before (1.3x), and after the revert (from
// `failback_s` after it to the next fault or the run's end) the NIC and the others all carry
// traffic again (over 30% of their level before). Returns the problems found (empty: shown),
// and how many faults were checked.
struct NicFailoverCheck {
  std::vector<std::string> problems;
  size_t faults_checked = 0;
};
NicFailoverCheck CheckNicFailover(const nlohmann::json& drawn, double settle_s = 1.0,
                                  double failback_s = 2.0) {
  NicFailoverCheck out;
  auto problem = [&](std::string p) { out.problems.push_back(std::move(p)); };
  if (!drawn.is_object() || !drawn["nics"].is_object()) {
    problem("the page drew no NIC chart");
    return out;
  }
  const auto& nics = drawn["nics"];
  const auto& x = nics["x"];
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < nics["labels"].size(); ++i)
    index[nics["labels"][i].get<std::string>()] = i;
  // Mean of a series (or the sum of several) over the bins whose centre is in [a, b).
  auto mean = [&](const std::vector<size_t>& series, double a, double b) -> std::optional<double> {
    double sum = 0;
    size_t n = 0;
    for (size_t k = 0; k < x.size(); ++k) {
      double t = x[k].get<double>();
      if (t < a || t >= b) continue;
      double v = 0;
      bool any = false;
      for (size_t s : series)
        if (nics["y"][s][k].is_number()) v += nics["y"][s][k].get<double>(), any = true;
      if (!any) continue;
      sum += v;
      ++n;
    }
    if (n == 0) return std::nullopt;
    return sum / static_cast<double>(n);
  };
  const auto& faults = drawn["faults"];
  double end_s = x.empty() ? 0 : x.back().get<double>() + 1;
  for (size_t f = 0; f < faults.size(); ++f) {
    const auto& fault = faults[f];
    // "h1/nic0" (the synthetic runs) or "h1.nic0" (the lab's NIC injectors).
    std::string target = fault["target"].get<std::string>();
    size_t slash = target.find_first_of("/.");
    if (slash == std::string::npos) continue;
    std::string host = target.substr(0, slash);
    std::string nic = target.substr(slash + 1);
    nic = nic.substr(0, nic.find_first_of(" /."));
    auto it = index.find(host + "." + nic);
    if (it == index.end() || !fault["reverted"].is_number()) continue;
    std::vector<size_t> others;
    for (const auto& [label, i] : index)
      if (label.rfind(host + ".", 0) == 0 && i != it->second) others.push_back(i);
    const std::string id = fault["id"].get<std::string>();
    if (others.empty()) {
      problem(id + ": " + host + " has no other NIC to fail over to");
      continue;
    }
    ++out.faults_checked;
    const double req = fault["requested"].get<double>();
    const double eff = fault["effective"].is_number() ? fault["effective"].get<double>() : req;
    const double rev = fault["reverted"].get<double>();
    double before_from = 0, after_to = end_s;
    if (f > 0 && faults[f - 1]["reverted"].is_number())
      before_from = faults[f - 1]["reverted"].get<double>() + failback_s;
    if (f + 1 < faults.size() && faults[f + 1]["requested"].is_number())
      after_to = faults[f + 1]["requested"].get<double>();
    const std::vector<size_t> own = {it->second};
    auto b_own = mean(own, before_from, req), b_oth = mean(others, before_from, req);
    auto d_own = mean(own, eff + settle_s, rev), d_oth = mean(others, eff + settle_s, rev);
    auto a_own = mean(own, rev + failback_s, after_to),
         a_oth = mean(others, rev + failback_s, after_to);
    if (!b_own || !b_oth || !d_own || !d_oth || !a_own || !a_oth) {
      problem(id + ": the NIC series do not cover before, during and after the fault");
      continue;
    }
    auto num = [](double v) { return std::to_string(v); };
    if (!(*b_own > 0)) problem(id + ": " + it->first + " carried nothing before the fault");
    if (!(*d_own < 0.05 * *b_own))
      problem(id + ": " + it->first + " carried " + num(*d_own) +
              " during the fault (before: " + num(*b_own) + ")");
    if (!(*d_oth > 1.3 * *b_oth))
      problem(id + ": the other NICs of " + host + " carried " + num(*d_oth) +
              " during the fault, not more than before (" + num(*b_oth) + ")");
    if (!(*a_own > 0.3 * *b_own))
      problem(id + ": " + it->first + " carried " + num(*a_own) +
              " after the revert (before: " + num(*b_own) + ")");
    if (!(*a_oth > 0.3 * *b_oth))
      problem(id + ": the other NICs of " + host + " carried " + num(*a_oth) +
              " after the revert (before: " + num(*b_oth) + ")");
  }
  return out;
}

TEST_CASE("HTML report draws its charts in headless Chromium from file://", "[integration]") {
  Browser browser(ChromiumOrFail());
  testing::TempDir dir;
  SyntheticRunSpec spec;
  spec.duration_s = 100;  // 3 faults at 15 s, 45 s, 75 s
  spec.iterations_per_s = 50;
  RunData run = MakeSyntheticRun(spec);
  REQUIRE(run.faults.size() == 3);
  std::string html = Report(dir, run);

  auto res = browser.Run(html, {"--dump-dom"}, dir.File("dom.html"));
  std::string dom = ReadAll(dir.File("dom.html"));
  INFO(dom.substr(0, 4000));
  REQUIRE_FALSE(res.timed_out);
  REQUIRE(res.exit_code == 0);
  auto status = RenderStatus(dom);
  INFO("status text: " << status["text"]);
  CHECK(status["data-errors"] == "0");
  CHECK(status["data-state"] == "drawn");
  // Every chart has pixels of its series' colours in its plot area. (No NIC chart: the store
  // this test writes through keeps no NIC counters yet; the next test draws one.)
  auto series = SeriesPixels(status["data-series-pixels"]);
  CHECK(series["job"] > 500);          // the job's line across the chart
  CHECK(series["throughput"] > 1000);  // 8 rank lines across the chart
  CHECK(series["timeline"] > 200);     // a bar per fault
  CHECK(series["faults"] > 50);        // points of detection, recovery, ... per fault
  CHECK(status["data-charts"] == std::to_string(series.size()));
  CHECK(status["data-levels"] == std::to_string(1 + run.faults.size()));  // baseline, degraded
  CHECK(std::stol(status["data-timeline-bars"]) >= static_cast<long>(3 * run.faults.size()));
  // Every fault window is shaded, each with a visible area.
  CHECK(status["data-fault-windows"] == std::to_string(run.faults.size()));
  std::vector<long> shaded = Numbers(status["data-fault-pixels"]);
  REQUIRE(shaded.size() == run.faults.size());
  for (long px : shaded) CHECK(px > 1000);
  // One marker per event (fault_detected, failover_done, path_restored per rank and fault).
  CHECK(status["data-markers"] == std::to_string(run.events.size()));
  // The legend names the CCL event kinds, from the page's data.
  CHECK(dom.find("fault_detected (24)") != std::string::npos);
  CHECK(dom.find("</span>fault window (request to revert)") != std::string::npos);
  CHECK(ConsoleErrors(ReadAll(dir.File("dom.html"))).empty());

  // The screenshot for the docs.
  const std::string shot = dir.File("report.png");
  res =
      browser.Run(html, {"--screenshot=" + shot, "--window-size=1280,1500"}, dir.File("shot.log"));
  INFO(ReadAll(dir.File("shot.log")));
  REQUIRE(res.exit_code == 0);
  CHECK(ConsoleErrors(ReadAll(dir.File("shot.log"))).empty());
  std::string png = ReadAll(shot);
  CHECK(PngSize(png) == std::pair<uint32_t, uint32_t>{1280, 1500});
  CHECK(png.size() > 30 * 1024);  // a blank page compresses to a few KiB
  std::filesystem::copy_file(shot, FL_TEST_OUTPUT_DIR "/report_screenshot.png",
                             std::filesystem::copy_options::overwrite_existing);
  const std::string docs = FL_SOURCE_DIR "/docs/img/report.png";
  if (const char* u = std::getenv("FL_UPDATE_DOCS_SCREENSHOT"); u && std::string(u) == "1") {
    std::filesystem::create_directories(FL_SOURCE_DIR "/docs/img");
    std::filesystem::copy_file(shot, docs, std::filesystem::copy_options::overwrite_existing);
  }
  // The committed picture is one of this page (same size), not of an older layout's.
  CHECK(PngSize(ReadAll(docs)) == PngSize(png));
}

TEST_CASE("HTML report: a run without samples says so in its sample charts", "[integration]") {
  Browser browser(ChromiumOrFail());
  testing::TempDir dir;
  SyntheticRunSpec spec;
  spec.duration_s = 40;
  RunData run = MakeSyntheticRun(spec);
  run.samples.clear();
  std::string html = Report(dir, run);
  auto res = browser.Run(html, {"--dump-dom"}, dir.File("dom.html"));
  std::string dom = ReadAll(dir.File("dom.html"));
  INFO(dom.substr(0, 4000));
  REQUIRE(res.exit_code == 0);
  for (const char* chart : {"chart-job", "chart-throughput"})
    CHECK(dom.find("<div id=\"" + std::string(chart) +
                   "\" class=\"chart\">No samples stored for this run.</div>") !=
          std::string::npos);
  // The throughput chart was not drawn, so neither was its legend (whose text is in the
  // page's script, hence the swatch before it).
  CHECK(dom.find("</span>fault window (request to revert)") == std::string::npos);
  CHECK(ConsoleErrors(dom).empty());
}

TEST_CASE("HTML report: markup from the database stays text in the browser", "[integration]") {
  Browser browser(ChromiumOrFail());
  testing::TempDir dir;
  SyntheticRunSpec spec;
  spec.hostile = true;
  spec.duration_s = 40;
  std::string html = Report(dir, MakeSyntheticRun(spec));
  auto res = browser.Run(html, {"--dump-dom"}, dir.File("dom.html"));
  std::string dom = ReadAll(dir.File("dom.html"));
  REQUIRE(res.exit_code == 0);
  auto status = RenderStatus(dom);
  INFO("status text: " << status["text"]);
  CHECK(status["data-state"] == "drawn");
  CHECK(status["data-errors"] == "0");
  // The injected elements do not exist; their text does.
  CHECK(dom.find("<div id=\"pwned\"") == std::string::npos);
  CHECK(dom.find("<img src=\"x\"") == std::string::npos);
  CHECK(dom.find("pwned</body>") == std::string::npos);
  CHECK(dom.find("&lt;div id=\"pwned\"&gt;") != std::string::npos);
  CHECK(ConsoleErrors(dom).empty());
}

// Opens a report page and checks what issue 17 asks of it: drawn without errors, timeline bars
// for every fault, the NIC chart showing each NIC fault's failover and failback.
void CheckReportPage(Browser& browser, const testing::TempDir& dir, const std::string& html,
                     size_t faults) {
  auto res = browser.Run(html, {"--dump-dom"}, dir.File("dom.html"));
  std::string dom = ReadAll(dir.File("dom.html"));
  INFO(dom.substr(0, 4000));
  REQUIRE_FALSE(res.timed_out);
  REQUIRE(res.exit_code == 0);
  auto status = RenderStatus(dom);
  INFO("status text: " << status["text"]);
  CHECK(status["data-errors"] == "0");
  CHECK(status["data-state"] == "drawn");
  CHECK(ConsoleErrors(dom).empty());
  auto series = SeriesPixels(status["data-series-pixels"]);
  CHECK(series["nics"] > 1000);
  CHECK(series["timeline"] > 100);
  nlohmann::json drawn = Drawn(dom);
  REQUIRE(drawn.is_object());
  // Timeline: every fault has its bars from 0 to the revert, each that lasts at least a pixel
  // wide (two milestones at the same time make a bar of no length: failed back at once).
  REQUIRE(drawn["timeline"].size() == faults);
  for (const auto& row : drawn["timeline"]) {
    INFO(row.dump());
    size_t visible = 0;
    bool reverted = false;
    for (const auto& bar : row["bars"]) {
      if (bar["to_ms"].get<double>() > bar["from_ms"].get<double>()) {
        CHECK(bar["px"].get<double>() >= 1);
        visible += bar["px"].get<double>() >= 1;
      }
      reverted = reverted || bar["kind"] == "reverted";
    }
    CHECK(visible >= 2);
    CHECK(reverted);
  }
  CHECK(std::stol(status["data-timeline-bars"]) >= static_cast<long>(2 * faults));
  NicFailoverCheck nic = CheckNicFailover(drawn);
  for (const auto& p : nic.problems) FAIL_CHECK(p);
  CHECK(nic.faults_checked > 0);
}

TEST_CASE("HTML report: per-NIC traffic shows the failover, timeline bars drawn", "[integration]") {
  Browser browser(ChromiumOrFail());
  testing::TempDir dir;
  SyntheticRunSpec spec;
  spec.duration_s = 100;  // faults on h0/nic0, h1/nic0, h2/nic0 at 15 s, 45 s, 75 s, 8 s each
  RunData run = MakeSyntheticRun(spec);
  REQUIRE(run.faults.size() == 3);
  REQUIRE_FALSE(run.nics.empty());
  // Rendered directly: the results store this branch builds against keeps no NIC counters.
  const std::string html = dir.File("report.html");
  {
    std::ofstream out(html, std::ios::binary);
    out << RenderHtml(run);
  }
  CheckReportPage(browser, dir, html, run.faults.size());
  // The whole page, to look at: build/tests/report_nics_screenshot.png.
  const std::string shot = dir.File("nics.png");
  auto shot_res =
      browser.Run(html, {"--screenshot=" + shot, "--window-size=1280,2600"}, dir.File("shot.log"));
  REQUIRE(shot_res.exit_code == 0);
  CHECK(PngSize(ReadAll(shot)) == std::pair<uint32_t, uint32_t>{1280, 2600});
  std::filesystem::copy_file(shot, FL_TEST_OUTPUT_DIR "/report_nics_screenshot.png",
                             std::filesystem::copy_options::overwrite_existing);

  // The check itself sees a NIC that keeps its traffic during the fault.
  for (auto& s : run.nics)
    if (s.host == "h1") s.rx_bytes = s.tx_bytes = static_cast<uint64_t>(s.wall_ns / 10'000);
  {
    std::ofstream out(html, std::ios::binary);
    out << RenderHtml(run);
  }
  auto res = browser.Run(html, {"--dump-dom"}, dir.File("dom2.html"));
  REQUIRE(res.exit_code == 0);
  NicFailoverCheck bad = CheckNicFailover(Drawn(ReadAll(dir.File("dom2.html"))));
  CHECK(bad.faults_checked == 3);
  REQUIRE(bad.problems.size() >= 1);
  CHECK(bad.problems.front().rfind("f1: h1.nic0 carried", 0) == 0);
}

TEST_CASE("faultline history --html draws its charts with uPlot in headless Chromium",
          "[integration]") {
  Browser browser(ChromiumOrFail());
  testing::TempDir dir;
  const std::string db = dir.File("results.db");
  for (int i = 0; i < 4; ++i) {
    SyntheticRunSpec spec;
    spec.run_id = "20261130-04000" + std::to_string(i) + "-synth";
    spec.duration_s = 60;                         // f0 at 15 s, f1 at 45 s
    spec.max_detection_ms = i == 2 ? 100 : 1000;  // run 2 fails: f1 detected after 160 ms
    spec.detect_ms = 40 + 10 * i;
    RunData run = MakeSyntheticRun(spec);
    run.run.start_wall_ns += testing::Sec(3600.0 * i);
    if (i == 3)  // run 3 has no detection of f1: a gap
      std::erase_if(run.metrics, [](const MetricRecord& m) {
        return m.fault_id == "f1" && m.name == "detection_latency_ms";
      });
    REQUIRE(testing::WriteRun(db, run).ok());
  }
  const std::string html = dir.File("history.html");
  auto cli = testing::RunProcess({FL_FAULTLINE_BIN, "history", "nic_flap_synthetic", "--db", db,
                                  "--metric", "detection_latency_ms", "--html", html},
                                 dir.File("history.log"), std::chrono::seconds(60));
  INFO(ReadAll(dir.File("history.log")));
  REQUIRE(cli.exit_code == 0);
  auto res = browser.Run(html, {"--dump-dom"}, dir.File("dom.html"));
  std::string dom = ReadAll(dir.File("dom.html"));
  INFO(dom.substr(0, 3000));
  REQUIRE(res.exit_code == 0);
  auto status = RenderStatus(dom);
  INFO("status text: " << status["text"]);
  CHECK(status["data-errors"] == "0");
  CHECK(status["data-state"] == "drawn");
  CHECK(status["data-charts"] == "2");  // f0/ and f1/detection_latency_ms
  auto series = SeriesPixels(status["data-series-pixels"]);
  CHECK(series["hist0"] > 100);
  CHECK(series["hist1"] > 100);
  CHECK(status["data-points"] == "7");
  CHECK(status["data-failed-points"] == "2");
  CHECK(status["data-gaps"] == "1");
  CHECK(ConsoleErrors(dom).empty());
}

// The same check on the main job's report (README's Quick start: the default scenario on the
// local lab, root): run it, write its HTML report, and see in Chromium nic0's traffic fall to
// zero under the fault while nic1's rises, both back after the revert, and the timeline bars.
// FL_REPORT_HTML=/path/report.html with FL_REPORT_FAULTS=N checks that report instead.
TEST_CASE("the main job's HTML report shows the NIC failover and the timeline in Chromium",
          "[.root][integration]") {
  testing::TempDir dir;
  std::string html;
  size_t faults = 1;
  const char* path = std::getenv("FL_REPORT_HTML");
  if (path != nullptr && *path != '\0') {
    const char* n = std::getenv("FL_REPORT_FAULTS");
    if (n == nullptr) FAIL("FL_REPORT_HTML wants FL_REPORT_FAULTS=N beside it");
    html = std::filesystem::absolute(path).string();
    faults = static_cast<size_t>(std::stoul(n));
  } else {
    const std::string db = dir.File("results.db");
    html = dir.File("report.html");
    auto run = testing::RunProcess(
        {FL_FAULTLINE_BIN, "run", std::string(FL_SOURCE_DIR) + "/configs/scenarios/nic_flap.yaml",
         "--lab", std::string(FL_SOURCE_DIR) + "/configs/labs/rail4.yaml", "--db", db},
        dir.File("run.log"), std::chrono::seconds(240));
    INFO(ReadAll(dir.File("run.log")));
    REQUIRE(run.exit_code == 0);
    auto rep =
        testing::RunProcess({FL_FAULTLINE_BIN, "report", "latest", "--db", db, "--html", html},
                            dir.File("report.log"), std::chrono::seconds(60));
    INFO(ReadAll(dir.File("report.log")));
    REQUIRE(rep.exit_code == 0);
  }
  Browser browser(ChromiumOrFail());
  CheckReportPage(browser, dir, html, faults);
  if (path != nullptr && *path != '\0') return;
  // The same run through `faultline serve`: on the overview, linking to its page, which draws
  // the same charts; in the API; /metrics passes promtool.
  ServeProcess serve(dir.File("results.db"), dir.path());
  const std::string base = "http://127.0.0.1:" + std::to_string(serve.port);
  auto res = browser.Run(base + "/", {"--dump-dom"}, dir.File("overview.html"));
  REQUIRE(res.exit_code == 0);
  const std::string overview = ReadAll(dir.File("overview.html"));
  INFO(overview.substr(0, 3000));
  const std::regex link("href=\"/runs/([A-Za-z0-9_-]+)\"");
  std::smatch m;
  REQUIRE(std::regex_search(overview, m, link));
  const std::string run_id = m[1];
  CHECK(overview.find("data-state=\"new_failure\"") == std::string::npos);  // it passed
  CHECK(ConsoleErrors(overview).empty());
  res = browser.Run(base + "/runs/" + run_id, {"--dump-dom"}, dir.File("served.html"));
  REQUIRE(res.exit_code == 0);
  auto status = RenderStatus(ReadAll(dir.File("served.html")));
  CHECK(status["data-state"] == "drawn");
  CHECK(status["data-errors"] == "0");
  CHECK(status["data-fault-windows"] == "1");
  CHECK(ConsoleErrors(ReadAll(dir.File("served.html"))).empty());
  const std::string api =
      HttpGet(serve.port, "GET /api/v1/runs?limit=5 HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(api.find(" 200 ") != std::string::npos);
  CHECK(api.find("\"run_id\": \"" + run_id + "\"") != std::string::npos);
  const std::string metrics = HttpGet(serve.port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  const size_t body = metrics.find("\r\n\r\n");
  REQUIRE(body != std::string::npos);
  { std::ofstream(dir.File("metrics.txt")) << metrics.substr(body + 4); }
  auto prom = testing::RunProcess(
      {"/bin/sh", "-c", "exec /usr/bin/promtool check metrics < '" + dir.File("metrics.txt") + "'"},
      dir.File("promtool.log"), std::chrono::seconds(30));
  INFO(ReadAll(dir.File("promtool.log")) + metrics);
  CHECK(prom.exit_code == 0);
  // Its cluster is the coordinator host's name ($FAULTLINE_CLUSTER, --tag cluster=...).
  CHECK(std::regex_search(
      metrics,
      std::regex(
          "faultline_night_scenarios\\{cluster=\"[^\"]+\",suite=\"\",state=\"passed\"\\} 1")));
  CHECK(serve.StopAndWait() == 0);
}

}  // namespace
}  // namespace fl::reports::render
