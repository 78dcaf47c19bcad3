// Device-side reductions for ftccl's CUDA buffers: after a chunk has been staged into device
// memory, dst[i] = op(dst[i], src[i]) runs as a kernel on the given stream.
//
// Built only with CUDA (FL_HAVE_CUDA); without it every function returns FailedPrecondition
// so callers can report "built without CUDA" instead of failing to link.
// Thread-safety: functions are safe to call from any thread; a stream is the caller's.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "ccl_under_test/api/types.h"
#include "common/status.h"

namespace fl::ccl::ftccl {

struct CudaDeviceInfo {
  int index = 0;
  std::string name;
  size_t memory_bytes = 0;
  int sm_major = 0;
  int sm_minor = 0;
};

// True when this build contains the CUDA kernels.
bool CudaBuilt();
// Devices visible to the CUDA runtime; an empty list when there is no driver or GPU.
std::vector<CudaDeviceInfo> CudaDevices();
// dst[i] = op(dst[i], src[i]) for count elements of type on stream (a cudaStream_t, or
// nullptr for the default stream). Asynchronous: the caller synchronises the stream.
Status CudaReduceInPlace(void* dst, const void* src, size_t count, DataType type, ReduceOp op,
                         void* stream);
// Synchronises a stream with a deadline-free wait (kernels are bounded by their size).
Status CudaStreamSync(void* stream);

}  // namespace fl::ccl::ftccl

namespace fl::ccl::ftccl {
// Copies between host and device memory (synchronous; for staging device buffers).
Status CudaCopyToHost(void* host_dst, const void* device_src, size_t bytes);
Status CudaCopyToDevice(void* device_dst, const void* host_src, size_t bytes);
}  // namespace fl::ccl::ftccl

namespace fl::ccl::ftccl {
// Device memory for benchmarks and tests (cudaMalloc/cudaFree on the current device).
StatusOr<void*> CudaAlloc(size_t bytes);
void CudaFree(void* ptr);
}  // namespace fl::ccl::ftccl
