// ftccl-perf's engine, as a library so tests can run it: an nccl-tests-style sweep over
// message sizes for one collective on one CCL, with a correctness check (#wrong) per size.
//
// Two ways to run ranks:
//   - in-process: `ranks` threads, each with its own loopback NICs 127.0.<k+1>.<rank+1>
//     (k < nics), an in-memory rendezvous;
//   - one process per rank under an external launcher: rank/world_size (flags, or the
//     launcher's variables: ccl_under_test/api/launch_env.h), the rendezvous store (a
//     directory, or tcp://HOST:PORT with a token file) and the NICs given per process.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ccl_under_test/api/communicator.h"

namespace fl::ccl {

struct PerfOptions {
  std::string ccl = "ftccl";
  Collective coll = Collective::kAllReduce;
  DataType type = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  uint64_t min_bytes = 8;
  uint64_t max_bytes = 64 << 20;
  uint64_t factor = 2;
  int iters = 20;
  int warmup = 5;
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
  std::string events_path;    // JSON lines of the CCL's events (all ranks of this process)
  std::string progress_path;  // one line per completed iteration: "<wall_ns> <rank> <size>"
};

struct PerfRow {
  uint64_t bytes = 0;
  uint64_t count = 0;
  double time_us = 0;  // mean per iteration, slowest rank
  double algbw_gbs = 0;
  double busbw_gbs = 0;
  int64_t wrong = 0;  // over all ranks; -1 when not checked
};

struct PerfResult {
  std::vector<PerfRow> rows;
  int world_size = 0;
  std::string ccl;
};

// Runs the sweep. `on_row` (may be empty) is called on rank 0 as each size finishes.
StatusOr<PerfResult> RunPerf(const PerfOptions& options,
                             const std::function<void(const PerfRow&)>& on_row = {});

std::string PerfHeader(const PerfOptions& options);
std::string FormatPerfRow(const PerfOptions& options, const PerfRow& row);
std::string PerfJson(const PerfOptions& options, const PerfResult& result);

}  // namespace fl::ccl
