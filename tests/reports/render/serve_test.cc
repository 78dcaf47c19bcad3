// `faultline serve` (reports/serve/results_site.h, harness/cli/serve_cmd.cc): the overview's
// cells from a history of nights ([unit]); the site over a real SQLite store of synthetic runs:
// the API's answers and its 400s for bad parameters (never a 500), /metrics through promtool;
// and the real server process over HTTP, its overview and run pages drawn by headless Chromium
// with no console error ([integration]; screenshots kept as test artefacts next to the test
// binaries).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <functional>
#include <map>
#include <regex>
#include <thread>

#include "common/clock.h"
#include "common/process.h"
#include "reports/analysis/change_points.h"
#include "reports/compare/run_metrics.h"
#include "reports/serve/overview.h"
#include "reports/serve/results_site.h"
#include "tests/reports/render/browser.h"
#include "tests/reports/render/helpers.h"
#include "tests/reports/render/synthetic_run.h"
#include "tests/reports/temp_dir.h"

namespace fl::reports::serve {
namespace {

using nlohmann::json;
using render::Browser;
using render::ChromiumOrFail;
using render::ConsoleErrors;
using render::HttpGet;
using render::PngSize;
using render::RenderStatus;
using render::ServeProcess;

constexpr Nanos kDay = 86400 * kNsPerSec;
const Nanos kNight0 = 1'790'000'000 * kNsPerSec;  // 2026-09-21 (UTC), 12:53

RunRecord Rec(const std::string& id, const std::string& scenario, RunStatus st, int night,
              const std::string& cluster = "rack7", const std::string& suite = "nightly") {
  RunRecord r;
  r.id = id;
  r.scenario_name = scenario;
  r.status = st;
  r.start_wall_ns = kNight0 + night * kDay;
  r.tags = {{"cluster", cluster}, {"suite", suite}};
  return r;
}

TEST_CASE("serve overview: the latest night per cluster x suite, new failures first", "[unit]") {
  // Newest first, as the store lists them.
  std::vector<RunRecord> runs = {
      Rec("r9", "flap", RunStatus::kFailed, 2),  // passed the night before: new failure
      Rec("r8", "kill", RunStatus::kFailed, 2),  // failed the night before too
      Rec("r7", "storm", RunStatus::kPassed, 2),
      Rec("r6", "flap", RunStatus::kPassed, 1),
      Rec("r5", "kill", RunStatus::kAborted, 1),
      Rec("r4", "blackhole", RunStatus::kPassed, 1),  // not run on night 2
      Rec("r3", "flap", RunStatus::kPassed, 0, "rack9"),
  };
  RunRecord topo = Rec("r2", "flap", RunStatus::kError, 0, "", "");
  topo.tags.clear();
  topo.lab_text = "# a topology\nname: rail4  # four hosts\nhosts: 4\n";
  runs.push_back(topo);
  auto g = BuildOverview(runs);
  REQUIRE(g.size() == 3);
  CHECK(g[0].cluster == "rack7");
  CHECK(g[0].suite == "nightly");
  CHECK(g[0].night == NightOf(kNight0 + 2 * kDay));
  REQUIRE(g[0].cells.size() == 4);
  CHECK(g[0].cells[0].scenario == "flap");
  CHECK(g[0].cells[0].state == CellState::kNewFailure);
  CHECK(g[0].cells[0].run_id == "r9");
  CHECK(g[0].cells[0].previous_id == "r6");
  CHECK(g[0].cells[1].scenario == "kill");
  CHECK(g[0].cells[1].state == CellState::kFailed);
  CHECK(g[0].cells[2].scenario == "blackhole");
  CHECK(g[0].cells[2].state == CellState::kNotRun);
  CHECK(g[0].cells[2].run_id.empty());
  CHECK(g[0].cells[3].state == CellState::kPassed);
  // Older nights after; a run without tags is its lab's, outside any suite, and with no
  // earlier run its failure is new.
  CHECK(g[1].cluster == "rack9");
  CHECK(g[2].cluster == "rail4");
  CHECK(g[2].suite.empty());
  CHECK(g[2].cells[0].state == CellState::kNewFailure);
  CHECK(NightOf(kNight0) == "2026-09-21");
}

// A store of synthetic runs: rack7/nightly over two nights (flap passed, then failed), and one
// run outside a suite.
struct Fixture {
  testing::TempDir dir;
  std::string db = dir.File("results.db");
  std::vector<std::string> ids;
  Fixture() {
    int n = 0;
    for (auto [scenario, night, pass] :
         {std::tuple{"flap", 0, true}, {"flap", 1, false}, {"kill", 1, true}}) {
      testing::SyntheticRunSpec spec;
      spec.run_id = "20260921-0" + std::to_string(n++) + "0000-serve";
      spec.scenario = scenario;
      spec.duration_s = 40;
      RunData d = testing::MakeSyntheticRun(spec);
      d.run.status = pass ? RunStatus::kPassed : RunStatus::kFailed;
      d.run.message = pass ? "" : "expectations failed";
      d.run.start_wall_ns += night * kDay;
      if (d.run.end_wall_ns) *d.run.end_wall_ns += night * kDay;
      d.run.tags["cluster"] = "rack7";
      d.run.tags["suite"] = "nightly";
      REQUIRE(testing::WriteRun(db, d).ok());
      ids.push_back(spec.run_id);
    }
  }
};

TEST_CASE(
    "serve site: the API answers from the store - bad parameters are a clear 400, never a 500 - "
    "only GET",
    "[unit]") {
  Fixture fx;
  auto reader = compare::RunReader::Open(fx.db);
  REQUIRE(reader.ok());
  ResultsSite site(**reader, {});
  auto r = site.Handle("GET", "/healthz");
  CHECK(r.status == 200);
  r = site.Handle("GET", "/api/v1/overview");
  REQUIRE(r.status == 200);
  auto j = json::parse(r.body);
  REQUIRE(j["groups"].size() == 1);
  CHECK(j["groups"][0]["cluster"] == "rack7");
  CHECK(j["groups"][0]["counts"]["new_failure"] == 1);
  CHECK(j["groups"][0]["cells"][0]["run_id"] == fx.ids[1]);
  r = site.Handle("GET", "/api/v1/runs?scenario=flap&limit=1");
  REQUIRE(r.status == 200);
  j = json::parse(r.body);
  REQUIRE(j.size() == 1);
  CHECK(j[0]["run_id"] == fx.ids[1]);
  r = site.Handle("GET", "/api/v1/runs?tag=suite%3Dnightly&status=passed");
  REQUIRE(r.status == 200);
  CHECK(json::parse(r.body).size() == 2);
  r = site.Handle("GET", "/api/v1/runs/" + fx.ids[0]);
  REQUIRE(r.status == 200);
  CHECK(json::parse(r.body)["run_id"] == fx.ids[0]);
  r = site.Handle("GET", "/runs/" + fx.ids[0]);
  CHECK(r.status == 200);
  CHECK(r.body.find("id=\"fl-render-status\"") != std::string::npos);
  r = site.Handle("GET", "/");
  CHECK(r.status == 200);
  CHECK(r.body.find("href=\"/runs/" + fx.ids[1] + "\"") != std::string::npos);

  for (const auto& [target, want] : std::vector<std::pair<std::string, std::string>>{
           {"/api/v1/runs?limit=0", "limit: want 1 to 1000"},
           {"/api/v1/runs?limit=12abc", "limit: want 1 to 1000"},
           {"/api/v1/runs?limit=99999999999999999999", "limit: want 1 to 1000"},
           {"/api/v1/runs?status=great", "status: 'great' is not one of"},
           {"/api/v1/runs?tag=nokey", "tag: want KEY=VALUE"},
           {"/api/v1/runs?color=red", "unknown parameter 'color'"},
           {"/api/v1/runs?scenario=%zz", "malformed query string"},
           {"/api/v1/runs/..%2F..%2Fetc", "not a run id"},
           {"/api/v1/runs/%ff%fe", "not a run id"}}) {
    INFO(target);
    r = site.Handle("GET", target);
    CHECK(r.status == 400);
    auto e = json::parse(r.body, nullptr, false);
    REQUIRE(!e.is_discarded());
    CHECK(e["error"].get<std::string>().find(want) != std::string::npos);
  }
  CHECK(site.Handle("GET", "/api/v1/runs/no-such-run").status == 404);
  CHECK(site.Handle("GET", "/runs/no-such-run").status == 404);
  CHECK(site.Handle("GET", "/api/v2/everything").status == 404);
  CHECK(site.Handle("GET", "/nope").status == 404);
  CHECK(site.Handle("POST", "/api/v1/runs").status == 405);
  CHECK(site.Handle("DELETE", "/runs/" + fx.ids[0]).status == 405);
  CHECK(site.Handle("GET", "relative").status == 400);
  CHECK(site.Handle("GET", "/" + std::string(5000, 'a')).status == 400);
}

TEST_CASE("serve site: /metrics passes promtool check metrics", "[integration]") {
  REQUIRE(access("/usr/bin/promtool", X_OK) == 0);  // Debian's prometheus (scripts/setup.sh)
  Fixture fx;
  auto reader = compare::RunReader::Open(fx.db);
  REQUIRE(reader.ok());
  ResultsSite site(**reader, {});
  auto r = site.Handle("GET", "/metrics");
  REQUIRE(r.status == 200);
  CHECK(r.body.find("faultline_night_scenarios{cluster=\"rack7\",suite=\"nightly\",state=\"new_"
                    "failure\"} 1") != std::string::npos);
  const std::string path = fx.dir.File("metrics.txt");
  { std::ofstream(path) << r.body; }
  auto res = testing::RunProcess(
      {"/bin/sh", "-c", "exec /usr/bin/promtool check metrics < '" + path + "'"},
      fx.dir.File("promtool.log"), std::chrono::seconds(30));
  INFO(testing::ReadAll(fx.dir.File("promtool.log")) + r.body);
  CHECK(res.exit_code == 0);
}

TEST_CASE(
    "faultline serve: the overview and a run page drawn by headless Chromium from the server - "
    "no console error - HTTP limits hold",
    "[integration]") {
  Browser browser(ChromiumOrFail());
  Fixture fx;
  ServeProcess serve(fx.db, fx.dir.path());
  const std::string base = "http://127.0.0.1:" + std::to_string(serve.port);

  // The overview: the night's cells, the new failure first, linking to its run.
  auto res = browser.Run(base + "/", {"--dump-dom"}, fx.dir.File("overview.html"));
  REQUIRE(res.exit_code == 0);
  std::string dom = testing::ReadAll(fx.dir.File("overview.html"));
  INFO(dom.substr(0, 3000));
  auto status = RenderStatus(dom);
  CHECK(status["data-groups"] == "1");
  CHECK(status["data-cells"] == "2");
  const size_t first = dom.find("data-state=\"new_failure\"");
  CHECK(first != std::string::npos);
  CHECK(first < dom.find("data-state=\"passed\""));
  CHECK(dom.find("href=\"/runs/" + fx.ids[1] + "\"") != std::string::npos);
  CHECK(ConsoleErrors(dom).empty());

  // The run page, live from the store: the report's charts drawn.
  res = browser.Run(base + "/runs/" + fx.ids[1], {"--dump-dom"}, fx.dir.File("run.html"));
  REQUIRE(res.exit_code == 0);
  dom = testing::ReadAll(fx.dir.File("run.html"));
  status = RenderStatus(dom);
  CHECK(status["data-state"] == "drawn");
  CHECK(status["data-errors"] == "0");
  CHECK(ConsoleErrors(dom).empty());

  // Screenshots, kept as artefacts.
  for (const auto& [page, name] : {std::pair<std::string, std::string>{"/", "serve_overview"},
                                   {"/runs/" + fx.ids[1], "serve_run"}}) {
    const std::string shot = fx.dir.File(name + ".png");
    res = browser.Run(base + page, {"--screenshot=" + shot, "--window-size=1280,900"},
                      fx.dir.File(name + ".log"));
    REQUIRE(res.exit_code == 0);
    CHECK(PngSize(testing::ReadAll(shot)) == std::pair<uint32_t, uint32_t>{1280, 900});
    std::filesystem::copy_file(shot, FL_TEST_OUTPUT_DIR "/" + name + ".png",
                               std::filesystem::copy_options::overwrite_existing);
  }

  // Over the wire: a body is refused, so is a method that writes, and a header too large.
  CHECK(HttpGet(serve.port, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").find(" 200 ") !=
        std::string::npos);
  CHECK(HttpGet(serve.port, "POST /api/v1/runs HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
            .find(" 413 ") != std::string::npos);
  CHECK(HttpGet(serve.port, "PUT /x HTTP/1.1\r\nHost: x\r\n\r\n").find(" 405 ") !=
        std::string::npos);
  const std::string big =
      "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(20000, 'a') + "\r\n\r\n";
  CHECK(HttpGet(serve.port, big).find(" 200 ") == std::string::npos);
  // Still serving after all that.
  CHECK(HttpGet(serve.port, "GET /api/v1/overview HTTP/1.1\r\nHost: x\r\n\r\n").find(" 200 ") !=
        std::string::npos);
  CHECK(serve.StopAndWait() == 0);
}

}  // namespace
}  // namespace fl::reports::serve

namespace fl::reports::serve {
namespace {

TEST_CASE("change points: a step is found at its first night, noise and one wild night are not",
          "[unit]") {
  // 100 +/- 3 for 12 nights, then 150 +/- 3: one change at index 12.
  std::vector<double> step;
  for (int i = 0; i < 24; ++i) step.push_back((i < 12 ? 100 : 150) + ((i * 5) % 7 - 3));
  auto cps = analysis::FindChangePoints(step);
  REQUIRE(cps.size() == 1);
  CHECK(cps[0].index == 12);
  CHECK(cps[0].before == Approx(100).margin(3));
  CHECK(cps[0].after == Approx(150).margin(3));
  CHECK(cps[0].relative == Approx(0.5).margin(0.05));
  // The same noise without the step, and with one night 3x the others (a shared machine).
  std::vector<double> flat;
  for (int i = 0; i < 24; ++i) flat.push_back(100 + ((i * 5) % 7 - 3));
  CHECK(analysis::FindChangePoints(flat).empty());
  flat[9] = 300;
  CHECK(analysis::FindChangePoints(flat).empty());
  // Two steps (up, then back down): both.
  std::vector<double> two = step;
  for (int i = 18; i < 24; ++i) two[static_cast<size_t>(i)] = 100 + (i % 3);
  cps = analysis::FindChangePoints(two);
  REQUIRE(cps.size() == 2);
  CHECK(cps[0].index == 12);
  CHECK(cps[1].index == 18);
  // Too short to tell.
  CHECK(analysis::FindChangePoints({1, 1, 9, 9, 9}).empty());
}

// A store of nightly runs of one scenario, three a night, whose f0/recovery_ms is `level(night)`
// give or take 4%, tagged fw=fw(night).
std::string NightlyStore(const testing::TempDir& dir, const std::string& name, int nights,
                         const std::function<double(int)>& level,
                         const std::function<std::string(int)>& fw) {
  const std::string db = dir.File(name + ".db");
  auto store = Store::Open(db);
  REQUIRE(store.ok());
  uint32_t rng = 7;
  for (int n = 0; n < nights; ++n)
    for (int k = 0; k < 3; ++k) {
      RunRecord r;
      r.id = name + "-" + std::to_string(n) + "-" + std::to_string(k);
      r.scenario_name = "nic_flap";
      r.scenario_text = "name: nic_flap\n";
      r.start_wall_ns = kNight0 + n * kDay + k * 600 * kNsPerSec;
      r.tags = {{"fw", fw(n)}, {"suite", "nightly"}, {"suite_run", r.id}};
      REQUIRE((*store)->CreateRun(r).ok());
      rng = rng * 1103515245u + 12345u;
      const double noise = (static_cast<double>((rng >> 16) % 801) / 10000.0) - 0.04;
      const std::vector<MetricRecord> m = {
          {r.id, std::string("f0"), "recovery_ms", level(n) * (1 + noise), "ms"}};
      REQUIRE((*store)->ReplaceMetrics(r.id, m).ok());
      REQUIRE((*store)->FinishRun(r.id, RunStatus::kPassed, r.start_wall_ns + kNsPerSec, "").ok());
    }
  return db;
}

TEST_CASE(
    "serve trends: a planted shift is marked at its first night naming the tag that changed - "
    "a store without one marks nothing",
    "[unit]") {
  testing::TempDir dir;
  const std::string shifted = NightlyStore(
      dir, "shifted", 20, [](int n) { return n < 13 ? 80.0 : 120.0; },
      [](int n) { return n < 13 ? std::string("22.39") : std::string("22.41"); });
  auto reader = compare::RunReader::Open(shifted);
  REQUIRE(reader.ok());
  ResultsSite site(**reader, {});
  auto r = site.Handle("GET", "/api/v1/trends?scenario=nic_flap&metric=recovery_ms");
  REQUIRE(r.status == 200);
  auto j = json::parse(r.body);
  INFO(j.dump(2));
  REQUIRE(j["series"].size() == 1);
  const auto& s = j["series"][0];
  CHECK(s["key"] == "f0/recovery_ms");
  CHECK(s["nights"].size() == 20);
  REQUIRE(s["change_points"].size() == 1);
  const auto& c = s["change_points"][0];
  CHECK(c["night"] == NightOf(kNight0 + 13 * kDay));
  CHECK(c["relative"].get<double>() == Approx(0.5).margin(0.08));
  CHECK(c["changed"] == json::array({"fw: 22.39 -> 22.41"}));  // not suite_run
  // The page: a chart and the change's row.
  r = site.Handle("GET", "/trends?scenario=nic_flap");
  REQUIRE(r.status == 200);
  CHECK(r.body.find("fw: 22.39 -&gt; 22.41") != std::string::npos);

  const std::string flat = NightlyStore(
      dir, "flat", 20, [](int) { return 80.0; }, [](int) { return std::string("22.39"); });
  auto flat_reader = compare::RunReader::Open(flat);
  REQUIRE(flat_reader.ok());
  ResultsSite flat_site(**flat_reader, {});
  r = flat_site.Handle("GET", "/api/v1/trends?scenario=nic_flap");
  REQUIRE(r.status == 200);
  j = json::parse(r.body);
  for (const auto& series : j["series"]) CHECK(series["change_points"].empty());
  // Bad requests.
  CHECK(flat_site.Handle("GET", "/api/v1/trends").status == 400);
  CHECK(flat_site.Handle("GET", "/api/v1/trends?scenario=nic_flap&nights=3").status == 400);
  CHECK(flat_site.Handle("GET", "/api/v1/trends?scenario=no_such").status == 404);
}

TEST_CASE("faultline serve: the trends page draws its chart and change point in headless Chromium",
          "[integration]") {
  Browser browser(ChromiumOrFail());
  testing::TempDir dir;
  const std::string db = NightlyStore(
      dir, "shifted", 20, [](int n) { return n < 13 ? 80.0 : 120.0; },
      [](int n) { return n < 13 ? std::string("22.39") : std::string("22.41"); });
  ServeProcess serve(db, dir.path());
  const std::string url = "http://127.0.0.1:" + std::to_string(serve.port) +
                          "/trends?scenario=nic_flap&metric=recovery_ms";
  auto res = browser.Run(url, {"--dump-dom"}, dir.File("trends.html"));
  REQUIRE(res.exit_code == 0);
  const std::string dom = testing::ReadAll(dir.File("trends.html"));
  auto status = RenderStatus(dom);
  INFO(status["text"]);
  CHECK(status["data-state"] == "drawn");
  CHECK(status["data-errors"] == "0");
  CHECK(status["data-charts"] == "1");
  CHECK(status["data-change-points"] == "1");
  CHECK(ConsoleErrors(dom).empty());
  const std::string shot = dir.File("trends.png");
  res = browser.Run(url, {"--screenshot=" + shot, "--window-size=1280,700"},
                    dir.File("trends_shot.log"));
  REQUIRE(res.exit_code == 0);
  std::filesystem::copy_file(shot, FL_TEST_OUTPUT_DIR "/serve_trends.png",
                             std::filesystem::copy_options::overwrite_existing);
  CHECK(serve.StopAndWait() == 0);
}

}  // namespace
}  // namespace fl::reports::serve

namespace fl::reports::serve {
namespace {

// Six runs each of two scenarios under fw=22.39 and fw=22.41; under 22.41 nic_flap's
// f0/recovery_ms is 50% higher (1200 ms against 800: beyond its 200 ms allowance, a
// regression), kill's the same.
std::string FirmwareStore(const testing::TempDir& dir) {
  const std::string db = dir.File("ab.db");
  auto store = Store::Open(db);
  REQUIRE(store.ok());
  uint32_t rng = 11;
  int n = 0;
  for (const std::string fw : {"22.39", "22.41"})
    for (const std::string scenario : {"nic_flap", "kill"})
      for (int k = 0; k < 6; ++k) {
        RunRecord r;
        r.id = "ab-" + std::to_string(n++);
        r.scenario_name = scenario;
        r.scenario_text = "name: " + scenario + "\n";
        r.start_wall_ns = kNight0 + n * 600 * kNsPerSec;
        r.tags = {{"fw", fw}};
        REQUIRE((*store)->CreateRun(r).ok());
        rng = rng * 1103515245u + 12345u;
        const double noise = (static_cast<double>((rng >> 16) % 801) / 10000.0) - 0.04;
        const double level = scenario == "nic_flap" && fw == "22.41" ? 1200 : 800;
        const std::vector<MetricRecord> m = {
            {r.id, std::string("f0"), "recovery_ms", level * (1 + noise), "ms"}};
        REQUIRE((*store)->ReplaceMetrics(r.id, m).ok());
        REQUIRE(
            (*store)->FinishRun(r.id, RunStatus::kPassed, r.start_wall_ns + kNsPerSec, "").ok());
      }
  return db;
}

TEST_CASE(
    "faultline accept: two firmware tags of generated runs - REJECTED naming the regressed "
    "metric, exit 1 - the server's acceptance page and JSON give the same verdicts",
    "[integration]") {
  testing::TempDir dir;
  const std::string db = FirmwareStore(dir);
  const std::string json_path = dir.File("accept.json"), html_path = dir.File("accept.html");
  auto res = testing::RunProcess(
      {FL_FAULTLINE_BIN, "accept", "--baseline", "tag:fw=22.39", "--candidate", "tag:fw=22.41",
       "--db", db, "--json", json_path, "--html", html_path, "--md", dir.File("accept.md")},
      dir.File("accept.out"), std::chrono::seconds(60));
  const std::string out = testing::ReadAll(dir.File("accept.out"));
  INFO(out);
  CHECK(res.exit_code == 1);
  CHECK(out.find("REJECTED: candidate tag:fw=22.41") != std::string::npos);
  CHECK(out.find("FAIL  nic_flap") != std::string::npos);
  CHECK(out.find("pass  kill") != std::string::npos);
  CHECK(out.find("REGRESSED nic_flap f0/recovery_ms") != std::string::npos);
  const auto cli = json::parse(testing::ReadAll(json_path));
  CHECK(cli["accepted"] == false);
  // Each scenario counts each of its rows once, under its verdict ("REGRESSED": regressed).
  std::map<std::string, std::map<std::string, int>> verdicts;  // group -> verdict -> rows
  for (const auto& row_json : cli["comparison"]["rows"]) {
    std::string v = row_json["verdict"].get<std::string>();
    std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
    ++verdicts[row_json["group"].get<std::string>()][v];
  }
  REQUIRE(cli["scenarios"].size() == verdicts.size());
  for (const auto& sc : cli["scenarios"])
    for (const char* v : {"regressed", "improved", "changed", "same", "info", "missing"})
      CHECK(sc[v] == verdicts[sc["group"].get<std::string>()][v]);

  auto reader = compare::RunReader::Open(db);
  REQUIRE(reader.ok());
  ResultsSite site(**reader, {});
  auto r = site.Handle("GET", "/api/v1/accept?baseline=tag:fw%3D22.39&candidate=tag:fw%3D22.41");
  REQUIRE(r.status == 200);
  CHECK(json::parse(r.body) == cli);  // the same computation, seeded: the same numbers
  r = site.Handle("GET", "/accept?baseline=tag:fw%3D22.39&candidate=tag:fw%3D22.41");
  REQUIRE(r.status == 200);
  CHECK(r.body == testing::ReadAll(html_path));
  // The page's verdicts are the JSON's, row by row.
  const std::regex row("data-key=\"([^\"]+)\" data-verdict=\"([^\"]+)\"");
  std::map<std::string, std::string> page;
  for (std::sregex_iterator it(r.body.begin(), r.body.end(), row), end; it != end; ++it)
    page[(*it)[1]] = (*it)[2];
  REQUIRE(page.size() == cli["comparison"]["rows"].size());
  for (const auto& row_json : cli["comparison"]["rows"])
    CHECK(page[row_json["group"].get<std::string>() + " " + row_json["key"].get<std::string>()] ==
          row_json["verdict"].get<std::string>());
  // Bad requests.
  CHECK(site.Handle("GET", "/api/v1/accept?baseline=tag:fw%3D22.39").status == 400);
  CHECK(site.Handle("GET", "/api/v1/accept?baseline=tag:fw%3D1&candidate=tag:fw%3D2").status ==
        404);
  CHECK(site.Handle("GET", "/api/v1/accept?baseline=a&candidate=b&x=1").status == 400);

  // Drawn by Chromium from the server, without a console error.
  Browser browser(ChromiumOrFail());
  ServeProcess serve(db, dir.path());
  const std::string url = "http://127.0.0.1:" + std::to_string(serve.port) +
                          "/accept?baseline=tag:fw%3D22.39&candidate=tag:fw%3D22.41";
  res = browser.Run(url, {"--dump-dom"}, dir.File("accept_dom.html"));
  REQUIRE(res.exit_code == 0);
  const std::string dom = testing::ReadAll(dir.File("accept_dom.html"));
  CHECK(dom.find("data-accepted=\"false\"") != std::string::npos);
  CHECK(ConsoleErrors(dom).empty());
  const std::string shot = dir.File("accept.png");
  res = browser.Run(url, {"--screenshot=" + shot, "--window-size=1100,800"},
                    dir.File("accept_shot.log"));
  REQUIRE(res.exit_code == 0);
  std::filesystem::copy_file(shot, FL_TEST_OUTPUT_DIR "/serve_accept.png",
                             std::filesystem::copy_options::overwrite_existing);
  // The compare page of the same two sets.
  res = browser.Run("http://127.0.0.1:" + std::to_string(serve.port) +
                        "/compare?a=tag:fw%3D22.39&b=tag:fw%3D22.41",
                    {"--dump-dom"}, dir.File("compare_dom.html"));
  REQUIRE(res.exit_code == 0);
  const std::string cmp_dom = testing::ReadAll(dir.File("compare_dom.html"));
  CHECK(cmp_dom.find("REGRESSED") != std::string::npos);
  CHECK(ConsoleErrors(cmp_dom).empty());
  CHECK(serve.StopAndWait() == 0);
}

}  // namespace
}  // namespace fl::reports::serve

namespace fl::reports::serve {
namespace {

TEST_CASE("serve compare: any two sets of runs by tag or date - bad selectors are a 400",
          "[unit]") {
  testing::TempDir dir;
  const std::string db = NightlyStore(
      dir, "shifted", 20, [](int n) { return n < 13 ? 80.0 : 120.0; },
      [](int n) { return n < 13 ? std::string("22.39") : std::string("22.41"); });
  auto reader = compare::RunReader::Open(db);
  REQUIRE(reader.ok());
  ResultsSite site(**reader, {});
  const std::string first = NightOf(kNight0), fifth = NightOf(kNight0 + 4 * kDay);
  const std::string last = NightOf(kNight0 + 19 * kDay);
  auto r = site.Handle("GET", "/api/v1/compare?a=date:" + first + ".." + fifth + "&b=date:" + last);
  REQUIRE(r.status == 200);
  auto j = json::parse(r.body);
  CHECK(j["a"]["runs"].size() == 15);  // five nights of three runs
  CHECK(j["b"]["runs"].size() == 3);
  REQUIRE(j["rows"].size() == 1);
  CHECK(j["rows"][0]["key"] == "f0/recovery_ms");
  CHECK(j["rows"][0]["median_b"].get<double>() > j["rows"][0]["median_a"].get<double>() * 1.3);
  // Every value of B above every value of A: Cliff's delta is 1, a large effect.
  CHECK(j["rows"][0]["effect_size"].get<double>() == 1.0);
  CHECK(j["rows"][0]["effect"] == "large");
  r = site.Handle("GET", "/compare?a=tag:fw%3D22.39&b=tag:fw%3D22.41");
  REQUIRE(r.status == 200);
  CHECK(r.body.find("f0/recovery_ms") != std::string::npos);
  CHECK(r.body.find("<th>effect size</th>") != std::string::npos);
  CHECK(r.body.find("+1.00 large") != std::string::npos);
  for (const std::string bad :
       {"date:2026-02-30", "date:2026-12-07..2026-12-01", "date:yesterday", "tag:"})
    CHECK(site.Handle("GET", "/api/v1/compare?a=" + bad + "&b=latest").status == 400);
  CHECK(site.Handle("GET", "/api/v1/compare?a=latest").status == 400);
  CHECK(site.Handle("GET", "/api/v1/compare?a=date:2020-01-01&b=latest").status == 404);
}

}  // namespace
}  // namespace fl::reports::serve
