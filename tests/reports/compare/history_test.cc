// RunReader selections and history on a real SQLite results file.
#include "reports/compare/history.h"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "reports/compare/compare.h"
#include "reports/compare/ledger_summary.h"
#include "reports/compare/repeats.h"
#include "reports/compare/run_metrics.h"
#include "reports/store/store.h"
#include "tests/reports/scored_run.h"
#include "tests/test_util.h"

namespace fl::reports::compare {
namespace {

using testing::TempDir;

void AddRun(Store& store, const std::string& id, Nanos start, RunStatus status,
            std::map<std::string, std::string> tags, std::optional<double> detection,
            double algbw) {
  fl::testing::AddScoredRun(store, id, start, status, std::move(tags), detection, algbw);
}

TEST_CASE("selectors: run ids and tag selections of finished runs", "[unit]") {
  TempDir dir("fl_compare");
  std::string db = dir.path() + "/r.db";
  {
    auto store = Store::Open(db);
    REQUIRE(store.ok());
    AddRun(**store, "r1", 1000, RunStatus::kPassed, {{"fw", "1"}}, 300, 1e8);
    AddRun(**store, "r2", 2000, RunStatus::kFailed, {{"fw", "1"}}, 2500, 1e8);
    AddRun(**store, "r3", 3000, RunStatus::kAborted, {{"fw", "1"}}, 100, 1e8);
    AddRun(**store, "r4", 4000, RunStatus::kPassed, {{"fw", "2"}}, std::nullopt, 1e8);
  }
  auto reader = RunReader::Open(db);
  REQUIRE(reader.ok());
  auto sel = (*reader)->Select("tag:fw=1");
  REQUIRE(sel.ok());
  REQUIRE(sel->size() == 2);  // the aborted run has no trustworthy metrics
  CHECK((*sel)[0].run.id == "r2");
  CHECK((*sel)[1].run.id == "r1");
  CHECK((*sel)[1].values.at("f0/detection_latency_ms") == 300);
  CHECK((*sel)[1].units.at("f0/detection_latency_ms") == "ms");
  CHECK((*sel)[1].group == "blackhole");
  auto one = (*reader)->Select("r4");
  REQUIRE(one.ok());
  CHECK(one->size() == 1);
  CHECK(one->front().values.count("f0/detection_latency_ms") == 0);
  CHECK((*reader)->Select("tag:fw=3").status().code() == Code::kNotFound);
  CHECK((*reader)->Select("tag:fw").status().code() == Code::kInvalidArgument);
  CHECK_FALSE((*reader)->Select("nope").ok());
  CHECK((*reader)->Select("tag:fw=1", "other").status().code() == Code::kNotFound);
  auto v = (*reader)->Verdicts("r2");
  REQUIRE(v.ok());
  REQUIRE(v->size() == 1);
  CHECK_FALSE(v->front().passed);
  CHECK(v->front().fault_id == "f0");
  CHECK(RunReader::Open(dir.path() + "/missing.db").status().code() == Code::kNotFound);
}

TEST_CASE("compare: the detection ledgers per fault kind and layer on each side", "[unit]") {
  TempDir dir("fl_ledger");
  std::string db = dir.path() + "/r.db";
  {
    auto store = Store::Open(db);
    REQUIRE(store.ok());
    // A: two runs whose flap the kernel saw after 100 and 300 ms and the CCL never;
    // B: one run whose kernel saw it after 50 ms and whose CCL did after 2 ms.
    struct Seen {
      std::optional<double> kernel, ccl;
    };
    auto add = [&](const std::string& id, Nanos start, Seen seen) {
      AddRun(**store, id, start, RunStatus::kPassed, {}, 300, 1e8);
      FaultRecord f;
      f.run_id = id;
      f.fault_id = "f0";
      f.kind = "nic_port_flap";
      f.target = "h1.nic0";
      f.effective_wall_ns = start + 1;
      REQUIRE((*store)->PutFault(f).ok());
      auto at = [&](std::optional<double> ms) {
        return ms ? std::optional<Nanos>(start + 1 + static_cast<Nanos>(*ms * 1e6)) : std::nullopt;
      };
      std::vector<DetectionRecord> rows = {{id, "f0", "progress", std::nullopt, std::nullopt, ""},
                                           {id, "f0", "kernel", at(seen.kernel), seen.kernel, ""},
                                           {id, "f0", "ccl", at(seen.ccl), seen.ccl, ""}};
      REQUIRE((*store)->ReplaceDetections(id, rows).ok());
    };
    add("a1", 1000, {100.0, std::nullopt});
    add("a2", 2000, {300.0, std::nullopt});
    add("b1", 3000, {50.0, 2.0});
  }
  auto reader = RunReader::Open(db);
  REQUIRE(reader.ok());
  auto a = (*reader)->SelectAll({"a1", "a2"});
  auto b = (*reader)->SelectAll({"b1"});
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  auto rows = SummariseLedgers(**reader, *a, *b);
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 3);
  // In the ledger's layer order: kernel, ccl, progress.
  const auto& kernel = (*rows)[0];
  CHECK(kernel.kind == "nic_port_flap");
  CHECK(kernel.layer == "kernel");
  CHECK(kernel.a.applies == 2);
  CHECK(kernel.a.noticed == 2);
  CHECK(*kernel.a.median_ms == Approx(200));
  CHECK(*kernel.b.median_ms == Approx(50));
  const auto& ccl = (*rows)[1];
  CHECK(ccl.layer == "ccl");
  CHECK(ccl.a.noticed == 0);
  CHECK_FALSE(ccl.a.median_ms);
  CHECK(ccl.b.noticed == 1);
  CHECK((*rows)[2].layer == "progress");
  const std::string text = RenderLedgerSummary(*rows);
  CHECK_THAT(text, Catch::Contains("kernel     2/2, median 200 ms"));
  CHECK_THAT(text, Catch::Contains("ccl        0/2"));
  CHECK(RenderLedgerSummary({}).empty());
}

TEST_CASE("repeats: medians with spread and interval, and how many repeats met each verdict",
          "[unit]") {
  TempDir dir("fl_repeats");
  std::string db = dir.path() + "/r.db";
  {
    auto store = Store::Open(db);
    REQUIRE(store.ok());
    // The verdict max_detection_ms passes with the run: 2 of 3.
    AddRun(**store, "r1", 1000, RunStatus::kPassed, {}, 100, 1e8);
    AddRun(**store, "r2", 2000, RunStatus::kPassed, {}, 200, 1e8);
    AddRun(**store, "r3", 3000, RunStatus::kFailed, {}, 900, 1e8);
  }
  auto reader = RunReader::Open(db);
  REQUIRE(reader.ok());
  auto runs = (*reader)->SelectAll({"r1", "r2", "r3"});
  REQUIRE(runs.ok());
  auto s = SummariseRepeats(**reader, *runs, PolicyTable{});
  REQUIRE(s.ok());
  CHECK(s->run_ids == std::vector<std::string>{"r1", "r2", "r3"});
  const RepeatedMetric* detection = nullptr;
  for (const auto& m : s->metrics)
    if (m.key == "f0/detection_latency_ms") detection = &m;
  REQUIRE(detection != nullptr);
  CHECK(detection->values == std::vector<double>{100, 200, 900});
  CHECK(detection->median == 200);
  CHECK(detection->p25 == 150);
  CHECK(detection->p75 == 550);
  CHECK(detection->interval.Contains(200));
  CHECK(detection->interval.lo >= 100);
  CHECK(detection->interval.hi <= 900);
  CHECK(detection->direction == Direction::kLowerIsBetter);
  REQUIRE(s->verdicts.size() == 1);
  CHECK(s->verdicts[0].expectation == "max_detection_ms");
  CHECK(s->verdicts[0].fault_id == "f0");
  CHECK(s->verdicts[0].met == 2);
  CHECK(s->verdicts[0].runs == 3);
  const std::string text = RenderRepeatsText(*s);
  CHECK_THAT(text, Catch::Contains("3 repeat(s): 2/3 met max_detection_ms f0"));
  CHECK_THAT(text, Catch::Contains("f0/detection_latency_ms: median 200 ms (IQR 150 ms to "
                                   "550 ms), 95% interval [100 ms, 900 ms], 3 value(s)"));
  CHECK(text.find("ranks") == std::string::npos);  // neutral: in the JSON only
  auto j = nlohmann::json::parse(RepeatsJson(*s));
  CHECK(j["verdicts"][0]["met"] == 2);
  CHECK(j["metrics"].size() == s->metrics.size());
}

TEST_CASE("history: oldest first - finished runs only - gaps where a run has no value", "[unit]") {
  TempDir dir("fl_compare");
  std::string db = dir.path() + "/r.db";
  {
    auto store = Store::Open(db);
    REQUIRE(store.ok());
    AddRun(**store, "r1", 1000, RunStatus::kPassed, {{"fw", "1"}}, 300, 1e8);
    AddRun(**store, "r2", 2000, RunStatus::kFailed, {{"fw", "1"}}, 2500, 0.9e8);
    AddRun(**store, "r3", 3000, RunStatus::kAborted, {{"fw", "1"}}, 100, 1e8);
    AddRun(**store, "r4", 4000, RunStatus::kPassed, {{"fw", "2"}}, std::nullopt, 1.1e8);
  }
  auto reader = RunReader::Open(db);
  REQUIRE(reader.ok());
  auto h = LoadHistory(**reader, "blackhole",
                       {.metrics = {"detection_latency_ms"}, .tags = {}, .limit = 50});
  REQUIRE(h.ok());
  REQUIRE(h->size() == 1);
  const HistorySeries& s = h->front();
  CHECK(s.key == "f0/detection_latency_ms");
  CHECK(s.unit == "ms");
  REQUIRE(s.points.size() == 3);
  CHECK(s.points[0].run_id == "r1");
  CHECK(s.points[0].value == 300);
  CHECK(s.points[1].value == 2500);
  CHECK(s.points[1].status == RunStatus::kFailed);
  CHECK(s.points[2].run_id == "r4");
  CHECK_FALSE(s.points[2].value.has_value());

  auto by_tag =
      LoadHistory(**reader, "blackhole", {.metrics = {}, .tags = {{"fw", "1"}}, .limit = 50});
  REQUIRE(by_tag.ok());
  REQUIRE(by_tag->size() == 2);  // defaults found: baseline_algbw and detection
  CHECK((*by_tag)[0].key == "baseline_algbw");
  CHECK((*by_tag)[0].points.size() == 2);
  auto limited =
      LoadHistory(**reader, "blackhole", {.metrics = {"baseline_algbw"}, .tags = {}, .limit = 1});
  REQUIRE(limited.ok());
  REQUIRE(limited->front().points.size() == 1);
  CHECK(limited->front().points[0].run_id == "r4");  // the newest

  CHECK(LoadHistory(**reader, "nope", {}).status().code() == Code::kNotFound);
  CHECK(LoadHistory(**reader, "blackhole", {.metrics = {"no_such"}, .tags = {}, .limit = 50})
            .status()
            .code() == Code::kNotFound);

  std::string text = RenderHistoryText("blackhole", *h);
  CHECK(text.find("f0/detection_latency_ms [ms]") != std::string::npos);
  CHECK(text.find("2 value(s): min 300 ms, median 1400 ms, max 2500 ms") != std::string::npos);
  std::string html = RenderHistoryHtml("blackhole", *h);
  // Drawn by uPlot like the run report: the library, the page's script, one chart per series.
  CHECK(html.find("uPlot") != std::string::npos);
  CHECK(html.find("<svg") == std::string::npos);
  CHECK(html.find("id=\"history-chart-0\"") != std::string::npos);
  CHECK(html.find("id=\"history-chart-1\"") == std::string::npos);
  CHECK(html.find("id=\"fl-render-status\"") != std::string::npos);
  // The data: three runs oldest first, the failed one flagged, the gap as null.
  CHECK(html.find("\"key\":\"f0/detection_latency_ms\",\"unit\":\"ms\",\"runs\":[\"r1\",\"r2\","
                  "\"r4\"]") != std::string::npos);
  CHECK(html.find("\"failed\":[false,true,false],\"y\":[300,2500,null]") != std::string::npos);
  // The table: the failed run's row marked, the missing value as a dash.
  CHECK(html.find("<tr class=\"failed\"><td>r2</td>") != std::string::npos);
  CHECK(html.find("<td class=\"v\">&ndash;</td>") != std::string::npos);
}

}  // namespace
}  // namespace fl::reports::compare

namespace fl::reports::compare {
namespace {

TEST_CASE("FormatQuantity prints values in their unit, never as an exponent", "[unit]") {
  CHECK(FormatQuantity(7.553e7, "B/s") == "75.53 MB/s");
  CHECK(FormatQuantity(1.2e9, "B/s") == "1.2 GB/s");
  CHECK(FormatQuantity(512, "B/s") == "512 B/s");
  CHECK(FormatQuantity(12.34, "ms") == "12.34 ms");
  CHECK(FormatQuantity(0.04, "ms") == "40 µs");
  CHECK(FormatQuantity(23456, "ms") == "23.46 s");
  CHECK(FormatQuantity(2.7, "s") == "2.7 s");
  CHECK(FormatQuantity(0.83, "ratio") == "0.83");
  CHECK(FormatQuantity(123456, "count") == "123456");
  CHECK(FormatQuantity(0, "ms") == "0 ms");
}

}  // namespace
}  // namespace fl::reports::compare
