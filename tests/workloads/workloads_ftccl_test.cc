// The workloads over the real ftccl: ranks as threads, loopback TCP, an in-memory rendezvous.
#include <catch2/catch.hpp>
#include <thread>

#include "ccl_under_test/ftccl/ftccl.h"
#include "workloads/worker.h"

namespace fl::workloads {
namespace {

class CountingSink : public TelemetrySink {
 public:
  void OnSample(const IterationSample& s) override {
    std::lock_guard lock(mu);
    samples++;
    mismatches += s.mismatch;
    verified += s.verified;
  }
  void OnEvent(const ccl::Event&) override {}
  void OnWorkerEvent(const std::string&, const std::string&) override {}
  std::mutex mu;
  int samples = 0, mismatches = 0, verified = 0;
};

void RunJob(const std::string& workload, ccl::DataType dtype, uint64_t bytes, int world, uint64_t iterations) {
  ccl::MemoryStore store;
  CountingSink sink;
  std::vector<Status> results(world);
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      ccl::CommConfig cfg;
      cfg.rank = r;
      cfg.world_size = world;
      cfg.job_id = "wl-" + workload;
      cfg.store = &store;
      cfg.init_timeout = 20 * kNsPerSec;
      auto comm = ccl::ftccl::CreateFtcclCommunicator(cfg);
      if (!comm.ok()) {
        results[r] = comm.status();
        return;
      }
      WorkloadRegistry reg("workload");
      if (Status s = RegisterBuiltinWorkloads(reg); !s.ok()) {
        results[r] = s;
        return;
      }
      auto w = *reg.Create(workload);
      WorkloadConfig c;
      c.size_bytes = bytes;
      c.dtype = dtype;
      c.compute_ns = kNsPerMs;
      if (Status s = w->Init(comm->get(), c); !s.ok()) {
        results[r] = s;
        return;
      }
      std::atomic<bool> stop{false};
      auto res = RunLoop(*w, r, {iterations, 0, 1}, sink, stop);
      results[r] = res.status();
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < world; ++r) {
    INFO("rank " << r);
    CHECK(results[r].ToString() == "OK");
  }
  CHECK(sink.samples == world * static_cast<int>(iterations));
  CHECK(sink.verified == sink.samples);
  CHECK(sink.mismatches == 0);
}

TEST_CASE("workloads over ftccl: every workload verifies exactly on 4 ranks", "[integration]") {
  RunJob("allreduce_loop", ccl::DataType::kFloat32, 1 << 20, 4, 6);
  RunJob("training_step", ccl::DataType::kInt32, 100'003 * 4, 4, 4);
  RunJob("moe_alltoall", ccl::DataType::kInt64, 64 << 10, 4, 5);
}

}  // namespace
}  // namespace fl::workloads
