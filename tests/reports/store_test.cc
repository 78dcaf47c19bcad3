#include "reports/store/store.h"

#include <catch2/catch.hpp>

#include "reports/store/schema.h"
#include "reports/store/sqlite.h"
#include "tests/reports/temp_dir.h"

namespace fl::reports {
namespace {

using testing::TempDir;

constexpr Nanos kT0 = 1'764'464'400 * kNsPerSec;  // 2025-11-30T01:00:00Z

RunRecord MakeRun(const std::string& id, Nanos start, std::map<std::string, std::string> tags = {},
                  const std::string& scenario = "nic_flap") {
  RunRecord r;
  r.id = id;
  r.scenario_name = scenario;
  r.scenario_text = "name: " + scenario + "\nfaults: []\n";
  r.seed = 42;
  r.git_revision = "abc123";
  r.start_wall_ns = start;
  r.coordinator_pid = 1234;
  r.coordinator_host = "lab-coord";
  r.tags = std::move(tags);
  return r;
}

std::unique_ptr<sql::Db> RawDb(const std::string& path) {
  auto db = sql::Db::Open(path, {});
  REQUIRE(db.ok());
  return std::move(db).value();
}

TEST_CASE("store: a new database gets the current schema in WAL mode", "[unit]") {
  TempDir dir;
  auto store = Store::Open(dir.File("results.db"));
  REQUIRE(store.ok());
  CHECK(*(*store)->SchemaVersion() == kSchemaVersion);

  auto raw = RawDb(dir.File("results.db"));
  auto mode = raw->Prepare("PRAGMA journal_mode");
  REQUIRE(mode.ok());
  REQUIRE(*mode->Step());
  CHECK(mode->Text(0) == "wal");
  for (const char* table :
       {"runs", "run_tags", "hosts", "faults", "samples", "events", "metrics", "verdicts"}) {
    INFO(table);
    auto n = raw->QueryInt(std::string("SELECT count(*) FROM sqlite_master WHERE type='table' "
                                       "AND name='") +
                           table + "'");
    REQUIRE(n.ok());
    CHECK(*n == 1);
  }
  // Reopening an up-to-date database changes nothing.
  store->reset();
  auto again = Store::Open(dir.File("results.db"));
  REQUIRE(again.ok());
  CHECK(*(*again)->SchemaVersion() == kSchemaVersion);
}

TEST_CASE("store: opening a version 1 database migrates it and keeps its rows", "[unit]") {
  TempDir dir;
  const std::string path = dir.File("old.db");
  {
    Store::Options v1;
    v1.schema_version = 1;
    auto store = Store::Open(path, v1);
    REQUIRE(store.ok());
    CHECK(*(*store)->SchemaVersion() == 1);
    // A version 1 writer knew no tags or coordinator columns.
    auto raw = RawDb(path);
    REQUIRE(raw->Exec("INSERT INTO runs (id, scenario_name, scenario_text, scenario_hash, seed, "
                      "git_revision, status, start_wall_ns, end_wall_ns, message) VALUES "
                      "('r-old', 'nic_flap', 'text', 'h', 7, 'rev', 'passed', 100, 200, '')")
                .ok());
    REQUIRE(raw->Exec("INSERT INTO metrics VALUES ('r-old', 'f0', 'detection_latency_ms', 12.5, "
                      "'ms')")
                .ok());
    CHECK(raw->Exec("SELECT coordinator_pid FROM runs").code() == Code::kInternal);
  }
  auto store = Store::Open(path);
  REQUIRE(store.ok());
  CHECK(*(*store)->SchemaVersion() == kSchemaVersion);
  auto data = (*store)->LoadRun("r-old");
  REQUIRE(data.ok());
  CHECK(data->run.status == RunStatus::kPassed);
  CHECK(data->run.seed == 7);
  CHECK(data->run.end_wall_ns == Nanos{200});
  CHECK(data->run.coordinator_pid == 0);
  CHECK(data->run.coordinator_host.empty());
  REQUIRE(data->metrics.size() == 1);
  CHECK(data->metrics[0].value == 12.5);
  REQUIRE((*store)->SetTag("r-old", "fw", "22.39").ok());
  RunFilter f;
  f.tags["fw"] = "22.39";
  auto runs = (*store)->ListRuns(f);
  REQUIRE(runs.ok());
  REQUIRE(runs->size() == 1);
  CHECK((*runs)[0].id == "r-old");
}

TEST_CASE("store: malformed rows are dropped or a status, never an exception", "[unit]") {
  TempDir dir;
  const std::string path = dir.File("bad.db");
  { REQUIRE(Store::Open(path).ok()); }
  {
    auto raw = RawDb(path);
    REQUIRE(raw->Exec("INSERT INTO runs (id, scenario_name, scenario_text, scenario_hash, seed, "
                      "git_revision, status, start_wall_ns, end_wall_ns, message) VALUES "
                      "('r1', 's', 't', 'h', 'not a number', 'rev', 'passed', 100, NULL, '')")
                .ok());
    // Ranks no writer of ours produces, a negative byte count, text where numbers belong.
    REQUIRE(raw->Exec("INSERT INTO samples (run_id, rank, iteration, start_ns, end_ns, bytes, "
                      "verified, mismatch) VALUES ('r1', 99999999999, 1, 1, 2, 8, 0, 0), "
                      "('r1', -3, 1, 1, 2, 8, 0, 0), ('r1', 0, 1, 1, 2, -8, 0, 0), "
                      "('r1', 'x', 'y', 'z', 2, 8, 'v', 0), ('r1', 1, 2, 1, 2, 8, 1, 0)")
                .ok());
    REQUIRE(raw->Exec("INSERT INTO events (run_id, rank, wall_ns, kind, detail_json) VALUES "
                      "('r1', -7, 1, 'k', 'not json'), ('r1', 0, 1, 'k', '{}')")
                .ok());
  }
  auto store = Store::Open(path);
  REQUIRE(store.ok());
  auto data = (*store)->LoadRun("r1");
  REQUIRE(data.ok());
  // 'x' reads as rank 0 (SQLite's own coercion): only the out-of-range rows are dropped.
  CHECK(data->samples.size() == 2);
  for (const auto& smp : data->samples) CHECK((smp.rank == 0 || smp.rank == 1));
  REQUIRE(data->events.size() == 1);
  CHECK(data->events[0].rank == 0);
  CHECK(data->run.seed == 0);  // text in the seed column reads as 0, not an exception
}

TEST_CASE("store: a database newer than this build is a clear error", "[unit]") {
  TempDir dir;
  const std::string path = dir.File("new.db");
  { REQUIRE(Store::Open(path).ok()); }
  { REQUIRE(RawDb(path)->Exec("UPDATE schema_version SET version = 99").ok()); }
  auto store = Store::Open(path);
  REQUIRE_FALSE(store.ok());
  CHECK(store.status().code() == Code::kFailedPrecondition);
  CHECK_THAT(store.status().message(), Catch::Contains("99") && Catch::Contains("newer"));
}

TEST_CASE("store: a database that is not ours is refused, not modified", "[unit]") {
  TempDir dir;
  const std::string path = dir.File("other.db");
  { REQUIRE(RawDb(path)->Exec("CREATE TABLE foo (x INTEGER)").ok()); }
  auto store = Store::Open(path);
  REQUIRE_FALSE(store.ok());
  CHECK(store.status().code() == Code::kFailedPrecondition);
  auto tables = RawDb(path)->QueryInt("SELECT count(*) FROM sqlite_master WHERE type='table'");
  REQUIRE(tables.ok());
  CHECK(*tables == 1);
}

TEST_CASE("store: a missing file with create=false is NotFound", "[unit]") {
  TempDir dir;
  Store::Options o;
  o.create = false;
  auto store = Store::Open(dir.File("absent.db"), o);
  REQUIRE_FALSE(store.ok());
  CHECK(store.status().code() == Code::kNotFound);
}

TEST_CASE("store: every table round-trips", "[unit]") {
  TempDir dir;
  auto opened = Store::Open(dir.File("results.db"));
  REQUIRE(opened.ok());
  Store& store = **opened;

  RunRecord run = MakeRun("r1", kT0, {{"fw", "22.39"}, {"ccl", "ftccl"}});
  REQUIRE(store.CreateRun(run).ok());
  REQUIRE(store.FinishRun("r1", RunStatus::kFailed, kT0 + 90 * kNsPerSec, "max_recovery_ms").ok());
  run.status = RunStatus::kFailed;
  run.end_wall_ns = kT0 + 90 * kNsPerSec;
  run.message = "max_recovery_ms";
  run.scenario_hash = ScenarioHash(run.scenario_text);

  std::vector<HostRecord> hosts = {
      {"r1", "h0", "198.18.0.1", -1500, 40, R"({"kernel":"6.1"})"},
      {"r1", "h1", "198.18.0.2", 2500, 35, R"({"kernel":"6.1","nic_fw":"22.39"})"}};
  for (const auto& h : hosts) REQUIRE(store.PutHost(h).ok());

  FaultRecord f0{"r1",
                 "f0",
                 "nic_flap",
                 "h1/nic0",
                 R"({"period":"1s"})",
                 kT0 + 10 * kNsPerSec,
                 kT0 + 10 * kNsPerSec + 5,
                 kT0 + 10 * kNsPerSec + 900,
                 kT0 + 20 * kNsPerSec,
                 true};
  FaultRecord f1{
      "r1",         "f1",         "tor_port_down", "tor0/p3",   "{}", kT0 + 30 * kNsPerSec,
      std::nullopt, std::nullopt, std::nullopt,    std::nullopt};
  REQUIRE(store.PutFault(f1).ok());
  FaultRecord f0_early = f0;
  f0_early.reverted_wall_ns.reset();
  f0_early.revert_verified.reset();
  REQUIRE(store.PutFault(f0_early).ok());
  REQUIRE(store.PutFault(f0).ok());  // update with the revert

  std::vector<SampleRecord> samples;
  for (int rank = 0; rank < 2; ++rank) {
    for (int it = 0; it < 3; ++it) {
      samples.push_back({"r1", rank, it, kT0 + it * kNsPerSec, kT0 + it * kNsPerSec + 700,
                         uint64_t{1} << 26, it != 1, it == 2 && rank == 1});
    }
  }
  REQUIRE(store.InsertSamples(samples).ok());
  std::vector<EventRecord> events = {
      {"r1", 1, kT0 + 10 * kNsPerSec + 2000, "fault_detected", R"({"nic":"nic0"})"},
      {"r1", -1, kT0 + 11 * kNsPerSec, "failover_done", "{}"}};
  REQUIRE(store.InsertEvents(events).ok());
  std::vector<MetricRecord> metrics = {{"r1", std::nullopt, "baseline_busbw", 1.5e9, "B/s"},
                                       {"r1", "f0", "detection_latency_ms", 1.1, "ms"}};
  REQUIRE(store.ReplaceMetrics("r1", metrics).ok());
  std::vector<VerdictRecord> verdicts = {
      {"r1", "f0", "max_recovery_ms", false, std::nullopt, 500.0, "never recovered"},
      {"r1", std::nullopt, "survives", true, 1.0, 1.0, ""}};
  REQUIRE(store.ReplaceVerdicts("r1", verdicts).ok());

  auto data = store.LoadRun("r1");
  REQUIRE(data.ok());
  CHECK(data->run == run);
  CHECK(data->hosts == hosts);
  REQUIRE(data->faults.size() == 2);
  CHECK(data->faults[0] == f0);
  CHECK(data->faults[1] == f1);
  CHECK(data->samples == samples);
  CHECK(data->events == events);
  CHECK(data->metrics == metrics);
  CHECK(data->verdicts == verdicts);

  // Analysis can be rerun: Replace* replaces.
  REQUIRE(store.ReplaceMetrics("r1", std::span(metrics).first(1)).ok());
  CHECK(store.LoadRun("r1")->metrics.size() == 1);
  // "latest" is the most recently started run.
  REQUIRE(store.CreateRun(MakeRun("r2", kT0 + kNsPerSec)).ok());
  CHECK(store.GetRun("latest")->id == "r2");
}

TEST_CASE("store: errors are statuses with the right codes", "[unit]") {
  TempDir dir;
  auto opened = Store::Open(dir.File("results.db"));
  REQUIRE(opened.ok());
  Store& store = **opened;
  REQUIRE(store.CreateRun(MakeRun("r1", kT0)).ok());
  CHECK(store.CreateRun(MakeRun("r1", kT0)).code() == Code::kInvalidArgument);
  CHECK(store.FinishRun("nope", RunStatus::kPassed, kT0, "").code() == Code::kNotFound);
  CHECK(store.LoadRun("nope").status().code() == Code::kNotFound);
  // Metrics must belong to an existing run (foreign keys are on).
  std::vector<MetricRecord> orphan = {{"nope", std::nullopt, "x", 1, "ms"}};
  CHECK(store.ReplaceMetrics("nope", orphan).code() == Code::kInvalidArgument);
  std::vector<MetricRecord> wrong_run = {{"r2", std::nullopt, "x", 1, "ms"}};
  CHECK(store.ReplaceMetrics("r1", wrong_run).code() == Code::kInvalidArgument);
  CHECK(store.LoadRun("r1")->metrics.empty());  // the failed transaction left nothing
}

TEST_CASE("store: runs are selected by scenario, status and tags", "[unit]") {
  TempDir dir;
  auto opened = Store::Open(dir.File("results.db"));
  REQUIRE(opened.ok());
  Store& store = **opened;
  REQUIRE(store.CreateRun(MakeRun("a", kT0, {{"fw", "22.39"}, {"lab", "x"}})).ok());
  REQUIRE(store.CreateRun(MakeRun("b", kT0 + 1, {{"fw", "22.41"}, {"lab", "x"}})).ok());
  REQUIRE(store.CreateRun(MakeRun("c", kT0 + 2, {{"fw", "22.39"}}, "pfc_storm")).ok());
  REQUIRE(store.FinishRun("c", RunStatus::kPassed, kT0 + 3, "").ok());

  auto ids = [&](const RunFilter& f) {
    auto runs = store.ListRuns(f);
    REQUIRE(runs.ok());
    std::vector<std::string> out;
    for (const auto& r : *runs) out.push_back(r.id);
    return out;
  };
  RunFilter all;
  CHECK(ids(all) == std::vector<std::string>{"c", "b", "a"});  // newest first

  RunFilter fw;
  REQUIRE(ParseTagSelector("tag:fw=22.39", fw).ok());
  CHECK(ids(fw) == std::vector<std::string>{"c", "a"});

  RunFilter two;
  REQUIRE(ParseTagSelector("tag:fw=22.39,lab=x", two).ok());
  CHECK(ids(two) == std::vector<std::string>{"a"});

  RunFilter scen;
  scen.scenario_name = "nic_flap";
  CHECK(ids(scen) == std::vector<std::string>{"b", "a"});

  RunFilter passed;
  passed.status = RunStatus::kPassed;
  CHECK(ids(passed) == std::vector<std::string>{"c"});

  RunFilter limited;
  limited.limit = 1;
  CHECK(ids(limited) == std::vector<std::string>{"c"});

  auto runs = store.ListRuns(fw);
  REQUIRE(runs.ok());
  CHECK((*runs)[1].tags == std::map<std::string, std::string>{{"fw", "22.39"}, {"lab", "x"}});

  RunFilter bad;
  CHECK(ParseTagSelector("fw=22.39", bad).code() == Code::kInvalidArgument);
  CHECK(ParseTagSelector("tag:fw", bad).code() == Code::kInvalidArgument);
  CHECK(ParseTagSelector("tag:", bad).code() == Code::kInvalidArgument);
  CHECK(ParseRunStatus("exploded").status().code() == Code::kInvalidArgument);
}

TEST_CASE("store: runs of a dead coordinator are marked aborted", "[unit]") {
  TempDir dir;
  auto opened = Store::Open(dir.File("results.db"));
  REQUIRE(opened.ok());
  Store& store = **opened;
  RunRecord dead = MakeRun("dead", kT0);
  dead.coordinator_pid = 100;
  RunRecord live = MakeRun("live", kT0);
  live.coordinator_pid = 200;
  RunRecord other_host = MakeRun("elsewhere", kT0);
  other_host.coordinator_pid = 100;
  other_host.coordinator_host = "other";
  RunRecord finished = MakeRun("finished", kT0);
  finished.coordinator_pid = 100;
  for (const auto& r : {dead, live, other_host, finished}) REQUIRE(store.CreateRun(r).ok());
  REQUIRE(store.FinishRun("finished", RunStatus::kPassed, kT0 + 5, "").ok());

  auto marked = store.MarkDeadRunsAborted(
      "lab-coord", [](int64_t pid) { return pid == 200; }, kT0 + 99);
  REQUIRE(marked.ok());
  CHECK(*marked == std::vector<std::string>{"dead"});
  auto d = store.GetRun("dead");
  REQUIRE(d.ok());
  CHECK(d->status == RunStatus::kAborted);
  CHECK(d->end_wall_ns == kT0 + 99);
  CHECK_THAT(d->message, Catch::Contains("died"));
  CHECK(store.GetRun("live")->status == RunStatus::kRunning);
  CHECK(store.GetRun("elsewhere")->status == RunStatus::kRunning);
  CHECK(store.GetRun("finished")->status == RunStatus::kPassed);
  // A second pass finds nothing new.
  CHECK(store.MarkDeadRunsAborted("lab-coord", [](int64_t pid) { return pid == 200; })->empty());

  // The default liveness check sees this process alive.
  CHECK(ProcessAlive(getpid()));
  CHECK_FALSE(ProcessAlive(0));
}

TEST_CASE("store: scenario hash is SHA-256", "[unit]") {
  CHECK(ScenarioHash("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

}  // namespace
}  // namespace fl::reports
