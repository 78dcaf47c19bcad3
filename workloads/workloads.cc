// The built-in workloads: allreduce_loop, training_step, moe_alltoall.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "workloads/data.h"
#include "workloads/gpu_gemm.h"
#include "workloads/workload.h"
#include "workloads/workload_plugins.h"

namespace fl::workloads {
namespace {

using ccl::DataType;

Status Mismatch(const std::string& what, size_t index, double got, double want,
                uint64_t iteration) {
  return DataLossError(what + ": iteration " + std::to_string(iteration) + ", element " +
                       std::to_string(index) + " is " + std::to_string(got) + ", expected " +
                       std::to_string(want));
}

// What the built-in collective workloads share: the communicator and the run's config, kept by
// Init, the value modulus of their data (data.h), and the options every collective call takes.
class CollectiveWorkload : public Workload {
 protected:
  // Keeps comm and config for Step and Verify; returns the size of one element of the data.
  size_t Keep(ccl::Communicator* comm, const WorkloadConfig& config) {
    comm_ = comm;
    config_ = config;
    return ccl::SizeOf(config.dtype);
  }
  ccl::CollectiveOptions CallOptions() const {
    ccl::CollectiveOptions o;
    o.timeout = config_.collective_timeout;
    return o;
  }

  ccl::Communicator* comm_ = nullptr;
  WorkloadConfig config_;
  uint32_t m_ = 2;  // set by Init (ValueModulus)
};

// AllReduce(sum) of a buffer of size_bytes per rank, every iteration with fresh data.
class AllReduceLoop : public CollectiveWorkload {
 public:
  explicit AllReduceLoop(const OptionValues& /*options: none*/) {}
  std::string name() const override { return "allreduce_loop"; }
  ccl::Collective collective() const override { return ccl::Collective::kAllReduce; }

  Status Init(ccl::Communicator* comm, const WorkloadConfig& config) override {
    size_t elem = Keep(comm, config);
    count_ = std::max<size_t>(1, config.size_bytes / elem);
    buf_.assign(count_ * elem, 0);
    m_ = ValueModulus(comm->size());
    return OkStatus();
  }

  Status Step(uint64_t iteration) override {
    Fill(buf_.data(), count_, config_.dtype, comm_->rank(), 0, iteration, m_);
    return comm_->AllReduce(buf_.data(), buf_.data(), count_, config_.dtype, ccl::ReduceOp::kSum,
                            CallOptions());
  }

  Status Verify(uint64_t iteration) override {
    // Sum over ranks of (3r + c) mod m depends only on c mod m: one table per iteration.
    std::vector<uint32_t> table(m_);
    for (uint32_t c = 0; c < m_; ++c) {
      uint32_t s = 0;
      for (int r = 0; r < comm_->size(); ++r) s += (3u * static_cast<uint32_t>(r) + c) % m_;
      table[c] = s;
    }
    for (size_t i = 0; i < count_; ++i) {
      uint32_t c = static_cast<uint32_t>((7ull * i + 5ull * iteration + 1) % m_);
      double got = Load(buf_.data(), i, config_.dtype);
      if (got != table[c]) return Mismatch("allreduce", i, got, table[c], iteration);
    }
    return OkStatus();
  }

  uint64_t bytes_per_step() const override { return count_ * ccl::SizeOf(config_.dtype); }

 private:
  size_t count_ = 0;
  std::vector<unsigned char> buf_;
};

// A training step: a compute phase (work of about `compute`, standing in for the forward and
// backward pass) followed by the gradient AllReduce. Its options (workload_plugins.cc), every
// one present (the factory fills the schema's defaults):
//   compute         the compute phase per step
//   compute_device  "gpu": cuBLAS GEMMs on device rank % (visible GPUs), an error without one;
//                   "cpu": host arithmetic; "auto": the GPU when this build has CUDA and a GPU
//                   is visible, else the CPU
class TrainingStep : public AllReduceLoop {
 public:
  explicit TrainingStep(const OptionValues& options)
      : AllReduceLoop(options),
        compute_ns_(options.Duration("compute").value_or(0)),
        compute_device_(options.Text("compute_device").value_or("auto")) {}
  std::string name() const override { return "training_step"; }

  Status Init(ccl::Communicator* comm, const WorkloadConfig& config) override {
    FL_RETURN_IF_ERROR(AllReduceLoop::Init(comm, config));
    const std::string& where = compute_device_;
    if (where == "cpu") return OkStatus();
    int gpus = CudaDeviceCount();
    if (gpus == 0) {
      if (where == "gpu") return UnavailableError("compute device gpu: no GPU visible");
      return OkStatus();
    }
    // 2048^3 x 2 flops: about 0.4 ms on an H100-class GPU, so the budget is met closely.
    auto gemm = CreateGpuGemm(comm->rank() % gpus, 2048);
    if (!gemm.ok()) {
      if (where == "gpu") return gemm.status();
      return OkStatus();  // auto: fall back to the CPU
    }
    gemm_ = std::move(*gemm);
    return OkStatus();
  }

  Status Step(uint64_t iteration) override {
    if (gemm_) {
      FL_ASSIGN_OR_RETURN(uint64_t n, gemm_->RunFor(compute_ns_));
      gemms_ += n;
    } else {
      Compute();
    }
    return AllReduceLoop::Step(iteration);
  }

 private:
  void Compute() {
    // A small dense matrix product repeated until the compute budget is spent: real work the
    // optimiser cannot remove (the result feeds sink_).
    constexpr int kN = 64;
    if (a_.empty()) {
      a_.resize(kN * kN);
      b_.resize(kN * kN);
      c_.resize(kN * kN);
      for (int i = 0; i < kN * kN; ++i) {
        a_[i] = static_cast<float>(i % 13) * 0.01f;
        b_[i] = static_cast<float>(i % 7) * 0.02f;
      }
    }
    auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(compute_ns_);
    do {
      for (int i = 0; i < kN; ++i)
        for (int k = 0; k < kN; ++k) {
          float aik = a_[i * kN + k];
          for (int j = 0; j < kN; ++j) c_[i * kN + j] += aik * b_[k * kN + j];
        }
      sink_ = sink_ + c_[0];
    } while (std::chrono::steady_clock::now() < until);
  }

  const Nanos compute_ns_;
  const std::string compute_device_;
  std::vector<float> a_, b_, c_;
  volatile float sink_ = 0;
  std::unique_ptr<GpuGemm> gemm_;
  uint64_t gemms_ = 0;
};

// MoE token exchange: AllToAll where block j of rank r's send buffer is addressed to rank j.
class MoeAllToAll : public CollectiveWorkload {
 public:
  explicit MoeAllToAll(const OptionValues& /*options: none*/) {}
  std::string name() const override { return "moe_alltoall"; }
  ccl::Collective collective() const override { return ccl::Collective::kAllToAll; }

  Status Init(ccl::Communicator* comm, const WorkloadConfig& config) override {
    size_t elem = Keep(comm, config);
    size_t total = std::max<size_t>(comm->size(), config.size_bytes / elem);
    block_ = total / comm->size();
    send_.assign(block_ * comm->size() * elem, 0);
    recv_.assign(send_.size(), 0);
    m_ = ValueModulus(1);  // no reduction: values only need to be distinct and exact
    return OkStatus();
  }

  // Block j of rank r carries V(r, j * block + k, t): the receiver knows its sender by index.
  Status Step(uint64_t iteration) override {
    Fill(send_.data(), block_ * comm_->size(), config_.dtype, comm_->rank(), 0, iteration, m_);
    return comm_->AllToAll(send_.data(), recv_.data(), block_, config_.dtype, CallOptions());
  }

  Status Verify(uint64_t iteration) override {
    int me = comm_->rank();
    for (int src = 0; src < comm_->size(); ++src) {
      for (size_t k = 0; k < block_; ++k) {
        size_t at = static_cast<size_t>(src) * block_ + k;
        double want = Value(src, static_cast<uint64_t>(me) * block_ + k, iteration, m_);
        double got = Load(recv_.data(), at, config_.dtype);
        if (got != want)
          return Mismatch("alltoall from rank " + std::to_string(src), at, got, want, iteration);
      }
    }
    return OkStatus();
  }

  uint64_t bytes_per_step() const override { return send_.size(); }

 private:
  size_t block_ = 0;
  std::vector<unsigned char> send_, recv_;
};

// Registers T under its descriptor's name (workload_plugins.h) with the descriptor's schema; the
// factory hands T every option, the ones not given at the schema's defaults.
template <typename T>
Status Add(WorkloadRegistry& registry, std::string_view name) {
  FL_ASSIGN_OR_RETURN(const WorkloadPlugin* p, FindWorkloadPlugin(name));
  const OptionSchema* schema = &p->options;  // descriptors live for the program
  return registry.Register(
      p->name,
      [schema](const OptionValues& given) -> StatusOr<std::unique_ptr<Workload>> {
        FL_ASSIGN_OR_RETURN(OptionValues all, schema->WithDefaults(given));
        return std::unique_ptr<Workload>(new T(all));
      },
      p->options);
}

}  // namespace

Status RegisterBuiltinWorkloads(WorkloadRegistry& registry) {
#define FL_WORKLOAD(name, descriptor, cls) FL_RETURN_IF_ERROR(Add<cls>(registry, #name));
#include "workloads/workload_list.h"
#undef FL_WORKLOAD
  return OkStatus();
}

}  // namespace fl::workloads
