// BatchWriter: the single writer of high-rate telemetry (samples, events and NIC counter
// readings) and of the run's fault rows into the results store. Producers (the coordinator's
// per-agent stream handlers) Push rows into a bounded queue; one writer thread drains it and
// inserts up to Options::max_batch rows per transaction on its own SQLite connection (samples as
// sample blocks, store.h). One transaction per batch instead of per row is what makes ingest fast
// (docs/store.md, bench/store_ingest.cc).
//
// Thread-safety: Push, Flush, Stats and Close may be called from any thread concurrently.
// Ownership: the writer owns its connection and thread; rows are copied in.
// Blocking: Push blocks while the queue is full, up to its deadline (then kDeadlineExceeded:
// back-pressure reaches the producer instead of memory growing without bound). Flush waits
// until every row pushed before the call is committed, up to its deadline. Close flushes,
// then stops the thread; the destructor calls Close with Options::close_timeout.
// Errors: a failed transaction is retried once (a busy database); transactions are numbered
// (batch_sink.h), so a retry or a replay skips one whose COMMIT did go through. With a spool
// (Options:: spool_path) rows that still cannot be written go to it (reports/store/spool.h), and so
// does every later batch, in order, while the store is out; the writer tries the store again with
// back-off (retry_min doubling to retry_max), replays the spool in order when it takes writes,
// then removes the file and writes to the store again. Rows waiting in the spool are pending,
// not lost: Flush waits for them to be replayed, and Close, when the store is still out at its
// deadline, keeps the file and says so (Unavailable naming it; `faultline store replay FILE`
// writes the rest). Without a spool, or when the spool cannot take them (its bound, a failing
// disk), rows are dropped, counted in Stats::dropped_rows, and the error is returned by every
// later Flush/Close (sticky), so loss is never silent.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <variant>

#include "common/clock.h"
#include "common/status.h"
#include "reports/store/records.h"
#include "reports/store/spool.h"

namespace fl::reports {

class BatchWriter {
 public:
  struct Options {
    size_t queue_capacity = 1 << 18;  // rows
    size_t max_batch = 8192;          // rows per transaction
    Nanos busy_timeout = 5 * kNsPerSec;
    Nanos close_timeout = 30 * kNsPerSec;
    // Where rows go while the store is unreachable ("": nowhere, they are dropped), for the
    // run run_id (the spool's header), bounded by spool_max_bytes.
    std::string spool_path;
    std::string run_id;
    uint64_t spool_max_bytes = DefaultSpoolMaxBytes();
    Nanos retry_min = 200 * kNsPerMs;
    Nanos retry_max = 5 * kNsPerSec;
  };

  struct Stats {
    uint64_t pushed_rows = 0;
    uint64_t committed_rows = 0;
    uint64_t dropped_rows = 0;
    uint64_t transactions = 0;
    size_t queued_rows = 0;
    uint64_t spooled_rows = 0;   // rows that went to the spool (in all)
    uint64_t replayed_rows = 0;  // of those, written to the store since
    uint64_t spool_pending = 0;  // in the spool, not yet in the store
    std::string spool_path;      // the spool file while it holds rows, else ""
  };

  // Opens its own connection to the store at path (which must exist or be creatable; the
  // schema is created or migrated as by Store::Open) and starts the writer thread.
  [[nodiscard]] static StatusOr<std::unique_ptr<BatchWriter>> Open(const std::string& path,
                                                                   const Options& options);
  [[nodiscard]] static StatusOr<std::unique_ptr<BatchWriter>> Open(const std::string& path) {
    return Open(path, Options{});
  }
  ~BatchWriter();
  BatchWriter(const BatchWriter&) = delete;
  BatchWriter& operator=(const BatchWriter&) = delete;

  // Queue rows. FailedPrecondition after Close; DeadlineExceeded when the queue stayed full
  // until the deadline (rows of a span that did not fit are not queued: none of them).
  [[nodiscard]] Status Push(SampleRecord sample, Deadline deadline);
  [[nodiscard]] Status Push(EventRecord event, Deadline deadline);
  [[nodiscard]] Status PushSamples(std::span<const SampleRecord> samples, Deadline deadline);
  [[nodiscard]] Status PushEvents(std::span<const EventRecord> events, Deadline deadline);
  [[nodiscard]] Status PushNicSamples(std::span<const NicSampleRecord> nics, Deadline deadline);
  // A fault's row (inserted, or updated as it is injected and reverted: fault_rows.h), in
  // order with everything else pushed: the run's fault path does no database write itself.
  [[nodiscard]] Status PushFault(FaultRecord fault, Deadline deadline);
  // The run's final status, in order after everything pushed before it (a spool replay ends
  // the run too).
  [[nodiscard]] Status PushRunEnd(RunEndRecord end, Deadline deadline);

  // Waits until everything pushed before this call is committed. DeadlineExceeded on
  // timeout; the sticky write error if one happened.
  [[nodiscard]] Status Flush(Deadline deadline);
  // Flushes, stops the writer thread and closes the connection. Idempotent. When the
  // deadline passes first, the thread stops after its current transaction and the rows still
  // queued are dropped (DeadlineExceeded, with the count).
  [[nodiscard]] Status Close(Deadline deadline);

  Stats GetStats() const;

 private:
  using Row = SpoolRow;
  struct Impl;
  explicit BatchWriter(std::unique_ptr<Impl> impl);
  Status PushRows(std::deque<Row>&& rows, Deadline deadline);
  Status PushOne(Row row, Deadline deadline);
  void Loop();

  std::unique_ptr<Impl> impl_;
};

// `faultline store replay`: writes the rows of a spool file that are not in the store yet
// (after its last mark, and not in a batch the store holds already) into `store`, a batch at a
// time, marking the file after each, and removes the file once every row is in.
// progress(done, total) after each batch.
struct SpoolReplay {
  SpoolHeader header;
  uint64_t rows = 0;     // rows in the file
  uint64_t skipped = 0;  // already in the store (marked, or their batches committed)
  uint64_t written = 0;
  bool ended_run = false;  // the file held the run's final status
  bool torn_tail = false;
};
[[nodiscard]] StatusOr<SpoolReplay> ReplaySpoolFile(
    const std::string& spool_path, const std::string& store,
    const std::function<void(uint64_t done, uint64_t total)>& progress = {});

}  // namespace fl::reports
