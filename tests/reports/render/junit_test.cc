// JUnit XML: the file `faultline report --junit` writes is parsed back and its counts are
// checked against the verdicts in the database (read with SQL, not through the store).
#include <sqlite3.h>
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "reports/render/junit.h"
#include "tests/reports/render/helpers.h"
#include "tests/reports/render/mini_xml.h"
#include "tests/reports/render/synthetic_run.h"
#include "tests/reports/temp_dir.h"

namespace fl::reports::render {
namespace {

using testing::MakeSyntheticRun;
using testing::MiniXml;
using testing::ReadAll;
using testing::SyntheticRunSpec;
using testing::XmlNode;

size_t AttrNumber(const XmlNode& n, const char* key) {
  const std::string* v = n.Attr(key);
  REQUIRE(v != nullptr);
  return std::stoul(*v);
}

struct DbVerdict {
  std::string expectation;
  std::string fault_id;  // "" for run-level
  bool passed;
};

// The verdicts of the newest run, straight from SQL.
std::vector<DbVerdict> VerdictsInDb(const std::string& db_path) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  REQUIRE(sqlite3_prepare_v2(db,
                             "SELECT expectation, coalesce(fault_id, ''), passed FROM verdicts "
                             "WHERE run_id = (SELECT id FROM runs ORDER BY start_wall_ns DESC "
                             "LIMIT 1)",
                             -1, &st, nullptr) == SQLITE_OK);
  std::vector<DbVerdict> out;
  while (sqlite3_step(st) == SQLITE_ROW)
    out.push_back({reinterpret_cast<const char*>(sqlite3_column_text(st, 0)),
                   reinterpret_cast<const char*>(sqlite3_column_text(st, 1)),
                   sqlite3_column_int(st, 2) != 0});
  sqlite3_finalize(st);
  sqlite3_close(db);
  return out;
}

TEST_CASE("faultline report --junit: counts match the verdicts in the database", "[unit]") {
  testing::TempDir dir;
  SyntheticRunSpec spec;
  spec.hostile = true;  // markup in names and messages must not break the XML
  spec.duration_s = 130;
  spec.max_detection_ms = 50;  // f0 and f2 pass (40 ms), f1 and f3 fail (160 ms)
  RunData run = MakeSyntheticRun(spec);
  REQUIRE(run.faults.size() == 4);
  const std::string db = dir.File("results.db"), out = dir.File("junit.xml");
  REQUIRE(testing::WriteRun(db, run).ok());

  auto res = testing::RunProcess({FL_FAULTLINE_BIN, "report", "latest", "--db", db, "--junit", out},
                                 dir.File("cli.log"), std::chrono::seconds(60));
  INFO(ReadAll(dir.File("cli.log")));
  REQUIRE(res.exit_code == 0);

  std::string error;
  auto root = MiniXml::Parse(ReadAll(out), &error);
  INFO(error);
  REQUIRE(root);
  REQUIRE(root->name == "testsuites");
  auto suites = root->Children("testsuite");
  REQUIRE(suites.size() == 1);
  const XmlNode& suite = *suites[0];

  std::vector<DbVerdict> verdicts = VerdictsInDb(db);
  size_t db_failed = 0;
  for (const auto& v : verdicts) db_failed += v.passed ? 0 : 1;
  // survives + exact_correctness + 3 per-fault expectations x 4 faults; 2 detections too slow.
  REQUIRE(verdicts.size() == 2 + 3 * 4);
  REQUIRE(db_failed == 2);

  // Attributes, elements and the database agree.
  auto cases = suite.Children("testcase");
  size_t failures = 0, errors = 0;
  for (const auto* c : cases) {
    failures += c->Children("failure").size();
    errors += c->Children("error").size();
  }
  CHECK(cases.size() == verdicts.size());
  CHECK(failures == db_failed);
  CHECK(errors == 0);
  CHECK(AttrNumber(suite, "tests") == verdicts.size());
  CHECK(AttrNumber(suite, "failures") == db_failed);
  CHECK(AttrNumber(suite, "errors") == 0);
  CHECK(AttrNumber(*root, "tests") == verdicts.size());
  CHECK(AttrNumber(*root, "failures") == db_failed);
  CHECK(*suite.Attr("name") == run.run.scenario_name);  // markup survived as text
  CHECK(*suite.Attr("id") == run.run.id);

  // One testcase per verdict: classname = scenario, name = expectation + fault, and the
  // failing ones carry expected vs measured.
  for (const auto& v : verdicts) {
    const XmlNode* match = nullptr;
    for (const auto* c : cases) {
      const std::string& name = *c->Attr("name");
      bool same = v.fault_id.empty() ? name == v.expectation
                                     : name.rfind(v.expectation + " " + v.fault_id + " ", 0) == 0;
      if (same) {
        CHECK(match == nullptr);  // names are unique
        match = c;
      }
    }
    INFO(v.expectation << " " << v.fault_id);
    REQUIRE(match != nullptr);
    CHECK(*match->Attr("classname") == run.run.scenario_name);
    // Its time: the run's for a run-level expectation, the fault's window for a per-fault one
    // (the synthetic faults last fault_duration_s); its output: how to replay the run.
    const double want_s = v.fault_id.empty() ? spec.duration_s : spec.fault_duration_s;
    CHECK(std::stod(*match->Attr("time")) == Approx(want_s).margin(0.002));
    auto out = match->Children("system-out");
    REQUIRE(out.size() == 1);
    CHECK(out[0]->text.find("replay: faultline replay " + run.run.id + " --db " + db) !=
          std::string::npos);
    auto failure = match->Children("failure");
    CHECK(failure.size() == (v.passed ? 0u : 1u));
    if (!v.passed) {
      CHECK(*failure[0]->Attr("type") == v.expectation);
      CHECK(failure[0]->text.find("expected: detection latency <= 50.0 ms\nmeasured: 160 ms") !=
            std::string::npos);
    }
  }
}

TEST_CASE("JUnitBuilder: one testsuite per run and infrastructure failures as errors", "[unit]") {
  SyntheticRunSpec spec;
  spec.max_detection_ms = 1000;  // everything passes
  RunData passed = MakeSyntheticRun(spec);
  REQUIRE(passed.run.status == RunStatus::kPassed);
  spec.run_id = "r-failed";
  spec.max_detection_ms = 100;
  RunData failed = MakeSyntheticRun(spec);
  RunData aborted;
  aborted.run.id = "r-aborted";
  aborted.run.scenario_name = "nic_flap";
  aborted.run.status = RunStatus::kAborted;
  aborted.run.message = "coordinator on lab1 died during the run";

  JUnitBuilder b;
  for (const RunData* r : {&passed, &failed, &aborted}) b.AddRun(*r);
  std::string xml = b.Finish();
  JUnitCounts want{passed.verdicts.size() + failed.verdicts.size() + 1, 1, 1};
  CHECK(b.counts() == want);
  CHECK(CountJUnit(aborted) == JUnitCounts{1, 0, 1});

  std::string error;
  auto root = MiniXml::Parse(xml, &error);
  INFO(error);
  REQUIRE(root);
  auto suites = root->Children("testsuite");
  REQUIRE(suites.size() == 3);
  CHECK(AttrNumber(*root, "tests") == want.tests);
  CHECK(AttrNumber(*root, "failures") == 1);
  CHECK(AttrNumber(*root, "errors") == 1);
  auto ab = suites[2]->Children("testcase");
  REQUIRE(ab.size() == 1);
  CHECK(*ab[0]->Attr("name") == "run");
  REQUIRE(ab[0]->Children("error").size() == 1);
  CHECK(*ab[0]->Children("error")[0]->Attr("message") ==
        "run aborted: coordinator on lab1 died during the run");
  // The same document from the span overload.
  std::vector<RunData> runs{passed, failed, aborted};
  CHECK(RenderJUnit(runs) == xml);
}

TEST_CASE("faultline report writes several outputs at once or a text summary", "[unit]") {
  testing::TempDir dir;
  RunData run = MakeSyntheticRun(SyntheticRunSpec{});
  const std::string db = dir.File("results.db");
  REQUIRE(testing::WriteRun(db, run).ok());
  auto res = testing::RunProcess(
      {FL_FAULTLINE_BIN, "report", run.run.id, "--db", db, "--html", dir.File("r.html"), "--junit",
       dir.File("r.xml"), "--md", dir.File("r.md")},
      dir.File("cli.log"), std::chrono::seconds(60));
  INFO(ReadAll(dir.File("cli.log")));
  REQUIRE(res.exit_code == 0);
  CHECK(ReadAll(dir.File("r.html")).rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(ReadAll(dir.File("r.xml")).find("<testsuites") != std::string::npos);
  CHECK(ReadAll(dir.File("r.md")).rfind("### ❌ faultline: nic\\_flap\\_synthetic", 0) == 0);

  res = testing::RunProcess({FL_FAULTLINE_BIN, "report", "latest", "--db", db},
                            dir.File("text.log"), std::chrono::seconds(60));
  REQUIRE(res.exit_code == 0);
  CHECK(ReadAll(dir.File("text.log")).find("verdicts: ") != std::string::npos);

  res = testing::RunProcess({FL_FAULTLINE_BIN, "report", "no-such-run", "--db", db},
                            dir.File("bad.log"), std::chrono::seconds(60));
  CHECK(res.exit_code == 2);
  res = testing::RunProcess({FL_FAULTLINE_BIN, "report", "latest", "--db", dir.File("none.db")},
                            dir.File("none.log"), std::chrono::seconds(60));
  CHECK(res.exit_code == 2);
  CHECK_FALSE(std::filesystem::exists(dir.File("none.db")));
}

}  // namespace
}  // namespace fl::reports::render
