// GpuGemm: the GPU compute phase of training_step — single-precision GEMMs through cuBLAS on
// one device, repeated until a time budget is spent. Built with CUDA (gpu_gemm_cuda.cc); a
// build without it has the stub (gpu_gemm_stub.cc), whose Create reports Unavailable.
//
// Thread-safety: one GpuGemm per thread. Ownership: owns its device buffers and handle.
#pragma once

#include <memory>

#include "common/clock.h"
#include "common/status.h"

namespace fl::workloads {

class GpuGemm {
 public:
  virtual ~GpuGemm() = default;
  // Runs n x n GEMMs (C = A B + C) until budget_ns has passed; returns how many ran. Each
  // GEMM is waited for, so the budget is GPU time, not launch time.
  virtual StatusOr<uint64_t> RunFor(Nanos budget_ns) = 0;
  // A checksum element of C read back from the device (the work cannot be skipped).
  virtual StatusOr<float> Probe() = 0;
  virtual int device() const = 0;
};

// Number of visible CUDA devices (0 without CUDA, a driver or a GPU).
int CudaDeviceCount();

// Allocates A, B, C (n x n, float) on device `device` and a cuBLAS handle. Unavailable when
// built without CUDA or when the device cannot be used.
StatusOr<std::unique_ptr<GpuGemm>> CreateGpuGemm(int device, int n);

}  // namespace fl::workloads
