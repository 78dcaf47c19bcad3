// The writer's spool: the rows BatchWriter could not write while the results store was
// unreachable (a PostgreSQL server restarting, a SQLite file on a full file system), kept in
// the order they were pushed in a local append-only file, so that an outage loses nothing.
// The writer replays it as soon as the store takes writes again; `faultline store replay
// FILE` finishes the job when the run ended first (docs/store.md, "When the store is down").
//
// The file (mode 0600; StateDir()/spool/<run>.spool for a run) is text, one record per line:
//   <crc32 of the JSON, 8 hex digits> <one JSON object>\n
// Its first record is the header ({"t":"spool","version":1,"store":...,"run":...}); then rows
// ("s" sample, "e" event, "n" NIC reading, "f" fault, "end" the run's final status) and marks
// ({"t":"mark","rows":N}: the first N rows are in the store: appended after each replayed
// batch, so a replay that is cut short is not written twice). Every append is one write(2)
// and an fdatasync. A last line cut short by a crash is ignored (torn_tail); damage anywhere
// else is DataLoss naming the line.
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
  int version = 1;
  std::string store;  // the store's file, or its URI without the password
  std::string run_id;
  Nanos created_wall_ns = 0;

  bool operator==(const SpoolHeader&) const = default;
};

struct SpoolContents {
  SpoolHeader header;
  std::vector<SpoolRow> rows;  // every row, in the order appended
  uint64_t replayed = 0;       // the last mark: rows[0, replayed) are in the store already
  bool torn_tail = false;      // the last line was cut short (and ignored)
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
  // Appends rows, durably (fdatasync). Unavailable, with nothing written, when they would
  // take the file past max_bytes or the write fails.
  [[nodiscard]] Status Append(std::span<const SpoolRow> rows);
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

}  // namespace fl::reports
