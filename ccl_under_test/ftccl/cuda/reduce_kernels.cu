// CUDA kernels behind cuda_reduce.h. One grid-stride kernel per (type, op).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "ccl_under_test/ftccl/cuda/cuda_reduce.h"

namespace fl::ccl::ftccl {
namespace {

template <typename T>
struct Sum {
  __device__ T operator()(T a, T b) const { return a + b; }
};
template <typename T>
struct Max {
  __device__ T operator()(T a, T b) const { return a > b ? a : b; }
};
template <typename T>
struct Min {
  __device__ T operator()(T a, T b) const { return a < b ? a : b; }
};

template <typename T, typename Op>
__global__ void ReduceKernel(T* __restrict__ dst, const T* __restrict__ src, size_t n, Op op) {
  size_t stride = static_cast<size_t>(blockDim.x) * gridDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    dst[i] = op(dst[i], src[i]);
  }
}

template <typename T>
cudaError_t Launch(void* dst, const void* src, size_t n, ReduceOp op, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  constexpr int kThreads = 256;
  size_t blocks = (n + kThreads - 1) / kThreads;
  if (blocks > 4096) blocks = 4096;
  T* d = static_cast<T*>(dst);
  const T* x = static_cast<const T*>(src);
  switch (op) {
    case ReduceOp::kSum:
      ReduceKernel<<<blocks, kThreads, 0, s>>>(d, x, n, Sum<T>{});
      break;
    case ReduceOp::kMax:
      ReduceKernel<<<blocks, kThreads, 0, s>>>(d, x, n, Max<T>{});
      break;
    case ReduceOp::kMin:
      ReduceKernel<<<blocks, kThreads, 0, s>>>(d, x, n, Min<T>{});
      break;
  }
  return cudaGetLastError();
}

Status FromCuda(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return OkStatus();
  return InternalError(std::string(what) + ": " + cudaGetErrorString(err));
}

}  // namespace

bool CudaBuilt() { return true; }

std::vector<CudaDeviceInfo> CudaDevices() {
  std::vector<CudaDeviceInfo> out;
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" error
    return out;
  }
  for (int i = 0; i < n; ++i) {
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
    out.push_back({i, p.name, p.totalGlobalMem, p.major, p.minor});
  }
  return out;
}

Status CudaReduceInPlace(void* dst, const void* src, size_t count, DataType type, ReduceOp op,
                         void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  switch (type) {
    case DataType::kFloat32:
      return FromCuda(Launch<float>(dst, src, count, op, s), "reduce f32");
    case DataType::kFloat16:
      return FromCuda(Launch<__half>(dst, src, count, op, s), "reduce f16");
    case DataType::kBFloat16:
      return FromCuda(Launch<__nv_bfloat16>(dst, src, count, op, s), "reduce bf16");
    case DataType::kInt32:
      return FromCuda(Launch<int32_t>(dst, src, count, op, s), "reduce i32");
    case DataType::kInt64:
      return FromCuda(Launch<int64_t>(dst, src, count, op, s), "reduce i64");
  }
  return InvalidArgumentError("unknown data type");
}

Status CudaStreamSync(void* stream) {
  return FromCuda(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), "stream sync");
}

}  // namespace fl::ccl::ftccl

namespace fl::ccl::ftccl {
Status CudaCopyToHost(void* host_dst, const void* device_src, size_t bytes) {
  return FromCuda(cudaMemcpy(host_dst, device_src, bytes, cudaMemcpyDeviceToHost), "copy to host");
}
Status CudaCopyToDevice(void* device_dst, const void* host_src, size_t bytes) {
  return FromCuda(cudaMemcpy(device_dst, host_src, bytes, cudaMemcpyHostToDevice),
                  "copy to device");
}
}  // namespace fl::ccl::ftccl

namespace fl::ccl::ftccl {
StatusOr<void*> CudaAlloc(size_t bytes) {
  void* p = nullptr;
  cudaError_t err = cudaMalloc(&p, bytes ? bytes : 1);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return FailedPreconditionError(std::string("cudaMalloc: ") + cudaGetErrorString(err));
  }
  return p;
}
void CudaFree(void* ptr) {
  if (ptr) cudaFree(ptr);
}
}  // namespace fl::ccl::ftccl
