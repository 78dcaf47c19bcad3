// `--json` on runs, report, compare and history: the JSON each command prints is parsed back
// and checked against the stored run (synthetic runs written into a real SQLite store).
#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "../temp_dir.h"
#include "helpers.h"
#include "reports/render/json_view.h"
#include "synthetic_run.h"

namespace fl::reports::render {
namespace {

using nlohmann::json;
using testing::ReadAll;
using testing::SyntheticRunSpec;

// Runs faultline with args; returns its stdout parsed (discarded when it is not JSON).
// want_rc -1: 0 or 1 (a comparison's verdict).
json FaultlineJson(const testing::TempDir& dir, std::vector<std::string> args, int want_rc = 0) {
  args.insert(args.begin(), FL_FAULTLINE_BIN);
  // stdout only: the command's stderr goes to another file.
  std::string cmd;
  for (const auto& a : args) cmd += "'" + a + "' ";
  cmd = "exec " + cmd + "2>'" + dir.File("stderr.log") + "'";
  auto res = testing::RunProcess({"/bin/sh", "-c", cmd}, dir.File("stdout.json"),
                                 std::chrono::seconds(60));
  INFO(cmd << "\n" << ReadAll(dir.File("stderr.log")) << ReadAll(dir.File("stdout.json")));
  if (want_rc == -1) {
    REQUIRE((res.exit_code == 0 || res.exit_code == 1));
  } else {
    REQUIRE(res.exit_code == want_rc);
  }
  return json::parse(ReadAll(dir.File("stdout.json")), nullptr, false);
}

TEST_CASE("RunJson: the record, faults with metrics (absent = null), verdicts", "[unit]") {
  SyntheticRunSpec spec;
  RunData run = testing::MakeSyntheticRun(spec);
  json j = json::parse(RunJson(run));
  CHECK(j["run_id"] == run.run.id);
  CHECK(j["scenario"] == run.run.scenario_name);
  CHECK(j["tags"]["fw"] == "22.39");
  REQUIRE(j["faults"].size() == run.faults.size());
  CHECK(j["faults"][0]["kind"] == run.faults[0].kind);
  CHECK(j["faults"][0]["detection_ms"].get<double>() == Approx(spec.detect_ms));
  CHECK(j["faults"][1]["detection_ms"].get<double>() == Approx(spec.slow_detect_ms));
  CHECK(j["faults"][0]["metrics"].contains("recovery_ms"));
  CHECK(j["verdicts"].size() == run.verdicts.size());
  CHECK(j["hosts"].size() == run.hosts.size());
  CHECK(j["hosts"][0]["fingerprint"]["kernel"] == "6.1.0-28-amd64");  // an object, not text
  CHECK(j["outcome"] == "survived");
  CHECK(j["telemetry"]["samples"] == run.samples.size());

  // A metric that was never computed is null, not 0.
  run.metrics.erase(std::remove_if(run.metrics.begin(), run.metrics.end(),
                                   [](const MetricRecord& m) {
                                     return m.fault_id == "f0" && m.name == "detection_latency_ms";
                                   }),
                    run.metrics.end());
  json k = json::parse(RunJson(run));
  CHECK(k["faults"][0]["detection_ms"].is_null());
  CHECK_FALSE(k["faults"][0]["metrics"].contains("detection_latency_ms"));
}

TEST_CASE("RunJson: failed_ranks lists the ranks that exited badly, with their log tail",
          "[unit]") {
  RunData run = testing::MakeSyntheticRun(SyntheticRunSpec{});
  auto exit_event = [&](int rank, const std::string& detail) {
    EventRecord e;
    e.run_id = run.run.id;
    e.rank = rank;
    e.kind = "rank_exit";
    e.detail_json = detail;
    run.events.push_back(e);
  };
  exit_event(0, R"({"container":"c0","code":0})");
  exit_event(1, R"({"container":"c1","code":3,"log_tail":"E ftccl no path left\n"})");
  exit_event(2, R"({"container":"c2","signal":9})");
  exit_event(3, "not json");
  json j = json::parse(RunJson(run));
  REQUIRE(j["failed_ranks"].size() == 2);
  CHECK(j["failed_ranks"][0]["rank"] == 1);
  CHECK(j["failed_ranks"][0]["code"] == 3);
  CHECK(j["failed_ranks"][0]["log_tail"] == "E ftccl no path left\n");
  CHECK(j["failed_ranks"][1]["rank"] == 2);
  CHECK(j["failed_ranks"][1]["signal"] == 9);
  CHECK_FALSE(j["failed_ranks"][1].contains("log_tail"));
}

TEST_CASE("faultline runs/report/compare/history --json print what the store holds", "[unit]") {
  testing::TempDir dir;
  const std::string db = dir.File("results.db");
  SyntheticRunSpec a, b;
  a.run_id = "20261130-040000-aaaa";
  b.run_id = "20261130-050000-bbbb";
  b.detect_ms = 80;  // B detects later than A
  RunData ra = testing::MakeSyntheticRun(a), rb = testing::MakeSyntheticRun(b);
  rb.run.start_wall_ns += 3600 * kNsPerSec;
  if (rb.run.end_wall_ns) *rb.run.end_wall_ns += 3600 * kNsPerSec;
  REQUIRE(testing::WriteRun(db, ra).ok());
  REQUIRE(testing::WriteRun(db, rb).ok());

  json runs = FaultlineJson(dir, {"runs", "--db", db, "--json"});
  REQUIRE(runs.is_array());
  REQUIRE(runs.size() == 2);
  CHECK(runs[0]["run_id"] == b.run_id);  // newest first
  CHECK(runs[1]["run_id"] == a.run_id);
  CHECK(runs[0]["status"] == std::string(RunStatusName(rb.run.status)));

  json report = FaultlineJson(dir, {"report", a.run_id, "--db", db, "--json"});
  REQUIRE(report.is_object());
  CHECK(report["run_id"] == a.run_id);
  CHECK(report["faults"][0]["detection_ms"].get<double>() == Approx(a.detect_ms));
  CHECK(report["verdicts"].size() == ra.verdicts.size());

  json cmp = FaultlineJson(
      dir,
      {"compare", a.run_id, b.run_id, "--db", db, "--json", "--metric", "f0/detection_latency_ms"},
      /*want_rc=*/-1);
  REQUIRE(cmp.is_object());
  REQUIRE(cmp["rows"].size() == 1);
  CHECK(cmp["rows"][0]["key"] == "f0/detection_latency_ms");
  CHECK(cmp["rows"][0]["unit"] == "ms");
  CHECK(cmp["rows"][0]["median_a"].get<double>() == Approx(a.detect_ms));
  CHECK(cmp["rows"][0]["median_b"].get<double>() == Approx(b.detect_ms));
  CHECK(cmp["a"]["runs"][0] == a.run_id);

  json hist = FaultlineJson(
      dir, {"history", a.scenario, "--db", db, "--json", "--metric", "f0/detection_latency_ms"});
  REQUIRE(hist.is_object());
  REQUIRE(hist["series"].size() == 1);
  REQUIRE(hist["series"][0]["points"].size() == 2);
  CHECK(hist["series"][0]["points"][0]["run_id"] == a.run_id);  // oldest first
  CHECK(hist["series"][0]["points"][1]["value"].get<double>() == Approx(b.detect_ms));
}

}  // namespace
}  // namespace fl::reports::render
