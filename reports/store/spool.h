// The writer's spool: the rows BatchWriter could not write while the results store was
// unreachable (a PostgreSQL server restarting, a SQLite file on a full file system), kept in
// the order they were pushed in a local append-only file, so that an outage loses nothing.
// The writer replays it as soon as the store takes writes again; `faultline store replay
// FILE` finishes the job when the run ended first (docs/store.md, "When the store is down").
//
// The file (mode 0600; StateDir()/spool/<run>.spool for a run) is text, one record per line:
//   <crc32 of the JSON, 8 hex digits> <one JSON object>\n
// Its first record is the header ({"t":"spool","version":2,"store":...,"run":...,"writer":W});
// then batches ({"t":"batch","seq":N}, followed by the rows of the writer's transaction N),
// rows ("s" sample, "e" event, "n" NIC reading, "f" fault, "end" the run's final status) and
// marks ({"t":"mark","rows":N}: the first N rows are in the store: appended after each
// replayed batch, so a replay that is cut short is not written twice). Every append is one
// write(2) and an fdatasync. A last line cut short by a crash is ignored (torn_tail); damage
// anywhere else is DataLoss naming the line. Version 1 (no writer, no batches) is still read.
//
// Why batches: a transaction whose COMMIT was sent as the connection broke may be in the
// store although the writer heard an error; it is spooled all the same. The store records the
// last batch of each writer in the same transaction as its rows (writer_batches, schema
// version 7), so a replay skips the batches the store holds already (PlanReplay) instead of
// writing them twice.
//
// Thread-safety: a SpoolWriter is used by one thread at a time; parsing is a pure function.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "common/unique_fd.h"
#include "reports/store/records.h"

namespace fl::reports {

// A run's final status, as Store::FinishRun writes it: spooled when the store could not take
// it, so that a replay leaves the run ended rather than "running".
struct RunEndRecord {
  std::string run_id;
  RunStatus status = RunStatus::kError;
  Nanos end_wall_ns = 0;
  std::string message;

  bool operator==(const RunEndRecord&) const = default;
};

using SpoolRow =
    std::variant<SampleRecord, EventRecord, NicSampleRecord, FaultRecord, RunEndRecord>;

struct SpoolHeader {
  int version = 2;
  std::string store;  // the store's file, or its URI without the password
  std::string run_id;
  Nanos created_wall_ns = 0;
  std::string writer;  // the BatchWriter whose batches these are (version 2; "" in version 1)

  bool operator==(const SpoolHeader&) const = default;
};

// Rows [first_row, the next batch's first_row or the end) are the writer's transaction seq.
struct SpoolBatch {
  uint64_t first_row = 0;
  uint64_t seq = 0;

  bool operator==(const SpoolBatch&) const = default;
};

struct SpoolContents {
  SpoolHeader header;
  std::vector<SpoolRow> rows;       // every row, in the order appended
  std::vector<SpoolBatch> batches;  // in order, seq increasing (none in version 1)
  uint64_t replayed = 0;            // the last mark: rows[0, replayed) are in the store already
  bool torn_tail = false;           // the last line was cut short (and ignored)
};

// The default bound of one spool file (256 MiB); FAULTLINE_SPOOL_MAX overrides it (bytes, or
// with a K/M/G suffix; at most 1 GiB, what a replay reads).
uint64_t DefaultSpoolMaxBytes();

class SpoolWriter {
 public:
  // Creates (or empties) the file at path, its directory too, and writes the header.
  [[nodiscard]] static StatusOr<std::unique_ptr<SpoolWriter>> Create(const std::string& path,
                                                                     const SpoolHeader& header,
                                                                     uint64_t max_bytes);
  // Appends rows, durably (fdatasync), as the writer's batch `batch` (0: not numbered).
  // Unavailable, with nothing written, when they would take the file past max_bytes or the
  // write fails.
  [[nodiscard]] Status Append(std::span<const SpoolRow> rows, uint64_t batch = 0);
  // Appends a mark: the first `rows` rows of the file are in the store.
  [[nodiscard]] Status Mark(uint64_t rows);

  const std::string& path() const { return path_; }
  uint64_t bytes() const { return bytes_; }
  uint64_t rows() const { return rows_; }

 private:
  SpoolWriter(std::string path, UniqueFd fd, uint64_t max_bytes)
      : path_(std::move(path)), fd_(std::move(fd)), max_bytes_(max_bytes) {}
  Status Write(const std::string& text);

  std::string path_;
  UniqueFd fd_;
  uint64_t max_bytes_;
  uint64_t bytes_ = 0;
  uint64_t rows_ = 0;
};

// Appends a mark to an existing spool file (a replay from outside the writer).
[[nodiscard]] Status AppendSpoolMark(const std::string& path, uint64_t rows);

// One record's line, and the lines of a whole file back (DataLoss "line N: ..." for damage).
std::string SpoolLine(const SpoolRow& row);
std::string SpoolHeaderLine(const SpoolHeader& header);
// The line of any text as a record's body (its checksum in front, a newline after): what the
// fuzz target uses to get past the checksums to the JSON.
std::string SpoolRecordLine(std::string_view body);
[[nodiscard]] StatusOr<SpoolContents> ParseSpool(std::string_view text);
// Reads a spool file from outside (ReadInputFile, kind spool) and parses it.
[[nodiscard]] StatusOr<SpoolContents> ReadSpool(const std::string& path);

// One transaction of a replay: rows [begin, end), the writer's batches first_seq..last_seq
// (both 0 for rows from before batches were numbered), or rows the store holds already
// (in_store: batches up to the store's last one for the writer, only marked).
struct ReplayStep {
  uint64_t begin = 0;
  uint64_t end = 0;
  uint64_t first_seq = 0;
  uint64_t last_seq = 0;
  bool in_store = false;

  bool operator==(const ReplayStep&) const = default;
};
// The steps that replay c's rows from row `from` on (its last mark), given the last batch
// the store holds for c's writer (stored_seq, 0 for none): whole batches, merged while a step
// stays within max_rows (a batch larger than that is one step alone); unnumbered rows in
// steps of max_rows.
std::vector<ReplayStep> PlanReplay(const SpoolContents& c, uint64_t from, uint64_t stored_seq,
                                   size_t max_rows);

}  // namespace fl::reports
