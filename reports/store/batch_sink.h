// BatchSink: one connection that writes telemetry transactions (samples, events, NIC
// readings, fault rows, the run's end) for one writer, each transaction numbered, so that
// none is written twice. The writer's last committed number goes into writer_batches (schema
// version 7) in the same transaction as its rows: after a COMMIT whose answer was lost, the
// writer (retrying, or replaying its spool) asks the store which numbers it holds and skips
// them. Used by BatchWriter's thread and by `faultline store replay` (ReplaySpoolFile).
//
// Thread-safety: one thread at a time. Blocking: every call may wait on the store (the busy
// timeout, or a PostgreSQL server's answer).
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "reports/store/spool.h"
#include "reports/store/sql.h"
#include "reports/store/store.h"

namespace fl::reports {

class BatchSink {
 public:
  // Opens (creating or migrating) the store at path for the writer `writer` of run run_id.
  [[nodiscard]] static StatusOr<std::unique_ptr<BatchSink>> Open(const std::string& path,
                                                                 Nanos busy_timeout,
                                                                 std::string writer,
                                                                 std::string run_id);

  // Writes rows in one transaction as the writer's batches first..last (both 0: not
  // numbered). Returns false, writing nothing, when the store holds batch `last` already (a
  // commit whose answer was lost); FailedPrecondition when it holds only part of them.
  [[nodiscard]] StatusOr<bool> Write(std::span<const SpoolRow> rows, uint64_t first, uint64_t last);
  // The last batch of the writer the store holds (0: none).
  [[nodiscard]] StatusOr<uint64_t> LastBatch();
  // Whether the store takes writes (an empty write transaction; resets a PostgreSQL
  // connection that broke).
  [[nodiscard]] Status Probe();
  // Removes the writer's row: nothing of it is left to replay.
  [[nodiscard]] Status Forget();

  const std::string& path() const { return db_->path(); }
  const std::string& writer() const { return writer_; }

 private:
  BatchSink() = default;

  std::unique_ptr<sql::Db> db_;
  std::optional<TelemetryInserter> inserter_;
  std::optional<NicSampleInserter> nic_inserter_;
  std::string writer_;
  std::string run_id_;
};

}  // namespace fl::reports
