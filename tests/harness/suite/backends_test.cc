// The same runs on SQLite and on PostgreSQL give the same answers: a history written to a
// SQLite file, copied with `faultline import` into a real PostgreSQL server the test starts
// (tests/pg_server.h), then `faultline runs/report/compare/history --json` on both, and the
// suite's regression check (CheckRegression) on both.
#include <catch2/catch.hpp>

#include "harness/suite/regression.h"
#include "reports/store/store.h"
#include "tests/harness/run_testing.h"
#include "tests/pg_server.h"
#include "tests/reports/scored_run.h"
#include "tests/test_util.h"

namespace fl::harness::suite {
namespace {

using reports::MetricRecord;
using reports::RunRecord;
using reports::RunStatus;
using testing::TempDir;

constexpr Nanos kT0 = 1'764'464'400 * kNsPerSec;

struct Output {
  int code = -1;
  std::string out, err;
};

Output Faultline(const TempDir& dir, const std::vector<std::string>& args) {
  testing::Faultline f(args, dir.path());
  auto code = f.Wait(Deadline::After(120 * kNsPerSec));
  return {code ? *code : -1, f.out(), f.err()};
}

TEST_CASE(
    "results on PostgreSQL: runs, report, compare, history and the suite's regression "
    "check answer as on SQLite",
    "[integration]") {
  TempDir dir("fl_backends");
  std::string error;
  auto server = fl::testing::PgServer::Start(&error);
  INFO(error);
  REQUIRE(server);
  const std::string lite = dir.path() + "/r.db", pg = server->Uri();
  const std::map<std::string, std::string> a = {{"fw", "22.39"}, {"cluster", "lab1"}};
  const std::map<std::string, std::string> b = {{"fw", "22.41"}, {"cluster", "lab1"}};
  std::vector<RunRecord> current;
  {
    auto store = reports::Store::Open(lite);
    REQUIRE(store.ok());
    fl::testing::AddScoredRun(**store, "a1", kT0, RunStatus::kPassed, a, 300, 1.0e8, 50);
    fl::testing::AddScoredRun(**store, "a2", kT0 + 10 * kNsPerSec, RunStatus::kPassed, a, 320,
                              1.1e8, 50);
    fl::testing::AddScoredRun(**store, "a3", kT0 + 20 * kNsPerSec, RunStatus::kPassed, a, 310,
                              0.9e8, 50);
    fl::testing::AddScoredRun(**store, "b1", kT0 + 30 * kNsPerSec, RunStatus::kPassed, b, 700,
                              1.0e8, 50);
    fl::testing::AddScoredRun(**store, "b2", kT0 + 40 * kNsPerSec, RunStatus::kFailed, b, 1500,
                              1.0e8, 50);
    current.push_back(fl::testing::AddScoredRun(**store, "b3", kT0 + 50 * kNsPerSec,
                                                RunStatus::kPassed, a, 900, 1.0e8, 50));
  }

  // Copy everything over; a second import copies nothing.
  auto imported = Faultline(dir, {"import", lite, "--db", pg});
  INFO(imported.err << server->Log());
  REQUIRE(imported.code == 0);
  CHECK_THAT(imported.out, Catch::Contains("imported 6 run(s)"));
  CHECK_THAT(imported.err, Catch::Contains("[6/6]"));
  auto again = Faultline(dir, {"import", lite, "--db", pg});
  REQUIRE(again.code == 0);
  CHECK_THAT(again.out, Catch::Contains("imported 0 run(s)"));
  CHECK_THAT(again.out, Catch::Contains("6 already there"));

  // The same answers from the command line, byte for byte.
  const std::vector<std::vector<std::string>> questions = {
      {"runs", "--json"},
      {"report", "b3", "--json"},
      {"compare", "tag:fw=22.39", "tag:fw=22.41", "--json"},
      {"history", "blackhole", "--json"},
      {"history", "blackhole", "--json", "--tag", "fw=22.39"}};
  for (const auto& q : questions) {
    auto on = [&](const std::string& db) {
      auto args = q;
      args.push_back("--db");
      args.push_back(db);
      return Faultline(dir, args);
    };
    Output x = on(lite), y = on(pg);
    INFO(q[0] << " " << q[1] << "\nsqlite: " << x.err << "\npostgresql: " << y.err);
    CHECK(x.code == y.code);
    CHECK(x.code <= 1);  // compare exits 1 when something regressed
    CHECK_FALSE(x.out.empty());
    CHECK(x.out == y.out);
  }

  // The suite's regression check: the same baseline and the same verdicts.
  auto lite_reader = reports::compare::RunReader::Open(lite);
  auto pg_reader = reports::compare::RunReader::Open(pg);
  REQUIRE(lite_reader.ok());
  REQUIRE(pg_reader.ok());
  RegressionSpec spec;
  spec.baseline_runs = 3;
  auto x = CheckRegression(**lite_reader, "g", current, spec, {});
  auto y = CheckRegression(**pg_reader, "g", current, spec, {});
  REQUIRE(x.ok());
  REQUIRE(y.ok());
  CHECK(x->baseline_runs == std::vector<std::string>{"a3", "a2", "a1"});
  CHECK(y->baseline_runs == x->baseline_runs);
  REQUIRE(x->Regressed().size() == 1);
  REQUIRE(y->Regressed().size() == 1);
  CHECK(y->Regressed()[0]->key == x->Regressed()[0]->key);
  CHECK(y->Regressed()[0]->median_b == x->Regressed()[0]->median_b);
}

}  // namespace
}  // namespace fl::harness::suite
