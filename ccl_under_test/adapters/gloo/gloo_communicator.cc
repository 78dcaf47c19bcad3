#include "ccl_under_test/adapters/gloo/gloo_communicator.h"

#include "ccl_under_test/adapters/gloo/gloo_plugin.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <vector>

namespace fl::ccl::adapters {
namespace {

// Gloo's rendezvous store on top of ours. Gloo expects get/wait to throw on timeout.
class StoreAdapter : public gloo::rendezvous::Store {
 public:
  StoreAdapter(fl::ccl::Store& store, Nanos timeout) : store_(store), timeout_(timeout) {}
  void set(const std::string& key, const std::vector<char>& data) override {
    Status s = store_.Set(key, std::string(data.begin(), data.end()));
    if (!s.ok()) throw gloo::IoException(s.ToString());
  }
  std::vector<char> get(const std::string& key) override {
    auto v = store_.Get(key, Deadline::After(timeout_));
    if (!v.ok()) throw gloo::IoException(v.status().ToString());
    return std::vector<char>(v->begin(), v->end());
  }
  void wait(const std::vector<std::string>& keys) override {
    wait(keys, std::chrono::milliseconds(timeout_ / kNsPerMs));
  }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& t) override {
    Deadline d = Deadline::After(static_cast<Nanos>(t.count()) * kNsPerMs);
    for (const auto& k : keys) {
      auto v = store_.Get(k, d);
      if (!v.ok()) throw gloo::IoException(v.status().ToString());
    }
  }

 private:
  fl::ccl::Store& store_;
  Nanos timeout_;
};

Status FromException(const std::exception& e, const char* what) {
  std::string msg = std::string("gloo ") + what + ": " + e.what();
  if (dynamic_cast<const gloo::IoException*>(&e)) {
    if (msg.find("Timed out") != std::string::npos || msg.find("timed out") != std::string::npos ||
        msg.find("timeout") != std::string::npos) {
      return DeadlineExceededError(msg);
    }
    return UnavailableError(msg);
  }
  return InternalError(msg);
}

template <typename T>
gloo::AllreduceOptions::Func ReduceFn(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: {
      void (*f)(void*, const void*, const void*, size_t) = &gloo::sum<T>;
      return f;
    }
    case ReduceOp::kMax: {
      void (*f)(void*, const void*, const void*, size_t) = &gloo::max<T>;
      return f;
    }
    case ReduceOp::kMin: {
      void (*f)(void*, const void*, const void*, size_t) = &gloo::min<T>;
      return f;
    }
  }
  return nullptr;
}

class GlooCommunicator : public Communicator {
 public:
  GlooCommunicator(std::shared_ptr<gloo::Context> ctx, const CommConfig& cfg)
      : ctx_(std::move(ctx)), cfg_(cfg) {}

  int rank() const override { return cfg_.rank; }
  int size() const override { return cfg_.world_size; }
  std::string name() const override { return "gloo"; }

  Status AllReduce(const void* send, void* recv, size_t count, DataType type, ReduceOp op,
                   const CollectiveOptions& opts) override {
    return Run(opts, type, "allreduce", [&](uint32_t tag, std::chrono::milliseconds to) {
      if (count == 0) return;
      const size_t es = SizeOf(type);
      if (send != recv) std::memcpy(recv, send, count * es);
      gloo::AllreduceOptions o(ctx_);
      o.setTag(tag);
      o.setTimeout(to);
      o.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
      switch (type) {
        case DataType::kFloat32:
          Set<float>(o, recv, count, op);
          break;
        case DataType::kInt32:
          Set<int32_t>(o, recv, count, op);
          break;
        case DataType::kInt64:
          Set<int64_t>(o, recv, count, op);
          break;
        case DataType::kFloat16:
          Set<gloo::float16>(o, recv, count, op);
          break;
        case DataType::kBFloat16:
          break;  // rejected in Run
      }
      gloo::allreduce(o);
    });
  }

  Status AllGather(const void* send, void* recv, size_t count, DataType type,
                   const CollectiveOptions& opts) override {
    return Run(opts, type, "allgather", [&](uint32_t tag, std::chrono::milliseconds to) {
      if (count == 0) return;
      const size_t es = SizeOf(type);
      gloo::AllgatherOptions o(ctx_);
      o.setTag(tag);
      o.setTimeout(to);
      o.setInput(const_cast<char*>(static_cast<const char*>(send)), count * es);
      o.setOutput(static_cast<char*>(recv), count * es * size());
      gloo::allgather(o);
    });
  }

  Status ReduceScatter(const void* send, void* recv, size_t count, DataType type, ReduceOp op,
                       const CollectiveOptions& opts) override {
    const size_t es = SizeOf(type);
    std::vector<char> tmp(std::max<size_t>(1, count * es * size()));
    FL_RETURN_IF_ERROR(AllReduce(send, tmp.data(), count * size(), type, op, opts));
    if (count) std::memcpy(recv, tmp.data() + static_cast<size_t>(rank()) * count * es, count * es);
    return OkStatus();
  }

  Status Broadcast(void* buf, size_t count, DataType type, int root,
                   const CollectiveOptions& opts) override {
    if (root < 0 || root >= size()) return InvalidArgumentError("broadcast: root out of range");
    return Run(opts, type, "broadcast", [&](uint32_t tag, std::chrono::milliseconds to) {
      if (count == 0) return;
      gloo::BroadcastOptions o(ctx_);
      o.setTag(tag);
      o.setTimeout(to);
      o.setRoot(root);
      if (rank() == root) o.setInput(static_cast<char*>(buf), count * SizeOf(type));
      o.setOutput(static_cast<char*>(buf), count * SizeOf(type));
      gloo::broadcast(o);
    });
  }

  Status AllToAll(const void* send, void* recv, size_t count, DataType type,
                  const CollectiveOptions& opts) override {
    return Run(opts, type, "alltoall", [&](uint32_t tag, std::chrono::milliseconds to) {
      if (count == 0) return;
      const size_t bytes = count * SizeOf(type) * size();
      std::vector<char> tmp;
      const char* src = static_cast<const char*>(send);
      if (send == recv) {
        tmp.assign(src, src + bytes);
        src = tmp.data();
      }
      gloo::AlltoallOptions o(ctx_);
      o.setTag(tag);
      o.setTimeout(to);
      o.setInput(const_cast<char*>(src), bytes);
      o.setOutput(static_cast<char*>(recv), bytes);
      gloo::alltoall(o);
    });
  }

  Status Barrier(const CollectiveOptions& opts) override {
    return Run(opts, DataType::kInt32, "barrier", [&](uint32_t tag, std::chrono::milliseconds to) {
      gloo::BarrierOptions o(ctx_);
      o.setTag(tag);
      o.setTimeout(to);
      gloo::barrier(o);
    });
  }

  Status GetAsyncError() override {
    std::lock_guard<std::mutex> lock(mu_);
    return error_;
  }
  void Abort() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (error_.ok()) error_ = CancelledError("gloo: communicator aborted");
  }

 private:
  template <typename T>
  void Set(gloo::AllreduceOptions& o, void* buf, size_t count, ReduceOp op) {
    o.setOutput(static_cast<T*>(buf), count);
    o.setReduceFunction(ReduceFn<T>(op));
  }

  template <typename F>
  Status Run(const CollectiveOptions& opts, DataType type, const char* what, F body) {
    FL_RETURN_IF_ERROR(GetAsyncError());
    if (opts.memory != MemoryKind::kHost) {
      return FailedPreconditionError("gloo adapter: host buffers only");
    }
    if (type == DataType::kBFloat16) {
      return InvalidArgumentError("gloo adapter: bfloat16 is not supported by Gloo");
    }
    const uint64_t seq = ++seq_;
    Emit(EventType::kCollectiveBegin, seq, "");
    Status s;
    try {
      auto to = std::chrono::milliseconds(std::max<Nanos>(1, opts.timeout / kNsPerMs));
      ctx_->setTimeout(to);
      body(static_cast<uint32_t>(seq), to);
    } catch (const std::exception& e) {
      s = FromException(e, what);
    }
    if (!s.ok()) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (error_.ok()) error_ = s;
      }
      Event e(EventType::kCommError);
      e.cause = std::string(CodeName(s.code()));
      e.detail = s.message();
      e.rank = cfg_.rank;
      e.wall_ns = WallNowNs();
      e.mono_ns = MonoNowNs();
      if (cfg_.events) cfg_.events->OnEvent(e);
    }
    Emit(EventType::kCollectiveEnd, seq, s.ok() ? "ok" : s.ToString());
    return s;
  }

  void Emit(EventType t, uint64_t seq, std::string detail) {
    if (!cfg_.events) return;
    Event e(t);
    e.rank = cfg_.rank;
    e.seq = seq;
    e.detail = std::move(detail);
    e.wall_ns = WallNowNs();
    e.mono_ns = MonoNowNs();
    cfg_.events->OnEvent(e);
  }

  std::shared_ptr<gloo::Context> ctx_;
  CommConfig cfg_;
  uint64_t seq_ = 0;
  std::mutex mu_;
  Status error_;
};

}  // namespace

StatusOr<std::unique_ptr<Communicator>> CreateGlooCommunicator(const CommConfig& config) {
  if (config.world_size < 1 || config.rank < 0 || config.rank >= config.world_size) {
    return InvalidArgumentError("gloo: bad rank/world size");
  }
  if (!config.store) return InvalidArgumentError("gloo: no rendezvous store");
  if (config.nics.empty()) return InvalidArgumentError("gloo: no NIC address");
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = config.nics[0];
    auto dev = gloo::transport::tcp::CreateDevice(attr);
    auto store = std::make_shared<StoreAdapter>(*config.store, config.init_timeout);
    gloo::rendezvous::PrefixStore prefixed("gloo/" + config.job_id, *store);
    auto ctx = std::make_shared<gloo::rendezvous::Context>(config.rank, config.world_size);
    ctx->setTimeout(std::chrono::milliseconds(config.init_timeout / kNsPerMs));
    ctx->connectFullMesh(prefixed, dev);
    return std::unique_ptr<Communicator>(std::make_unique<GlooCommunicator>(ctx, config));
  } catch (const std::exception& e) {
    return FromException(e, "connect");
  }
}

Status RegisterGloo(CclRegistry& registry) {
  const CclPlugin& p = GlooPlugin();
  return registry.Register(
      p.name, [](const CommConfig& c) { return CreateGlooCommunicator(c); }, p.options);
}

}  // namespace fl::ccl::adapters
