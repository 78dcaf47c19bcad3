#include "reports/store/schema.h"

#include <array>
#include <string>

#include "common/log.h"
#include "reports/store/postgres.h"

namespace fl::reports {

namespace {

// Version 1: the first layout (runs, hosts, faults, telemetry, metrics, verdicts).
constexpr std::string_view kV1 = R"sql(
CREATE TABLE schema_version (
  version INTEGER NOT NULL
);
CREATE TABLE runs (
  id TEXT PRIMARY KEY,
  scenario_name TEXT NOT NULL,
  scenario_text TEXT NOT NULL,
  scenario_hash TEXT NOT NULL,
  seed INTEGER NOT NULL,
  git_revision TEXT NOT NULL,
  status TEXT NOT NULL
    CHECK (status IN ('running', 'passed', 'failed', 'aborted', 'error')),
  start_wall_ns INTEGER NOT NULL,
  end_wall_ns INTEGER,
  message TEXT NOT NULL DEFAULT ''
);
CREATE INDEX runs_by_scenario ON runs (scenario_name, start_wall_ns);
CREATE TABLE hosts (
  run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  address TEXT NOT NULL,
  clock_offset_ns INTEGER NOT NULL,
  clock_uncertainty_ns INTEGER NOT NULL,
  fingerprint_json TEXT NOT NULL,
  PRIMARY KEY (run_id, name)
);
CREATE TABLE faults (
  run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  fault_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  target TEXT NOT NULL,
  params_json TEXT NOT NULL,
  scheduled_wall_ns INTEGER,
  requested_wall_ns INTEGER,
  effective_wall_ns INTEGER,
  reverted_wall_ns INTEGER,
  revert_verified INTEGER,
  PRIMARY KEY (run_id, fault_id)
);
CREATE TABLE samples (
  run_id TEXT NOT NULL,
  rank INTEGER NOT NULL,
  iteration INTEGER NOT NULL,
  start_ns INTEGER NOT NULL,
  end_ns INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  verified INTEGER NOT NULL,
  mismatch INTEGER NOT NULL
);
CREATE INDEX samples_by_run ON samples (run_id, rank, iteration);
CREATE TABLE events (
  run_id TEXT NOT NULL,
  rank INTEGER NOT NULL,
  wall_ns INTEGER NOT NULL,
  kind TEXT NOT NULL,
  detail_json TEXT NOT NULL
);
CREATE INDEX events_by_run ON events (run_id, wall_ns);
CREATE TABLE metrics (
  run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  fault_id TEXT,
  name TEXT NOT NULL,
  value REAL NOT NULL,
  unit TEXT NOT NULL
);
CREATE INDEX metrics_by_run ON metrics (run_id);
CREATE TABLE verdicts (
  run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  fault_id TEXT,
  expectation TEXT NOT NULL,
  passed INTEGER NOT NULL,
  observed REAL,
  limit_value REAL,
  message TEXT NOT NULL
);
CREATE INDEX verdicts_by_run ON verdicts (run_id);
INSERT INTO schema_version (version) VALUES (0);
)sql";

// Version 2: run tags for selection (tag:fw=22.39) and the coordinator that owns a run, so a
// later command can mark a dead coordinator's run aborted.
constexpr std::string_view kV2 = R"sql(
ALTER TABLE runs ADD COLUMN coordinator_pid INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN coordinator_host TEXT NOT NULL DEFAULT '';
CREATE INDEX runs_by_status ON runs (status, coordinator_host);
CREATE TABLE run_tags (
  run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (run_id, key)
);
CREATE INDEX run_tags_by_key ON run_tags (key, value);
)sql";

// Version 3: the lab a run ran on (its file, text and hash), beside the scenario's, so that a
// replay or a comparison knows the lab too (faultline run --lab FILE).
constexpr std::string_view kV3 = R"sql(
ALTER TABLE runs ADD COLUMN lab_source TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN lab_text TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN lab_hash TEXT NOT NULL DEFAULT '';
)sql";

// Version 4: samples as blocks, one row per run, rank and batch (up to 4096 samples in a
// compact blob, TelemetryInserter in store.h, SampleBlockEncoder in sample_block.h) instead of one
// row per sample: ingest writes a few rows per transaction instead of thousands. Rows already in
// `samples` stay there and are still read; new samples go only to sample_blocks.
constexpr std::string_view kV4 = R"sql(
CREATE TABLE sample_blocks (
  run_id TEXT NOT NULL,
  rank INTEGER NOT NULL,
  first_iteration INTEGER NOT NULL,
  last_iteration INTEGER NOT NULL,
  count INTEGER NOT NULL,
  min_start_ns INTEGER NOT NULL,
  max_end_ns INTEGER NOT NULL,
  data BLOB NOT NULL
);
CREATE INDEX sample_blocks_by_run ON sample_blocks (run_id, rank, first_iteration);
)sql";

// Version 5: the counters of the hosts' data NICs, one row per host, NIC and reading (every
// 100 ms while the ranks run; store.h NicSampleInserter). Counters are unsigned 64-bit values
// kept as INTEGER (two's complement past 2^63); extra_json holds the driver's and RDMA port's
// further counters as a JSON object of name -> count.
constexpr std::string_view kV5 = R"sql(
CREATE TABLE nic_samples (
  run_id TEXT NOT NULL,
  host TEXT NOT NULL,
  nic TEXT NOT NULL,
  wall_ns INTEGER NOT NULL,
  rx_bytes INTEGER NOT NULL,
  tx_bytes INTEGER NOT NULL,
  rx_packets INTEGER NOT NULL,
  tx_packets INTEGER NOT NULL,
  rx_dropped INTEGER NOT NULL,
  tx_dropped INTEGER NOT NULL,
  rx_errors INTEGER NOT NULL,
  tx_errors INTEGER NOT NULL,
  rx_pause INTEGER,
  tx_pause INTEGER,
  extra_json TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX nic_samples_by_run ON nic_samples (run_id, host, nic, wall_ns);
)sql";

// Version 6: the fault a fault was timed against (after_event / during: its anchor, '' for
// none), so that the analysis keeps a fault's interval open over the faults nested in it
// (docs/metrics.md, "Overlapping faults").
constexpr std::string_view kV6 = R"sql(
ALTER TABLE faults ADD COLUMN anchor TEXT NOT NULL DEFAULT '';
)sql";

// Version 7: the last transaction each telemetry writer committed (BatchWriter numbers its
// transactions and records the number in the same transaction as the rows), so that a batch
// spooled after a COMMIT whose answer was lost, but which did commit, is not replayed twice
// (batch_sink.h). A writer's row goes when it closes with nothing left in a spool.
constexpr std::string_view kV7 = R"sql(
CREATE TABLE writer_batches (
  writer TEXT PRIMARY KEY,
  run_id TEXT NOT NULL,
  last_batch INTEGER NOT NULL,
  updated_wall_ns INTEGER NOT NULL
);
)sql";

// Version 8: the detection ledger, per fault the time each layer noticed it
// (reports/metrics/ledger.h); written by the analysis beside the metrics.
constexpr std::string_view kV8 = R"sql(
CREATE TABLE detections (
  run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
  fault_id TEXT NOT NULL,
  layer TEXT NOT NULL,
  noticed_wall_ns INTEGER,
  latency_ms REAL,
  evidence TEXT NOT NULL DEFAULT ''
);
CREATE INDEX detections_by_run ON detections (run_id);
)sql";

// Version 9: runs by start time, for the newest-first lists of `faultline runs` and
// `faultline serve` (its overview reads the newest runs with LIMIT: without this index a store
// of 100,000 runs was sorted whole for each request; docs/store.md, "Indexes").
constexpr std::string_view kV9 = R"sql(
CREATE INDEX runs_by_start ON runs (start_wall_ns, id);
)sql";

constexpr std::array<std::string_view, kSchemaVersion> kMigrations = {kV1, kV2, kV3, kV4, kV5,
                                                                      kV6, kV7, kV8, kV9};

}  // namespace

std::span<const std::string_view> SchemaMigrations() { return kMigrations; }

StatusOr<int> ReadSchemaVersion(sql::Db& db) {
  // Count the tables first, then look for schema_version: another process may commit the
  // first migration between the two queries (each its own statement), and a commit is atomic,
  // so tables seen there mean schema_version is seen next. The other order read "tables but
  // no schema_version" from a database being created beside it (CI, stop 35).
  FL_ASSIGN_OR_RETURN(int64_t tables, db.CountTables());
  if (tables == 0) return 0;
  FL_ASSIGN_OR_RETURN(bool has_version, db.HasTable("schema_version"));
  if (!has_version) {
    return FailedPreconditionError(db.path() +
                                   ": not a faultline results database (no schema_version)");
  }
  auto version = db.QueryInt("SELECT max(version) FROM schema_version");
  if (!version.ok()) return version.status();
  return static_cast<int>(*version);
}

std::string MigrationSql(sql::Dialect dialect, int version) {
  std::string_view text = kMigrations[static_cast<size_t>(version)];
  if (dialect == sql::Dialect::kPostgres) return sql::PostgresDdl(text);
  return std::string(text);
}

Status MigrateSchema(sql::Db& db, int target_version) {
  if (target_version < 1 || target_version > kSchemaVersion) {
    return InvalidArgumentError("schema version " + std::to_string(target_version) +
                                " does not exist (this build knows 1.." +
                                std::to_string(kSchemaVersion) + ")");
  }
  FL_ASSIGN_OR_RETURN(int version, ReadSchemaVersion(db));
  if (version > target_version) {
    return FailedPreconditionError(db.path() + ": results database has schema version " +
                                   std::to_string(version) + ", newer than this build's " +
                                   std::to_string(target_version) +
                                   "; use a newer faultline or another --db");
  }
  while (version < target_version) {
    // Take the write (or schema) lock, then re-read: another process may have migrated
    // meanwhile.
    FL_ASSIGN_OR_RETURN(auto txn, sql::Transaction::Begin(db));
    FL_RETURN_IF_ERROR(db.LockSchema());
    FL_ASSIGN_OR_RETURN(int now, ReadSchemaVersion(db));
    if (now != version) {
      FL_RETURN_IF_ERROR(txn.Commit());
      version = now;
      continue;
    }
    Status s = db.Exec(MigrationSql(db.dialect(), version));
    if (!s.ok()) {
      return s.Prepend("migrating results schema to version " + std::to_string(version + 1));
    }
    FL_RETURN_IF_ERROR(
        db.Exec("UPDATE schema_version SET version = " + std::to_string(version + 1)));
    FL_RETURN_IF_ERROR(txn.Commit());
    ++version;
    FL_LOG(kDebug, "store") << db.path() << ": schema now at version " << version;
  }
  return OkStatus();
}

}  // namespace fl::reports
