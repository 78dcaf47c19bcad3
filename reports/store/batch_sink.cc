#include "reports/store/batch_sink.h"

#include <type_traits>
#include <variant>

#include "reports/store/fault_rows.h"

namespace fl::reports {

StatusOr<std::unique_ptr<BatchSink>> BatchSink::Open(const std::string& path, Nanos busy_timeout,
                                                     std::string writer, std::string run_id) {
  std::unique_ptr<BatchSink> s(new BatchSink());
  s->writer_ = std::move(writer);
  s->run_id_ = std::move(run_id);
  FL_ASSIGN_OR_RETURN(s->db_, OpenStoreDb(path, /*create=*/true, busy_timeout, 0));
  // Checkpoint the WAL every ~40 MB instead of every 4 MB: fewer stalls inside the writer's
  // commits during an ingest burst. Readers and other connections are unaffected.
  if (s->db_->dialect() == sql::Dialect::kSqlite) {
    FL_RETURN_IF_ERROR(s->db_->Exec("PRAGMA wal_autocheckpoint = 10000"));
  }
  FL_ASSIGN_OR_RETURN(auto inserter, TelemetryInserter::Prepare(*s->db_));
  s->inserter_.emplace(std::move(inserter));
  FL_ASSIGN_OR_RETURN(auto nic_inserter, NicSampleInserter::Prepare(*s->db_));
  s->nic_inserter_.emplace(std::move(nic_inserter));
  return s;
}

StatusOr<uint64_t> BatchSink::LastBatch() {
  FL_ASSIGN_OR_RETURN(auto st,
                      db_->Prepare("SELECT last_batch FROM writer_batches WHERE writer = ?1"));
  st.Bind(1, writer_);
  FL_ASSIGN_OR_RETURN(bool row, st.Step());
  return row ? static_cast<uint64_t>(st.Int(0)) : 0;
}

StatusOr<bool> BatchSink::Write(std::span<const SpoolRow> rows, uint64_t first, uint64_t last) {
  // A failed attempt may have left samples buffered: the retry must not write them twice.
  inserter_->DiscardSamples();
  FL_ASSIGN_OR_RETURN(auto txn, sql::Transaction::Begin(*db_));
  if (last > 0) {
    FL_ASSIGN_OR_RETURN(uint64_t stored, LastBatch());
    if (stored >= last) {
      FL_RETURN_IF_ERROR(txn.Commit());
      return false;
    }
    if (stored >= first) {
      return FailedPreconditionError("the store holds batches up to " + std::to_string(stored) +
                                     " of writer " + writer_ + ", within " + std::to_string(first) +
                                     ".." + std::to_string(last));
    }
  }
  for (const SpoolRow& row : rows) {
    Status s = std::visit(
        [&](const auto& r) -> Status {
          using R = std::decay_t<decltype(r)>;
          if constexpr (std::is_same_v<R, NicSampleRecord>)
            return nic_inserter_->Insert(r);
          else if constexpr (std::is_same_v<R, FaultRecord>)
            return UpsertFault(*db_, r);
          else if constexpr (std::is_same_v<R, RunEndRecord>)
            return UpdateRunEnd(*db_, r);
          else
            return inserter_->Insert(r);
        },
        row);
    FL_RETURN_IF_ERROR(s);
  }
  FL_RETURN_IF_ERROR(inserter_->FlushSamples());
  if (last > 0) {
    FL_ASSIGN_OR_RETURN(
        auto st, db_->Prepare("INSERT INTO writer_batches (writer, run_id, last_batch, "
                              "updated_wall_ns) VALUES (?1, ?2, ?3, ?4) ON CONFLICT (writer) DO "
                              "UPDATE SET last_batch = excluded.last_batch, updated_wall_ns = "
                              "excluded.updated_wall_ns"));
    st.Bind(1, writer_).Bind(2, run_id_).Bind(3, static_cast<int64_t>(last)).Bind(4, WallNowNs());
    FL_RETURN_IF_ERROR(st.Run());
  }
  FL_RETURN_IF_ERROR(txn.Commit());
  return true;
}

Status BatchSink::Probe() {
  FL_ASSIGN_OR_RETURN(auto probe, sql::Transaction::Begin(*db_));
  return probe.Commit();
}

Status BatchSink::Forget() {
  FL_ASSIGN_OR_RETURN(auto st, db_->Prepare("DELETE FROM writer_batches WHERE writer = ?1"));
  st.Bind(1, writer_);
  return st.Run();
}

}  // namespace fl::reports
