// Telemetry ingest into the results store: rows/s through BatchWriter (the coordinator's
// path: producers push per-agent batches, one writer thread commits transactions of many
// rows, stored as sample blocks since schema version 4), against direct
// one-row-per-transaction inserts for scale. Each repetition uses a fresh database file; the
// figure is the median over the repetitions. After each batched repetition the rows are
// counted back from the file by a second connection: a run that lost one fails.
//
//   bench_store_ingest [--rows N] [--runs R] [--producers P] [--chunk C] [--max-batch B]
//                      [--unbatched-rows U] [--dir DIR] [--postgres URI]
// --postgres: into a PostgreSQL server instead (a fresh database per repetition, created and
// dropped through URI's database, e.g. postgresql://u@%2Ftmp%2Fpg:5432/postgres).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/ids.h"
#include "reports/store/batch_writer.h"
#include "reports/store/sql.h"
#include "reports/store/store.h"

namespace fl::reports {
namespace {

struct Config {
  int64_t rows = 1'000'000;
  int runs = 5;
  int producers = 4;
  int chunk = 256;
  size_t max_batch = BatchWriter::Options{}.max_batch;
  int64_t unbatched_rows = 2000;
  int fault_rows = 200;  // per repetition: what one fault's inject or revert record costs
  std::string dir = std::filesystem::temp_directory_path().string();
  std::string postgres;  // a server's URI: PostgreSQL instead of SQLite files
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// A run id as the coordinator makes them (23 characters: past std::string's small-string
// buffer, so every copy of a row allocates, as in a real run).
const std::string& RunId() {
  static const std::string id = NewRunId(1'764'464'400 * kNsPerSec);
  return id;
}

struct Db {
  std::string path;
  std::string pg_admin, pg_name;  // PostgreSQL: the server's URI and this repetition's database
  std::unique_ptr<Store> store;
  std::string run_id;
  explicit Db(const Config& c, int rep) {
    const std::string name =
        "fl_bench_store_" + std::to_string(getpid()) + "_" + std::to_string(rep);
    if (!c.postgres.empty()) {
      pg_admin = c.postgres;
      pg_name = name;
      size_t q = pg_admin.find('?');
      size_t slash = pg_admin.rfind('/', q == std::string::npos ? std::string::npos : q);
      path = pg_admin.substr(0, slash + 1) + name +
             (q == std::string::npos ? std::string() : pg_admin.substr(q));
      Admin("CREATE DATABASE " + name);
    } else {
      path = c.dir + "/" + name + ".db";
      Remove();
    }
    auto s = Store::Open(path);
    if (!s.ok()) Die(s.status());
    store = std::move(s).value();
    RunRecord run;
    run.id = RunId();
    run_id = run.id;
    run.scenario_name = "bench";
    run.start_wall_ns = WallNowNs();
    Check(store->CreateRun(run));
  }
  ~Db() {
    store.reset();
    if (!pg_name.empty()) {
      Admin("DROP DATABASE " + pg_name);
    } else {
      Remove();
    }
  }
  void Admin(const std::string& sql) const {
    auto admin = sql::Db::Open(pg_admin, {});
    if (!admin.ok()) Die(admin.status());
    Check((*admin)->Exec(sql));
  }
  void Remove() {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  }
  static void Die(const Status& s) {
    std::fprintf(stderr, "bench_store_ingest: %s\n", s.ToString().c_str());
    std::exit(3);
  }
  static void Check(const Status& s) {
    if (!s.ok()) Die(s);
  }
};

SampleRecord MakeSample(int producer, int64_t i) {
  Nanos t = 1'764'464'400 * kNsPerSec + i * kNsPerMs;
  return {RunId(), producer, i, t, t + 700 * kNsPerUs, 64 << 20, true, false};
}

// One repetition through BatchWriter; returns rows/s.
double Batched(const Config& c, int rep) {
  Db db(c, rep);
  BatchWriter::Options o;
  o.max_batch = c.max_batch;
  auto w = BatchWriter::Open(db.path, o);
  if (!w.ok()) Db::Die(w.status());
  BatchWriter& writer = **w;
  const int64_t per_producer = c.rows / c.producers;
  // Rows are built before the clock starts: the figure is the store's, not the generator's.
  std::vector<std::vector<SampleRecord>> data(static_cast<size_t>(c.producers));
  for (int p = 0; p < c.producers; ++p) {
    for (int64_t i = 0; i < per_producer; ++i) data[p].push_back(MakeSample(p, i));
  }
  std::atomic<int> errors{0};
  Nanos t0 = MonoNowNs();
  std::vector<std::thread> threads;
  for (int p = 0; p < c.producers; ++p) {
    threads.emplace_back([&, p] {
      std::span<const SampleRecord> all(data[p]);
      for (size_t i = 0; i < all.size(); i += static_cast<size_t>(c.chunk)) {
        auto part = all.subspan(i, std::min(all.size() - i, static_cast<size_t>(c.chunk)));
        if (!writer.PushSamples(part, Deadline::After(60 * kNsPerSec)).ok()) errors++;
      }
    });
  }
  for (auto& t : threads) t.join();
  Db::Check(writer.Flush(Deadline::After(300 * kNsPerSec)));
  Nanos elapsed = MonoNowNs() - t0;
  auto stats = writer.GetStats();
  Db::Check(writer.Close(Deadline::After(60 * kNsPerSec)));
  if (errors.load() != 0 || stats.committed_rows != static_cast<uint64_t>(per_producer) *
                                                        static_cast<uint64_t>(c.producers)) {
    Db::Die(InternalError("rows lost: committed " + std::to_string(stats.committed_rows)));
  }
  // Read back from the file by another connection: what a crash after Flush would leave.
  auto check = sql::Db::Open(db.path, {});
  if (!check.ok()) Db::Die(check.status());
  auto stored = (*check)->QueryInt("SELECT coalesce(sum(count), 0) FROM sample_blocks");
  if (!stored.ok()) Db::Die(stored.status());
  if (static_cast<uint64_t>(*stored) != stats.committed_rows) {
    Db::Die(InternalError("rows lost: " + std::to_string(*stored) + " in the file, " +
                          std::to_string(stats.committed_rows) + " committed"));
  }
  if (rep == 0 && c.postgres.empty()) {
    std::error_code ec;
    uintmax_t size = std::filesystem::file_size(db.path, ec);
    uintmax_t wal = std::filesystem::file_size(db.path + "-wal", ec);
    if (ec) wal = 0;
    std::fprintf(stderr, "database %.1f bytes/sample (main file + WAL), %llu transactions\n",
                 static_cast<double>(size + wal) / static_cast<double>(stats.committed_rows),
                 static_cast<unsigned long long>(stats.transactions));
  }
  return static_cast<double>(stats.committed_rows) * 1e9 / static_cast<double>(elapsed);
}

// One repetition of one transaction per row (what batching avoids); returns rows/s.
double Unbatched(const Config& c, int rep) {
  Db db(c, rep);
  Nanos t0 = MonoNowNs();
  for (int64_t i = 0; i < c.unbatched_rows; ++i) {
    SampleRecord s = MakeSample(0, i);
    Db::Check(db.store->InsertSamples(std::span(&s, 1)));
  }
  Nanos elapsed = MonoNowNs() - t0;
  return static_cast<double>(c.unbatched_rows) * 1e9 / static_cast<double>(elapsed);
}

// The run's fault path (harness/run/fault_book.cc) writes a fault's row when it is injected
// and again when it is reverted. Per call, in microseconds: Store::PutFault (a synchronous
// upsert, what FinishInject did until issue 29) and BatchWriter::PushFault (what it does now:
// the writer thread does the upsert). Appends each call's time to direct and queued.
void FaultRows(const Config& c, int rep, std::vector<double>& direct, std::vector<double>& queued) {
  Db db(c, rep);
  auto w = BatchWriter::Open(db.path);
  if (!w.ok()) Db::Die(w.status());
  for (int i = 0; i < c.fault_rows; ++i) {
    FaultRecord f;
    f.run_id = db.run_id;
    f.fault_id = "f" + std::to_string(i);
    f.kind = "nic_port_flap";
    f.target = "h0.nic0";
    f.scheduled_wall_ns = WallNowNs();
    f.effective_wall_ns = WallNowNs();
    Nanos t0 = MonoNowNs();
    Db::Check(db.store->PutFault(f));
    direct.push_back(static_cast<double>(MonoNowNs() - t0) / 1e3);
    f.reverted_wall_ns = WallNowNs();
    f.revert_verified = true;
    t0 = MonoNowNs();
    Db::Check((*w)->PushFault(f, Deadline::After(10 * kNsPerSec)));
    queued.push_back(static_cast<double>(MonoNowNs() - t0) / 1e3);
  }
  Db::Check((*w)->Close(Deadline::After(60 * kNsPerSec)));
  auto faults = db.store->LoadFaults(db.run_id);
  if (!faults.ok()) Db::Die(faults.status());
  for (const FaultRecord& f : *faults)
    if (!f.revert_verified) Db::Die(InternalError("a queued fault row was lost: " + f.fault_id));
}

double Percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

int Main(int argc, char** argv) {
  Config c;
  CLI::App app{"Telemetry ingest into the results store, SQLite or PostgreSQL (rows/s)"};
  app.add_option("--rows", c.rows, "sample rows per batched repetition")
      ->check(CLI::PositiveNumber);
  app.add_option("--runs", c.runs, "repetitions (median reported)")->check(CLI::PositiveNumber);
  app.add_option("--producers", c.producers, "producer threads")->check(CLI::PositiveNumber);
  app.add_option("--chunk", c.chunk, "rows per Push (one agent message)")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-batch", c.max_batch, "rows per transaction")->check(CLI::PositiveNumber);
  app.add_option("--unbatched-rows", c.unbatched_rows, "rows per unbatched repetition (0: skip)");
  app.add_option("--fault-rows", c.fault_rows,
                 "fault rows per repetition, each written directly and queued (0: skip)");
  app.add_option("--dir", c.dir, "directory for the database files");
  app.add_option("--postgres", c.postgres,
                 "a PostgreSQL server's URI: ingest there (a fresh database per repetition)");
  CLI11_PARSE(app, argc, argv);

  std::vector<double> batched;
  std::vector<double> unbatched;
  std::vector<double> fault_direct, fault_queued;
  for (int r = 0; r < c.runs; ++r) {
    if (c.fault_rows > 0) FaultRows(c, r, fault_direct, fault_queued);
    batched.push_back(Batched(c, r));
    if (c.unbatched_rows > 0) unbatched.push_back(Unbatched(c, r));
    std::fprintf(stderr, "run %d: batched %.0f rows/s", r + 1, batched.back());
    if (!unbatched.empty()) std::fprintf(stderr, ", unbatched %.0f rows/s", unbatched.back());
    std::fprintf(stderr, "\n");
  }
  std::printf("| mode | rows | runs | median rows/s | min | max |\n|---|---|---|---|---|---|\n");
  auto row = [&](const char* mode, int64_t rows, const std::vector<double>& v) {
    std::printf("| %s | %lld | %zu | %.0f | %.0f | %.0f |\n", mode, static_cast<long long>(rows),
                v.size(), Median(v), *std::min_element(v.begin(), v.end()),
                *std::max_element(v.begin(), v.end()));
  };
  char mode[128];
  std::snprintf(mode, sizeof(mode), "BatchWriter, %d producers, %d rows/push, %zu rows/txn",
                c.producers, c.chunk, c.max_batch);
  row(mode, c.rows / c.producers * c.producers, batched);
  if (!unbatched.empty()) row("one row per transaction", c.unbatched_rows, unbatched);
  if (!fault_direct.empty()) {
    std::printf(
        "\n| a fault row on the fault path | calls | median us | p99 us | max us |\n"
        "|---|---|---|---|---|\n");
    for (auto [name, v] : {std::pair{"Store::PutFault (synchronous upsert)", &fault_direct},
                           std::pair{"BatchWriter::PushFault (queued)", &fault_queued}})
      std::printf("| %s | %zu | %.1f | %.1f | %.1f |\n", name, v->size(), Percentile(*v, 0.5),
                  Percentile(*v, 0.99), *std::max_element(v->begin(), v->end()));
  }
  return 0;
}

}  // namespace
}  // namespace fl::reports

int main(int argc, char** argv) { return fl::reports::Main(argc, argv); }
