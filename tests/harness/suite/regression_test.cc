// Regression against the run history on a synthetic results file (real SQLite), the suite's
// run plan and its JUnit output.
#include "harness/suite/regression.h"

#include <catch2/catch.hpp>

#include <functional>
#include <regex>

#include <nlohmann/json.hpp>
#include "harness/suite/suite_runner.h"

#include "reports/render/escape.h"
#include "reports/store/store.h"
#include "tests/reports/scored_run.h"
#include "tests/test_util.h"

namespace fl::harness::suite {
namespace {

using reports::MetricRecord;
using reports::RunRecord;
using reports::RunStatus;
using testing::TempDir;

RunRecord AddRun(reports::Store& store, const std::string& id, Nanos start, RunStatus status,
                 std::map<std::string, std::string> tags, double detection, double algbw) {
  return fl::testing::AddScoredRun(store, id, start, status, std::move(tags), detection, algbw);
}

struct History {
  TempDir dir{"fl_suite"};
  std::string db;
  std::map<std::string, std::string> tags = {{"suite", "nightly"}, {"lab", "rail4"}};
  std::unique_ptr<reports::Store> store;
  History() {
    db = dir.path() + "/r.db";
    auto s = reports::Store::Open(db);
    REQUIRE(s.ok());
    store = std::move(*s);
    auto with = [&](std::map<std::string, std::string> extra) {
      auto t = tags;
      for (const auto& [k, v] : extra) t[k] = v;
      return t;
    };
    // the history: two good nights, then a failed one, a run of another configuration, and
    // a passing run with an extra tag (another configuration too)
    AddRun(*store, "old1", 1000, RunStatus::kPassed, with({{"suite_run", "s1"}}), 300, 1e8);
    AddRun(*store, "old2", 2000, RunStatus::kPassed, with({{"suite_run", "s2"}}), 310, 1e8);
    AddRun(*store, "bad", 3000, RunStatus::kFailed, with({{"suite_run", "s3"}}), 5000, 1e8);
    AddRun(*store, "other", 3500, RunStatus::kPassed, {{"suite", "nightly"}, {"lab", "spine"}}, 100,
           1e8);
    AddRun(*store, "extra", 3600, RunStatus::kPassed, with({{"fw", "x"}}), 50, 1e8);
  }
};

TEST_CASE("regression: against the last passing run with exactly the same tags", "[unit]") {
  History h;
  auto cur_tags = h.tags;
  cur_tags["suite_run"] = "s4";
  auto slow = AddRun(*h.store, "now", 4000, RunStatus::kPassed, cur_tags, 900, 1e8);
  auto reader = reports::compare::RunReader::Open(h.db);
  REQUIRE(reader.ok());
  RegressionSpec spec;
  auto reg = CheckRegression(**reader, "g", {slow}, spec, {});
  REQUIRE(reg.ok());
  CHECK(reg->baseline_runs == std::vector<std::string>{"old2"});  // not bad, other or extra
  CHECK(reg->current_runs == std::vector<std::string>{"now"});
  auto regressed = reg->Regressed();
  REQUIRE(regressed.size() == 1);
  CHECK(regressed[0]->key == "f0/detection_latency_ms");
  CHECK(regressed[0]->median_a == 310);
  CHECK(regressed[0]->median_b == 900);
  // neutral metrics are not even compared
  for (const auto& r : reg->comparison.rows) CHECK(r.key != "ranks");

  spec.baseline_runs = 5;
  reg = CheckRegression(**reader, "g", {slow}, spec, {});
  REQUIRE(reg.ok());
  CHECK(reg->baseline_runs == std::vector<std::string>{"old2", "old1"});

  // a tolerance wide enough: nothing regressed
  reports::compare::PolicyTable wide;
  wide.SetTolerance("detection_latency_ms", {std::nullopt, 1000});
  reg = CheckRegression(**reader, "g", {slow}, spec, wide);
  REQUIRE(reg.ok());
  CHECK(reg->Regressed().empty());

  // only the metrics asked for
  spec.metrics = {"baseline_algbw"};
  reg = CheckRegression(**reader, "g", {slow}, spec, {});
  REQUIRE(reg.ok());
  REQUIRE(reg->comparison.rows.size() == 1);
  CHECK(reg->comparison.rows[0].key == "baseline_algbw");
  CHECK(reg->Regressed().empty());
}

TEST_CASE("regression: a run close to its baseline passes - no history means no baseline",
          "[unit]") {
  History h;
  auto cur_tags = h.tags;
  cur_tags["suite_run"] = "s4";
  auto ok1 = AddRun(*h.store, "now1", 4000, RunStatus::kPassed, cur_tags, 320, 1e8);
  auto ok2 = AddRun(*h.store, "now2", 4100, RunStatus::kFailed, cur_tags, 330, 0.98e8);
  auto reader = reports::compare::RunReader::Open(h.db);
  REQUIRE(reader.ok());
  auto reg = CheckRegression(**reader, "g", {ok1, ok2}, {}, {});
  REQUIRE(reg.ok());
  CHECK(reg->baseline_runs == std::vector<std::string>{"old2"});
  CHECK(reg->Regressed().empty());
  // runs of the same invocation never serve as each other's baseline
  cur_tags["lab"] = "new";
  auto first = AddRun(*h.store, "n1", 5000, RunStatus::kPassed, cur_tags, 300, 1e8);
  auto second = AddRun(*h.store, "n2", 5100, RunStatus::kPassed, cur_tags, 900, 1e8);
  reg = CheckRegression(**reader, "g", {first, second}, {}, {});
  REQUIRE(reg.ok());
  CHECK(reg->baseline_runs.empty());
  CHECK(reg->comparison.rows.empty());
  CHECK(reg->Regressed().empty());
}

// Twelve nights of one configuration, detection at `level(n)` (+-1%), and tonight's run.
struct Nightly {
  TempDir dir{"fl_suite_shift"};
  std::string db;
  std::map<std::string, std::string> tags = {{"suite", "nightly"}, {"lab", "rail4"}};
  RunRecord tonight;
  explicit Nightly(const std::function<double(int)>& level) {
    db = dir.path() + "/r.db";
    auto s = reports::Store::Open(db);
    REQUIRE(s.ok());
    const Nanos night0 = 1'790'000'000 * kNsPerSec;
    for (int n = 0; n < 12; ++n) {
      auto t = tags;
      t["suite_run"] = "s" + std::to_string(n);
      const double noise = 1 + 0.01 * ((n * 7) % 3 - 1);
      RunRecord r = AddRun(**s, "n" + std::to_string(n), night0 + n * 86400 * kNsPerSec,
                           RunStatus::kPassed, t, level(n) * noise, 1e8);
      if (n == 11) tonight = r;
    }
  }
};

TEST_CASE(
    "regression: a level shift three nights old fails the group though the last night "
    "is its baseline - older shifts, improvements and flat histories do not",
    "[unit]") {
  RegressionSpec spec;  // baseline_runs 1: last night, already on the new level
  Nightly shifted([](int n) { return n < 9 ? 300.0 : 600.0; });
  auto reader = reports::compare::RunReader::Open(shifted.db);
  REQUIRE(reader.ok());
  auto reg = CheckRegression(**reader, "g", {shifted.tonight}, spec, {});
  REQUIRE(reg.ok());
  CHECK(reg->Regressed().empty());  // the window comparison no longer sees it
  REQUIRE(reg->shifts.size() == 1);
  const LevelShift& sh = reg->shifts[0];
  CHECK(sh.key == "f0/detection_latency_ms");
  CHECK(sh.nights_ago == 2);  // nights 9, 10, 11 (tonight)
  CHECK(sh.before == Approx(300).epsilon(0.02));
  CHECK(sh.after == Approx(600).epsilon(0.02));
  CHECK(reg->Failed());
  CHECK(sh.Text().find("since ") != std::string::npos);

  spec.shift_nights = 2;  // began three nights ago: outside the window
  reg = CheckRegression(**reader, "g", {shifted.tonight}, spec, {});
  REQUIRE(reg.ok());
  CHECK(reg->shifts.empty());
  CHECK_FALSE(reg->Failed());
  spec.shift_nights = 0;  // off
  reg = CheckRegression(**reader, "g", {shifted.tonight}, spec, {});
  REQUIRE(reg.ok());
  CHECK(reg->shifts.empty());

  Nightly faster([](int n) { return n < 9 ? 600.0 : 300.0; });  // lower is better
  reader = reports::compare::RunReader::Open(faster.db);
  REQUIRE(reader.ok());
  reg = CheckRegression(**reader, "g", {faster.tonight}, {}, {});
  REQUIRE(reg.ok());
  CHECK(reg->shifts.empty());

  Nightly flat([](int) { return 300.0; });
  reader = reports::compare::RunReader::Open(flat.db);
  REQUIRE(reader.ok());
  reg = CheckRegression(**reader, "g", {flat.tonight}, {}, {});
  REQUIRE(reg.ok());
  CHECK(reg->shifts.empty());
  CHECK_FALSE(reg->Failed());
}

TEST_CASE("suite plan: scenarios x CCLs x repetitions - tags and overrides", "[unit]") {
  Suite s;
  s.name = "fw";
  s.repeat = 2;
  s.tags = {{"lab", "rail4"}};
  s.ccls = {{"ftccl", {}}, {"ftccl", {{"dead_timeout_ms", "900"}}}};
  s.scenarios.push_back({"a.yaml", "", {}, 0, std::nullopt, {}});
  s.scenarios.push_back({"b.yaml", "", {{"gloo", {}}}, 1, 7, {{"lab", "other"}}});
  SuiteOptions o;
  o.db_path = "x.db";
  o.tags = {{"fw", "22.41"}};
  auto plan = PlanSuite(s, o, "SR");
  REQUIRE(plan.size() == 5);  // a: 2 ccls x 2 reps; b: 1 ccl x 1 rep
  CHECK(plan[0].group == "a.yaml [ftccl]");
  CHECK(plan[2].group == "a.yaml [ftccl dead_timeout_ms=900]");
  CHECK(plan[3].rep == 2);
  CHECK(plan[3].reps == 2);
  CHECK(plan[4].group == "b.yaml [gloo]");
  CHECK(plan[2].args == std::vector<std::string>{"run", "a.yaml", "--json", "--db", "x.db", "--tag",
                                                 "fw=22.41", "--tag", "lab=rail4", "--tag",
                                                 "suite=fw", "--tag", "suite_run=SR", "--ccl",
                                                 "ftccl", "--ccl-option", "dead_timeout_ms=900"});
  CHECK(plan[4].args == std::vector<std::string>{"run", "b.yaml", "--json", "--db", "x.db", "--tag",
                                                 "fw=22.41", "--tag", "lab=other", "--tag",
                                                 "suite=fw", "--tag", "suite_run=SR", "--seed", "7",
                                                 "--ccl", "gloo"});
  o.repeat = 3;
  CHECK(PlanSuite(s, o, "SR").size() == 9);
  s.ccls.clear();
  o.repeat = 0;
  plan = PlanSuite(s, o, "SR");
  REQUIRE(plan.size() == 3);
  CHECK(plan[0].group == "a.yaml");
  CHECK(std::find(plan[0].args.begin(), plan[0].args.end(), "--ccl") == plan[0].args.end());
}

int Count(const std::string& xml, const std::string& what) {
  int n = 0;
  for (size_t p = xml.find(what); p != std::string::npos; p = xml.find(what, p + 1)) ++n;
  return n;
}

TEST_CASE("suite JUnit: one case per verdict - errors for runs without verdicts - regression",
          "[unit]") {
  Suite s;
  s.name = "nightly";
  SuiteResult r;
  r.suite_run = "SR";
  auto verdict = [](const char* run, const char* exp, bool passed, const char* msg) {
    return reports::VerdictRecord{run, "f0", exp, passed, 1.0, 2.0, msg};
  };
  RunOutcome pass;
  pass.plan.group = "a.yaml";
  pass.run_id = "r1";
  pass.verdicts = {verdict("r1", "max_detection_ms", true, "1 ms <= 2 ms"),
                   verdict("r1", "survives", true, "outcome survived")};
  RunOutcome fail = pass;
  fail.plan.rep = 2;
  fail.run_id = "r2";
  fail.exit_code = 1;
  fail.verdicts = {verdict("r2", "max_detection_ms", false, "3000 ms > 2000 ms & <more>"),
                   verdict("r2", "survives", true, "outcome survived")};
  RunOutcome crash;
  crash.plan.group = "b.yaml [gloo]";
  crash.exit_code = 3;
  crash.error = "faultline run exited 3: lab provisioning failed";
  r.runs = {pass, fail, crash};
  GroupRegression none;
  none.group = "b.yaml [gloo]";
  GroupRegression reg;
  reg.group = "a.yaml";
  reg.baseline_runs = {"old"};
  reg.comparison.rows.push_back(
      reports::compare::CompareMetric("a.yaml", "f0/detection_latency_ms", "ms", {300}, {900},
                                      reports::compare::DefaultPolicy("detection_latency_ms"), {}));
  r.regressions = {reg, none};
  std::string xml = SuiteJUnit(s, r);
  INFO(xml);
  CHECK(xml.find("<testsuites name=\"faultline suite nightly\" tests=\"7\" failures=\"2\" "
                 "errors=\"1\" skipped=\"1\"") != std::string::npos);
  CHECK(xml.find("<testsuite name=\"a.yaml\" tests=\"5\" failures=\"2\" errors=\"0\" "
                 "skipped=\"0\"") != std::string::npos);
  CHECK(xml.find("<testsuite name=\"b.yaml [gloo]\" tests=\"2\" failures=\"0\" errors=\"1\" "
                 "skipped=\"1\"") != std::string::npos);
  CHECK(Count(xml, "<testcase ") == 7);
  CHECK(xml.find("<failure type=\"max_detection_ms\" message=\"3000 ms &gt; 2000 ms &amp; "
                 "&lt;more&gt;\">") != std::string::npos);
  CHECK(xml.find("<failure message=\"f0/detection_latency_ms: 300 ms -&gt; 900 ms") !=
        std::string::npos);
  CHECK(xml.find("classname=\"rep2.r2\" name=\"max_detection_ms f0\"") != std::string::npos);
  CHECK(xml.find("lab provisioning failed") != std::string::npos);
  // --json: the same runs and regressions.
  auto j = nlohmann::json::parse(SuiteResultJson(s, r));
  REQUIRE(j["runs"].size() == 3);
  CHECK(j["runs"][2]["exit_code"] == 3);
  CHECK(j["runs"][2]["error"] == crash.error);
  REQUIRE(j["regressions"].size() == 2);
  CHECK(j["regressions"][0]["regressed"][0] == "f0/detection_latency_ms");
  CHECK(j["regressions"][1]["comparison"].is_null());  // no baseline
  // Every case of a run that reached the store says how to replay it.
  CHECK(xml.find("replay: faultline replay r2") != std::string::npos);
}

}  // namespace
}  // namespace fl::harness::suite
