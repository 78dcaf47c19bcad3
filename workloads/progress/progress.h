// What a black-box job tells about its progress, read from outside: nccl-tests output
// (ftccl-perf speaks the same format), faultline's progress line protocol, and the error
// lines collective libraries log (NCCL_DEBUG=WARN, ftccl's warnings). Used by the command
// job runner (a command as the job under test, docs/scenarios.md) to turn a job's output
// into the same samples and events faultline-worker reports.
//
// Pure functions and small state machines: no I/O, no clocks (times come from the caller),
// never throw; libFuzzer targets call them directly.
// Thread-safety: a parser object is used by one thread; free functions are pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace fl::workloads::progress {

// One unit of finished work: an nccl-tests result row (one size, one direction), or one line
// of the progress protocol (one training iteration).
struct Progress {
  uint64_t iteration = 0;  // nccl-tests: units (row halves) before this one (0, 1, ...);
                           // protocol: as written
  uint64_t bytes = 0;      // bytes per rank of this unit (nccl-tests: the size column)
  Nanos duration_ns = 0;   // how long it took, when the source says (nccl-tests: the time
                           // column, µs; protocol: dur=); 0: unknown
  Nanos wall_ns = 0;       // when it ended, when the source says (protocol: t=); 0: unknown
  std::optional<bool> verified_ok;  // checked and right / checked and wrong / not checked
  double algbw_gbs = 0;             // nccl-tests only (GB/s); 0: unknown
  double busbw_gbs = 0;
};

// nccl-tests output (all_reduce_perf and friends, and ftccl-perf): the `#` preamble (the
// command line, the device lines "#  Rank  0 Group  0 Pid ... on HOST device 0 [...] NAME"),
// the column header, result rows "size count type redop root time algbw busbw #wrong time
// algbw busbw #wrong" (out-of-place then in-place; each half becomes one Progress, #wrong
// "N/A" = not checked), "# Out of bounds values : N OK|FAILED", "# Avg bus bandwidth : X".
// Rows repeat with -N (run cycles; 0 = forever). Malformed lines are counted, not fatal.
// Also read: rows without the root column (old nccl-tests), a row with only its out-of-place
// half, mpirun's "[1,0]<stdout>:" tags; nccl-tests' "Test ... failure" / "Test timeout" lines
// and ftccl-perf's "ftccl-perf: ..." go to Summary::errors. Other lines (NCCL INFO/WARN) are
// ignored here (ParseCclLogLine reads the WARN lines). Kept lines are bounded (256 each).
class NcclTestsParser {
 public:
  struct Summary {
    std::string command;                    // the "# nThread ..." / first preamble line, if seen
    std::vector<std::string> devices;       // the "#  Rank ..." lines, trimmed
    uint64_t rows = 0;                      // result rows parsed
    uint64_t malformed = 0;                 // lines that looked like rows but did not parse
    std::optional<uint64_t> out_of_bounds;  // "# Out of bounds values : N"
    std::optional<double> avg_busbw_gbs;    // "# Avg bus bandwidth : X"
    std::vector<std::string> errors;        // lines that name a failure (e.g. "NCCL failure")
  };
  // One line of the job's stdout, without its newline. Returns the Progress units the line
  // completes (none, or two for a row with out-of-place and in-place halves).
  std::vector<Progress> Feed(std::string_view line);
  const Summary& summary() const { return summary_; }

 private:
  Summary summary_;
  uint64_t next_iteration_ = 0;
  bool saw_nthread_ = false;
};

// The progress line protocol: a job appends one line per iteration to the file named by
// FAULTLINE_PROGRESS, fields separated by spaces:
//   it=ITERATION bytes=BYTES [ok=0|1] [t=WALL_NS] [dur=NS]
// ok present = the iteration's result was checked (1 right, 0 wrong); t = the wall clock
// (CLOCK_REALTIME, ns) when the iteration ended (absent: the time the line was read); dur =
// how long the iteration took. Unknown keys are ignored (later versions may add some); a
// missing it= or bytes=, a repeated key or a bad number is InvalidArgument naming the field.
StatusOr<Progress> ParseProgressLine(std::string_view line);

// An error line a collective library logged that names a network fault, e.g. NCCL's
// "host:pid:tid [0] NCCL WARN NET/IB : Got completion from peer ... with status=12 ..." or
// "NET/Socket : ... Connection reset by peer", or ftccl's own path-fault warnings. Lines that
// name no network fault give nullopt.
struct CclLogEvent {
  std::string library;  // "nccl" | "ftccl"
  std::string kind;     // "fault_detected" (a path or peer failed), "ccl_error" (other fatal)
  std::string detail;   // the message part of the line, trimmed, at most 512 bytes
};
std::optional<CclLogEvent> ParseCclLogLine(std::string_view line);

}  // namespace fl::workloads::progress
