#include "reports/store/batch_writer.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <type_traits>
#include <vector>

#include "common/ids.h"
#include "common/log.h"
#include "reports/store/batch_sink.h"

namespace fl::reports {

namespace {

// Condition waits are sliced so that a Deadline on any Clock is honoured.
constexpr Nanos kWaitSlice = 50 * kNsPerMs;

template <typename Pred>
bool WaitWithDeadline(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                      Deadline deadline, Pred pred) {
  while (!pred()) {
    if (deadline.Expired()) return false;
    Nanos wait = std::min(deadline.Remaining(), kWaitSlice);
    cv.wait_for(lock, std::chrono::nanoseconds(wait));
  }
  return true;
}

}  // namespace

struct BatchWriter::Impl {
  Options options;
  std::unique_ptr<BatchSink> sink;

  std::mutex close_mu;  // serialises Close (only one caller joins the thread)
  mutable std::mutex mu;
  std::condition_variable work_cv;   // writer: rows queued or closing
  std::condition_variable space_cv;  // producers: room in the queue
  std::condition_variable done_cv;   // flushers: rows finished
  std::deque<Row> queue;
  uint64_t pushed = 0;    // rows accepted by Push
  uint64_t finished = 0;  // rows committed or dropped
  uint64_t committed = 0;
  uint64_t dropped = 0;
  uint64_t transactions = 0;
  bool closing = false;  // no more pushes; writer exits when the queue is empty
  bool abandon = false;  // writer exits after its current transaction
  bool closed = false;
  Status error;  // first write error (sticky)
  Status close_status;
  std::thread thread;
  uint64_t next_batch = 1;  // the number of the writer's next transaction (writer thread)

  // The outage: set while rows wait in the spool. Only the writer thread touches spool and
  // replayed; the counters below are under mu.
  bool outage = false;
  Nanos retry_delay = 0;
  Nanos next_retry = 0;  // monotonic
  std::unique_ptr<SpoolWriter> spool;
  uint64_t replayed = 0;  // rows of the current spool file already in the store
  uint64_t spooled = 0;
  uint64_t replayed_total = 0;
  uint64_t pending = 0;     // in the spool, not in the store
  std::string spool_shown;  // the spool's path while it holds rows

  // Appends rows, the writer's batch `seq`, to the spool, creating it at the first outage.
  // Writer thread only.
  Status ToSpool(const std::vector<Row>& rows, uint64_t seq) {
    if (!spool) {
      if (options.spool_path.empty()) return UnavailableError("no spool");
      SpoolHeader h;
      h.store = sink->path();
      h.run_id = options.run_id;
      h.created_wall_ns = WallNowNs();
      h.writer = sink->writer();
      FL_ASSIGN_OR_RETURN(spool,
                          SpoolWriter::Create(options.spool_path, h, options.spool_max_bytes));
      replayed = 0;
    }
    return spool->Append(rows, seq);
  }

  // Writes the spool's rows not yet in the store, a batch at a time, marking each; removes the
  // file once all are in. Batches the store holds already (a commit whose answer was lost) are
  // only marked. Writer thread only, without mu.
  Status Replay() {
    // First ask the store, so that a store still out costs no read of a spool that may be
    // large.
    FL_RETURN_IF_ERROR(sink->Probe());
    FL_ASSIGN_OR_RETURN(SpoolContents c, ReadSpool(spool->path()));
    if (c.rows.size() < spool->rows()) {
      return DataLossError("the spool " + spool->path() + " holds " +
                           std::to_string(c.rows.size()) + " rows, not the " +
                           std::to_string(spool->rows()) + " written to it");
    }
    FL_ASSIGN_OR_RETURN(uint64_t stored, sink->LastBatch());
    for (const ReplayStep& step : PlanReplay(c, replayed, stored, options.max_batch)) {
      const size_t n = step.end - step.begin;
      if (!step.in_store) {
        std::span<const Row> rows(c.rows.data() + step.begin, n);
        FL_RETURN_IF_ERROR(sink->Write(rows, step.first_seq, step.last_seq).status());
      }
      replayed = step.end;
      const bool last = replayed == c.rows.size();
      if (last) {
        // All in: the file goes before anyone waiting hears of the last rows.
        const std::string path = spool->path();
        spool.reset();
        if (unlink(path.c_str()) != 0)
          FL_LOG(kWarn, "store") << "cannot remove the replayed spool " << path;
      } else if (Status m = spool->Mark(replayed); !m.ok()) {
        FL_LOG(kWarn, "store") << m.message() << " (a later replay of it skips those rows "
                               << "by their batch numbers)";
      }
      std::lock_guard lock(mu);
      committed += n;
      finished += n;
      pending -= n;
      replayed_total += n;
      if (last) {
        outage = false;
        spool_shown.clear();
      }
      done_cv.notify_all();
    }
    return OkStatus();
  }
};

BatchWriter::BatchWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {
  impl_->thread = std::thread([this] { Loop(); });
}

StatusOr<std::unique_ptr<BatchWriter>> BatchWriter::Open(const std::string& path,
                                                         const Options& options) {
  if (options.queue_capacity == 0 || options.max_batch == 0) {
    return InvalidArgumentError("BatchWriter: queue_capacity and max_batch must be positive");
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  FL_ASSIGN_OR_RETURN(impl->sink,
                      BatchSink::Open(path, options.busy_timeout, RandomHex(8), options.run_id));
  return std::unique_ptr<BatchWriter>(new BatchWriter(std::move(impl)));
}

BatchWriter::~BatchWriter() {
  {
    std::lock_guard lock(impl_->mu);
    if (impl_->closed) return;  // Close already reported its outcome
  }
  Status s = Close(Deadline::After(impl_->options.close_timeout));
  if (!s.ok()) {
    FL_LOG(kError, "store") << "closing the telemetry writer: " << s.ToString();
  }
}

void BatchWriter::Loop() {
  Impl& m = *impl_;
  std::vector<Row> batch;
  batch.reserve(std::min(m.options.max_batch, m.options.queue_capacity));
  std::unique_lock lock(m.mu);
  auto retry_due = [&] { return m.outage && MonoNowNs() >= m.next_retry; };
  // Rows the store did not take: to the spool (pending) or dropped (the sticky error).
  auto spool_or_drop = [&](const Status& why, uint64_t seq) {
    const size_t n = batch.size();
    Status sp = m.spool || !m.options.spool_path.empty() ? m.ToSpool(batch, seq)
                                                         : UnavailableError("no spool");
    lock.lock();
    if (sp.ok()) {
      if (!m.outage) {
        FL_LOG(kWarn, "store") << "the store does not take writes (" << why.message()
                               << "): rows go to the spool " << m.spool->path() << " until it does";
        m.outage = true;
        m.retry_delay = m.options.retry_min;
        m.next_retry = MonoNowNs() + m.retry_delay;
      }
      m.spooled += n;
      m.pending += n;
      m.spool_shown = m.spool->path();
    } else {
      m.finished += n;
      m.dropped += n;
      FL_LOG(kError, "store") << "dropped " << n << " telemetry rows: " << why.ToString()
                              << (m.options.spool_path.empty() ? "" : "; spool: " + sp.message());
      if (m.error.ok()) m.error = Status(why).Prepend("writing telemetry");
    }
    m.done_cv.notify_all();
  };
  for (;;) {
    while (m.queue.empty() && !m.abandon && !retry_due() && !(m.closing && !m.outage)) {
      m.work_cv.wait_for(lock, std::chrono::nanoseconds(kWaitSlice));
    }
    if (m.abandon) {
      // The deadline passed: what is queued goes to the spool (a local file, quick) when the
      // store is out; otherwise it is dropped.
      if (m.outage && !m.queue.empty()) {
        batch.assign(std::make_move_iterator(m.queue.begin()),
                     std::make_move_iterator(m.queue.end()));
        m.queue.clear();
        lock.unlock();
        spool_or_drop(UnavailableError("closing while the store is out"), m.next_batch++);
        batch.clear();
      }
      m.dropped += m.queue.size();
      m.finished += m.queue.size();
      m.queue.clear();
      m.space_cv.notify_all();
      m.done_cv.notify_all();
      return;
    }
    if (retry_due()) {
      lock.unlock();
      Status r = m.Replay();
      lock.lock();
      if (r.ok()) {
        FL_LOG(kInfo, "store") << "the store takes writes again: " << m.replayed_total
                               << " spooled rows replayed in order";
      } else {
        m.retry_delay = std::min(m.retry_delay * 2, m.options.retry_max);
        m.next_retry = MonoNowNs() + m.retry_delay;
        FL_LOG(kDebug, "store") << "store still out (" << r.message() << "); next try in "
                                << m.retry_delay / kNsPerMs << " ms";
      }
      continue;
    }
    if (m.queue.empty()) {
      if (m.closing && !m.outage) return;  // closing and drained
      continue;
    }
    size_t n = std::min(m.queue.size(), m.options.max_batch);
    for (size_t i = 0; i < n; ++i) {
      batch.push_back(std::move(m.queue.front()));
      m.queue.pop_front();
    }
    m.space_cv.notify_all();
    const bool out = m.outage;
    const uint64_t seq = m.next_batch++;
    lock.unlock();

    // While the store is out, rows follow the spooled ones (order is kept). The retry skips
    // the batch when the failed try did commit after all (its number is in the store).
    Status s = out ? UnavailableError("the store is out") : m.sink->Write(batch, seq, seq).status();
    if (!out && !s.ok()) {
      FL_LOG(kWarn, "store") << "telemetry batch of " << n
                             << " rows failed, retrying once: " << s.ToString();
      s = m.sink->Write(batch, seq, seq).status();
    }
    if (s.ok()) {
      lock.lock();
      m.finished += n;
      m.committed += n;
      m.done_cv.notify_all();
    } else {
      spool_or_drop(s, seq);
    }
    ++m.transactions;
    batch.clear();
  }
}

Status BatchWriter::PushRows(std::deque<Row>&& rows, Deadline deadline) {
  Impl& m = *impl_;
  if (rows.size() > m.options.queue_capacity) {
    return InvalidArgumentError("BatchWriter: " + std::to_string(rows.size()) +
                                " rows exceed the queue capacity of " +
                                std::to_string(m.options.queue_capacity));
  }
  std::unique_lock lock(m.mu);
  bool room = WaitWithDeadline(m.space_cv, lock, deadline, [&] {
    return m.closing || m.queue.size() + rows.size() <= m.options.queue_capacity;
  });
  if (m.closing) return FailedPreconditionError("BatchWriter: push after Close");
  if (!room) {
    return DeadlineExceededError("BatchWriter: telemetry queue full (" +
                                 std::to_string(m.queue.size()) + " rows) until the deadline");
  }
  m.pushed += rows.size();
  for (auto& r : rows) m.queue.push_back(std::move(r));
  m.work_cv.notify_one();
  return OkStatus();
}

Status BatchWriter::PushOne(Row row, Deadline deadline) {
  std::deque<Row> rows;
  rows.emplace_back(std::move(row));
  return PushRows(std::move(rows), deadline);
}

Status BatchWriter::Push(SampleRecord sample, Deadline deadline) {
  return PushOne(std::move(sample), deadline);
}

Status BatchWriter::Push(EventRecord event, Deadline deadline) {
  return PushOne(std::move(event), deadline);
}

Status BatchWriter::PushSamples(std::span<const SampleRecord> samples, Deadline deadline) {
  return PushRows(std::deque<Row>(samples.begin(), samples.end()), deadline);
}

Status BatchWriter::PushEvents(std::span<const EventRecord> events, Deadline deadline) {
  return PushRows(std::deque<Row>(events.begin(), events.end()), deadline);
}

Status BatchWriter::PushNicSamples(std::span<const NicSampleRecord> nics, Deadline deadline) {
  return PushRows(std::deque<Row>(nics.begin(), nics.end()), deadline);
}

Status BatchWriter::PushFault(FaultRecord fault, Deadline deadline) {
  return PushOne(std::move(fault), deadline);
}

StatusOr<SpoolReplay> ReplaySpoolFile(const std::string& spool_path, const std::string& store,
                                      const std::function<void(uint64_t, uint64_t)>& progress) {
  FL_ASSIGN_OR_RETURN(SpoolContents c, ReadSpool(spool_path));
  SpoolReplay out;
  out.header = c.header;
  out.rows = c.rows.size();
  out.skipped = c.replayed;
  out.torn_tail = c.torn_tail;
  for (const auto& r : c.rows) out.ended_run |= std::holds_alternative<RunEndRecord>(r);
  // Under the writer's own name: the batches it committed (their answers lost) are skipped.
  BatchWriter::Options o;
  FL_ASSIGN_OR_RETURN(auto sink,
                      BatchSink::Open(store, o.busy_timeout, c.header.writer, c.header.run_id));
  uint64_t stored = 0;
  if (!c.header.writer.empty()) {
    FL_ASSIGN_OR_RETURN(stored, sink->LastBatch());
  }
  for (const ReplayStep& step : PlanReplay(c, c.replayed, stored, o.max_batch)) {
    const size_t n = step.end - step.begin;
    if (step.in_store) {
      out.skipped += n;
    } else {
      std::span<const SpoolRow> rows(c.rows.data() + step.begin, n);
      FL_ASSIGN_OR_RETURN(bool wrote, sink->Write(rows, step.first_seq, step.last_seq));
      (wrote ? out.written : out.skipped) += n;
    }
    FL_RETURN_IF_ERROR(AppendSpoolMark(spool_path, step.end));
    if (progress) progress(step.end, c.rows.size());
  }
  if (!c.header.writer.empty()) {
    if (Status f = sink->Forget(); !f.ok())
      FL_LOG(kWarn, "store") << "every row is in; forgetting the writer's batches: " << f.message();
  }
  if (unlink(spool_path.c_str()) != 0)
    return UnavailableError("every row is in " + store + ", but the spool " + spool_path +
                            " cannot be removed: " + std::strerror(errno));
  return out;
}

Status BatchWriter::PushRunEnd(RunEndRecord end, Deadline deadline) {
  return PushOne(std::move(end), deadline);
}

Status BatchWriter::Flush(Deadline deadline) {
  Impl& m = *impl_;
  std::unique_lock lock(m.mu);
  uint64_t target = m.pushed;
  m.work_cv.notify_one();
  if (!WaitWithDeadline(m.done_cv, lock, deadline, [&] { return m.finished >= target; })) {
    if (m.pending > 0)
      return UnavailableError("the store is out: " + std::to_string(m.pending) +
                              " rows wait in the spool " + m.spool_shown);
    return DeadlineExceededError("BatchWriter: flush timed out with " +
                                 std::to_string(target - m.finished) + " rows not yet written");
  }
  return m.error;
}

Status BatchWriter::Close(Deadline deadline) {
  Impl& m = *impl_;
  std::lock_guard close_lock(m.close_mu);
  std::unique_lock lock(m.mu);
  if (m.closed) return m.close_status;
  m.closing = true;
  m.work_cv.notify_all();
  m.space_cv.notify_all();
  bool drained =
      WaitWithDeadline(m.done_cv, lock, deadline, [&] { return m.finished >= m.pushed; });
  uint64_t dropped_before = m.dropped;
  if (!drained) {
    m.abandon = true;
    m.work_cv.notify_all();
  }
  lock.unlock();
  // Bounded: the thread exits after at most one transaction (itself bounded by the busy
  // timeout and the batch size).
  if (m.thread.joinable()) m.thread.join();
  lock.lock();
  m.closed = true;
  if (m.pending > 0) {
    // The file stays: nothing in it is lost.
    m.close_status =
        UnavailableError(std::to_string(m.pending) + " rows are kept in the spool " +
                         m.spool_shown + ": `faultline store replay " + m.spool_shown +
                         "` writes them once the store (" + m.sink->path() + ") is back" +
                         (m.dropped > dropped_before
                              ? "; " + std::to_string(m.dropped - dropped_before) + " rows dropped"
                              : std::string()));
  } else if (!drained) {
    m.close_status = DeadlineExceededError("BatchWriter: close timed out; " +
                                           std::to_string(m.dropped - dropped_before) +
                                           " queued telemetry rows dropped");
  } else {
    m.close_status = m.error;
    // Nothing of this writer is left to replay: its batch numbers are of no more use.
    if (Status f = m.sink->Forget(); !f.ok())
      FL_LOG(kDebug, "store") << "forgetting the writer's batches: " << f.message();
  }
  m.spool.reset();
  m.sink.reset();
  return m.close_status;
}

BatchWriter::Stats BatchWriter::GetStats() const {
  std::lock_guard lock(impl_->mu);
  const Impl& m = *impl_;
  return Stats{m.pushed,  m.committed,      m.dropped, m.transactions, m.queue.size(),
               m.spooled, m.replayed_total, m.pending, m.spool_shown};
}

}  // namespace fl::reports
