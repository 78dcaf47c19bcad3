#include "reports/store/batch_writer.h"

#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "common/log.h"
#include "reports/store/sql.h"
#include "reports/store/store.h"
#include "tests/reports/store_with_run.h"
#include "tests/reports/temp_dir.h"

namespace fl::reports {
namespace {

using testing::TempDir;

constexpr Nanos kT0 = 1'764'464'400 * kNsPerSec;

SampleRecord Sample(int rank, int64_t it) {
  return {"r1", rank, it, kT0 + it * kNsPerMs, kT0 + it * kNsPerMs + 500, 4096, true, false};
}

std::unique_ptr<Store> OpenWithRun(const std::string& path) {
  return testing::OpenWithRun(path, kT0);
}

int64_t Count(const std::string& path, const std::string& table) {
  auto db = sql::Db::Open(path, {});
  REQUIRE(db.ok());
  auto n = (*db)->QueryInt("SELECT count(*) FROM " + table);
  REQUIRE(n.ok());
  return *n;
}

// Samples are stored in blocks (schema version 4): the sum of the blocks' counts.
int64_t SampleCount(const std::string& path) {
  auto db = sql::Db::Open(path, {});
  REQUIRE(db.ok());
  auto n = (*db)->QueryInt("SELECT coalesce(sum(count), 0) FROM sample_blocks");
  REQUIRE(n.ok());
  return *n;
}

// Collects log records instead of printing them; restores stderr at scope exit.
struct CapturedLog {
  std::mutex mu;
  std::vector<log::Record> records;
  CapturedLog() {
    log::SetCaptureSink([this](const log::Record& r) {
      std::lock_guard lock(mu);
      records.push_back(r);
    });
  }
  ~CapturedLog() { log::SetCaptureSink(nullptr); }
  int Count(log::Level level) {
    std::lock_guard lock(mu);
    return static_cast<int>(std::count_if(records.begin(), records.end(), [&](const auto& r) {
      return r.level == level && r.subsystem == "store";
    }));
  }
};

// A writer whose database write lock is held by another connection, so its transactions wait.
struct BlockedWriter {
  std::unique_ptr<Store> store;
  std::unique_ptr<BatchWriter> writer;
  std::unique_ptr<sql::Db> blocker;

  BlockedWriter(const std::string& path, const BatchWriter::Options& o) {
    store = OpenWithRun(path);
    auto w = BatchWriter::Open(path, o);
    REQUIRE(w.ok());
    writer = std::move(w).value();
    auto b = sql::Db::Open(path, {});
    REQUIRE(b.ok());
    blocker = std::move(b).value();
    REQUIRE(blocker->Exec("BEGIN IMMEDIATE").ok());
  }
  void Release() { REQUIRE(blocker->Exec("ROLLBACK").ok()); }
};

TEST_CASE("batch writer: everything pushed is committed by Flush", "[unit]") {
  TempDir dir;
  const std::string path = dir.File("results.db");
  auto store = OpenWithRun(path);
  BatchWriter::Options o;
  o.max_batch = 1000;
  auto writer = BatchWriter::Open(path, o);
  REQUIRE(writer.ok());

  std::vector<SampleRecord> samples;
  for (int64_t it = 0; it < 20000; ++it) samples.push_back(Sample(static_cast<int>(it % 4), it));
  for (size_t i = 0; i < samples.size(); i += 500) {
    REQUIRE((*writer)
                ->PushSamples(std::span(samples).subspan(i, 500), Deadline::After(10 * kNsPerSec))
                .ok());
  }
  for (int i = 0; i < 300; ++i) {
    REQUIRE((*writer)
                ->Push(EventRecord{"r1", i % 4, kT0 + i, "progress", "{}"},
                       Deadline::After(10 * kNsPerSec))
                .ok());
  }
  REQUIRE((*writer)->Flush(Deadline::After(30 * kNsPerSec)).ok());
  auto stats = (*writer)->GetStats();
  CHECK(stats.pushed_rows == 20300);
  CHECK(stats.committed_rows == 20300);
  CHECK(stats.dropped_rows == 0);
  CHECK(stats.transactions >= 21);  // batches of at most 1000 rows
  CHECK(SampleCount(path) == 20000);
  CHECK(Count(path, "events") == 300);

  // What the reader loads is exactly what was pushed.
  auto data = store->LoadRun("r1");
  REQUIRE(data.ok());
  std::sort(samples.begin(), samples.end(), [](const auto& a, const auto& b) {
    return std::pair(a.rank, a.iteration) < std::pair(b.rank, b.iteration);
  });
  CHECK(data->samples == samples);

  REQUIRE((*writer)->Close(Deadline::After(10 * kNsPerSec)).ok());
  CHECK((*writer)->Close(Deadline::After(kNsPerSec)).ok());  // idempotent
  CHECK((*writer)->Push(Sample(0, 1), Deadline::After(kNsPerSec)).code() ==
        Code::kFailedPrecondition);
}

TEST_CASE("batch writer: a fault's rows are written in the order pushed, the last one wins",
          "[unit]") {
  TempDir dir;
  const std::string path = dir.path() + "/r.db";
  auto store = OpenWithRun(path);
  auto w = BatchWriter::Open(path);
  REQUIRE(w.ok());
  FaultRecord f;
  f.run_id = "r1";
  f.fault_id = "f0";
  f.kind = "nic_port_flap";
  f.target = "h0.nic0";
  f.scheduled_wall_ns = kT0;
  REQUIRE((*w)->PushFault(f, Deadline::After(kNsPerSec)).ok());  // planned
  f.effective_wall_ns = kT0 + 5 * kNsPerMs;
  REQUIRE((*w)->PushFault(f, Deadline::After(kNsPerSec)).ok());  // injected
  REQUIRE((*w)->Push(Sample(0, 1), Deadline::After(kNsPerSec)).ok());
  f.reverted_wall_ns = kT0 + kNsPerSec;
  f.revert_verified = true;
  REQUIRE((*w)->PushFault(f, Deadline::After(kNsPerSec)).ok());  // reverted
  REQUIRE((*w)->Flush(Deadline::After(10 * kNsPerSec)).ok());
  auto faults = store->LoadFaults("r1");
  REQUIRE(faults.ok());
  REQUIRE(faults->size() == 1);
  CHECK((*faults)[0] == f);
  CHECK(SampleCount(path) == 1);
  CHECK((*w)->GetStats().committed_rows == 4);
}

TEST_CASE("batch writer: concurrent producers lose and duplicate nothing", "[unit]") {
  TempDir dir;
  const std::string path = dir.File("results.db");
  auto store = OpenWithRun(path);
  BatchWriter::Options o;
  o.queue_capacity = 1024;  // small: producers feel back-pressure
  o.max_batch = 256;
  auto writer = BatchWriter::Open(path, o);
  REQUIRE(writer.ok());

  constexpr int kProducers = 8;
  constexpr int kPerProducer = 5000;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p] {
      for (int i = 0; i < kPerProducer; ++i) {
        Status s = (i % 2 == 0) ? (*writer)->Push(Sample(p, i), Deadline::After(30 * kNsPerSec))
                                : (*writer)->Push(EventRecord{"r1", p, kT0 + i, "progress", "{}"},
                                                  Deadline::After(30 * kNsPerSec));
        if (!s.ok()) failures.fetch_add(1);
      }
    });
  }
  // A reader on another connection runs while the writer commits (WAL).
  for (int i = 0; i < 5; ++i) CHECK(store->ListRuns({}).ok());
  for (auto& t : threads) t.join();
  CHECK(failures.load() == 0);
  REQUIRE((*writer)->Close(Deadline::After(30 * kNsPerSec)).ok());

  auto data = store->LoadRun("r1");
  REQUIRE(data.ok());
  CHECK(data->samples.size() == kProducers * kPerProducer / 2);
  CHECK(data->events.size() == kProducers * kPerProducer / 2);
  std::set<std::pair<int, int64_t>> unique;
  for (const auto& s : data->samples) unique.insert({s.rank, s.iteration});
  CHECK(unique.size() == data->samples.size());
}

TEST_CASE("batch writer: rows flushed before the process is SIGKILLed are in the file", "[unit]") {
  // The durability the coordinator needs (WAL, synchronous=NORMAL): a commit survives a
  // crash of the process that made it, without Close or any checkpoint.
  TempDir dir;
  const std::string path = dir.File("results.db");
  { OpenWithRun(path); }
  constexpr int64_t kRows = 30000;
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    alarm(60);  // a hung child ends anyway
    auto w = BatchWriter::Open(path);
    if (!w.ok()) _exit(2);
    std::vector<SampleRecord> rows;
    for (int64_t it = 0; it < kRows; ++it) rows.push_back(Sample(static_cast<int>(it % 8), it));
    if (!(*w)->PushSamples(rows, Deadline::After(30 * kNsPerSec)).ok()) _exit(3);
    if (!(*w)->Flush(Deadline::After(30 * kNsPerSec)).ok()) _exit(4);
    kill(getpid(), SIGKILL);
    _exit(5);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
  CHECK(SampleCount(path) == kRows);
  auto store = Store::Open(path);
  REQUIRE(store.ok());
  auto data = (*store)->LoadRun("r1");
  REQUIRE(data.ok());
  REQUIRE(data->samples.size() == static_cast<size_t>(kRows));
  CHECK(data->samples.front() == Sample(0, 0));
  CHECK(data->samples.back() == Sample(7, kRows - 1));
}

TEST_CASE("batch writer: a full queue pushes back until the deadline", "[unit]") {
  TempDir dir;
  const std::string path = dir.File("results.db");
  BatchWriter::Options o;
  o.queue_capacity = 4;
  o.max_batch = 2;
  o.busy_timeout = 20 * kNsPerSec;
  BlockedWriter blocked(path, o);
  auto* writer = &blocked.writer;

  // One push of two rows: the writer takes both (max_batch 2) and blocks in BEGIN.
  const std::vector<SampleRecord> first = {Sample(0, 0), Sample(0, 1)};
  REQUIRE((*writer)->PushSamples(first, Deadline::After(kNsPerSec)).ok());
  REQUIRE(WaitUntil([&] { return (*writer)->GetStats().queued_rows == 0; },
                    Deadline::After(10 * kNsPerSec)));
  for (int64_t it = 2; it < 6; ++it) {
    REQUIRE((*writer)->Push(Sample(0, it), Deadline::After(kNsPerSec)).ok());
  }
  CHECK((*writer)->Push(Sample(0, 6), Deadline::After(50 * kNsPerMs)).code() ==
        Code::kDeadlineExceeded);
  CHECK((*writer)->Flush(Deadline::After(50 * kNsPerMs)).code() == Code::kDeadlineExceeded);

  blocked.Release();
  REQUIRE((*writer)->Flush(Deadline::After(20 * kNsPerSec)).ok());
  CHECK(SampleCount(path) == 6);
  CHECK((*writer)->GetStats().dropped_rows == 0);
}

TEST_CASE("batch writer: a write error is reported, never silent", "[unit]") {
  CapturedLog log;
  TempDir dir;
  const std::string path = dir.File("results.db");
  auto store = OpenWithRun(path);
  auto writer = BatchWriter::Open(path);
  REQUIRE(writer.ok());
  {
    auto db = sql::Db::Open(path, {});
    REQUIRE(db.ok());
    REQUIRE((*db)->Exec("DROP TABLE sample_blocks").ok());
  }
  REQUIRE((*writer)->Push(Sample(0, 0), Deadline::After(kNsPerSec)).ok());
  Status flushed = (*writer)->Flush(Deadline::After(20 * kNsPerSec));
  CHECK_FALSE(flushed.ok());
  CHECK_THAT(flushed.message(), Catch::Contains("sample_blocks"));
  CHECK((*writer)->GetStats().dropped_rows == 1);
  CHECK_FALSE((*writer)->Close(Deadline::After(kNsPerSec)).ok());
  CHECK(log.Count(log::Level::kWarn) == 1);   // the retry
  CHECK(log.Count(log::Level::kError) == 1);  // the drop
}

TEST_CASE("batch writer: close with a passed deadline drops and counts what is queued", "[unit]") {
  CapturedLog log;
  TempDir dir;
  const std::string path = dir.File("results.db");
  BatchWriter::Options o;
  o.queue_capacity = 100;
  o.max_batch = 10;
  o.busy_timeout = 200 * kNsPerMs;
  BlockedWriter blocked(path, o);
  auto* writer = &blocked.writer;
  for (int64_t it = 0; it < 50; ++it) {
    REQUIRE((*writer)->Push(Sample(0, it), Deadline::After(kNsPerSec)).ok());
  }
  // The writer has taken a batch and waits for the lock; the rest stays queued.
  REQUIRE(WaitUntil([&] { return (*writer)->GetStats().queued_rows < 50; },
                    Deadline::After(10 * kNsPerSec)));
  Status closed = (*writer)->Close(Deadline::After(10 * kNsPerMs));
  CHECK(closed.code() == Code::kDeadlineExceeded);
  auto stats = (*writer)->GetStats();
  CHECK(stats.committed_rows == 0);
  CHECK(stats.dropped_rows == 50);
  CHECK(log.Count(log::Level::kError) >= 1);  // the failed batch is logged
  blocked.Release();
}

}  // namespace
}  // namespace fl::reports
