// The writer's spool (reports/store/spool.h) on its own, then the BatchWriter over a store that
// does not take writes (its write lock held by another connection past the busy timeout): rows
// go to the spool in order, come back once the store takes writes, and a spool left at Close
// is finished by ReplaySpoolFile (`faultline store replay`).
#include "reports/store/spool.h"

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "common/file_util.h"
#include "reports/store/batch_sink.h"
#include "reports/store/batch_writer.h"
#include "reports/store/schema.h"
#include "reports/store/sql.h"
#include "reports/store/store.h"
#include "tests/reports/store_with_run.h"
#include "tests/reports/temp_dir.h"

namespace fl::reports {
namespace {

using testing::TempDir;

constexpr Nanos kT0 = 1'764'464'400 * kNsPerSec;

SampleRecord Sample(int rank, int64_t it) {
  return {"r1", rank, it, kT0 + it * kNsPerMs, kT0 + it * kNsPerMs + 500, 4096, true, it == 7};
}

FaultRecord Fault() {
  FaultRecord f;
  f.run_id = "r1";
  f.fault_id = "f0";
  f.kind = "nic_port_flap";
  f.target = "h0.nic0";
  f.params_json = R"({"down":"1s"})";
  f.scheduled_wall_ns = kT0;
  return f;
}

std::vector<SpoolRow> EveryKind() {
  NicSampleRecord n;
  n.run_id = "r1";
  n.host = "h0";
  n.nic = "nic0";
  n.wall_ns = kT0 + 3;
  n.rx_bytes = 1;
  n.tx_errors = 18'446'744'073'709'551'615ull;
  n.tx_pause = 4;
  n.extra = {{"rx_crc", 9}};
  FaultRecord f = Fault();
  f.effective_wall_ns = kT0 + 5;
  f.revert_verified = false;
  return {Sample(0, 1), EventRecord{"r1", 2, kT0 + 9, "fault_detected", R"({"why":"a\nb \"q\""})"},
          n, f, RunEndRecord{"r1", RunStatus::kFailed, kT0 + 99, "ünïcode and a\ttab"}};
}

TEST_CASE("spool: every kind of row comes back as written - marks - a torn last line is ignored",
          "[unit]") {
  TempDir dir;
  const std::string path = dir.File("sub/r1.spool");
  SpoolHeader h{1, "results.db", "r1", kT0, ""};
  auto w = SpoolWriter::Create(path, h, 1 << 20);
  REQUIRE(w.ok());
  const auto rows = EveryKind();
  REQUIRE((*w)->Append(rows).ok());
  REQUIRE((*w)->Mark(2).ok());
  REQUIRE((*w)->Append(std::vector<SpoolRow>{Sample(1, 2)}).ok());
  CHECK((*w)->rows() == 6);
  struct stat st {};
  REQUIRE(stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);

  auto c = ReadSpool(path);
  REQUIRE(c.ok());
  CHECK(c->header == h);
  REQUIRE(c->rows.size() == 6);
  for (size_t i = 0; i < rows.size(); ++i) CHECK(c->rows[i] == rows[i]);
  CHECK(c->rows[5] == SpoolRow(Sample(1, 2)));
  CHECK(c->replayed == 2);
  CHECK_FALSE(c->torn_tail);

  // A crash in the middle of an append: the cut line is not there, the rest is.
  const std::string whole = *ReadFile(path);
  const std::string line = SpoolLine(Sample(3, 3));
  REQUIRE(WriteFileAtomic(path, whole + line.substr(0, line.size() / 2)).ok());
  c = ReadSpool(path);
  REQUIRE(c.ok());
  CHECK(c->rows.size() == 6);
  CHECK(c->torn_tail);

  // Damage anywhere else is refused, naming the line.
  std::string bad = whole;
  const size_t third = bad.find('\n', bad.find('\n') + 1) + 1;
  bad[third + 20] ^= 1;
  c = ParseSpool(bad);
  REQUIRE_FALSE(c.ok());
  CHECK(c.status().code() == Code::kDataLoss);
  CHECK_THAT(c.status().message(), Catch::Contains("line 3"));
  CHECK_FALSE(ParseSpool("").ok());
  CHECK_FALSE(ParseSpool(SpoolLine(Sample(0, 0))).ok());  // rows without a header
  // A mark past the rows written is damage too.
  REQUIRE(WriteFileAtomic(path, whole).ok());
  REQUIRE(AppendSpoolMark(path, 7).ok());
  REQUIRE(AppendSpoolMark(path, 6).ok());
  CHECK(ReadSpool(path).status().code() == Code::kDataLoss);
  // Not a regular file: refused before anything is read.
  CHECK(ReadSpool("/dev/zero").status().code() == Code::kInvalidArgument);
}

TEST_CASE("spool: an append that would pass the bound is refused whole", "[unit]") {
  TempDir dir;
  const std::string path = dir.File("r1.spool");
  auto w = SpoolWriter::Create(path, {1, "results.db", "r1", kT0, ""}, 600);
  REQUIRE(w.ok());
  REQUIRE((*w)->Append(std::vector<SpoolRow>{Sample(0, 0)}).ok());
  const uint64_t before = (*w)->bytes();
  std::vector<SpoolRow> many;
  for (int i = 0; i < 10; ++i) many.emplace_back(Sample(0, i));
  Status s = (*w)->Append(many);
  CHECK_FALSE(s.ok());
  CHECK_THAT(s.message(), Catch::Contains("FAULTLINE_SPOOL_MAX"));
  CHECK((*w)->bytes() == before);
  auto c = ReadSpool(path);
  REQUIRE(c.ok());
  CHECK(c->rows.size() == 1);
}

std::unique_ptr<Store> OpenWithRun(const std::string& path) {
  return testing::OpenWithRun(path, kT0);
}

// A store that takes no writes: another connection holds its write lock until Release.
struct HeldStore {
  std::unique_ptr<sql::Db> blocker;
  explicit HeldStore(const std::string& path) {
    auto b = sql::Db::Open(path, {});
    REQUIRE(b.ok());
    blocker = std::move(b).value();
    REQUIRE(blocker->Exec("BEGIN IMMEDIATE").ok());
  }
  void Release() {
    if (blocker) REQUIRE(blocker->Exec("ROLLBACK").ok());
    blocker.reset();
  }
};

BatchWriter::Options SpoolingOptions(const TempDir& dir) {
  BatchWriter::Options o;
  o.max_batch = 100;
  o.busy_timeout = 100 * kNsPerMs;
  o.retry_min = 50 * kNsPerMs;
  o.retry_max = 200 * kNsPerMs;
  o.run_id = "r1";
  o.spool_path = dir.File("spool/r1.spool");
  return o;
}

TEST_CASE("batch writer: rows the store will not take wait in the spool and are replayed in order",
          "[unit]") {
  TempDir dir;
  const std::string path = dir.File("results.db");
  auto store = OpenWithRun(path);
  const auto o = SpoolingOptions(dir);
  auto w = BatchWriter::Open(path, o);
  REQUIRE(w.ok());
  HeldStore held(path);
  FaultRecord f = Fault();
  REQUIRE((*w)->PushFault(f, Deadline::After(kNsPerSec)).ok());
  std::vector<SampleRecord> samples;
  for (int64_t it = 0; it < 450; ++it) samples.push_back(Sample(static_cast<int>(it % 3), it));
  REQUIRE((*w)->PushSamples(samples, Deadline::After(kNsPerSec)).ok());
  f.effective_wall_ns = kT0 + kNsPerMs;
  f.reverted_wall_ns = kT0 + kNsPerSec;
  f.revert_verified = true;
  REQUIRE((*w)->PushFault(f, Deadline::After(kNsPerSec)).ok());
  REQUIRE((*w)->PushRunEnd({"r1", RunStatus::kPassed, kT0 + 2 * kNsPerSec, ""},
                           Deadline::After(kNsPerSec))
              .ok());
  REQUIRE(WaitUntil([&] { return (*w)->GetStats().spool_pending == 453; },
                    Deadline::After(20 * kNsPerSec)));
  auto stats = (*w)->GetStats();
  CHECK(stats.spool_path == o.spool_path);
  CHECK(access(o.spool_path.c_str(), F_OK) == 0);
  // Pending, not lost: Flush says where the rows wait.
  Status flushed = (*w)->Flush(Deadline::After(100 * kNsPerMs));
  CHECK(flushed.code() == Code::kUnavailable);
  CHECK_THAT(flushed.message(), Catch::Contains(o.spool_path));

  held.Release();
  REQUIRE((*w)->Flush(Deadline::After(20 * kNsPerSec)).ok());
  stats = (*w)->GetStats();
  CHECK(stats.dropped_rows == 0);
  CHECK(stats.spooled_rows == 453);
  CHECK(stats.replayed_rows == 453);
  CHECK(stats.spool_pending == 0);
  CHECK(stats.spool_path.empty());
  CHECK(access(o.spool_path.c_str(), F_OK) != 0);  // removed once replayed
  // Rows pushed after the outage go straight in.
  REQUIRE((*w)->Push(Sample(0, 1000), Deadline::After(kNsPerSec)).ok());
  REQUIRE((*w)->Close(Deadline::After(10 * kNsPerSec)).ok());

  auto data = store->LoadRun("r1");
  REQUIRE(data.ok());
  CHECK(data->samples.size() == 451);
  CHECK(data->run.status == RunStatus::kPassed);
  REQUIRE(data->faults.size() == 1);
  CHECK(data->faults[0] == f);  // the last of its rows, as pushed
}

TEST_CASE("batch writer: a store still out at Close keeps the spool - a replay writes it once",
          "[unit]") {
  TempDir dir;
  const std::string path = dir.File("results.db");
  auto store = OpenWithRun(path);
  const auto o = SpoolingOptions(dir);
  std::vector<SampleRecord> samples;
  for (int64_t it = 0; it < 250; ++it) samples.push_back(Sample(0, it));
  {
    auto w = BatchWriter::Open(path, o);
    REQUIRE(w.ok());
    HeldStore held(path);
    REQUIRE((*w)->PushSamples(samples, Deadline::After(kNsPerSec)).ok());
    REQUIRE((*w)->PushRunEnd({"r1", RunStatus::kError, kT0 + kNsPerSec, "not analysed"},
                             Deadline::After(kNsPerSec))
                .ok());
    Status closed = (*w)->Close(Deadline::After(kNsPerSec));
    CHECK(closed.code() == Code::kUnavailable);
    CHECK_THAT(closed.message(), Catch::Contains("251 rows are kept in the spool " + o.spool_path));
    CHECK_THAT(closed.message(), Catch::Contains("faultline store replay"));
    CHECK((*w)->GetStats().dropped_rows == 0);
    held.Release();
  }
  REQUIRE(access(o.spool_path.c_str(), F_OK) == 0);
  // The spool names its writer and numbers the writer's transactions (100 rows each here).
  auto kept = ReadSpool(o.spool_path);
  REQUIRE(kept.ok());
  CHECK(kept->header.version == 2);
  CHECK(kept->header.writer.size() == 16);
  REQUIRE(kept->batches.size() >= 3);
  CHECK(kept->batches[0].first_row == 0);
  CHECK(kept->batches[1].first_row == 100);
  auto before = store->LoadRun("r1");
  REQUIRE(before.ok());
  CHECK(before->samples.empty());
  CHECK(before->run.status == RunStatus::kRunning);

  std::vector<uint64_t> progress;
  auto done =
      ReplaySpoolFile(o.spool_path, path, [&](uint64_t at, uint64_t) { progress.push_back(at); });
  REQUIRE(done.ok());
  CHECK(done->rows == 251);
  CHECK(done->written == 251);
  CHECK(done->skipped == 0);
  CHECK(done->ended_run);
  CHECK(done->header.run_id == "r1");
  CHECK(progress == std::vector<uint64_t>{251});  // one batch (8192 rows a batch)
  CHECK(access(o.spool_path.c_str(), F_OK) != 0);
  auto after = store->LoadRun("r1");
  REQUIRE(after.ok());
  CHECK(after->samples == samples);
  CHECK(after->run.status == RunStatus::kError);
  CHECK(after->run.message == "not analysed");
}

TEST_CASE("store replay: rows a cut-short replay marked are not written again", "[unit]") {
  TempDir dir;
  const std::string path = dir.File("results.db");
  auto store = OpenWithRun(path);
  const std::string spool = dir.File("r1.spool");
  std::vector<SpoolRow> rows;
  for (int64_t it = 0; it < 10; ++it) rows.emplace_back(Sample(0, it));
  {
    auto w = SpoolWriter::Create(spool, {1, path, "r1", kT0, ""}, 1 << 20);
    REQUIRE(w.ok());
    REQUIRE((*w)->Append(rows).ok());
  }
  // The first four are in the store already, and marked so.
  std::vector<SampleRecord> first;
  for (int64_t it = 0; it < 4; ++it) first.push_back(Sample(0, it));
  REQUIRE(store->InsertSamples(first).ok());
  REQUIRE(AppendSpoolMark(spool, 4).ok());
  auto done = ReplaySpoolFile(spool, path);
  REQUIRE(done.ok());
  CHECK(done->skipped == 4);
  CHECK(done->written == 6);
  CHECK_FALSE(done->ended_run);
  auto data = store->LoadRun("r1");
  REQUIRE(data.ok());
  CHECK(data->samples.size() == 10);
  // A damaged spool is refused and left where it is.
  REQUIRE(WriteFileAtomic(spool, SpoolLine(Sample(0, 0))).ok());
  CHECK(ReplaySpoolFile(spool, path).status().code() == Code::kDataLoss);
  CHECK(access(spool.c_str(), F_OK) == 0);
}

TEST_CASE(
    "spool: the replay's plan keeps batches whole, merges them up to the batch size and "
    "only marks those the store holds",
    "[unit]") {
  SpoolContents c;
  c.header.writer = "w1";
  for (int64_t it = 0; it < 12; ++it) c.rows.emplace_back(Sample(0, it));
  // Rows 0-1 from before batches were numbered (a version 1 writer cannot mix, but the plan
  // does not care); then batches 4 (rows 2-4), 5 (5-6), 6 (7-10), 8 (11).
  c.batches = {{2, 4}, {5, 5}, {7, 6}, {11, 8}};
  using S = ReplayStep;
  CHECK(PlanReplay(c, 0, 0, 5) ==
        std::vector<S>{{0, 2, 0, 0, false}, {2, 7, 4, 5, false}, {7, 12, 6, 8, false}});
  CHECK(PlanReplay(c, 0, 0, 4) == std::vector<S>{{0, 2, 0, 0, false},
                                                 {2, 5, 4, 4, false},
                                                 {5, 7, 5, 5, false},
                                                 {7, 11, 6, 6, false},
                                                 {11, 12, 8, 8, false}});
  // The store holds batches up to 5: marked, not written. From a mark inside batch 6 on.
  CHECK(PlanReplay(c, 0, 5, 5) ==
        std::vector<S>{{0, 2, 0, 0, false}, {2, 7, 4, 5, true}, {7, 12, 6, 8, false}});
  CHECK(PlanReplay(c, 8, 5, 100) == std::vector<S>{{8, 12, 6, 8, false}});
  CHECK(PlanReplay(c, 0, 8, 100) == std::vector<S>{{0, 2, 0, 0, false}, {2, 12, 4, 8, true}});
  CHECK(PlanReplay(c, 12, 0, 100).empty());
  // A batch larger than the step size is one step alone; unnumbered rows go max_rows a step.
  CHECK(PlanReplay(c, 0, 0, 1).size() == 6);
  CHECK(PlanReplay(c, 0, 0, 1)[2] == S{2, 5, 4, 4, false});
}

TEST_CASE("spool: batches out of order, or in a version 1 file, are damage", "[unit]") {
  const std::string h2 = SpoolHeaderLine({2, "results.db", "r1", kT0, "w1"});
  const std::string b3 = SpoolRecordLine(R"({"t":"batch","seq":3})");
  const std::string b2 = SpoolRecordLine(R"({"t":"batch","seq":2})");
  auto ok = ParseSpool(h2 + b2 + SpoolLine(Sample(0, 0)) + b3 + SpoolLine(Sample(0, 1)));
  REQUIRE(ok.ok());
  CHECK(ok->header.writer == "w1");
  CHECK(ok->batches == std::vector<SpoolBatch>{{0, 2}, {1, 3}});
  CHECK(ParseSpool(h2 + b3 + b2).status().code() == Code::kDataLoss);
  CHECK(ParseSpool(h2 + b3 + b3).status().code() == Code::kDataLoss);
  const std::string h1 = SpoolHeaderLine({1, "results.db", "r1", kT0, ""});
  CHECK_THAT(std::string(ParseSpool(h1 + b2).status().message()), Catch::Contains("line 2"));
  CHECK(
      ParseSpool(SpoolRecordLine(R"({"t":"spool","version":3,"store":"x","run":"r1","created":0})"))
          .status()
          .code() == Code::kDataLoss);
}

TEST_CASE("batch sink: a batch the store holds already is not written again", "[unit]") {
  TempDir dir;
  const std::string path = dir.File("results.db");
  auto store = OpenWithRun(path);
  auto sink = BatchSink::Open(path, kNsPerSec, "w1", "r1");
  REQUIRE(sink.ok());
  CHECK(*(*sink)->LastBatch() == 0);
  const std::vector<SpoolRow> rows{Sample(0, 0), Sample(0, 1)};
  CHECK(*(*sink)->Write(rows, 5, 5) == true);
  CHECK(*(*sink)->LastBatch() == 5);
  // The retry of a batch whose COMMIT went through (its answer lost): nothing written.
  CHECK(*(*sink)->Write(rows, 5, 5) == false);
  CHECK((*sink)->Write(rows, 4, 6).status().code() == Code::kFailedPrecondition);
  CHECK(*(*sink)->Write(std::vector<SpoolRow>{Sample(0, 2)}, 6, 6) == true);
  // Unnumbered rows are always written.
  CHECK(*(*sink)->Write(std::vector<SpoolRow>{Sample(1, 0)}, 0, 0) == true);
  auto data = store->LoadRun("r1");
  REQUIRE(data.ok());
  CHECK(data->samples.size() == 4);
  // Another writer's numbers are its own.
  auto other = BatchSink::Open(path, kNsPerSec, "w2", "r1");
  REQUIRE(other.ok());
  CHECK(*(*other)->LastBatch() == 0);
  REQUIRE((*sink)->Forget().ok());
  CHECK(*(*sink)->LastBatch() == 0);
}

TEST_CASE(
    "store replay: batches that did commit before the spool took them are not written "
    "twice",
    "[unit]") {
  TempDir dir;
  const std::string path = dir.File("results.db");
  auto store = OpenWithRun(path);
  // Batches 1 (samples 0-3) and 2 (4-6) committed, but the writer heard an error (the
  // connection broke as COMMIT was sent) and spooled them with batch 3 (7-9).
  std::vector<SpoolRow> all;
  for (int64_t it = 0; it < 10; ++it) all.emplace_back(Sample(0, it));
  auto rows = [&](size_t a, size_t b) { return std::span<const SpoolRow>(all.data() + a, b - a); };
  {
    auto sink = BatchSink::Open(path, kNsPerSec, "w1", "r1");
    REQUIRE(sink.ok());
    REQUIRE(*(*sink)->Write(rows(0, 4), 1, 1));
    REQUIRE(*(*sink)->Write(rows(4, 7), 2, 2));
  }
  const std::string spool = dir.File("r1.spool");
  {
    auto w = SpoolWriter::Create(spool, {2, path, "r1", kT0, "w1"}, 1 << 20);
    REQUIRE(w.ok());
    REQUIRE((*w)->Append(rows(0, 4), 1).ok());
    REQUIRE((*w)->Append(rows(4, 7), 2).ok());
    REQUIRE((*w)->Append(rows(7, 10), 3).ok());
  }
  auto done = ReplaySpoolFile(spool, path);
  REQUIRE(done.ok());
  CHECK(done->rows == 10);
  CHECK(done->skipped == 7);
  CHECK(done->written == 3);
  auto data = store->LoadRun("r1");
  REQUIRE(data.ok());
  REQUIRE(data->samples.size() == 10);
  for (int64_t it = 0; it < 10; ++it) CHECK(data->samples[static_cast<size_t>(it)].iteration == it);
  // Every row in, the spool gone: the writer's numbers go with it.
  auto sink = BatchSink::Open(path, kNsPerSec, "w1", "r1");
  REQUIRE(sink.ok());
  CHECK(*(*sink)->LastBatch() == 0);
}

TEST_CASE(
    "batch writer: a version 6 database gains writer_batches - the writer's numbers go "
    "at a clean Close",
    "[unit]") {
  TempDir dir;
  const std::string path = dir.File("v6.db");
  {
    Store::Options v6;
    v6.schema_version = 6;
    auto store = Store::Open(path, v6);
    REQUIRE(store.ok());
    RunRecord r;
    r.id = "r1";
    r.scenario_name = "s";
    r.start_wall_ns = kT0;
    REQUIRE((*store)->CreateRun(r).ok());
    REQUIRE((*store)->InsertSamples(std::vector<SampleRecord>{Sample(0, 0)}).ok());
  }
  auto w = BatchWriter::Open(path, {});
  REQUIRE(w.ok());
  auto raw = sql::Db::Open(path, {});
  REQUIRE(raw.ok());
  CHECK((*raw)->QueryInt("SELECT max(version) FROM schema_version").value() == kSchemaVersion);
  REQUIRE((*w)->Push(Sample(0, 1), Deadline::After(kNsPerSec)).ok());
  REQUIRE((*w)->Flush(Deadline::After(10 * kNsPerSec)).ok());
  CHECK((*raw)->QueryInt("SELECT count(*) FROM writer_batches WHERE last_batch >= 1").value() == 1);
  REQUIRE((*w)->Close(Deadline::After(10 * kNsPerSec)).ok());
  CHECK((*raw)->QueryInt("SELECT count(*) FROM writer_batches").value() == 0);
  auto store = Store::Open(path);
  REQUIRE(store.ok());
  auto data = (*store)->LoadRun("r1");
  REQUIRE(data.ok());
  CHECK(data->samples.size() == 2);
}

}  // namespace
}  // namespace fl::reports
