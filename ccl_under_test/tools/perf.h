// ftccl-perf's engine, as a library so tests can run it: an nccl-tests-compatible sweep over
// message sizes for one collective on one CCL, out of place and in place, with a correctness
// check (#wrong) per size. The text it prints is nccl-tests' format (PerfHeader,
// FormatPerfRow, PerfSummary; docs/ftccl.md "ftccl-perf"), so that what parses nccl-tests'
// output (workloads/progress: NcclTestsParser) parses ftccl-perf's too.
//
// Two ways to run ranks:
//   - in-process: `ranks` threads, each with its own loopback NICs 127.0.<k+1>.<rank+1>
//     (k < nics), an in-memory rendezvous;
//   - one process per rank under an external launcher: rank/world_size (flags, or the
//     launcher's variables: ccl_under_test/api/launch_env.h), the rendezvous store (a
//     directory, or tcp://HOST:PORT with a token file) and the NICs given per process.
//
// Stopping: the sweep repeats `run_cycles` times (0 = until `stop`); when `stop` becomes true
// on any rank the ranks agree on it at the end of the current size and return normally.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ccl_under_test/api/communicator.h"

namespace fl::ccl {

struct PerfOptions {
  std::string ccl = "ftccl";
  Collective coll = Collective::kAllReduce;
  // The data types and reductions to sweep, in order (nccl-tests' -d all / -o all give
  // several); non-reducing collectives use only the first op.
  std::vector<DataType> types = {DataType::kFloat32};
  std::vector<ReduceOp> ops = {ReduceOp::kSum};
  int root = 0;  // Broadcast's root (-r)
  uint64_t min_bytes = 8;
  uint64_t max_bytes = 64 << 20;
  uint64_t factor = 2;            // -f: multiply the size by this (> 1) ...
  uint64_t step_bytes = 1 << 20;  // -i: ... or add this (factor <= 1), as nccl-tests
  int iters = 20;
  int warmup = 5;
  int run_cycles = 1;  // -N: sweeps of all sizes; 0 = until stop
  bool check = true;
  // Check every timed iteration too (for fault runs: no wrong result at any point).
  bool check_all = false;
  Nanos timeout = 60 * kNsPerSec;
  // CollectiveOptions::algorithm of the measured calls ("" = the library's default).
  std::string algorithm;
  bool failover = true;
  MemoryKind memory = MemoryKind::kHost;
  // In-process mode (ranks > 0) or external mode (ranks == 0).
  int ranks = 0;
  int nics = 1;
  // External mode.
  int rank = 0;
  int world_size = 1;
  std::string rendezvous_dir;  // a FileStore directory, or:
  std::string store_spec;      // OpenStore's spec (tcp://HOST:PORT or DIR)
  std::string store_token_file;
  std::string job_id = "perf";
  std::vector<std::string> nic_addrs;
  // Optional outputs.
  std::string events_path;  // JSON lines of the CCL's events (all ranks of this process)
  // One line per completed iteration: "<wall_ns> <rank> <size> <i>" (i counts the size's
  // out-of-place iterations, then its in-place ones).
  std::string progress_path;
  // Read between sizes; may be set from a signal handler. nullptr: never stop early.
  const std::atomic<bool>* stop = nullptr;
};

// One direction of a row: the out-of-place or the in-place calls of one size.
struct PerfHalf {
  double time_us = 0;  // mean per iteration, slowest rank
  double algbw_gbs = 0;
  double busbw_gbs = 0;
  int64_t wrong = 0;  // over all ranks; -1 when not checked
};

struct PerfRow {
  uint64_t bytes = 0;
  uint64_t count = 0;
  DataType type = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  int cycle = 0;
  PerfHalf out_of_place;
  PerfHalf in_place;
};

struct PerfResult {
  std::vector<PerfRow> rows;  // the first 65536 rows (a -N 0 run may make more)
  uint64_t row_count = 0;     // rows made
  int64_t wrong_results = 0;  // row halves with #wrong > 0
  double busbw_sum = 0;       // over the row halves
  int world_size = 0;
  std::string ccl;
  bool stopped = false;  // ended by PerfOptions::stop before its cycles were done
};

// Runs the sweep. On rank 0 only: `on_header` (may be empty) gets the device lines of every
// rank ("#  Rank ..."), once the group has formed; `on_row` each row as it finishes.
StatusOr<PerfResult> RunPerf(
    const PerfOptions& options, const std::function<void(const PerfRow&)>& on_row = {},
    const std::function<void(const std::vector<std::string>&)>& on_header = {});

// nccl-tests' names: "all_reduce_perf" (or "allreduce", "all_reduce") -> kAllReduce, ...;
// nccl-tests programs ftccl has no collective for (reduce_perf, sendrecv_perf, ...) are
// InvalidArgument naming the ones it has.
StatusOr<Collective> ParsePerfCollective(std::string_view name);
std::string_view PerfProgramName(Collective coll);  // "all_reduce_perf", ...; "barrier"
// nccl-tests' -d / -o names (float, half, bfloat16, int32, int64 / sum, max, min; also
// ftccl's float32, float16, ...); "all" = every one ftccl has. Types and reductions
// nccl-tests has and ftccl does not (double, int8, prod, avg, ...) are InvalidArgument.
StatusOr<std::vector<DataType>> ParsePerfTypes(std::string_view name);
StatusOr<std::vector<ReduceOp>> ParsePerfOps(std::string_view name);
std::string_view NcclTestsTypeName(DataType type);  // "float", "half", ...

// The preamble (the "# nThread ..." line, the device lines, the column header).
std::string PerfHeader(const PerfOptions& options, const std::vector<std::string>& devices);
std::string FormatPerfRow(const PerfOptions& options, const PerfRow& row);
// "# Out of bounds values : N OK|FAILED" (N: row halves with #wrong > 0) and
// "# Avg bus bandwidth    : X" (mean busbw over the row halves); `min_busbw_gbs` > 0 (nccl-tests'
// NCCL_TESTS_MIN_BW) adds OK/FAILED to the latter (FAILED below 90% of it).
std::string PerfSummary(const PerfResult& result, double min_busbw_gbs = 0);
// Row halves with #wrong > 0, and the mean busbw over them (0 without rows).
int64_t PerfWrongResults(const PerfResult& result);
double PerfAvgBusbw(const PerfResult& result);
std::string PerfJson(const PerfOptions& options, const PerfResult& result);

}  // namespace fl::ccl
