#include "reports/store/store.h"

#include <openssl/evp.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "common/log.h"
#include "reports/store/fault_rows.h"
#include "reports/store/replace_rows.h"
#include "reports/store/schema.h"

namespace fl::reports {

namespace {

constexpr std::string_view kRunColumns =
    "id, scenario_name, scenario_text, scenario_hash, seed, git_revision, status, "
    "start_wall_ns, end_wall_ns, message, coordinator_pid, coordinator_host, lab_source, "
    "lab_text, lab_hash";

StatusOr<RunRecord> ReadRunRow(const sql::Stmt& st) {
  RunRecord r;
  r.id = st.Text(0);
  r.scenario_name = st.Text(1);
  r.scenario_text = st.Text(2);
  r.scenario_hash = st.Text(3);
  r.seed = static_cast<uint64_t>(st.Int(4));
  r.git_revision = st.Text(5);
  FL_ASSIGN_OR_RETURN(r.status, ParseRunStatus(st.Text(6)));
  r.start_wall_ns = st.Int(7);
  r.end_wall_ns = st.OptInt(8);
  r.message = st.Text(9);
  r.coordinator_pid = st.Int(10);
  r.coordinator_host = st.Text(11);
  r.lab_source = st.Text(12);
  r.lab_text = st.Text(13);
  r.lab_hash = st.Text(14);
  return r;
}

std::optional<bool> OptBool(const sql::Stmt& st, int col) {
  auto v = st.OptInt(col);
  if (!v) return std::nullopt;
  return *v != 0;
}

}  // namespace

// ---- helpers ----

std::string ScenarioHash(std::string_view text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(text.data(), text.size(), digest, &len, EVP_sha256(), nullptr);
  std::string hex;
  hex.reserve(len * 2);
  char buf[3];
  for (unsigned int i = 0; i < len; ++i) {
    std::snprintf(buf, sizeof(buf), "%02x", digest[i]);
    hex += buf;
  }
  return hex;
}

bool ProcessAlive(int64_t pid) {
  if (pid <= 0) return false;
  if (kill(static_cast<pid_t>(pid), 0) == 0) return true;
  return errno == EPERM;
}

StatusOr<std::unique_ptr<sql::Db>> OpenStoreDb(const std::string& path, bool create,
                                               Nanos busy_timeout, int schema_version) {
  sql::Db::Options opts;
  opts.create = create;
  opts.busy_timeout = busy_timeout;
  FL_ASSIGN_OR_RETURN(auto db, sql::Db::Open(path, opts));
  if (db->dialect() == sql::Dialect::kSqlite) {
    // WAL: readers (reports, compare) never block the writer and vice versa. NORMAL
    // synchronous is durable across process crashes; a power cut may lose the last commits.
    FL_ASSIGN_OR_RETURN(auto mode, db->Prepare("PRAGMA journal_mode = WAL"));
    FL_ASSIGN_OR_RETURN(bool row, mode.Step());
    if (!row || mode.Text(0) != "wal") {
      return FailedPreconditionError(path + ": cannot switch the results database to WAL mode" +
                                     (row ? " (got " + mode.Text(0) + ")" : std::string()));
    }
    mode.Reset();
    FL_RETURN_IF_ERROR(db->Exec("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON"));
  }
  if (!create && db->dialect() == sql::Dialect::kPostgres) {
    // A server has no file to be missing: a database without the store's tables is.
    FL_ASSIGN_OR_RETURN(int version, ReadSchemaVersion(*db));
    if (version == 0) return NotFoundError(db->path() + ": no faultline results there (no tables)");
  }
  FL_RETURN_IF_ERROR(MigrateSchema(*db, schema_version == 0 ? kSchemaVersion : schema_version));
  return db;
}

// ---- telemetry inserters ----

StatusOr<TelemetryInserter> TelemetryInserter::Prepare(sql::Db& db) {
  FL_ASSIGN_OR_RETURN(auto blocks,
                      db.Prepare("INSERT INTO sample_blocks (run_id, rank, first_iteration, "
                                 "last_iteration, count, min_start_ns, max_end_ns, data) VALUES "
                                 "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"));
  FL_ASSIGN_OR_RETURN(auto events,
                      db.Prepare("INSERT INTO events (run_id, rank, wall_ns, kind, detail_json) "
                                 "VALUES (?1, ?2, ?3, ?4, ?5)"));
  return TelemetryInserter(std::move(blocks), std::move(events));
}

Status TelemetryInserter::Insert(const SampleRecord& s) {
  if (last_ >= pending_.size() || pending_[last_].rank != s.rank ||
      pending_[last_].run_id != s.run_id) {
    last_ = 0;
    while (last_ < pending_.size() &&
           (pending_[last_].rank != s.rank || pending_[last_].run_id != s.run_id)) {
      ++last_;
    }
    if (last_ == pending_.size()) {
      pending_.emplace_back();
      pending_.back().run_id = s.run_id;
      pending_.back().rank = s.rank;
    }
  }
  Block& b = pending_[last_];
  b.encoder.Add(s);
  if (b.encoder.count() >= kMaxBlockSamples) return WriteBlock(b);
  return OkStatus();
}

Status TelemetryInserter::WriteBlock(Block& b) {
  if (b.encoder.count() == 0) return OkStatus();
  blocks_.BindStatic(1, b.run_id)
      .Bind(2, b.rank)
      .Bind(3, b.encoder.first_iteration())
      .Bind(4, b.encoder.last_iteration())
      .Bind(5, static_cast<int64_t>(b.encoder.count()))
      .Bind(6, b.encoder.min_start_ns())
      .Bind(7, b.encoder.max_end_ns())
      .BindBlobStatic(8, b.encoder.Bytes());
  Status s = blocks_.Run();
  b.encoder.Clear();
  return s;
}

Status TelemetryInserter::FlushSamples() {
  Status first;
  for (Block& b : pending_) {
    Status s = WriteBlock(b);
    if (first.ok() && !s.ok()) first = s;
  }
  pending_.clear();
  last_ = 0;
  return first;
}

Status TelemetryInserter::Insert(const EventRecord& e) {
  events_.Bind(1, e.run_id)
      .Bind(2, e.rank)
      .Bind(3, e.wall_ns)
      .Bind(4, e.kind)
      .Bind(5, e.detail_json);
  return events_.Run();
}

// ---- Store ----

StatusOr<std::unique_ptr<Store>> Store::Open(const std::string& path, const Options& options) {
  FL_ASSIGN_OR_RETURN(
      auto db, OpenStoreDb(path, options.create, options.busy_timeout, options.schema_version));
  return std::unique_ptr<Store>(new Store(std::move(db)));
}

StatusOr<int> Store::SchemaVersion() {
  std::lock_guard lock(mu_);
  return ReadSchemaVersion(*db_);
}

Status Store::CreateRun(const RunRecord& run) {
  if (run.id.empty()) return InvalidArgumentError("run id is empty");
  std::lock_guard lock(mu_);
  return InTransaction(*db_, [&]() -> Status {
    FL_ASSIGN_OR_RETURN(auto st, db_->Prepare("INSERT INTO runs (" + std::string(kRunColumns) +
                                              ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, "
                                              "?10, ?11, ?12, ?13, ?14, ?15)"));
    st.Bind(1, run.id)
        .Bind(2, run.scenario_name)
        .Bind(3, run.scenario_text)
        .Bind(4, run.scenario_hash.empty() ? ScenarioHash(run.scenario_text) : run.scenario_hash)
        .Bind(5, static_cast<int64_t>(run.seed))
        .Bind(6, run.git_revision)
        .Bind(7, RunStatusName(run.status))
        .Bind(8, run.start_wall_ns)
        .Bind(9, run.end_wall_ns)
        .Bind(10, run.message)
        .Bind(11, run.coordinator_pid)
        .Bind(12, run.coordinator_host)
        .Bind(13, run.lab_source)
        .Bind(14, run.lab_text)
        .Bind(15, run.lab_hash.empty() && !run.lab_text.empty() ? ScenarioHash(run.lab_text)
                                                                : run.lab_hash);
    if (Status s = st.Run(); !s.ok()) return s.Prepend("creating run " + run.id);
    FL_ASSIGN_OR_RETURN(
        auto tag, db_->Prepare("INSERT INTO run_tags (run_id, key, value) VALUES (?1, ?2, ?3)"));
    for (const auto& [k, v] : run.tags) {
      tag.Bind(1, run.id).Bind(2, k).Bind(3, v);
      FL_RETURN_IF_ERROR(tag.Run());
    }
    return OkStatus();
  });
}

Status Store::FinishRun(const std::string& run_id, RunStatus status, Nanos end_wall_ns,
                        const std::string& message) {
  std::lock_guard lock(mu_);
  bool changed = false;
  FL_RETURN_IF_ERROR(UpdateRunEnd(*db_, {run_id, status, end_wall_ns, message}, &changed));
  if (!changed) return NotFoundError("no run " + run_id + " in " + db_->path());
  return OkStatus();
}

Status Store::SetTag(const std::string& run_id, const std::string& key, const std::string& value) {
  std::lock_guard lock(mu_);
  FL_ASSIGN_OR_RETURN(auto st, db_->Prepare("INSERT INTO run_tags (run_id, key, value) VALUES "
                                            "(?1, ?2, ?3) ON CONFLICT (run_id, key) DO UPDATE "
                                            "SET value = excluded.value"));
  st.Bind(1, run_id).Bind(2, key).Bind(3, value);
  return st.Run();
}

Status Store::PutHost(const HostRecord& h) {
  std::lock_guard lock(mu_);
  FL_ASSIGN_OR_RETURN(auto st, db_->Prepare("INSERT INTO hosts (run_id, name, address, "
                                            "clock_offset_ns, clock_uncertainty_ns, "
                                            "fingerprint_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6) "
                                            "ON CONFLICT (run_id, name) DO UPDATE SET address = "
                                            "excluded.address, clock_offset_ns = "
                                            "excluded.clock_offset_ns, clock_uncertainty_ns = "
                                            "excluded.clock_uncertainty_ns, fingerprint_json = "
                                            "excluded.fingerprint_json"));
  st.Bind(1, h.run_id)
      .Bind(2, h.name)
      .Bind(3, h.address)
      .Bind(4, h.clock_offset_ns)
      .Bind(5, h.clock_uncertainty_ns)
      .Bind(6, h.fingerprint_json);
  return st.Run();
}

Status Store::PutFault(const FaultRecord& f) {
  std::lock_guard lock(mu_);
  return UpsertFault(*db_, f);
}

template <typename Row>
Status Store::InsertTelemetry(std::span<const Row> rows) {
  std::lock_guard lock(mu_);
  return InTransaction(*db_, [&]() -> Status {
    FL_ASSIGN_OR_RETURN(auto ins, TelemetryInserter::Prepare(*db_));
    for (const auto& row : rows) FL_RETURN_IF_ERROR(ins.Insert(row));
    return ins.FlushSamples();
  });
}

Status Store::InsertSamples(std::span<const SampleRecord> samples) {
  return InsertTelemetry(samples);
}

Status Store::InsertEvents(std::span<const EventRecord> events) { return InsertTelemetry(events); }

Status Store::InsertNicSamples(std::span<const NicSampleRecord> nics) {
  std::lock_guard lock(mu_);
  return InTransaction(*db_, [&]() -> Status {
    FL_ASSIGN_OR_RETURN(auto ins, NicSampleInserter::Prepare(*db_));
    for (const auto& n : nics) FL_RETURN_IF_ERROR(ins.Insert(n));
    return OkStatus();
  });
}

Status Store::ReplaceMetrics(const std::string& run_id, std::span<const MetricRecord> metrics) {
  std::lock_guard lock(mu_);
  return ReplaceRunRows(
      *db_, "metrics", run_id,
      "INSERT INTO metrics (run_id, fault_id, name, value, unit) VALUES (?1, ?2, ?3, ?4, ?5)",
      metrics, [&](sql::Stmt& st, const MetricRecord& m) -> Status {
        if (m.run_id != run_id) {
          return InvalidArgumentError("metric " + m.name + " belongs to run " + m.run_id +
                                      ", not " + run_id);
        }
        st.Bind(1, run_id).Bind(2, m.fault_id).Bind(3, m.name).Bind(4, m.value).Bind(5, m.unit);
        return OkStatus();
      });
}

Status Store::ReplaceVerdicts(const std::string& run_id, std::span<const VerdictRecord> verdicts) {
  std::lock_guard lock(mu_);
  return ReplaceRunRows(
      *db_, "verdicts", run_id,
      "INSERT INTO verdicts (run_id, fault_id, expectation, passed, observed, limit_value, "
      "message) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
      verdicts, [&](sql::Stmt& st, const VerdictRecord& v) -> Status {
        if (v.run_id != run_id) {
          return InvalidArgumentError("verdict " + v.expectation + " belongs to run " + v.run_id +
                                      ", not " + run_id);
        }
        st.Bind(1, run_id)
            .Bind(2, v.fault_id)
            .Bind(3, v.expectation)
            .Bind(4, v.passed ? 1 : 0)
            .Bind(5, v.observed)
            .Bind(6, v.limit)
            .Bind(7, v.message);
        return OkStatus();
      });
}

Status Store::ReplaceDetections(const std::string& run_id,
                                std::span<const DetectionRecord> detections) {
  std::lock_guard lock(mu_);
  return ReplaceRunRows(
      *db_, "detections", run_id,
      "INSERT INTO detections (run_id, fault_id, layer, noticed_wall_ns, latency_ms, evidence) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
      detections, [&](sql::Stmt& st, const DetectionRecord& d) -> Status {
        if (d.run_id != run_id)
          return InvalidArgumentError("detection " + d.fault_id + "/" + d.layer +
                                      " belongs to run " + d.run_id + ", not " + run_id);
        st.Bind(1, run_id)
            .Bind(2, d.fault_id)
            .Bind(3, d.layer)
            .Bind(4, d.noticed_wall_ns)
            .Bind(5, d.latency_ms)
            .Bind(6, d.evidence);
        return OkStatus();
      });
}

Status Store::ImportRun(const RunData& d) {
  std::lock_guard lock(mu_);
  return InTransaction(*db_, [&]() -> Status {
    FL_RETURN_IF_ERROR(CreateRun(d.run));
    for (const auto& h : d.hosts) FL_RETURN_IF_ERROR(PutHost(h));
    for (const auto& f : d.faults) FL_RETURN_IF_ERROR(PutFault(f));
    FL_RETURN_IF_ERROR(InsertSamples(d.samples));
    FL_RETURN_IF_ERROR(InsertEvents(d.events));
    FL_RETURN_IF_ERROR(ReplaceMetrics(d.run.id, d.metrics));
    FL_RETURN_IF_ERROR(ReplaceVerdicts(d.run.id, d.verdicts));
    FL_RETURN_IF_ERROR(ReplaceDetections(d.run.id, d.detections));
    return InsertNicSamples(d.nics);
  });
}

StatusOr<std::vector<std::string>> Store::MarkDeadRunsAborted(
    const std::string& host, const std::function<bool(int64_t)>& is_alive, Nanos now_wall_ns) {
  std::lock_guard lock(mu_);
  std::vector<std::string> dead;
  FL_RETURN_IF_ERROR(InTransaction(*db_, [&]() -> Status {
    FL_ASSIGN_OR_RETURN(auto sel, db_->Prepare("SELECT id, coordinator_pid FROM runs WHERE "
                                               "status = 'running' AND coordinator_host = ?1"));
    sel.Bind(1, host);
    FL_RETURN_IF_ERROR(ForEachRow(sel, [&](const sql::Stmt& r) {
      if (!is_alive(r.Int(1))) dead.push_back(r.Text(0));
    }));
    sel.Reset();
    FL_ASSIGN_OR_RETURN(auto upd,
                        db_->Prepare("UPDATE runs SET status = 'aborted', end_wall_ns = ?2, "
                                     "message = ?3 WHERE id = ?1 AND status = 'running'"));
    for (const auto& id : dead) {
      upd.Bind(1, id)
          .Bind(2, now_wall_ns)
          .Bind(3, "coordinator on " + host + " died during the run");
      FL_RETURN_IF_ERROR(upd.Run());
      FL_LOG(kWarn, "store") << "run " << id << " marked aborted: its coordinator on " << host
                             << " is gone";
    }
    return OkStatus();
  }));
  return dead;
}

StatusOr<std::vector<RunRecord>> Store::ListRuns(const RunFilter& filter) {
  std::lock_guard lock(mu_);
  // The selection, once for the runs and once (as a subquery) for all their tags: one query
  // each, not one per run (a round trip each on PostgreSQL: 5,000 runs took 300 ms).
  std::string where = " FROM runs r WHERE TRUE";
  int n = 0;
  if (filter.scenario_name) where += " AND scenario_name = ?" + std::to_string(++n);
  if (filter.status) where += " AND status = ?" + std::to_string(++n);
  if (filter.finished_only) where += " AND status IN ('passed', 'failed')";
  if (filter.since) where += " AND start_wall_ns >= " + std::to_string(*filter.since);
  if (filter.until) where += " AND start_wall_ns < " + std::to_string(*filter.until);
  for (size_t i = 0; i < filter.tags.size(); ++i) {
    where += " AND EXISTS (SELECT 1 FROM run_tags t WHERE t.run_id = r.id AND t.key = ?" +
             std::to_string(n + 1) + " AND t.value = ?" + std::to_string(n + 2) + ")";
    n += 2;
  }
  where += " ORDER BY start_wall_ns DESC, id DESC";
  if (filter.limit > 0) where += " LIMIT " + std::to_string(filter.limit);
  auto bind = [&](sql::Stmt& st) {
    int i = 0;
    if (filter.scenario_name) st.Bind(++i, *filter.scenario_name);
    if (filter.status) st.Bind(++i, RunStatusName(*filter.status));
    for (const auto& [k, v] : filter.tags) {
      st.Bind(++i, k);
      st.Bind(++i, v);
    }
  };
  FL_ASSIGN_OR_RETURN(auto st, db_->Prepare("SELECT " + std::string(kRunColumns) + where));
  bind(st);
  std::vector<RunRecord> runs;
  std::map<std::string, size_t> index;
  FL_RETURN_IF_ERROR(ForEachRow(st, [&](const sql::Stmt& row) -> Status {
    FL_ASSIGN_OR_RETURN(RunRecord r, ReadRunRow(row));
    index.emplace(r.id, runs.size());
    runs.push_back(std::move(r));
    return OkStatus();
  }));
  st.Reset();
  if (runs.empty()) return runs;
  FL_ASSIGN_OR_RETURN(auto tags, db_->Prepare("SELECT run_id, key, value FROM run_tags WHERE "
                                              "run_id IN (SELECT r.id" +
                                              where + ")"));
  bind(tags);
  FL_RETURN_IF_ERROR(ForEachRow(tags, [&](const sql::Stmt& row) {
    if (auto it = index.find(row.Text(0)); it != index.end())
      runs[it->second].tags[row.Text(1)] = row.Text(2);
  }));
  return runs;
}

Status Store::LoadTagsLocked(RunRecord& run) {
  FL_ASSIGN_OR_RETURN(auto st, db_->Prepare("SELECT key, value FROM run_tags WHERE run_id = ?1"));
  st.Bind(1, run.id);
  return ForEachRow(st, [&](const sql::Stmt& row) { run.tags[row.Text(0)] = row.Text(1); });
}

StatusOr<RunRecord> Store::GetRunLocked(const std::string& run_id) {
  std::string q =
      "SELECT " + std::string(kRunColumns) + " FROM runs WHERE " +
      (run_id == "latest" ? "TRUE ORDER BY start_wall_ns DESC, id DESC LIMIT 1" : "id = ?1");
  FL_ASSIGN_OR_RETURN(auto st, db_->Prepare(q));
  if (run_id != "latest") st.Bind(1, run_id);
  FL_ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) return NotFoundError("no run " + run_id + " in " + db_->path());
  FL_ASSIGN_OR_RETURN(RunRecord r, ReadRunRow(st));
  st.Reset();
  FL_RETURN_IF_ERROR(LoadTagsLocked(r));
  return r;
}

StatusOr<RunRecord> Store::GetRun(const std::string& run_id) {
  std::lock_guard lock(mu_);
  return GetRunLocked(run_id);
}

StatusOr<RunData> Store::LoadRun(const std::string& run_id) {
  std::lock_guard lock(mu_);
  RunData d;
  // One read transaction: a consistent snapshot even while a writer appends telemetry.
  FL_RETURN_IF_ERROR(db_->BeginRead());
  struct EndRead {
    sql::Db* db;
    // A read-only transaction: nothing to lose if its COMMIT fails.
    ~EndRead() { db->Exec("COMMIT").IgnoreError(); }
  } end_read{db_.get()};
  FL_ASSIGN_OR_RETURN(d.run, GetRunLocked(run_id));
  const std::string& id = d.run.id;

  auto host = [&](const sql::Stmt& h) {
    return HostRecord{id, h.Text(0), h.Text(1), h.Int(2), h.Int(3), h.Text(4)};
  };
  FL_ASSIGN_OR_RETURN(d.hosts, SelectRunRows(*db_,
                                             "SELECT name, address, clock_offset_ns, "
                                             "clock_uncertainty_ns, fingerprint_json FROM hosts "
                                             "WHERE run_id = ?1 ORDER BY name",
                                             id, host));

  FL_ASSIGN_OR_RETURN(d.faults, LoadFaultsLocked(id));

  uint64_t dropped = 0;
  // The samples are the bulk of a run (2.4M for an hour of 64 ranks): one allocation of the
  // right size instead of a growing vector, whose copies would double the peak memory.
  {
    FL_ASSIGN_OR_RETURN(auto n, db_->Prepare("SELECT (SELECT count(*) FROM samples WHERE "
                                             "run_id = ?1) + (SELECT coalesce(sum(count), 0) "
                                             "FROM sample_blocks WHERE run_id = ?1)"));
    n.Bind(1, id);
    FL_ASSIGN_OR_RETURN(bool row, n.Step());
    // Only a hint: a corrupt count cannot make it reserve absurdly (blocks are checked).
    if (row) d.samples.reserve(static_cast<size_t>(std::clamp<int64_t>(n.Int(0), 0, 1 << 28)));
  }
  FL_ASSIGN_OR_RETURN(auto samples,
                      db_->Prepare("SELECT rank, iteration, start_ns, end_ns, bytes, verified, "
                                   "mismatch FROM samples WHERE run_id = ?1 ORDER BY rank, "
                                   "iteration, start_ns"));
  samples.Bind(1, id);
  FL_RETURN_IF_ERROR(ForEachRow(samples, [&](const sql::Stmt& row) {
    // Rows are outside data (another writer, a hand edit): a rank or byte count that no
    // writer of ours produces is dropped and counted rather than wrapped into a bogus value.
    const int64_t rank = row.Int(0), bytes = row.Int(4);
    if (rank < 0 || rank > INT32_MAX || bytes < 0) {
      ++dropped;
      return;
    }
    d.samples.push_back({id, static_cast<int32_t>(rank), row.Int(1), row.Int(2), row.Int(3),
                         static_cast<uint64_t>(bytes), row.Int(5) != 0, row.Int(6) != 0});
  }));

  // Since schema version 4 samples are stored as blocks (TelemetryInserter); a database
  // migrated from an older version keeps its earlier samples as rows: both are read.
  FL_ASSIGN_OR_RETURN(auto blocks,
                      db_->Prepare("SELECT rank, count, data FROM sample_blocks WHERE run_id = "
                                   "?1 ORDER BY rank, first_iteration, rowid"));
  blocks.Bind(1, id);
  FL_RETURN_IF_ERROR(ForEachRow(blocks, [&](const sql::Stmt& row) -> Status {
    const int64_t rank = row.Int(0);
    if (rank < 0 || rank > INT32_MAX) {
      dropped += static_cast<uint64_t>(std::max<int64_t>(row.Int(1), 0));
      return OkStatus();
    }
    const size_t before = d.samples.size();
    FL_RETURN_IF_ERROR(DecodeSampleBlock(row.Blob(2), id, static_cast<int32_t>(rank), d.samples));
    // Byte counts past INT64_MAX are dropped, as a row's negative bytes are.
    auto kept = std::remove_if(
        d.samples.begin() + static_cast<ptrdiff_t>(before), d.samples.end(),
        [](const SampleRecord& s) { return s.bytes > static_cast<uint64_t>(INT64_MAX); });
    dropped += static_cast<uint64_t>(d.samples.end() - kept);
    d.samples.erase(kept, d.samples.end());
    return OkStatus();
  }));
  // By rank, iteration, start (as the rows' ORDER BY); blocks of one rank may interleave.
  auto by_key = [](const SampleRecord& a, const SampleRecord& b) {
    return std::tie(a.rank, a.iteration, a.start_ns) < std::tie(b.rank, b.iteration, b.start_ns);
  };
  if (!std::is_sorted(d.samples.begin(), d.samples.end(), by_key)) {
    std::stable_sort(d.samples.begin(), d.samples.end(), by_key);
  }

  FL_ASSIGN_OR_RETURN(auto events, db_->Prepare("SELECT rank, wall_ns, kind, detail_json FROM "
                                                "events WHERE run_id = ?1 ORDER BY wall_ns, "
                                                "rowid"));
  events.Bind(1, id);
  FL_RETURN_IF_ERROR(ForEachRow(events, [&](const sql::Stmt& row) {
    const int64_t rank = row.Int(0);
    if (rank < -1 || rank > INT32_MAX) {
      ++dropped;
      return;
    }
    d.events.push_back({id, static_cast<int32_t>(rank), row.Int(1), row.Text(2), row.Text(3)});
  }));
  if (dropped > 0)
    FL_LOG(kWarn, "store") << "run " << id << ": dropped " << dropped
                           << " malformed sample/event row(s) (rank or bytes out of range)";

  FL_ASSIGN_OR_RETURN(d.nics, LoadNicSamplesLocked(id));
  FL_ASSIGN_OR_RETURN(d.metrics, LoadMetricsLocked(id));
  FL_ASSIGN_OR_RETURN(d.verdicts, LoadVerdictsLocked(id));
  FL_ASSIGN_OR_RETURN(d.detections, LoadDetectionsLocked(id));
  return d;
}

StatusOr<std::vector<MetricRecord>> Store::LoadMetrics(const std::string& run_id) {
  std::lock_guard lock(mu_);
  return LoadMetricsLocked(run_id);
}

StatusOr<std::vector<std::vector<MetricRecord>>> Store::LoadMetricsOf(
    const std::vector<std::string>& run_ids) {
  std::lock_guard lock(mu_);
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < run_ids.size(); ++i) index.emplace(run_ids[i], i);
  std::vector<std::vector<MetricRecord>> out(run_ids.size());
  // In chunks of ids (one query each; both engines allow far more parameters than this).
  constexpr size_t kChunk = 500;
  for (size_t a = 0; a < run_ids.size(); a += kChunk) {
    const size_t b = std::min(run_ids.size(), a + kChunk);
    std::string q = "SELECT run_id, fault_id, name, value, unit FROM metrics WHERE run_id IN (";
    for (size_t i = a; i < b; ++i) q += (i == a ? "?" : ", ?") + std::to_string(i - a + 1);
    q += ") ORDER BY rowid";
    FL_ASSIGN_OR_RETURN(auto st, db_->Prepare(q));
    for (size_t i = a; i < b; ++i) st.Bind(static_cast<int>(i - a + 1), run_ids[i]);
    FL_RETURN_IF_ERROR(ForEachRow(st, [&](const sql::Stmt& m) {
      auto it = index.find(m.Text(0));
      if (it == index.end()) return;
      out[it->second].push_back(
          MetricRecord{m.Text(0), m.OptText(1), m.Text(2), m.Double(3), m.Text(4)});
    }));
  }
  return out;
}

StatusOr<std::vector<FaultRecord>> Store::LoadFaults(const std::string& run_id) {
  std::lock_guard lock(mu_);
  return LoadFaultsLocked(run_id);
}

StatusOr<std::vector<FaultRecord>> Store::LoadFaultsLocked(const std::string& id) {
  return SelectRunRows(
      *db_,
      "SELECT fault_id, kind, target, params_json, scheduled_wall_ns, requested_wall_ns, "
      "effective_wall_ns, reverted_wall_ns, revert_verified, anchor FROM faults WHERE run_id = "
      "?1 ORDER BY coalesce(effective_wall_ns, requested_wall_ns, scheduled_wall_ns), fault_id",
      id, [&](const sql::Stmt& row) {
        FaultRecord f;
        f.run_id = id;
        f.fault_id = row.Text(0);
        f.kind = row.Text(1);
        f.target = row.Text(2);
        f.params_json = row.Text(3);
        f.scheduled_wall_ns = row.OptInt(4);
        f.requested_wall_ns = row.OptInt(5);
        f.effective_wall_ns = row.OptInt(6);
        f.reverted_wall_ns = row.OptInt(7);
        f.revert_verified = OptBool(row, 8);
        f.anchor = row.Text(9);
        return f;
      });
}

StatusOr<std::vector<VerdictRecord>> Store::LoadVerdicts(const std::string& run_id) {
  std::lock_guard lock(mu_);
  return LoadVerdictsLocked(run_id);
}

StatusOr<std::vector<MetricRecord>> Store::LoadMetricsLocked(const std::string& id) {
  auto metric = [&](const sql::Stmt& m) {
    return MetricRecord{id, m.OptText(0), m.Text(1), m.Double(2), m.Text(3)};
  };
  return SelectRunRows(
      *db_, "SELECT fault_id, name, value, unit FROM metrics WHERE run_id = ?1 ORDER BY rowid", id,
      metric);
}

StatusOr<std::vector<VerdictRecord>> Store::LoadVerdictsLocked(const std::string& id) {
  auto verdict = [&](const sql::Stmt& v) {
    return VerdictRecord{
        id, v.OptText(0), v.Text(1), v.Int(2) != 0, v.OptDouble(3), v.OptDouble(4), v.Text(5)};
  };
  return SelectRunRows(*db_,
                       "SELECT fault_id, expectation, passed, observed, limit_value, message "
                       "FROM verdicts WHERE run_id = ?1 ORDER BY rowid",
                       id, verdict);
}

StatusOr<std::vector<DetectionRecord>> Store::LoadDetections(const std::string& run_id) {
  std::lock_guard lock(mu_);
  return LoadDetectionsLocked(run_id);
}

StatusOr<std::vector<DetectionRecord>> Store::LoadDetectionsLocked(const std::string& id) {
  auto detection = [&](const sql::Stmt& r) {
    return DetectionRecord{id, r.Text(0), r.Text(1), r.OptInt(2), r.OptDouble(3), r.Text(4)};
  };
  return SelectRunRows(*db_,
                       "SELECT fault_id, layer, noticed_wall_ns, latency_ms, evidence "
                       "FROM detections WHERE run_id = ?1 ORDER BY rowid",
                       id, detection);
}

// ---- NIC samples ----

namespace {

constexpr std::string_view kNicColumns =
    "run_id, host, nic, wall_ns, rx_bytes, tx_bytes, rx_packets, tx_packets, rx_dropped, "
    "tx_dropped, rx_errors, tx_errors, rx_pause, tx_pause, extra_json";

// The eight link counters in the order of their columns (kNicColumns 4 to 11, from 0).
constexpr uint64_t NicCounters::*kLinkCounters[] = {
    &NicCounters::rx_bytes,   &NicCounters::tx_bytes,   &NicCounters::rx_packets,
    &NicCounters::tx_packets, &NicCounters::rx_dropped, &NicCounters::tx_dropped,
    &NicCounters::rx_errors,  &NicCounters::tx_errors};
constexpr int kFirstLinkCounterColumn = 4;

// Counters are unsigned; INTEGER is signed 64-bit: the bits are kept (two's complement).
int64_t AsStored(uint64_t v) { return static_cast<int64_t>(v); }
uint64_t AsCounter(int64_t v) { return static_cast<uint64_t>(v); }

}  // namespace

std::string NicExtraJson(const std::map<std::string, uint64_t>& extra) {
  if (extra.empty()) return "{}";
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [k, v] : extra) j[k] = v;
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

StatusOr<std::map<std::string, uint64_t>> ParseNicExtra(std::string_view text) {
  std::map<std::string, uint64_t> out;
  if (text.empty() || text == "{}") return out;
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return DataLossError("nic_samples.extra_json is not a JSON object");
  for (const auto& [k, v] : j.items()) {
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
      return DataLossError("nic_samples.extra_json: counter '" + k + "' is not a count");
    out[k] = v.get<uint64_t>();
  }
  return out;
}

StatusOr<NicSampleInserter> NicSampleInserter::Prepare(sql::Db& db) {
  FL_ASSIGN_OR_RETURN(auto st, db.Prepare("INSERT INTO nic_samples (" + std::string(kNicColumns) +
                                          ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
                                          "?11, ?12, ?13, ?14, ?15)"));
  return NicSampleInserter(std::move(st));
}

Status NicSampleInserter::Insert(const NicSampleRecord& n) {
  std::optional<int64_t> rx_pause, tx_pause;
  if (n.rx_pause) rx_pause = AsStored(*n.rx_pause);
  if (n.tx_pause) tx_pause = AsStored(*n.tx_pause);
  insert_.Bind(1, n.run_id).Bind(2, n.host).Bind(3, n.nic).Bind(4, n.wall_ns);
  int param = kFirstLinkCounterColumn + 1;  // parameters are 1-based, columns 0-based
  for (auto counter : kLinkCounters) insert_.Bind(param++, AsStored(n.*counter));
  insert_.Bind(13, rx_pause).Bind(14, tx_pause).Bind(15, NicExtraJson(n.extra));
  return insert_.Run();
}

StatusOr<std::vector<NicSampleRecord>> Store::LoadNicSamplesLocked(const std::string& id) {
  uint64_t bad_extra = 0;
  auto read = [&](const sql::Stmt& row) {
    NicSampleRecord n;
    n.run_id = id;
    n.host = row.Text(1);
    n.nic = row.Text(2);
    n.wall_ns = row.Int(3);
    int col = kFirstLinkCounterColumn;
    for (auto counter : kLinkCounters) n.*counter = AsCounter(row.Int(col++));
    if (auto v = row.OptInt(12)) n.rx_pause = AsCounter(*v);
    if (auto v = row.OptInt(13)) n.tx_pause = AsCounter(*v);
    // A hand-edited extra column loses its extras, not the reading.
    auto extra = ParseNicExtra(row.Text(14));
    if (extra.ok())
      n.extra = std::move(*extra);
    else
      ++bad_extra;
    return n;
  };
  FL_ASSIGN_OR_RETURN(auto out, SelectRunRows(*db_,
                                              "SELECT " + std::string(kNicColumns) +
                                                  " FROM nic_samples WHERE run_id = ?1 ORDER BY "
                                                  "host, nic, wall_ns, rowid",
                                              id, read));
  if (bad_extra > 0)
    FL_LOG(kWarn, "store") << "run " << id << ": " << bad_extra
                           << " NIC sample(s) with malformed extra_json (extras dropped)";
  return out;
}

}  // namespace fl::reports
