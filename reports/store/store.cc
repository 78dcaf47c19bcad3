#include "reports/store/store.h"

#include <openssl/evp.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <tuple>

#include "common/log.h"
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

Status ParseTagSelector(std::string_view selector, RunFilter& filter) {
  constexpr std::string_view kPrefix = "tag:";
  if (selector.substr(0, kPrefix.size()) != kPrefix) {
    return InvalidArgumentError("run selector '" + std::string(selector) +
                                "': expected tag:KEY=VALUE[,KEY=VALUE...]");
  }
  std::string_view rest = selector.substr(kPrefix.size());
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      return InvalidArgumentError("run selector '" + std::string(selector) + "': '" +
                                  std::string(item) + "' is not KEY=VALUE");
    }
    filter.tags[std::string(item.substr(0, eq))] = std::string(item.substr(eq + 1));
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  if (filter.tags.empty()) {
    return InvalidArgumentError("run selector '" + std::string(selector) + "' names no tag");
  }
  return OkStatus();
}

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

// ---- sample blocks ----

namespace {

constexpr uint8_t kSampleBlockFormat = 1;
constexpr size_t kSampleBlockHeader = 5;  // format byte + 4-byte count

// Differences are taken modulo 2^64 (no signed overflow) and zigzagged so that small
// negative steps stay short too.
uint64_t ZigZag(uint64_t delta) { return (delta << 1) ^ (0 - (delta >> 63)); }
uint64_t UnZigZag(uint64_t v) { return (v >> 1) ^ (0 - (v & 1)); }

void PutVarint(std::vector<uint8_t>& buf, uint64_t v) {
  while (v >= 0x80) {
    buf.push_back(static_cast<uint8_t>(v) | 0x80);
    v >>= 7;
  }
  buf.push_back(static_cast<uint8_t>(v));
}

bool GetVarint(const uint8_t*& p, const uint8_t* end, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (p == end) return false;
    uint8_t b = *p++;
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;  // more than 10 bytes
}

}  // namespace

void SampleBlockEncoder::Add(const SampleRecord& s) {
  if (count_ == 0) {
    buf_.assign(kSampleBlockHeader, 0);
    first_iteration_ = last_iteration_ = s.iteration;
    min_start_ = s.start_ns;
    max_end_ = s.end_ns;
  } else {
    first_iteration_ = std::min(first_iteration_, s.iteration);
    last_iteration_ = std::max(last_iteration_, s.iteration);
    min_start_ = std::min(min_start_, s.start_ns);
    max_end_ = std::max(max_end_, s.end_ns);
  }
  const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  PutVarint(buf_, ZigZag(u(s.iteration) - u(prev_iteration_)));
  PutVarint(buf_, ZigZag(u(s.start_ns) - u(prev_start_)));
  PutVarint(buf_, ZigZag(u(s.end_ns) - u(s.start_ns)));
  PutVarint(buf_, ZigZag(s.bytes - prev_bytes_));
  buf_.push_back(static_cast<uint8_t>((s.verified ? 1 : 0) | (s.mismatch ? 2 : 0)));
  prev_iteration_ = s.iteration;
  prev_start_ = s.start_ns;
  prev_bytes_ = s.bytes;
  ++count_;
}

std::span<const uint8_t> SampleBlockEncoder::Bytes() {
  if (count_ == 0) buf_.assign(kSampleBlockHeader, 0);
  buf_[0] = kSampleBlockFormat;
  for (size_t i = 0; i < 4; ++i) buf_[1 + i] = static_cast<uint8_t>(count_ >> (8 * i));
  return buf_;
}

void SampleBlockEncoder::Clear() {
  buf_.clear();
  count_ = 0;
  prev_iteration_ = 0;
  prev_start_ = 0;
  prev_bytes_ = 0;
}

Status DecodeSampleBlock(std::span<const uint8_t> blob, const std::string& run_id, int32_t rank,
                         std::vector<SampleRecord>& out) {
  auto bad = [&](std::string_view why) {
    return DataLossError("sample block of run " + run_id + " rank " + std::to_string(rank) + ": " +
                         std::string(why));
  };
  if (blob.size() < kSampleBlockHeader) return bad("shorter than its header");
  if (blob[0] != kSampleBlockFormat) {
    return bad("unknown format " + std::to_string(blob[0]) + " (newer faultline?)");
  }
  uint32_t count = 0;
  for (size_t i = 0; i < 4; ++i) count |= static_cast<uint32_t>(blob[1 + i]) << (8 * i);
  // Each sample takes at least 5 bytes: a count beyond that is corruption, not a reason to
  // reserve gigabytes.
  if (count > (blob.size() - kSampleBlockHeader) / 5) return bad("count exceeds its bytes");
  const uint8_t* p = blob.data() + kSampleBlockHeader;
  const uint8_t* end = blob.data() + blob.size();
  // Grow geometrically: an exact reserve per block would copy the whole run every block.
  if (out.capacity() < out.size() + count)
    out.reserve(std::max(out.size() + count, 2 * out.size()));
  uint64_t iteration = 0, start = 0, bytes = 0;
  for (uint32_t i = 0; i < count; ++i) {
    uint64_t d_iter, d_start, dur, d_bytes;
    if (!GetVarint(p, end, d_iter) || !GetVarint(p, end, d_start) || !GetVarint(p, end, dur) ||
        !GetVarint(p, end, d_bytes) || p == end) {
      return bad("truncated at sample " + std::to_string(i));
    }
    const uint8_t flags = *p++;
    if (flags > 3) return bad("bad flags at sample " + std::to_string(i));
    iteration += UnZigZag(d_iter);
    start += UnZigZag(d_start);
    bytes += UnZigZag(d_bytes);
    const uint64_t finish = start + UnZigZag(dur);
    out.push_back({run_id, rank, static_cast<int64_t>(iteration), static_cast<Nanos>(start),
                   static_cast<Nanos>(finish), bytes, (flags & 1) != 0, (flags & 2) != 0});
  }
  if (p != end) return bad("trailing bytes after " + std::to_string(count) + " samples");
  return OkStatus();
}

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
  FL_ASSIGN_OR_RETURN(auto txn, sql::Transaction::Begin(*db_));
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
  return txn.Commit();
}

Status Store::FinishRun(const std::string& run_id, RunStatus status, Nanos end_wall_ns,
                        const std::string& message) {
  std::lock_guard lock(mu_);
  FL_ASSIGN_OR_RETURN(auto st, db_->Prepare("UPDATE runs SET status = ?2, end_wall_ns = ?3, "
                                            "message = ?4 WHERE id = ?1"));
  st.Bind(1, run_id).Bind(2, RunStatusName(status)).Bind(3, end_wall_ns).Bind(4, message);
  FL_RETURN_IF_ERROR(st.Run());
  if (db_->Changes() == 0) return NotFoundError("no run " + run_id + " in " + db_->path());
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
  FL_ASSIGN_OR_RETURN(
      auto st,
      db_->Prepare("INSERT INTO faults (run_id, fault_id, kind, target, params_json, "
                   "scheduled_wall_ns, requested_wall_ns, effective_wall_ns, reverted_wall_ns, "
                   "revert_verified, anchor) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, "
                   "?11) ON CONFLICT (run_id, fault_id) DO UPDATE SET kind = excluded.kind, "
                   "target = excluded.target, params_json = excluded.params_json, "
                   "scheduled_wall_ns = excluded.scheduled_wall_ns, requested_wall_ns = "
                   "excluded.requested_wall_ns, effective_wall_ns = excluded.effective_wall_ns, "
                   "reverted_wall_ns = excluded.reverted_wall_ns, revert_verified = "
                   "excluded.revert_verified, anchor = excluded.anchor"));
  std::optional<int64_t> verified;
  if (f.revert_verified) verified = *f.revert_verified ? 1 : 0;
  st.Bind(1, f.run_id)
      .Bind(2, f.fault_id)
      .Bind(3, f.kind)
      .Bind(4, f.target)
      .Bind(5, f.params_json)
      .Bind(6, f.scheduled_wall_ns)
      .Bind(7, f.requested_wall_ns)
      .Bind(8, f.effective_wall_ns)
      .Bind(9, f.reverted_wall_ns)
      .Bind(10, verified)
      .Bind(11, f.anchor);
  return st.Run();
}

template <typename Row>
Status Store::InsertTelemetry(std::span<const Row> rows) {
  std::lock_guard lock(mu_);
  FL_ASSIGN_OR_RETURN(auto txn, sql::Transaction::Begin(*db_));
  FL_ASSIGN_OR_RETURN(auto ins, TelemetryInserter::Prepare(*db_));
  for (const auto& row : rows) FL_RETURN_IF_ERROR(ins.Insert(row));
  FL_RETURN_IF_ERROR(ins.FlushSamples());
  return txn.Commit();
}

Status Store::InsertSamples(std::span<const SampleRecord> samples) {
  return InsertTelemetry(samples);
}

Status Store::InsertEvents(std::span<const EventRecord> events) { return InsertTelemetry(events); }

Status Store::InsertNicSamples(std::span<const NicSampleRecord> nics) {
  std::lock_guard lock(mu_);
  FL_ASSIGN_OR_RETURN(auto txn, sql::Transaction::Begin(*db_));
  FL_ASSIGN_OR_RETURN(auto ins, NicSampleInserter::Prepare(*db_));
  for (const auto& n : nics) FL_RETURN_IF_ERROR(ins.Insert(n));
  return txn.Commit();
}

Status Store::ReplaceMetrics(const std::string& run_id, std::span<const MetricRecord> metrics) {
  std::lock_guard lock(mu_);
  FL_ASSIGN_OR_RETURN(auto txn, sql::Transaction::Begin(*db_));
  FL_ASSIGN_OR_RETURN(auto del, db_->Prepare("DELETE FROM metrics WHERE run_id = ?1"));
  del.Bind(1, run_id);
  FL_RETURN_IF_ERROR(del.Run());
  FL_ASSIGN_OR_RETURN(auto st, db_->Prepare("INSERT INTO metrics (run_id, fault_id, name, value, "
                                            "unit) VALUES (?1, ?2, ?3, ?4, ?5)"));
  for (const auto& m : metrics) {
    if (m.run_id != run_id) {
      return InvalidArgumentError("metric " + m.name + " belongs to run " + m.run_id + ", not " +
                                  run_id);
    }
    st.Bind(1, run_id).Bind(2, m.fault_id).Bind(3, m.name).Bind(4, m.value).Bind(5, m.unit);
    FL_RETURN_IF_ERROR(st.Run());
  }
  return txn.Commit();
}

Status Store::ReplaceVerdicts(const std::string& run_id, std::span<const VerdictRecord> verdicts) {
  std::lock_guard lock(mu_);
  FL_ASSIGN_OR_RETURN(auto txn, sql::Transaction::Begin(*db_));
  FL_ASSIGN_OR_RETURN(auto del, db_->Prepare("DELETE FROM verdicts WHERE run_id = ?1"));
  del.Bind(1, run_id);
  FL_RETURN_IF_ERROR(del.Run());
  FL_ASSIGN_OR_RETURN(auto st,
                      db_->Prepare("INSERT INTO verdicts (run_id, fault_id, expectation, passed, "
                                   "observed, limit_value, message) VALUES (?1, ?2, ?3, ?4, ?5, "
                                   "?6, ?7)"));
  for (const auto& v : verdicts) {
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
    FL_RETURN_IF_ERROR(st.Run());
  }
  return txn.Commit();
}

Status Store::ImportRun(const RunData& d) {
  std::lock_guard lock(mu_);
  FL_ASSIGN_OR_RETURN(auto txn, sql::Transaction::Begin(*db_));
  FL_RETURN_IF_ERROR(CreateRun(d.run));
  for (const auto& h : d.hosts) FL_RETURN_IF_ERROR(PutHost(h));
  for (const auto& f : d.faults) FL_RETURN_IF_ERROR(PutFault(f));
  FL_RETURN_IF_ERROR(InsertSamples(d.samples));
  FL_RETURN_IF_ERROR(InsertEvents(d.events));
  FL_RETURN_IF_ERROR(ReplaceMetrics(d.run.id, d.metrics));
  FL_RETURN_IF_ERROR(ReplaceVerdicts(d.run.id, d.verdicts));
  FL_RETURN_IF_ERROR(InsertNicSamples(d.nics));
  return txn.Commit();
}

StatusOr<std::vector<std::string>> Store::MarkDeadRunsAborted(
    const std::string& host, const std::function<bool(int64_t)>& is_alive, Nanos now_wall_ns) {
  std::lock_guard lock(mu_);
  FL_ASSIGN_OR_RETURN(auto txn, sql::Transaction::Begin(*db_));
  FL_ASSIGN_OR_RETURN(auto sel, db_->Prepare("SELECT id, coordinator_pid FROM runs WHERE status "
                                             "= 'running' AND coordinator_host = ?1"));
  sel.Bind(1, host);
  std::vector<std::string> dead;
  for (;;) {
    FL_ASSIGN_OR_RETURN(bool row, sel.Step());
    if (!row) break;
    if (!is_alive(sel.Int(1))) dead.push_back(sel.Text(0));
  }
  sel.Reset();
  FL_ASSIGN_OR_RETURN(auto upd,
                      db_->Prepare("UPDATE runs SET status = 'aborted', end_wall_ns = ?2, "
                                   "message = ?3 WHERE id = ?1 AND status = 'running'"));
  for (const auto& id : dead) {
    upd.Bind(1, id).Bind(2, now_wall_ns).Bind(3, "coordinator on " + host + " died during the run");
    FL_RETURN_IF_ERROR(upd.Run());
    FL_LOG(kWarn, "store") << "run " << id << " marked aborted: its coordinator on " << host
                           << " is gone";
  }
  FL_RETURN_IF_ERROR(txn.Commit());
  return dead;
}

StatusOr<std::vector<RunRecord>> Store::ListRuns(const RunFilter& filter) {
  std::lock_guard lock(mu_);
  std::string q = "SELECT " + std::string(kRunColumns) + " FROM runs r WHERE TRUE";
  int n = 0;
  if (filter.scenario_name) q += " AND scenario_name = ?" + std::to_string(++n);
  if (filter.status) q += " AND status = ?" + std::to_string(++n);
  for (size_t i = 0; i < filter.tags.size(); ++i) {
    q += " AND EXISTS (SELECT 1 FROM run_tags t WHERE t.run_id = r.id AND t.key = ?" +
         std::to_string(n + 1) + " AND t.value = ?" + std::to_string(n + 2) + ")";
    n += 2;
  }
  q += " ORDER BY start_wall_ns DESC, id DESC";
  if (filter.limit > 0) q += " LIMIT " + std::to_string(filter.limit);
  FL_ASSIGN_OR_RETURN(auto st, db_->Prepare(q));
  int i = 0;
  if (filter.scenario_name) st.Bind(++i, *filter.scenario_name);
  if (filter.status) st.Bind(++i, RunStatusName(*filter.status));
  for (const auto& [k, v] : filter.tags) {
    st.Bind(++i, k);
    st.Bind(++i, v);
  }
  std::vector<RunRecord> runs;
  for (;;) {
    FL_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    FL_ASSIGN_OR_RETURN(RunRecord r, ReadRunRow(st));
    runs.push_back(std::move(r));
  }
  st.Reset();
  for (auto& r : runs) FL_RETURN_IF_ERROR(LoadTagsLocked(r));
  return runs;
}

Status Store::LoadTagsLocked(RunRecord& run) {
  FL_ASSIGN_OR_RETURN(auto st, db_->Prepare("SELECT key, value FROM run_tags WHERE run_id = ?1"));
  st.Bind(1, run.id);
  for (;;) {
    FL_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    run.tags[st.Text(0)] = st.Text(1);
  }
  return OkStatus();
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
  FL_RETURN_IF_ERROR(db_->Exec("BEGIN"));
  struct EndRead {
    sql::Db* db;
    ~EndRead() { db->Exec("COMMIT").IgnoreError(); }
  } end_read{db_.get()};
  FL_ASSIGN_OR_RETURN(d.run, GetRunLocked(run_id));
  const std::string& id = d.run.id;

  FL_ASSIGN_OR_RETURN(auto hosts, db_->Prepare("SELECT name, address, clock_offset_ns, "
                                               "clock_uncertainty_ns, fingerprint_json FROM "
                                               "hosts WHERE run_id = ?1 ORDER BY name"));
  hosts.Bind(1, id);
  for (;;) {
    FL_ASSIGN_OR_RETURN(bool row, hosts.Step());
    if (!row) break;
    d.hosts.push_back(
        {id, hosts.Text(0), hosts.Text(1), hosts.Int(2), hosts.Int(3), hosts.Text(4)});
  }

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
  for (;;) {
    FL_ASSIGN_OR_RETURN(bool row, samples.Step());
    if (!row) break;
    // Rows are outside data (another writer, a hand edit): a rank or byte count that no
    // writer of ours produces is dropped and counted rather than wrapped into a bogus value.
    const int64_t rank = samples.Int(0), bytes = samples.Int(4);
    if (rank < 0 || rank > INT32_MAX || bytes < 0) {
      ++dropped;
      continue;
    }
    d.samples.push_back({id, static_cast<int32_t>(rank), samples.Int(1), samples.Int(2),
                         samples.Int(3), static_cast<uint64_t>(bytes), samples.Int(5) != 0,
                         samples.Int(6) != 0});
  }

  // Since schema version 4 samples are stored as blocks (TelemetryInserter); a database
  // migrated from an older version keeps its earlier samples as rows: both are read.
  FL_ASSIGN_OR_RETURN(auto blocks,
                      db_->Prepare("SELECT rank, count, data FROM sample_blocks WHERE run_id = "
                                   "?1 ORDER BY rank, first_iteration, rowid"));
  blocks.Bind(1, id);
  for (;;) {
    FL_ASSIGN_OR_RETURN(bool row, blocks.Step());
    if (!row) break;
    const int64_t rank = blocks.Int(0);
    if (rank < 0 || rank > INT32_MAX) {
      dropped += static_cast<uint64_t>(std::max<int64_t>(blocks.Int(1), 0));
      continue;
    }
    const size_t before = d.samples.size();
    FL_RETURN_IF_ERROR(
        DecodeSampleBlock(blocks.Blob(2), id, static_cast<int32_t>(rank), d.samples));
    // Byte counts past INT64_MAX are dropped, as a row's negative bytes are.
    auto kept = std::remove_if(
        d.samples.begin() + static_cast<ptrdiff_t>(before), d.samples.end(),
        [](const SampleRecord& s) { return s.bytes > static_cast<uint64_t>(INT64_MAX); });
    dropped += static_cast<uint64_t>(d.samples.end() - kept);
    d.samples.erase(kept, d.samples.end());
  }
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
  for (;;) {
    FL_ASSIGN_OR_RETURN(bool row, events.Step());
    if (!row) break;
    const int64_t rank = events.Int(0);
    if (rank < -1 || rank > INT32_MAX) {
      ++dropped;
      continue;
    }
    d.events.push_back(
        {id, static_cast<int32_t>(rank), events.Int(1), events.Text(2), events.Text(3)});
  }
  if (dropped > 0)
    FL_LOG(kWarn, "store") << "run " << id << ": dropped " << dropped
                           << " malformed sample/event row(s) (rank or bytes out of range)";

  FL_ASSIGN_OR_RETURN(d.nics, LoadNicSamplesLocked(id));
  FL_ASSIGN_OR_RETURN(d.metrics, LoadMetricsLocked(id));
  FL_ASSIGN_OR_RETURN(d.verdicts, LoadVerdictsLocked(id));
  return d;
}

StatusOr<std::vector<MetricRecord>> Store::LoadMetrics(const std::string& run_id) {
  std::lock_guard lock(mu_);
  return LoadMetricsLocked(run_id);
}

StatusOr<std::vector<FaultRecord>> Store::LoadFaults(const std::string& run_id) {
  std::lock_guard lock(mu_);
  return LoadFaultsLocked(run_id);
}

StatusOr<std::vector<FaultRecord>> Store::LoadFaultsLocked(const std::string& id) {
  FL_ASSIGN_OR_RETURN(
      auto faults,
      db_->Prepare("SELECT fault_id, kind, target, params_json, scheduled_wall_ns, "
                   "requested_wall_ns, effective_wall_ns, reverted_wall_ns, revert_verified, "
                   "anchor FROM faults WHERE run_id = ?1 ORDER BY coalesce(effective_wall_ns, "
                   "requested_wall_ns, scheduled_wall_ns), fault_id"));
  faults.Bind(1, id);
  std::vector<FaultRecord> out;
  for (;;) {
    FL_ASSIGN_OR_RETURN(bool row, faults.Step());
    if (!row) break;
    FaultRecord f;
    f.run_id = id;
    f.fault_id = faults.Text(0);
    f.kind = faults.Text(1);
    f.target = faults.Text(2);
    f.params_json = faults.Text(3);
    f.scheduled_wall_ns = faults.OptInt(4);
    f.requested_wall_ns = faults.OptInt(5);
    f.effective_wall_ns = faults.OptInt(6);
    f.reverted_wall_ns = faults.OptInt(7);
    f.revert_verified = OptBool(faults, 8);
    f.anchor = faults.Text(9);
    out.push_back(std::move(f));
  }
  return out;
}

StatusOr<std::vector<VerdictRecord>> Store::LoadVerdicts(const std::string& run_id) {
  std::lock_guard lock(mu_);
  return LoadVerdictsLocked(run_id);
}

StatusOr<std::vector<MetricRecord>> Store::LoadMetricsLocked(const std::string& id) {
  FL_ASSIGN_OR_RETURN(auto metrics, db_->Prepare("SELECT fault_id, name, value, unit FROM "
                                                 "metrics WHERE run_id = ?1 ORDER BY rowid"));
  metrics.Bind(1, id);
  std::vector<MetricRecord> out;
  for (;;) {
    FL_ASSIGN_OR_RETURN(bool row, metrics.Step());
    if (!row) break;
    out.push_back({id, metrics.OptText(0), metrics.Text(1), metrics.Double(2), metrics.Text(3)});
  }
  return out;
}

StatusOr<std::vector<VerdictRecord>> Store::LoadVerdictsLocked(const std::string& id) {
  FL_ASSIGN_OR_RETURN(auto verdicts,
                      db_->Prepare("SELECT fault_id, expectation, passed, observed, limit_value, "
                                   "message FROM verdicts WHERE run_id = ?1 ORDER BY rowid"));
  verdicts.Bind(1, id);
  std::vector<VerdictRecord> out;
  for (;;) {
    FL_ASSIGN_OR_RETURN(bool row, verdicts.Step());
    if (!row) break;
    out.push_back({id, verdicts.OptText(0), verdicts.Text(1), verdicts.Int(2) != 0,
                   verdicts.OptDouble(3), verdicts.OptDouble(4), verdicts.Text(5)});
  }
  return out;
}

// ---- NIC samples ----

namespace {

constexpr std::string_view kNicColumns =
    "run_id, host, nic, wall_ns, rx_bytes, tx_bytes, rx_packets, tx_packets, rx_dropped, "
    "tx_dropped, rx_errors, tx_errors, rx_pause, tx_pause, extra_json";

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
  insert_.Bind(1, n.run_id)
      .Bind(2, n.host)
      .Bind(3, n.nic)
      .Bind(4, n.wall_ns)
      .Bind(5, AsStored(n.rx_bytes))
      .Bind(6, AsStored(n.tx_bytes))
      .Bind(7, AsStored(n.rx_packets))
      .Bind(8, AsStored(n.tx_packets))
      .Bind(9, AsStored(n.rx_dropped))
      .Bind(10, AsStored(n.tx_dropped))
      .Bind(11, AsStored(n.rx_errors))
      .Bind(12, AsStored(n.tx_errors))
      .Bind(13, rx_pause)
      .Bind(14, tx_pause)
      .Bind(15, NicExtraJson(n.extra));
  return insert_.Run();
}

StatusOr<std::vector<NicSampleRecord>> Store::LoadNicSamplesLocked(const std::string& id) {
  FL_ASSIGN_OR_RETURN(auto st, db_->Prepare("SELECT " + std::string(kNicColumns) +
                                            " FROM nic_samples WHERE run_id = ?1 ORDER BY "
                                            "host, nic, wall_ns, rowid"));
  st.Bind(1, id);
  std::vector<NicSampleRecord> out;
  uint64_t bad_extra = 0;
  for (;;) {
    FL_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    NicSampleRecord n;
    n.run_id = id;
    n.host = st.Text(1);
    n.nic = st.Text(2);
    n.wall_ns = st.Int(3);
    n.rx_bytes = AsCounter(st.Int(4));
    n.tx_bytes = AsCounter(st.Int(5));
    n.rx_packets = AsCounter(st.Int(6));
    n.tx_packets = AsCounter(st.Int(7));
    n.rx_dropped = AsCounter(st.Int(8));
    n.tx_dropped = AsCounter(st.Int(9));
    n.rx_errors = AsCounter(st.Int(10));
    n.tx_errors = AsCounter(st.Int(11));
    if (auto v = st.OptInt(12)) n.rx_pause = AsCounter(*v);
    if (auto v = st.OptInt(13)) n.tx_pause = AsCounter(*v);
    // A hand-edited extra column loses its extras, not the reading.
    auto extra = ParseNicExtra(st.Text(14));
    if (extra.ok())
      n.extra = std::move(*extra);
    else
      ++bad_extra;
    out.push_back(std::move(n));
  }
  if (bad_extra > 0)
    FL_LOG(kWarn, "store") << "run " << id << ": " << bad_extra
                           << " NIC sample(s) with malformed extra_json (extras dropped)";
  return out;
}

}  // namespace fl::reports
