// GPU paths ([.gpu]: run with FL_TEST_GPU=1 on a machine with a CUDA device): the reduce
// kernels against the host reductions, ftccl with device buffers (staged through host
// memory), and the NCCL adapter (libnccl loaded at run time).
#include <catch2/catch.hpp>

#include <cstring>

#include "ccl_under_test/ftccl/cuda/cuda_reduce.h"
#include "ccl_under_test/ftccl/ftccl.h"
#include "ccl_under_test/ftccl/host_reduce.h"
#include "test_ranks.h"
#ifdef FL_HAVE_NCCL_ADAPTER
#include "ccl_under_test/adapters/nccl/nccl_communicator.h"
#endif

namespace fl::ccl {
namespace {

using ftccl::CudaAlloc;
using ftccl::CudaCopyToDevice;
using ftccl::CudaCopyToHost;
using ftccl::CudaFree;

struct DeviceBuffer {
  void* p = nullptr;
  explicit DeviceBuffer(size_t bytes) {
    auto r = CudaAlloc(bytes);
    if (r.ok()) p = *r;
  }
  ~DeviceBuffer() { CudaFree(p); }
};

TEST_CASE("cuda: reduce kernels agree with the host reductions", "[.gpu]") {
  if (ftccl::CudaDevices().empty()) {
    WARN("skipped: no CUDA device");
    return;
  }
  const size_t n = 100003;
  for (DataType t : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kInt32,
                     DataType::kInt64}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin}) {
      const size_t bytes = n * SizeOf(t);
      std::vector<char> a(bytes), b(bytes), want(bytes), got(bytes);
      for (size_t i = 0; i < n; ++i) {
        testing::SetElem(a.data(), i, t, testing::Value(1, i));
        testing::SetElem(b.data(), i, t, testing::Value(2, i));
      }
      want = a;
      ftccl::HostReduce(want.data(), b.data(), n, t, op);
      DeviceBuffer da(bytes), db(bytes);
      REQUIRE(da.p);
      REQUIRE(CudaCopyToDevice(da.p, a.data(), bytes).ok());
      REQUIRE(CudaCopyToDevice(db.p, b.data(), bytes).ok());
      REQUIRE(ftccl::CudaReduceInPlace(da.p, db.p, n, t, op, nullptr).ok());
      REQUIRE(ftccl::CudaStreamSync(nullptr).ok());
      REQUIRE(CudaCopyToHost(got.data(), da.p, bytes).ok());
      INFO(Name(t) << " " << Name(op));
      CHECK(std::memcmp(got.data(), want.data(), bytes) == 0);
    }
  }
}

TEST_CASE("ftccl: AllReduce on CUDA device buffers - 2 ranks", "[.gpu]") {
  if (ftccl::CudaDevices().empty()) {
    WARN("skipped: no CUDA device");
    return;
  }
  const int n = 2;
  MemoryStore store;
  auto comms = testing::CreateAll(n, [&](int r) {
    return ftccl::CreateFtcclCommunicator(testing::RankConfig(r, n, 2, &store, "gpu"));
  });
  for (auto& c : comms) REQUIRE(c.ok());
  const size_t count = (1 << 20) + 7;
  std::vector<size_t> wrong(n, 0);
  std::vector<Status> st(n);
  testing::RunRanks(n, [&](int r) {
    std::vector<float> host(count);
    for (size_t i = 0; i < count; ++i) host[i] = static_cast<float>(testing::Value(r, i));
    DeviceBuffer d(count * 4);
    if (!d.p || !CudaCopyToDevice(d.p, host.data(), count * 4).ok()) {
      st[r] = InternalError("device buffer");
      return;
    }
    CollectiveOptions o;
    o.memory = MemoryKind::kCuda;
    st[r] = (*comms[r])->AllReduce(d.p, d.p, count, DataType::kFloat32, ReduceOp::kSum, o);
    if (!st[r].ok()) return;
    st[r] = CudaCopyToHost(host.data(), d.p, count * 4);
    for (size_t i = 0; i < count; ++i) wrong[r] += host[i] != testing::Reduce(ReduceOp::kSum, n, i);
  });
  for (int r = 0; r < n; ++r) {
    INFO(st[r].ToString());
    CHECK(st[r].ok());
    CHECK(wrong[r] == 0);
  }
}

#ifdef FL_HAVE_NCCL_ADAPTER
TEST_CASE("nccl adapter: collectives on device buffers", "[.gpu]") {
  if (ftccl::CudaDevices().empty()) {
    WARN("skipped: no CUDA device");
    return;
  }
  MemoryStore store;
  CommConfig cfg = testing::RankConfig(0, 1, 1, &store, "nccl1");
  auto comm = adapters::CreateNcclCommunicator(cfg);
  if (!comm.ok() && comm.status().code() == Code::kFailedPrecondition) {
    WARN("skipped: " << comm.status().ToString());
    return;
  }
  REQUIRE(comm.ok());
  const size_t count = 4097;
  std::vector<int32_t> host(count);
  for (size_t i = 0; i < count; ++i) host[i] = static_cast<int32_t>(i);
  DeviceBuffer a(count * 4), b(count * 4);
  REQUIRE(CudaCopyToDevice(a.p, host.data(), count * 4).ok());
  CollectiveOptions o;
  o.memory = MemoryKind::kCuda;
  o.timeout = 30 * kNsPerSec;
  REQUIRE((*comm)->AllReduce(a.p, b.p, count, DataType::kInt32, ReduceOp::kSum, o).ok());
  REQUIRE((*comm)->Broadcast(b.p, count, DataType::kInt32, 0, o).ok());
  REQUIRE((*comm)->Barrier(o).ok());
  std::vector<int32_t> got(count);
  REQUIRE(CudaCopyToHost(got.data(), b.p, count * 4).ok());
  CHECK(got == host);
  // Host buffers are refused, not crashed on.
  CollectiveOptions h;
  CHECK((*comm)
            ->AllReduce(host.data(), got.data(), count, DataType::kInt32, ReduceOp::kSum, h)
            .code() == Code::kFailedPrecondition);
}
#endif

}  // namespace
}  // namespace fl::ccl
