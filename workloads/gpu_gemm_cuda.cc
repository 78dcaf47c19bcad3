// GpuGemm with CUDA: cuBLAS SGEMM on device buffers filled once from the host. cuBLAS (about
// 570 MB of shared libraries) is loaded with dlopen when a GEMM engine is first created, so
// that every rank that never computes on a GPU starts without it (linked, it cost each
// faultline-worker about 0.45 s of start-up).
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <chrono>
#include <string>
#include <vector>

#include "workloads/gpu_gemm.h"

namespace fl::workloads {
namespace {

Status CudaError(cudaError_t e, const char* what) {
  return UnavailableError(std::string(what) + ": " + cudaGetErrorString(e));
}

// The three cuBLAS entry points used here, resolved once from libcublas.
struct Cublas {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
};

StatusOr<const Cublas*> LoadCublas() {
  static const StatusOr<Cublas> loaded = []() -> StatusOr<Cublas> {
    void* lib = nullptr;
    for (const char* name : {"libcublas.so", "libcublas.so.13", "libcublas.so.12"})
      if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
    if (!lib) return UnavailableError(std::string("cannot load cuBLAS: ") + dlerror());
    Cublas c;
    c.create = reinterpret_cast<decltype(c.create)>(dlsym(lib, "cublasCreate_v2"));
    c.destroy = reinterpret_cast<decltype(c.destroy)>(dlsym(lib, "cublasDestroy_v2"));
    c.sgemm = reinterpret_cast<decltype(c.sgemm)>(dlsym(lib, "cublasSgemm_v2"));
    if (!c.create || !c.destroy || !c.sgemm)
      return UnavailableError("cuBLAS lacks cublasCreate_v2/cublasDestroy_v2/cublasSgemm_v2");
    return c;  // the library stays loaded for the process's life
  }();
  if (!loaded.ok()) return loaded.status();
  return &*loaded;
}

class CudaGemm : public GpuGemm {
 public:
  ~CudaGemm() override {
    if (handle_) blas_->destroy(handle_);
    for (float* p : {a_, b_, c_})
      if (p) cudaFree(p);
  }

  Status Init(int device, int n) {
    FL_ASSIGN_OR_RETURN(blas_, LoadCublas());
    device_ = device;
    n_ = n;
    if (cudaError_t e = cudaSetDevice(device); e != cudaSuccess)
      return CudaError(e, "cudaSetDevice");
    size_t bytes = static_cast<size_t>(n) * n * sizeof(float);
    for (float** p : {&a_, &b_, &c_})
      if (cudaError_t e = cudaMalloc(reinterpret_cast<void**>(p), bytes); e != cudaSuccess)
        return CudaError(e, "cudaMalloc");
    std::vector<float> host(static_cast<size_t>(n) * n);
    for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i % 13) * 0.01f;
    if (cudaError_t e = cudaMemcpy(a_, host.data(), bytes, cudaMemcpyHostToDevice);
        e != cudaSuccess)
      return CudaError(e, "cudaMemcpy");
    for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>(i % 7) * 0.02f;
    if (cudaError_t e = cudaMemcpy(b_, host.data(), bytes, cudaMemcpyHostToDevice);
        e != cudaSuccess)
      return CudaError(e, "cudaMemcpy");
    if (cudaError_t e = cudaMemset(c_, 0, bytes); e != cudaSuccess)
      return CudaError(e, "cudaMemset");
    if (blas_->create(&handle_) != CUBLAS_STATUS_SUCCESS)
      return UnavailableError("cublasCreate failed on device " + std::to_string(device));
    return OkStatus();
  }

  StatusOr<uint64_t> RunFor(Nanos budget_ns) override {
    if (cudaError_t e = cudaSetDevice(device_); e != cudaSuccess)
      return CudaError(e, "cudaSetDevice");
    const float alpha = 1.0f, beta = 1.0f;
    uint64_t done = 0;
    auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(budget_ns);
    do {
      if (blas_->sgemm(handle_, CUBLAS_OP_N, CUBLAS_OP_N, n_, n_, n_, &alpha, a_, n_, b_, n_, &beta,
                       c_, n_) != CUBLAS_STATUS_SUCCESS)
        return InternalError("cublasSgemm failed");
      if (cudaError_t e = cudaDeviceSynchronize(); e != cudaSuccess)
        return CudaError(e, "cudaDeviceSynchronize");
      ++done;
    } while (std::chrono::steady_clock::now() < until);
    return done;
  }

  StatusOr<float> Probe() override {
    float x = 0;
    if (cudaError_t e = cudaMemcpy(&x, c_, sizeof x, cudaMemcpyDeviceToHost); e != cudaSuccess)
      return CudaError(e, "cudaMemcpy");
    return x;
  }

  int device() const override { return device_; }

 private:
  int device_ = 0;
  int n_ = 0;
  float* a_ = nullptr;
  float* b_ = nullptr;
  float* c_ = nullptr;
  cublasHandle_t handle_ = nullptr;
  const Cublas* blas_ = nullptr;
};

}  // namespace

int CudaDeviceCount() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

StatusOr<std::unique_ptr<GpuGemm>> CreateGpuGemm(int device, int n) {
  if (n <= 0) return InvalidArgumentError("GEMM size must be positive");
  auto g = std::make_unique<CudaGemm>();
  FL_RETURN_IF_ERROR(g->Init(device, n));
  return std::unique_ptr<GpuGemm>(std::move(g));
}

}  // namespace fl::workloads
