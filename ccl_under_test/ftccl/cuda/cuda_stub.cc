// cuda_reduce.h for builds without CUDA.
#include "ccl_under_test/ftccl/cuda/cuda_reduce.h"

namespace fl::ccl::ftccl {

bool CudaBuilt() { return false; }
std::vector<CudaDeviceInfo> CudaDevices() { return {}; }
Status CudaReduceInPlace(void*, const void*, size_t, DataType, ReduceOp, void*) {
  return FailedPreconditionError("ftccl was built without CUDA (FL_WITH_CUDA=OFF or no nvcc)");
}
Status CudaStreamSync(void*) {
  return FailedPreconditionError("ftccl was built without CUDA (FL_WITH_CUDA=OFF or no nvcc)");
}

}  // namespace fl::ccl::ftccl

namespace fl::ccl::ftccl {
Status CudaCopyToHost(void*, const void*, size_t) {
  return FailedPreconditionError("ftccl was built without CUDA: device buffers are not supported");
}
Status CudaCopyToDevice(void*, const void*, size_t) {
  return FailedPreconditionError("ftccl was built without CUDA: device buffers are not supported");
}
}  // namespace fl::ccl::ftccl

namespace fl::ccl::ftccl {
StatusOr<void*> CudaAlloc(size_t) {
  return FailedPreconditionError("ftccl was built without CUDA: no device memory");
}
void CudaFree(void*) {}
}  // namespace fl::ccl::ftccl
