// GpuGemm without CUDA: no device, and Create says why.
#include "workloads/gpu_gemm.h"

namespace fl::workloads {

int CudaDeviceCount() { return 0; }

StatusOr<std::unique_ptr<GpuGemm>> CreateGpuGemm(int, int) {
  return UnavailableError("this build has no CUDA (configure with FL_WITH_CUDA=ON and nvcc)");
}

}  // namespace fl::workloads
