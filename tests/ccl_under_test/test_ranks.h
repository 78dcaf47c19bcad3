// Helpers for multi-rank tests: ranks run as threads of the test process with an in-memory
// rendezvous, each on its own loopback "NICs" (127.0.<nic+1>.<rank+1>), and element-wise
// data helpers for every DataType.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ccl_under_test/api/communicator.h"
#include "ccl_under_test/ftccl/host_reduce.h"

namespace fl::ccl::testing {

inline std::string LoopbackNic(int rank, int nic) {
  return "127.0." + std::to_string(nic + 1) + "." + std::to_string(rank + 1);
}

inline CommConfig RankConfig(int rank, int n, int nics, Store* store, const std::string& job) {
  CommConfig c;
  c.rank = rank;
  c.world_size = n;
  c.job_id = job;
  c.store = store;
  c.nics.clear();
  for (int k = 0; k < nics; ++k) c.nics.push_back(LoopbackNic(rank, k));
  c.init_timeout = 20 * kNsPerSec;
  return c;
}

// Runs fn(rank) on n threads and joins them all.
inline void RunRanks(int n, const std::function<void(int)>& fn) {
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) threads.emplace_back(fn, r);
  for (auto& t : threads) t.join();
}

// Creates n communicators concurrently with make(rank); failures are returned per rank.
inline std::vector<StatusOr<std::unique_ptr<Communicator>>> CreateAll(
    int n, const std::function<StatusOr<std::unique_ptr<Communicator>>(int)>& make) {
  std::vector<StatusOr<std::unique_ptr<Communicator>>> out;
  for (int r = 0; r < n; ++r) out.emplace_back(InternalError("not created"));
  RunRanks(n, [&](int r) { out[r] = make(r); });
  return out;
}

inline void SetElem(void* buf, size_t i, DataType t, double v) { ftccl::SetElement(buf, i, t, v); }

inline double GetElem(const void* buf, size_t i, DataType t) {
  return ftccl::GetElement(buf, i, t);
}

// Small integers, exact in every type (also float16/bfloat16 sums over 8 ranks).
inline double Value(int rank, size_t i) {
  return static_cast<double>(static_cast<int64_t>((rank + 1) * 31 + i * 7) % 17) - 8;
}

inline double Reduce(ReduceOp op, int n, size_t i) {
  double acc = Value(0, i);
  for (int r = 1; r < n; ++r) acc = ftccl::ReduceScalar(acc, Value(r, i), op);
  return acc;
}

}  // namespace fl::ccl::testing
