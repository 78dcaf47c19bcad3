#include "ccl_under_test/adapters/nccl/nccl_communicator.h"

#include "ccl_under_test/adapters/nccl/nccl_plugin.h"

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace fl::ccl::adapters {
namespace {

// ncclCommShrink (NCCL >= 2.27), declared here so that this file also builds against an
// older nccl.h; whether the loaded libnccl has it is found at run time.
using CommShrinkFn = ncclResult_t (*)(ncclComm_t comm, int* exclude_ranks, int exclude_count,
                                      ncclComm_t* newcomm, ncclConfig_t* config, int flags);
constexpr int kShrinkDefault = 0x00;  // NCCL_SHRINK_DEFAULT: the parent is healthy
constexpr int kShrinkAbort = 0x01;    // NCCL_SHRINK_ABORT: end the parent's operations first

// The NCCL entry points we use, resolved once from the shared library.
struct NcclApi {
  decltype(&ncclGetUniqueId) GetUniqueId = nullptr;
  decltype(&ncclCommInitRankConfig) CommInitRankConfig = nullptr;
  decltype(&ncclCommDestroy) CommDestroy = nullptr;
  decltype(&ncclCommAbort) CommAbort = nullptr;
  decltype(&ncclCommGetAsyncError) CommGetAsyncError = nullptr;
  decltype(&ncclAllReduce) AllReduce = nullptr;
  decltype(&ncclAllGather) AllGather = nullptr;
  decltype(&ncclReduceScatter) ReduceScatter = nullptr;
  decltype(&ncclBroadcast) Broadcast = nullptr;
  decltype(&ncclSend) Send = nullptr;
  decltype(&ncclRecv) Recv = nullptr;
  decltype(&ncclGroupStart) GroupStart = nullptr;
  decltype(&ncclGroupEnd) GroupEnd = nullptr;
  decltype(&ncclGetErrorString) GetErrorString = nullptr;
  // Optional: nullptr when the loaded libnccl lacks them.
  CommShrinkFn CommShrink = nullptr;
  decltype(&ncclGetVersion) GetVersion = nullptr;
  std::string version = "?";  // "2.28.3"
};

StatusOr<const NcclApi*> LoadNccl() {
  static std::mutex mu;
  static NcclApi api;
  static Status status = InternalError("not loaded");
  static bool tried = false;
  std::lock_guard<std::mutex> lock(mu);
  if (tried) {
    if (!status.ok()) return status;
    return &api;
  }
  tried = true;
  const char* name = std::getenv("FL_NCCL_LIBRARY");
  void* h = dlopen(name && *name ? name : "libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    status = FailedPreconditionError(std::string("nccl: cannot load libnccl: ") + dlerror());
    return status;
  }
  bool ok = true;
  auto sym = [&](auto& fn, const char* s) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, s));
    ok &= fn != nullptr;
  };
  sym(api.GetUniqueId, "ncclGetUniqueId");
  sym(api.CommInitRankConfig, "ncclCommInitRankConfig");
  sym(api.CommDestroy, "ncclCommDestroy");
  sym(api.CommAbort, "ncclCommAbort");
  sym(api.CommGetAsyncError, "ncclCommGetAsyncError");
  sym(api.AllReduce, "ncclAllReduce");
  sym(api.AllGather, "ncclAllGather");
  sym(api.ReduceScatter, "ncclReduceScatter");
  sym(api.Broadcast, "ncclBroadcast");
  sym(api.Send, "ncclSend");
  sym(api.Recv, "ncclRecv");
  sym(api.GroupStart, "ncclGroupStart");
  sym(api.GroupEnd, "ncclGroupEnd");
  sym(api.GetErrorString, "ncclGetErrorString");
  if (!ok) {
    status = FailedPreconditionError("nccl: libnccl lacks a needed symbol (NCCL >= 2.14 needed)");
    return status;
  }
  api.CommShrink = reinterpret_cast<CommShrinkFn>(dlsym(h, "ncclCommShrink"));
  api.GetVersion = reinterpret_cast<decltype(&ncclGetVersion)>(dlsym(h, "ncclGetVersion"));
  int v = 0;
  if (api.GetVersion && api.GetVersion(&v) == ncclSuccess && v > 0) {
    // NCCL_VERSION(X, Y, Z) is X*10000 + Y*100 + Z since 2.9, X*1000 + Y*100 + Z before.
    const int major = v >= 10000 ? v / 10000 : v / 1000;
    const int rest = v >= 10000 ? v % 10000 : v % 1000;
    api.version =
        std::to_string(major) + "." + std::to_string(rest / 100) + "." + std::to_string(rest % 100);
  }
  status = OkStatus();
  return &api;
}

ncclDataType_t ToNccl(DataType t) {
  switch (t) {
    case DataType::kFloat32:
      return ncclFloat32;
    case DataType::kFloat16:
      return ncclFloat16;
    case DataType::kBFloat16:
      return ncclBfloat16;
    case DataType::kInt32:
      return ncclInt32;
    case DataType::kInt64:
      return ncclInt64;
  }
  return ncclFloat32;
}

ncclRedOp_t ToNccl(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return ncclSum;
    case ReduceOp::kMax:
      return ncclMax;
    case ReduceOp::kMin:
      return ncclMin;
  }
  return ncclSum;
}

std::string Hex(const void* p, size_t n) {
  std::string s;
  char buf[3];
  for (size_t i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof(buf), "%02x", static_cast<const unsigned char*>(p)[i]);
    s += buf;
  }
  return s;
}

bool Unhex(const std::string& s, void* p, size_t n) {
  if (s.size() != 2 * n) return false;
  for (size_t i = 0; i < n; ++i) {
    static_cast<unsigned char*>(p)[i] =
        static_cast<unsigned char>(std::strtoul(s.substr(2 * i, 2).c_str(), nullptr, 16));
  }
  return true;
}

// Polls a non-blocking communicator until it is ready (init, shrink). On failure or timeout
// the communicator is aborted.
Status WaitReady(const NcclApi* api, ncclComm_t comm, ncclResult_t r, Deadline d,
                 const std::string& what) {
  while (r == ncclInProgress || r == ncclSuccess) {
    ncclResult_t state = ncclInProgress;
    api->CommGetAsyncError(comm, &state);
    if (state == ncclSuccess) return OkStatus();
    if (state != ncclInProgress) {
      r = state;
      break;
    }
    if (d.Expired()) {
      api->CommAbort(comm);
      return DeadlineExceededError("nccl: " + what + " timed out");
    }
    WaitUntil([] { return false; }, Deadline::After(kNsPerMs), kNsPerMs);
  }
  if (comm) api->CommAbort(comm);
  return UnavailableError("nccl " + what + ": " + api->GetErrorString(r));
}

class NcclCommunicator : public Communicator {
 public:
  NcclCommunicator(const NcclApi* api, ncclComm_t comm, cudaStream_t stream, const CommConfig& c)
      : api_(api), comm_(comm), stream_(stream), cfg_(c) {}
  ~NcclCommunicator() override {
    if (comm_) {
      if (error_.ok()) {
        api_->CommDestroy(comm_);
      } else {
        api_->CommAbort(comm_);
      }
    }
    if (stream_) cudaStreamDestroy(stream_);
    if (scratch_) cudaFree(scratch_);
  }

  int rank() const override { return cfg_.rank; }
  int size() const override { return cfg_.world_size; }
  std::string name() const override { return "nccl"; }

  Status AllReduce(const void* send, void* recv, size_t count, DataType type, ReduceOp op,
                   const CollectiveOptions& opts) override {
    return Run(opts, [&](cudaStream_t s) {
      return api_->AllReduce(send, recv, count, ToNccl(type), ToNccl(op), comm_, s);
    });
  }
  Status AllGather(const void* send, void* recv, size_t count, DataType type,
                   const CollectiveOptions& opts) override {
    return Run(opts, [&](cudaStream_t s) {
      return api_->AllGather(send, recv, count, ToNccl(type), comm_, s);
    });
  }
  Status ReduceScatter(const void* send, void* recv, size_t count, DataType type, ReduceOp op,
                       const CollectiveOptions& opts) override {
    return Run(opts, [&](cudaStream_t s) {
      return api_->ReduceScatter(send, recv, count, ToNccl(type), ToNccl(op), comm_, s);
    });
  }
  Status Broadcast(void* buf, size_t count, DataType type, int root,
                   const CollectiveOptions& opts) override {
    if (root < 0 || root >= size()) return InvalidArgumentError("broadcast: root out of range");
    return Run(opts, [&](cudaStream_t s) {
      return api_->Broadcast(buf, buf, count, ToNccl(type), root, comm_, s);
    });
  }
  Status AllToAll(const void* send, void* recv, size_t count, DataType type,
                  const CollectiveOptions& opts) override {
    if (send == recv) return InvalidArgumentError("nccl alltoall: in-place is not supported");
    const size_t block = count * SizeOf(type);
    return Run(opts, [&](cudaStream_t s) {
      ncclResult_t r = api_->GroupStart();
      for (int p = 0; p < size() && r == ncclSuccess; ++p) {
        r = api_->Send(static_cast<const char*>(send) + p * block, count, ToNccl(type), p, comm_,
                       s);
        if (r == ncclSuccess) {
          r = api_->Recv(static_cast<char*>(recv) + p * block, count, ToNccl(type), p, comm_, s);
        }
      }
      ncclResult_t e = api_->GroupEnd();
      return r != ncclSuccess ? r : e;
    });
  }
  Status Barrier(const CollectiveOptions& opts) override {
    CollectiveOptions o = opts;
    o.memory = MemoryKind::kCuda;
    return AllReduce(scratch_, scratch_, 1, DataType::kInt32, ReduceOp::kSum, o);
  }

  Status GetAsyncError() override {
    std::lock_guard<std::mutex> lock(mu_);
    return error_;
  }
  void Abort() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (error_.ok()) error_ = CancelledError("nccl: communicator aborted");
    aborted_ = true;
  }

  Status ShrinkSupport() const override {
    if (!api_->CommShrink)
      return FailedPreconditionError("nccl: libnccl " + api_->version +
                                     " has no ncclCommShrink (NCCL >= 2.27 needed)");
    std::lock_guard<std::mutex> lock(mu_);
    if (!comm_) return FailedPreconditionError("nccl: the communicator was aborted");
    return OkStatus();
  }

  StatusOr<std::unique_ptr<Communicator>> Shrink(std::span<const int> exclude_ranks,
                                                 Nanos timeout) override {
    FL_RETURN_IF_ERROR(ShrinkSupport());
    FL_RETURN_IF_ERROR(CheckExcludeList(exclude_ranks, rank(), size()));
    if (static_cast<int>(exclude_ranks.size()) >= size())
      return InvalidArgumentError("nccl shrink: no rank would be left");
    std::vector<int> exclude(exclude_ranks.begin(), exclude_ranks.end());
    std::sort(exclude.begin(), exclude.end());
    const bool broken = !GetAsyncError().ok();
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    ncclComm_t child = nullptr;
    ncclResult_t r = api_->CommShrink(comm_, exclude.data(), static_cast<int>(exclude.size()),
                                      &child, &cfg, broken ? kShrinkAbort : kShrinkDefault);
    FL_RETURN_IF_ERROR(WaitReady(api_, child, r, Deadline::After(timeout), "shrink"));
    CommConfig c = cfg_;
    c.rank = rank() - static_cast<int>(std::lower_bound(exclude.begin(), exclude.end(), rank()) -
                                       exclude.begin());
    c.world_size = size() - static_cast<int>(exclude.size());
    cudaStream_t stream = nullptr;
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    auto shrunk = std::make_unique<NcclCommunicator>(api_, child, stream, c);
    FL_RETURN_IF_ERROR(shrunk->Init());
    return std::unique_ptr<Communicator>(std::move(shrunk));
  }

  Status Init() {
    if (cudaMalloc(&scratch_, 16) != cudaSuccess) {
      cudaGetLastError();
      return FailedPreconditionError("nccl: cudaMalloc failed");
    }
    return OkStatus();
  }

 private:
  Status SetError(Status s) {
    std::lock_guard<std::mutex> lock(mu_);
    if (error_.ok()) error_ = s;
    return s;
  }

  template <typename F>
  Status Run(const CollectiveOptions& opts, F enqueue) {
    FL_RETURN_IF_ERROR(GetAsyncError());
    if (opts.memory != MemoryKind::kCuda) {
      return FailedPreconditionError("nccl adapter: buffers must be CUDA device memory");
    }
    cudaStream_t s = opts.stream ? static_cast<cudaStream_t>(opts.stream) : stream_;
    ncclResult_t r = enqueue(s);
    if (r != ncclSuccess && r != ncclInProgress) {
      return SetError(UnavailableError(std::string("nccl: ") + api_->GetErrorString(r)));
    }
    Deadline d = Deadline::After(opts.timeout);
    while (true) {
      cudaError_t q = cudaStreamQuery(s);
      if (q == cudaSuccess) return OkStatus();
      if (q != cudaErrorNotReady) {
        return SetError(InternalError(std::string("nccl: stream: ") + cudaGetErrorString(q)));
      }
      ncclResult_t async = ncclSuccess;
      api_->CommGetAsyncError(comm_, &async);
      bool aborted;
      {
        std::lock_guard<std::mutex> lock(mu_);
        aborted = aborted_;
      }
      if (aborted || (async != ncclSuccess && async != ncclInProgress) || d.Expired()) {
        // With ncclCommShrink the broken communicator is kept for a Shrink (NCCL_SHRINK_ABORT
        // ends its operations); the destructor aborts it otherwise.
        if (aborted || !api_->CommShrink) {
          std::lock_guard<std::mutex> lock(mu_);
          api_->CommAbort(comm_);
          comm_ = nullptr;
        }
        if (aborted) return CancelledError("nccl: communicator aborted");
        if (async != ncclSuccess && async != ncclInProgress) {
          return SetError(UnavailableError(std::string("nccl: ") + api_->GetErrorString(async)));
        }
        return SetError(DeadlineExceededError("nccl: collective timed out"));
      }
      WaitUntil([] { return false; }, Deadline::After(50 * kNsPerUs), 50 * kNsPerUs);
    }
  }

  const NcclApi* api_;
  ncclComm_t comm_;
  cudaStream_t stream_;
  CommConfig cfg_;
  void* scratch_ = nullptr;
  mutable std::mutex mu_;  // error_, aborted_ and comm_ going away
  Status error_;
  bool aborted_ = false;
};

}  // namespace

StatusOr<std::unique_ptr<Communicator>> CreateNcclCommunicator(const CommConfig& config) {
  if (config.world_size < 1 || config.rank < 0 || config.rank >= config.world_size) {
    return InvalidArgumentError("nccl: bad rank/world size");
  }
  if (!config.store && config.world_size > 1) return InvalidArgumentError("nccl: no store");
  FL_ASSIGN_OR_RETURN(const NcclApi* api, LoadNccl());
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    cudaGetLastError();
    return FailedPreconditionError("nccl: no CUDA device");
  }
  ncclUniqueId id;
  const std::string key = "nccl/" + config.job_id + "/id";
  Deadline d = Deadline::After(config.init_timeout);
  if (config.rank == 0) {
    ncclResult_t r = api->GetUniqueId(&id);
    if (r != ncclSuccess) return UnavailableError(std::string("nccl: ") + api->GetErrorString(r));
    if (config.world_size > 1) FL_RETURN_IF_ERROR(config.store->Set(key, Hex(&id, sizeof(id))));
  } else {
    FL_ASSIGN_OR_RETURN(std::string hex, config.store->Get(key, d));
    if (!Unhex(hex, &id, sizeof(id))) return InternalError("nccl: bad unique id in the store");
  }
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  ncclComm_t comm = nullptr;
  ncclResult_t r = api->CommInitRankConfig(&comm, config.world_size, id, config.rank, &cfg);
  FL_RETURN_IF_ERROR(WaitReady(api, comm, r, d, "communicator init"));
  cudaStream_t stream = nullptr;
  cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  auto c = std::make_unique<NcclCommunicator>(api, comm, stream, config);
  FL_RETURN_IF_ERROR(c->Init());
  return std::unique_ptr<Communicator>(std::move(c));
}

Status RegisterNccl(CclRegistry& registry) {
  const CclPlugin& p = NcclPlugin();
  return registry.Register(
      p.name, [](const CommConfig& c) { return CreateNcclCommunicator(c); }, p.options);
}

}  // namespace fl::ccl::adapters
