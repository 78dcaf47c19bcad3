// The results store: one SQLite file (WAL mode) holding runs, hosts, faults, telemetry,
// metrics and verdicts. Opening it creates or migrates the schema (reports/store/schema.h).
// Writes here are direct (one transaction per call); high-rate telemetry goes through
// BatchWriter (reports/store/batch_writer.h), which uses its own connection.
//
// Thread-safety: all methods may be called from any thread; calls on one Store are serialised
// by an internal mutex.
// Back ends: `path` is a SQLite file or a postgresql:// URI (reports/store/sql.h); the schema,
// its migrations and every call are the same on both. Several Stores (and processes) may open the
// same file: WAL lets readers run while one writer commits; writers wait for each other up to the
// busy timeout. Ownership: Store owns its connection; records are copied in and out. Blocking:
// every call does file I/O and may wait up to Options::busy_timeout for another writer, then fails
// with kDeadlineExceeded.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "reports/store/records.h"
#include "reports/store/sample_block.h"
#include "reports/store/sql.h"

namespace fl::reports {

// Which runs ListRuns returns. Empty fields select everything; all set fields must match.
struct RunFilter {
  std::optional<std::string> scenario_name;
  std::map<std::string, std::string> tags;  // every k=v must be present on the run
  std::optional<RunStatus> status;
  bool finished_only = false;         // passed or failed only (the runs whose metrics count)
  std::optional<Nanos> since, until;  // start_wall_ns in [since, until)
  size_t limit = 0;                   // 0: no limit; newest first
};

// Parses a run selector "tag:k=v[,k2=v2...]" into filter.tags. InvalidArgument otherwise.
[[nodiscard]] Status ParseTagSelector(std::string_view selector, RunFilter& filter);
// Parses "date:2026-12-01" (that UTC day) or "date:2026-12-01..2026-12-07" (both days
// included) into filter.since and filter.until. InvalidArgument otherwise.
[[nodiscard]] Status ParseDateSelector(std::string_view selector, RunFilter& filter);

// SHA-256 of text as 64 lowercase hex digits (what runs.scenario_hash holds).
std::string ScenarioHash(std::string_view text);

// Whether process pid on this host is alive (kill(pid, 0) succeeds or fails with EPERM).
bool ProcessAlive(int64_t pid);

class Store {
 public:
  struct Options {
    bool create = true;  // create the file (and the schema) when missing
    Nanos busy_timeout = 5 * kNsPerSec;
    // Stop at this schema version instead of the current one (tests of migrations).
    int schema_version = 0;
  };

  [[nodiscard]] static StatusOr<std::unique_ptr<Store>> Open(const std::string& path,
                                                             const Options& options);
  [[nodiscard]] static StatusOr<std::unique_ptr<Store>> Open(const std::string& path) {
    return Open(path, Options{});
  }

  // ---- writing ----
  // Inserts run and its tags. Fills scenario_hash when empty. InvalidArgument when the id
  // exists.
  [[nodiscard]] Status CreateRun(const RunRecord& run);
  // Sets a run's final status, end time and message. NotFound for an unknown id.
  [[nodiscard]] Status FinishRun(const std::string& run_id, RunStatus status, Nanos end_wall_ns,
                                 const std::string& message);
  [[nodiscard]] Status SetTag(const std::string& run_id, const std::string& key,
                              const std::string& value);
  [[nodiscard]] Status PutHost(const HostRecord& host);
  // Inserts or replaces a fault (the coordinator updates times as they become known).
  [[nodiscard]] Status PutFault(const FaultRecord& fault);
  // Each call is one transaction.
  [[nodiscard]] Status InsertSamples(std::span<const SampleRecord> samples);
  [[nodiscard]] Status InsertEvents(std::span<const EventRecord> events);
  // NIC counter readings (the agents'; one transaction per call, as the others).
  [[nodiscard]] Status InsertNicSamples(std::span<const NicSampleRecord> nics);
  // Replace the run's metrics / verdicts (analysis may be rerun).
  [[nodiscard]] Status ReplaceMetrics(const std::string& run_id,
                                      std::span<const MetricRecord> metrics);
  [[nodiscard]] Status ReplaceVerdicts(const std::string& run_id,
                                       std::span<const VerdictRecord> verdicts);
  // Replace the run's detection ledger (reports/metrics/ledger.h).
  [[nodiscard]] Status ReplaceDetections(const std::string& run_id,
                                         std::span<const DetectionRecord> detections);
  // Writes a whole run as loaded from another store (LoadRun), in one transaction: all of it
  // or, on any error, none of it. InvalidArgument when its id is already here.
  [[nodiscard]] Status ImportRun(const RunData& data);

  // Marks aborted every run still 'running' whose coordinator ran on `host` and is no longer
  // alive according to is_alive(pid). Runs of other hosts are left alone (their liveness
  // cannot be judged here). Returns the ids marked.
  [[nodiscard]] StatusOr<std::vector<std::string>> MarkDeadRunsAborted(
      const std::string& host, const std::function<bool(int64_t)>& is_alive = ProcessAlive,
      Nanos now_wall_ns = WallNowNs());

  // ---- reading ----
  [[nodiscard]] StatusOr<std::vector<RunRecord>> ListRuns(const RunFilter& filter);
  // NotFound for an unknown id. "latest" names the most recently started run.
  [[nodiscard]] StatusOr<RunRecord> GetRun(const std::string& run_id);
  [[nodiscard]] StatusOr<RunData> LoadRun(const std::string& run_id);
  // Only a run's metrics / verdicts (in insertion order), without its telemetry.
  [[nodiscard]] StatusOr<std::vector<MetricRecord>> LoadMetrics(const std::string& run_id);
  // The metrics of many runs (one prepared statement for all): out[i] are run_ids[i]'s.
  [[nodiscard]] StatusOr<std::vector<std::vector<MetricRecord>>> LoadMetricsOf(
      const std::vector<std::string>& run_ids);
  [[nodiscard]] StatusOr<std::vector<VerdictRecord>> LoadVerdicts(const std::string& run_id);
  [[nodiscard]] StatusOr<std::vector<DetectionRecord>> LoadDetections(const std::string& run_id);
  // A run's faults, by effective (else requested, else scheduled) time.
  [[nodiscard]] StatusOr<std::vector<FaultRecord>> LoadFaults(const std::string& run_id);

  [[nodiscard]] StatusOr<int> SchemaVersion();
  const std::string& path() const { return db_->path(); }

 private:
  explicit Store(std::unique_ptr<sql::Db> db) : db_(std::move(db)) {}
  template <typename Row>
  Status InsertTelemetry(std::span<const Row> rows);
  StatusOr<RunRecord> GetRunLocked(const std::string& run_id);
  Status LoadTagsLocked(RunRecord& run);
  StatusOr<std::vector<MetricRecord>> LoadMetricsLocked(const std::string& id);
  StatusOr<std::vector<VerdictRecord>> LoadVerdictsLocked(const std::string& id);
  StatusOr<std::vector<DetectionRecord>> LoadDetectionsLocked(const std::string& id);
  StatusOr<std::vector<FaultRecord>> LoadFaultsLocked(const std::string& id);
  StatusOr<std::vector<NicSampleRecord>> LoadNicSamplesLocked(const std::string& id);

  std::recursive_mutex mu_;  // recursive: ImportRun is made of the other writes
  std::unique_ptr<sql::Db> db_;
};

// Opens a connection configured as the store expects (WAL, foreign keys, synchronous=NORMAL)
// and brings the schema to `schema_version` (0: current). Used by Store and BatchWriter.
[[nodiscard]] StatusOr<std::unique_ptr<sql::Db>> OpenStoreDb(const std::string& path, bool create,
                                                             Nanos busy_timeout,
                                                             int schema_version);

// Prepared INSERTs of telemetry rows, shared by Store and BatchWriter. Samples are buffered
// per (run, rank) and written as sample blocks (at most kMaxBlockSamples samples each) by
// FlushSamples; events are inserted at once.
class TelemetryInserter {
 public:
  static constexpr size_t kMaxBlockSamples = 4096;

  [[nodiscard]] static StatusOr<TelemetryInserter> Prepare(sql::Db& db);
  // REQUIRES: inside a transaction, and FlushSamples before it commits.
  [[nodiscard]] Status Insert(const SampleRecord& s);
  [[nodiscard]] Status Insert(const EventRecord& e);
  // Writes the buffered samples. REQUIRES: inside the transaction of the Inserts.
  [[nodiscard]] Status FlushSamples();
  // Forgets buffered samples (a failed transaction's, before it is retried).
  void DiscardSamples() {
    pending_.clear();
    last_ = 0;
  }

 private:
  struct Block {
    std::string run_id;
    int32_t rank = 0;
    SampleBlockEncoder encoder;
  };
  TelemetryInserter(sql::Stmt blocks, sql::Stmt events)
      : blocks_(std::move(blocks)), events_(std::move(events)) {}
  Status WriteBlock(Block& b);

  sql::Stmt blocks_;
  sql::Stmt events_;
  std::vector<Block> pending_;  // blocks being filled; pending_[last_] was used last
  size_t last_ = 0;
};

// The prepared INSERT of nic_samples rows (schema version 5), shared by Store and BatchWriter.
// One row per reading: a handful per host and second, nothing to gain from blocks.
class NicSampleInserter {
 public:
  [[nodiscard]] static StatusOr<NicSampleInserter> Prepare(sql::Db& db);
  // REQUIRES: inside a transaction.
  [[nodiscard]] Status Insert(const NicSampleRecord& n);

 private:
  explicit NicSampleInserter(sql::Stmt insert) : insert_(std::move(insert)) {}
  sql::Stmt insert_;
};

// NicSampleRecord::extra as stored in nic_samples.extra_json: a JSON object of name -> count
// ("{}" when empty), and back. ParseNicExtra is DataLoss for text that is not such an object.
std::string NicExtraJson(const std::map<std::string, uint64_t>& extra);
[[nodiscard]] StatusOr<std::map<std::string, uint64_t>> ParseNicExtra(std::string_view json);

}  // namespace fl::reports
