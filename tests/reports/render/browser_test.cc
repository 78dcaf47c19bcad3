// The HTML report in a real browser: `faultline report --html` output is opened in headless
// Chromium from file://, and the page's own script reports what it drew into the DOM
// (#fl-render-status, see reports/render/web/report.js), read back with --dump-dom. A
// screenshot is saved next to the test binaries; FL_UPDATE_DOCS_SCREENSHOT=1 copies it to
// docs/img/report.png (the picture in docs/reports.md).
//
// Chromium is a Debian package that scripts/setup.sh installs: when it is missing the test
// fails and says so instead of skipping. FL_CHROMIUM names another browser binary.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "tests/reports/render/helpers.h"
#include "tests/reports/render/synthetic_run.h"
#include "tests/reports/temp_dir.h"

namespace fl::reports::render {
namespace {

using testing::MakeSyntheticRun;
using testing::ReadAll;
using testing::SyntheticRunSpec;

std::string FindChromium() {
  if (const char* env = std::getenv("FL_CHROMIUM"); env && *env) return env;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');)
    for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
      std::string p = dir + "/" + name;
      if (access(p.c_str(), X_OK) == 0) return p;
    }
  return "";
}

class Browser {
 public:
  explicit Browser(std::string binary) : binary_(std::move(binary)) {}

  // Runs the browser headless on a file:// URL with extra arguments; its output goes to log.
  testing::ProcessResult Run(const std::string& html, const std::vector<std::string>& extra,
                             const std::string& log) {
    std::vector<std::string> argv = {binary_,
                                     "--headless",
                                     "--no-sandbox",  // needed as root (CI); harmless otherwise
                                     "--disable-gpu",
                                     "--disable-dev-shm-usage",
                                     "--no-first-run",
                                     "--no-default-browser-check",
                                     "--disable-extensions",
                                     "--hide-scrollbars",
                                     "--force-device-scale-factor=1",
                                     "--enable-logging=stderr",
                                     "--v=0",
                                     "--user-data-dir=" + profile_.File("profile"),
                                     "--virtual-time-budget=10000"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back("file://" + html);
    return testing::RunProcess(argv, log, std::chrono::seconds(90));
  }

 private:
  std::string binary_;
  testing::TempDir profile_;  // a throwaway --user-data-dir, removed with the test
};

// The attributes of <div id="fl-render-status" ...> in a DOM dump.
std::map<std::string, std::string> RenderStatus(const std::string& dom) {
  std::map<std::string, std::string> attrs;
  size_t p = dom.find("id=\"fl-render-status\"");
  if (p == std::string::npos) return attrs;
  size_t b = dom.rfind('<', p), e = dom.find('>', p);
  std::string tag = dom.substr(b, e - b);
  std::regex re("([a-z-]+)=\"([^\"]*)\"");
  for (std::sregex_iterator it(tag.begin(), tag.end(), re), end; it != end; ++it)
    attrs[(*it)[1]] = (*it)[2];
  // The element's text: the script errors, if any.
  size_t close = dom.find("</div>", e);
  attrs["text"] = dom.substr(e + 1, close - e - 1);
  return attrs;
}

std::vector<long> Numbers(const std::string& list) {
  std::vector<long> out;
  std::regex re("-?[0-9]+");
  for (std::sregex_iterator it(list.begin(), list.end(), re), end; it != end; ++it)
    out.push_back(std::stol(it->str()));
  return out;
}

// Width and height from a PNG's IHDR chunk; {0, 0} when it is not a PNG.
std::pair<uint32_t, uint32_t> PngSize(const std::string& png) {
  if (png.size() < 24 || png.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) return {0, 0};
  auto be32 = [&](size_t o) {
    return (uint32_t(uint8_t(png[o])) << 24) | (uint32_t(uint8_t(png[o + 1])) << 16) |
           (uint32_t(uint8_t(png[o + 2])) << 8) | uint32_t(uint8_t(png[o + 3]));
  };
  return {be32(16), be32(20)};
}

// Console errors the browser logged (uncaught exceptions, console.error), from its stderr.
std::vector<std::string> ConsoleErrors(const std::string& log) {
  std::vector<std::string> out;
  std::stringstream in(log);
  for (std::string line; std::getline(in, line);)
    if (line.find("CONSOLE") != std::string::npos &&
        (line.find("Uncaught") != std::string::npos || line.find(":ERROR:") != std::string::npos))
      out.push_back(line);
  return out;
}

std::string Report(const testing::TempDir& dir, const RunData& run) {
  const std::string db = dir.File("results.db"), html = dir.File("report.html");
  REQUIRE(testing::WriteRun(db, run).ok());
  auto res = testing::RunProcess({FL_FAULTLINE_BIN, "report", "latest", "--db", db, "--html", html},
                                 dir.File("report.log"), std::chrono::seconds(60));
  INFO(ReadAll(dir.File("report.log")));
  REQUIRE(res.exit_code == 0);
  return html;
}

std::string ChromiumOrFail() {
  std::string binary = FindChromium();
  if (binary.empty())
    FAIL(
        "chromium not found: scripts/setup.sh installs it (Debian package 'chromium'); "
        "FL_CHROMIUM=/path/to/browser names another");
  return binary;
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
  CHECK(status["data-charts"] == "2");
  // Both charts have pixels of their series' colours in their plot areas.
  std::vector<long> series = Numbers(status["data-series-pixels"]);
  REQUIRE(series.size() == 2);
  CHECK(series[0] > 1000);  // 8 rank lines across the chart
  CHECK(series[1] > 50);    // points of detection, recovery, ... per fault
  // Every fault window is shaded, each with a visible area.
  CHECK(status["data-fault-windows"] == std::to_string(run.faults.size()));
  std::vector<long> shaded = Numbers(status["data-fault-pixels"]);
  REQUIRE(shaded.size() == run.faults.size());
  for (long px : shaded) CHECK(px > 1000);
  // One marker per event (fault_detected, failover_done, path_restored per rank and fault).
  CHECK(status["data-markers"] == std::to_string(run.events.size()));
  // The legend names the CCL event kinds, from the page's data.
  CHECK(dom.find("fault_detected (24)") != std::string::npos);
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

}  // namespace
}  // namespace fl::reports::render
