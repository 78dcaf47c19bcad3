// The workloads over the real ftccl: ranks as threads, loopback TCP, an in-memory rendezvous.
#include <catch2/catch.hpp>
#include <thread>

#include "ccl_under_test/ftccl/ftccl.h"
#include "workloads/gpu_gemm.h"
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

// iterations 0: run for 300 ms, the ranks agreeing on the last iteration over the communicator.
void RunJob(const std::string& workload, ccl::DataType dtype, uint64_t bytes, int world,
            uint64_t iterations, const std::string& compute_device = "auto") {
  ccl::MemoryStore store;
  CountingSink sink;
  std::vector<Status> results(world);
  std::vector<uint64_t> per_rank_iterations;
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
      // training_step's options typed, as faultline-worker parses --workload-option.
      OptionValues options;
      if (workload == "training_step")
        options = reg.Schema(workload)
                      ->Parse({{"compute", "1ms"}, {"compute_device", compute_device}})
                      .value();
      auto w = *reg.Create(workload, options);
      WorkloadConfig c;
      c.size_bytes = bytes;
      c.dtype = dtype;
      if (Status s = w->Init(comm->get(), c); !s.ok()) {
        results[r] = s;
        return;
      }
      std::atomic<bool> stop{false};
      LoopOptions lo{iterations, iterations ? 0 : 300 * kNsPerMs, 1};
      lo.comm = comm->get();
      lo.agree_every = 3;
      auto res = RunLoop(*w, r, lo, sink, stop);
      results[r] = res.status();
      if (res.ok()) {
        std::lock_guard lock(sink.mu);
        per_rank_iterations.push_back(res->iterations);
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < world; ++r) {
    INFO("rank " << r);
    CHECK(results[r].ToString() == "OK");
  }
  REQUIRE(per_rank_iterations.size() == static_cast<size_t>(world));
  for (uint64_t n : per_rank_iterations) CHECK(n == per_rank_iterations[0]);  // same last iteration
  if (iterations) CHECK(per_rank_iterations[0] == iterations);
  CHECK(sink.samples == world * static_cast<int>(per_rank_iterations[0]));
  CHECK(sink.verified == sink.samples);
  CHECK(sink.mismatches == 0);
}

TEST_CASE("workloads over ftccl: every workload verifies exactly on 4 ranks", "[integration]") {
  RunJob("allreduce_loop", ccl::DataType::kFloat32, 1 << 20, 4, 6);
  RunJob("training_step", ccl::DataType::kInt32, 100'003 * 4, 4, 4);
  RunJob("moe_alltoall", ccl::DataType::kInt64, 64 << 10, 4, 5);
}

TEST_CASE("workloads over ftccl: a timed job ends on the same iteration on every rank",
          "[integration]") {
  RunJob("allreduce_loop", ccl::DataType::kFloat32, 64 << 10, 4, 0);
}

TEST_CASE("training_step: compute_device gpu needs a GPU, cpu never touches one", "[integration]") {
  // Without a GPU (or without CUDA in the build) "gpu" is refused at Init, before any
  // collective; with one, the job runs its GEMMs there and still verifies exactly.
  ccl::MemoryStore store;
  ccl::CommConfig cfg;
  cfg.job_id = "wl-gpu-check";
  cfg.store = &store;
  auto comm = ccl::ftccl::CreateFtcclCommunicator(cfg);
  REQUIRE(comm.ok());
  WorkloadRegistry reg("workload");
  REQUIRE(RegisterBuiltinWorkloads(reg).ok());
  const OptionSchema& schema = *reg.Schema("training_step");
  auto w = *reg.Create("training_step", schema.Parse({{"compute_device", "gpu"}}).value());
  WorkloadConfig c;
  c.size_bytes = 4096;
  Status st = w->Init(comm->get(), c);
  if (CudaDeviceCount() == 0) {
    CHECK(st.code() == Code::kUnavailable);
  } else {
    CHECK(st.ok());
    RunJob("training_step", ccl::DataType::kFloat32, 64 * 1024, 2, 20, "gpu");
  }
  // A value the schema refuses never reaches the workload: its factory says so.
  CHECK(schema.Check("compute_device", "tpu") ==
        "training_step option compute_device wants cpu, gpu, auto, got 'tpu'");
  OptionValues tpu =
      OptionSchema("other", {{"compute_device", OptionType::kString, 0, 0, {}, "", "any"}})
          .Parse({{"compute_device", "tpu"}})
          .value();
  auto refused = reg.Create("training_step", tpu);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == Code::kInvalidArgument);
  RunJob("training_step", ccl::DataType::kFloat32, 64 * 1024, 2, 10, "cpu");
}

TEST_CASE("gpu gemm: cuBLAS GEMMs run on the device and change C", "[.gpu]") {
  REQUIRE(CudaDeviceCount() > 0);
  auto g = CreateGpuGemm(0, 512);
  REQUIRE(g.ok());
  auto n = (*g)->RunFor(5 * kNsPerMs);
  REQUIRE(n.ok());
  CHECK(*n >= 1);
  auto probe = (*g)->Probe();
  REQUIRE(probe.ok());
  CHECK(*probe > 0.0f);
}

}  // namespace
}  // namespace fl::workloads
