// The NCCL adapter's Shrink on real GPUs ([.gpu], ctest label gpu; FL_TEST_GPU=1 on a machine
// with at least two CUDA devices and a libnccl with ncclCommShrink, NCCL >= 2.27): ranks as
// threads, one GPU each; the last rank stops taking part, the survivors' AllReduce fails
// (DeadlineExceeded), they agree on the exclude list over the store and shrink the broken
// communicator (NCCL_SHRINK_ABORT), and the smaller group reduces correctly. Skips (with a
// warning) with fewer than two devices or without ncclCommShrink.
#include <catch2/catch.hpp>

#include <atomic>
#include <mutex>

#include "ccl_under_test/api/shrink_agreement.h"
#include "ccl_under_test/ftccl/cuda/cuda_reduce.h"
#include "test_ranks.h"
#ifdef FL_HAVE_NCCL_ADAPTER
#include <cuda_runtime.h>

#include "ccl_under_test/adapters/nccl/nccl_communicator.h"
#endif

namespace fl::ccl {
namespace {

#ifdef FL_HAVE_NCCL_ADAPTER
TEST_CASE("nccl adapter: the survivors of a lost rank shrink and reduce over the smaller group",
          "[.gpu]") {
  const int devices = static_cast<int>(ftccl::CudaDevices().size());
  if (devices < 2) {
    WARN("skipped: " << devices << " CUDA device(s), a shrink needs at least 2");
    return;
  }
  const int n = std::min(devices, 4);
  const int lost = n - 1;
  MemoryStore store;
  std::mutex mu;
  std::vector<std::string> skipped, failures;
  std::vector<int> new_rank(n, -2), new_size(n, 0);
  std::vector<std::vector<int32_t>> results(n);
  std::atomic<int> survivors_done{0};
  auto fail = [&](int r, const std::string& what, const Status& st) {
    std::lock_guard<std::mutex> lock(mu);
    failures.push_back("rank " + std::to_string(r) + " " + what + ": " + st.ToString());
  };
  // No Catch2 assertions off the main thread: each rank records what went wrong.
  testing::RunRanks(n, [&](int r) {
    cudaSetDevice(r);
    auto comm = adapters::CreateNcclCommunicator(testing::RankConfig(r, n, 1, &store, "shrink"));
    if (!comm.ok()) {
      if (comm.status().code() == Code::kFailedPrecondition) {
        std::lock_guard<std::mutex> lock(mu);
        skipped.push_back(comm.status().ToString());
      } else {
        fail(r, "create", comm.status());
      }
      survivors_done += r != lost;
      return;
    }
    if (Status s = (*comm)->ShrinkSupport(); !s.ok()) {
      std::lock_guard<std::mutex> lock(mu);
      skipped.push_back(s.ToString());
      survivors_done += r != lost;
      return;
    }
    if (r == lost) {
      // Gone: takes no part in anything until the survivors are through.
      WaitUntil([&] { return survivors_done.load() == n - 1; }, Deadline::After(120 * kNsPerSec),
                10 * kNsPerMs);
      (*comm)->Abort();
      return;
    }
    const size_t count = 1 << 16;
    void* buf = nullptr;
    if (cudaMalloc(&buf, count * 4) != cudaSuccess) {
      fail(r, "cudaMalloc", InternalError("failed"));
      ++survivors_done;
      return;
    }
    std::vector<int32_t> host(count, r + 1);
    cudaMemcpy(buf, host.data(), count * 4, cudaMemcpyHostToDevice);
    CollectiveOptions o;
    o.memory = MemoryKind::kCuda;
    o.timeout = 3 * kNsPerSec;
    Status st = (*comm)->AllReduce(buf, buf, count, DataType::kInt32, ReduceOp::kSum, o);
    if (st.ok()) fail(r, "allreduce without the lost rank", InternalError("succeeded"));
    ShrinkAgreementOptions ao;
    ao.prefix = "shrink/gpu";
    ao.rank = r;
    ao.world_size = n;
    ao.grace = 2 * kNsPerSec;
    auto d = AgreeOnSurvivors(store, ao);
    if (!d.ok()) {
      fail(r, "agree", d.status());
    } else {
      auto small = (*comm)->Shrink(d->excluded, 60 * kNsPerSec);
      if (!small.ok()) {
        fail(r, "shrink", small.status());
      } else {
        cudaMemcpy(buf, host.data(), count * 4, cudaMemcpyHostToDevice);
        o.timeout = 30 * kNsPerSec;
        Status s2 = (*small)->AllReduce(buf, buf, count, DataType::kInt32, ReduceOp::kSum, o);
        if (!s2.ok()) fail(r, "allreduce after the shrink", s2);
        std::vector<int32_t> got(count);
        cudaMemcpy(got.data(), buf, count * 4, cudaMemcpyDeviceToHost);
        std::lock_guard<std::mutex> lock(mu);
        new_rank[r] = (*small)->rank();
        new_size[r] = (*small)->size();
        results[r] = std::move(got);
      }
    }
    cudaFree(buf);
    ++survivors_done;
  });
  if (!skipped.empty()) {
    WARN("skipped: " << skipped.front());
    return;
  }
  INFO((failures.empty() ? std::string() : failures.front()));
  REQUIRE(failures.empty());
  int32_t want = 0;
  for (int r = 0; r < n - 1; ++r) want += r + 1;
  for (int r = 0; r < n - 1; ++r) {
    INFO("rank " << r);
    CHECK(new_rank[r] == r);
    CHECK(new_size[r] == n - 1);
    REQUIRE(results[r].size() == size_t{1} << 16);
    CHECK(results[r].front() == want);
    CHECK(results[r].back() == want);
  }
}
#endif

}  // namespace
}  // namespace fl::ccl
