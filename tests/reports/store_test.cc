#include "reports/store/store.h"

#include <catch2/catch.hpp>

#include "reports/store/schema.h"
#include "reports/store/sql.h"
#include "tests/pg_server.h"
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

// Where a test's store lives on `backend`: a file in dir (sqlite), or a fresh database on this
// process's own PostgreSQL server (postgresql; started on first use, stopped at exit).
std::string FreshTarget(const std::string& backend, const TempDir& dir) {
  if (backend == "sqlite") return dir.File("results.db");
  static std::unique_ptr<fl::testing::PgServer> server;
  static int databases = 0;
  if (!server) {
    std::string error;
    server = fl::testing::PgServer::Start(&error);
    INFO(error);
    REQUIRE(server);
  }
  const std::string name = "t" + std::to_string(++databases);
  auto admin = sql::Db::Open(server->Uri(), {});
  INFO(admin.status().ToString());
  REQUIRE(admin.ok());
  REQUIRE((*admin)->Exec("CREATE DATABASE " + name).ok());
  return server->Uri(name);
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

TEST_CASE("store: a version 7 database gains the detection ledger", "[unit]") {
  TempDir dir;
  const std::string path = dir.File("v7.db");
  {
    Store::Options v7;
    v7.schema_version = 7;
    auto store = Store::Open(path, v7);
    REQUIRE(store.ok());
    RunRecord r;
    r.id = "r7";
    r.scenario_name = "s";
    r.start_wall_ns = kT0;
    REQUIRE((*store)->CreateRun(r).ok());
    CHECK(RawDb(path)->Exec("SELECT * FROM detections").code() == Code::kInternal);
  }
  auto store = Store::Open(path);
  REQUIRE(store.ok());
  CHECK(*(*store)->SchemaVersion() == kSchemaVersion);
  auto data = (*store)->LoadRun("r7");
  REQUIRE(data.ok());
  CHECK(data->detections.empty());
  std::vector<DetectionRecord> ledger = {{"r7", "f0", "kernel", kT0 + 5, 1e-6, "carrier"}};
  REQUIRE((*store)->ReplaceDetections("r7", ledger).ok());
  CHECK(*(*store)->LoadDetections("r7") == ledger);
}

TEST_CASE(
    "store: a version 8 database gains the runs-by-start index - its runs list newest first with "
    "their tags, one query each",
    "[unit]") {
  TempDir dir;
  const std::string path = dir.File("v8.db");
  {
    Store::Options v8;
    v8.schema_version = 8;
    auto store = Store::Open(path, v8);
    REQUIRE(store.ok());
    for (int i = 0; i < 5; ++i) {
      RunRecord r;
      r.id = "r" + std::to_string(i);
      r.scenario_name = i % 2 ? "odd" : "even";
      r.start_wall_ns = kT0 + i;
      r.tags = {{"i", std::to_string(i)}, {"set", "a"}};
      REQUIRE((*store)->CreateRun(r).ok());
      REQUIRE((*store)
                  ->FinishRun(r.id, i == 4 ? RunStatus::kAborted : RunStatus::kPassed, kT0 + 10, "")
                  .ok());
    }
    CHECK(*RawDb(path)->QueryInt(
              "SELECT count(*) FROM sqlite_master WHERE name = 'runs_by_start'") == 0);
  }
  auto store = Store::Open(path);
  REQUIRE(store.ok());
  CHECK(*(*store)->SchemaVersion() == kSchemaVersion);
  CHECK(*RawDb(path)->QueryInt("SELECT count(*) FROM sqlite_master WHERE name = 'runs_by_start'") ==
        1);
  RunFilter f;
  f.limit = 3;
  f.tags = {{"set", "a"}};
  auto runs = (*store)->ListRuns(f);
  REQUIRE(runs.ok());
  REQUIRE(runs->size() == 3);
  CHECK((*runs)[0].id == "r4");
  CHECK((*runs)[2].id == "r2");
  for (const auto& r : *runs) CHECK(r.tags.at("i") == r.id.substr(1));  // each its own tags
  f = {};
  f.finished_only = true;
  runs = (*store)->ListRuns(f);
  REQUIRE(runs.ok());
  CHECK(runs->size() == 4);  // not the aborted r4
  auto metrics = (*store)->LoadMetricsOf({"r1", "r0", "nope"});
  REQUIRE(metrics.ok());
  CHECK(metrics->size() == 3);
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
    REQUIRE(raw->Exec("INSERT INTO faults (run_id, fault_id, kind, target, params_json, "
                      "effective_wall_ns) VALUES ('r-old', 'f0', 'nic_flap', 'h1.nic0', '{}', 150)")
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
  // Version 6: faults of older runs have no anchor.
  REQUIRE(data->faults.size() == 1);
  CHECK(data->faults[0].effective_wall_ns == Nanos{150});
  CHECK(data->faults[0].anchor.empty());
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

TEST_CASE("store: sample blocks round-trip every field, extremes and disorder included", "[unit]") {
  std::vector<SampleRecord> in = {
      {"r-blocks-0123456789", 3, 5, kT0, kT0 + 700, uint64_t{1} << 26, true, false},
      {"r-blocks-0123456789", 3, 4, kT0 - 5, kT0 + 1, uint64_t{1} << 26, false, true},
      {"r-blocks-0123456789", 3, INT64_MAX, INT64_MIN, INT64_MAX, UINT64_MAX, true, true},
      {"r-blocks-0123456789", 3, INT64_MIN, 0, -1, 0, false, false},
      {"r-blocks-0123456789", 3, 6, kT0 + kNsPerSec, kT0, 8, true, false}};  // end < start
  SampleBlockEncoder enc;
  for (const auto& smp : in) enc.Add(smp);
  CHECK(enc.count() == in.size());
  CHECK(enc.first_iteration() == INT64_MIN);
  CHECK(enc.last_iteration() == INT64_MAX);
  CHECK(enc.min_start_ns() == INT64_MIN);
  CHECK(enc.max_end_ns() == INT64_MAX);
  std::vector<uint8_t> blob(enc.Bytes().begin(), enc.Bytes().end());
  std::vector<SampleRecord> out;
  REQUIRE(DecodeSampleBlock(blob, "r-blocks-0123456789", 3, out).ok());
  CHECK(out == in);

  // A steady stream packs into a few bytes per sample.
  SampleBlockEncoder steady;
  for (int64_t i = 0; i < 1000; ++i) {
    steady.Add({"r", 0, i, kT0 + i * kNsPerMs, kT0 + i * kNsPerMs + 700 * kNsPerUs, 64 << 20, true,
                false});
  }
  CHECK(steady.Bytes().size() < 1000 * 10);

  // Malformed blobs are DataLoss, never a crash or a huge allocation.
  auto decode = [](std::vector<uint8_t> b) {
    std::vector<SampleRecord> o;
    return DecodeSampleBlock(b, "r", 0, o).code();
  };
  CHECK(decode({}) == Code::kDataLoss);
  CHECK(decode({1, 1, 0}) == Code::kDataLoss);
  std::vector<uint8_t> bad = blob;
  bad[0] = 9;  // unknown format
  CHECK(decode(bad) == Code::kDataLoss);
  bad = blob;
  bad.pop_back();  // truncated
  CHECK(decode(bad) == Code::kDataLoss);
  bad = blob;
  bad.push_back(0);  // trailing
  CHECK(decode(bad) == Code::kDataLoss);
  bad = blob;
  bad[4] = 0xff;  // a count of billions
  CHECK(decode(bad) == Code::kDataLoss);
  bad = blob;
  bad.back() = 7;  // flags out of range
  CHECK(decode(bad) == Code::kDataLoss);
}

TEST_CASE("store: the telemetry inserter writes buffered samples once, discarded ones never",
          "[unit]") {
  TempDir dir;
  const std::string path = dir.File("ins.db");
  { REQUIRE(Store::Open(path).ok()); }
  auto db = OpenStoreDb(path, false, kNsPerSec, 0);
  REQUIRE(db.ok());
  auto ins = TelemetryInserter::Prepare(**db);
  REQUIRE(ins.ok());
  {
    auto txn = sql::Transaction::Begin(**db);
    REQUIRE(txn.ok());
    // What a failed attempt leaves behind before BatchWriter retries its batch.
    REQUIRE(ins->Insert(SampleRecord{"r1", 0, 0, 10, 20, 8, true, false}).ok());
    ins->DiscardSamples();
    REQUIRE(ins->Insert(SampleRecord{"r1", 0, 1, 30, 40, 8, true, false}).ok());
    // More than one block's worth for one rank: full blocks are written as they fill.
    for (int64_t i = 0; i < static_cast<int64_t>(TelemetryInserter::kMaxBlockSamples); ++i) {
      REQUIRE(ins->Insert(SampleRecord{"r1", 1, i, 50 + i, 60 + i, 8, false, false}).ok());
    }
    REQUIRE(ins->FlushSamples().ok());
    REQUIRE(ins->FlushSamples().ok());  // nothing left: writes nothing more
    REQUIRE(txn->Commit().ok());
  }
  CHECK((*db)->QueryInt("SELECT count(*) FROM sample_blocks").value() == 2);
  CHECK((*db)->QueryInt("SELECT sum(count) FROM sample_blocks").value() ==
        1 + static_cast<int64_t>(TelemetryInserter::kMaxBlockSamples));
  CHECK((*db)->QueryInt("SELECT min(first_iteration) FROM sample_blocks WHERE rank = 0").value() ==
        1);
}

TEST_CASE("store: a version 3 database keeps its sample rows beside new sample blocks", "[unit]") {
  TempDir dir;
  const std::string path = dir.File("v3.db");
  {
    Store::Options v3;
    v3.schema_version = 3;
    auto store = Store::Open(path, v3);
    REQUIRE(store.ok());
    REQUIRE((*store)->CreateRun(MakeRun("r-old", kT0)).ok());
    // A version 3 writer stored one row per sample.
    REQUIRE(RawDb(path)
                ->Exec("INSERT INTO samples (run_id, rank, iteration, start_ns, end_ns, bytes, "
                       "verified, mismatch) VALUES ('r-old', 1, 0, 10, 20, 8, 1, 0), "
                       "('r-old', 0, 0, 10, 20, 8, 1, 0), ('r-old', 0, 1, 30, 40, 8, 0, 0)")
                .ok());
  }
  auto store = Store::Open(path);
  REQUIRE(store.ok());
  CHECK(*(*store)->SchemaVersion() == kSchemaVersion);
  std::vector<SampleRecord> more = {{"r-old", 1, 1, 50, 60, 8, true, false},
                                    {"r-old", 0, 2, 70, 80, 8, true, true}};
  REQUIRE((*store)->InsertSamples(more).ok());
  auto data = (*store)->LoadRun("r-old");
  REQUIRE(data.ok());
  const std::vector<SampleRecord> want = {{"r-old", 0, 0, 10, 20, 8, true, false},
                                          {"r-old", 0, 1, 30, 40, 8, false, false},
                                          {"r-old", 0, 2, 70, 80, 8, true, true},
                                          {"r-old", 1, 0, 10, 20, 8, true, false},
                                          {"r-old", 1, 1, 50, 60, 8, true, false}};
  CHECK(data->samples == want);
  CHECK(RawDb(path)->QueryInt("SELECT count(*) FROM samples").value() == 3);
  CHECK(RawDb(path)->QueryInt("SELECT sum(count) FROM sample_blocks").value() == 2);
}

TEST_CASE("store: a corrupt sample block is DataLoss, a block of a bad rank is dropped", "[unit]") {
  TempDir dir;
  const std::string path = dir.File("blocks.db");
  {
    auto store = Store::Open(path);
    REQUIRE(store.ok());
    REQUIRE((*store)->CreateRun(MakeRun("r1", kT0)).ok());
    std::vector<SampleRecord> rows = {{"r1", 0, 0, 10, 20, 8, true, false}};
    REQUIRE((*store)->InsertSamples(rows).ok());
  }
  REQUIRE(RawDb(path)
              ->Exec("INSERT INTO sample_blocks SELECT run_id, -4, first_iteration, "
                     "last_iteration, count, min_start_ns, max_end_ns, data FROM sample_blocks")
              .ok());
  {
    auto store = Store::Open(path);
    REQUIRE(store.ok());
    auto data = (*store)->LoadRun("r1");
    REQUIRE(data.ok());
    REQUIRE(data->samples.size() == 1);
    CHECK(data->samples[0].rank == 0);
  }
  REQUIRE(RawDb(path)->Exec("UPDATE sample_blocks SET data = x'0102' WHERE rank = 0").ok());
  auto store = Store::Open(path);
  REQUIRE(store.ok());
  auto data = (*store)->LoadRun("r1");
  CHECK(data.status().code() == Code::kDataLoss);
  CHECK_THAT(data.status().message(), Catch::Contains("sample block of run r1 rank 0"));
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

TEST_CASE("store: every table round-trips, on SQLite and on PostgreSQL", "[integration]") {
  TempDir dir;
  const std::string backend = GENERATE(as<std::string>{}, "sqlite", "postgresql");
  INFO(backend);
  auto opened = Store::Open(FreshTarget(backend, dir));
  INFO(opened.status().ToString());
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
                 true,
                 ""};
  FaultRecord f1{
      "r1",         "f1",         "tor_port_down", "tor0/p3",    "{}", kT0 + 30 * kNsPerSec,
      std::nullopt, std::nullopt, std::nullopt,    std::nullopt, "f0"};  // anchor: timed by f0
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
  std::vector<DetectionRecord> detections = {
      {"r1", "f0", "injector", kT0 + 10 * kNsPerSec, 0.0, "the agent read it back in place"},
      {"r1", "f0", "ccl", kT0 + 10 * kNsPerSec + 2000, 0.002, "fault_detected by rank 1"},
      {"r1", "f0", "progress", std::nullopt, std::nullopt, "progress never stalled"}};
  REQUIRE(store.ReplaceDetections("r1", detections).ok());
  std::vector<DetectionRecord> foreign = {{"r2", "f0", "ccl", std::nullopt, std::nullopt, ""}};
  CHECK(store.ReplaceDetections("r1", foreign).code() == Code::kInvalidArgument);

  // Field by field: gcc 12 at -Og warns (maybe-uninitialized, a false positive) on the map
  // member of an aggregate initialised through its base.
  auto nic_row = [](std::string nic) {
    NicSampleRecord n;
    n.run_id = "r1";
    n.host = "h1";
    n.nic = std::move(nic);
    n.wall_ns = kT0 + 100;
    return n;
  };
  NicSampleRecord n0 = nic_row("nic0");
  n0.rx_bytes = 1, n0.tx_bytes = 2, n0.rx_packets = 3, n0.tx_packets = 4, n0.rx_dropped = 5;
  n0.tx_dropped = 6, n0.rx_errors = 7, n0.tx_errors = 8, n0.rx_pause = 9;
  n0.extra = {{"rx_discards_phy", 11}, {"huge", UINT64_MAX}};
  NicSampleRecord n1 = nic_row("nic1");
  n1.rx_bytes = UINT64_MAX, n1.rx_packets = 1, n1.tx_packets = 1, n1.tx_pause = 3;
  std::vector<NicSampleRecord> nics = {n0, n1};
  REQUIRE(store.InsertNicSamples(nics).ok());

  auto data = store.LoadRun("r1");
  REQUIRE(data.ok());
  CHECK(data->nics == nics);
  CHECK(data->run == run);
  CHECK(data->hosts == hosts);
  REQUIRE(data->faults.size() == 2);
  CHECK(data->faults[0] == f0);
  CHECK(data->faults[1] == f1);
  CHECK(data->samples == samples);
  CHECK(data->events == events);
  CHECK(data->metrics == metrics);
  CHECK(data->verdicts == verdicts);
  CHECK(data->detections == detections);
  CHECK(*store.LoadDetections("r1") == detections);

  // Analysis can be rerun: Replace* replaces.
  REQUIRE(store.ReplaceMetrics("r1", std::span(metrics).first(1)).ok());
  CHECK(store.LoadRun("r1")->metrics.size() == 1);
  // "latest" is the most recently started run.
  REQUIRE(store.CreateRun(MakeRun("r2", kT0 + kNsPerSec)).ok());
  CHECK(store.GetRun("latest")->id == "r2");
}

TEST_CASE("store: errors are statuses with the right codes, on SQLite and on PostgreSQL",
          "[integration]") {
  TempDir dir;
  const std::string backend = GENERATE(as<std::string>{}, "sqlite", "postgresql");
  INFO(backend);
  auto opened = Store::Open(FreshTarget(backend, dir));
  INFO(opened.status().ToString());
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

TEST_CASE("store: runs are selected by scenario, status and tags, on SQLite and on PostgreSQL",
          "[integration]") {
  TempDir dir;
  const std::string backend = GENERATE(as<std::string>{}, "sqlite", "postgresql");
  INFO(backend);
  auto opened = Store::Open(FreshTarget(backend, dir));
  INFO(opened.status().ToString());
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

TEST_CASE("store: runs of a dead coordinator are marked aborted, on SQLite and on PostgreSQL",
          "[integration]") {
  TempDir dir;
  const std::string backend = GENERATE(as<std::string>{}, "sqlite", "postgresql");
  INFO(backend);
  auto opened = Store::Open(FreshTarget(backend, dir));
  INFO(opened.status().ToString());
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
