#include "ccl_under_test/tools/perf.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <thread>

#include "ccl_under_test/ftccl/cuda/cuda_reduce.h"
#include "ccl_under_test/ftccl/host_reduce.h"
#include "ccl_under_test/tools/ccl_builtin.h"
#include "common/log.h"

namespace fl::ccl {
namespace {

// Appends JSON lines; shared by the ranks of this process.
class FileEventSink : public EventSink {
 public:
  explicit FileEventSink(const std::string& path) : out_(path, std::ios::app) {}
  bool ok() const { return static_cast<bool>(out_); }
  void OnEvent(const Event& e) override {
    std::lock_guard<std::mutex> lock(mu_);
    out_ << ToJson(e) << '\n';
    out_.flush();
  }

 private:
  std::mutex mu_;
  std::ofstream out_;
};

double Value(int rank, size_t i) {
  return static_cast<double>(static_cast<int64_t>((rank + 1) * 31 + i * 7) % 17) - 8;
}

void SetElem(void* buf, size_t i, DataType t, double v) { ftccl::SetElement(buf, i, t, v); }

double GetElem(const void* buf, size_t i, DataType t) { return ftccl::GetElement(buf, i, t); }

double Expected(const PerfOptions& o, int n, int r, size_t i, size_t block) {
  auto reduce = [&](size_t idx) {
    double acc = Value(0, idx);
    for (int k = 1; k < n; ++k) {
      double v = Value(k, idx);
      acc = o.op == ReduceOp::kSum   ? acc + v
            : o.op == ReduceOp::kMax ? std::max(acc, v)
                                     : std::min(acc, v);
    }
    return acc;
  };
  switch (o.coll) {
    case Collective::kAllReduce:
      return reduce(i);
    case Collective::kAllGather:
      return Value(static_cast<int>(i / block), i % block);
    case Collective::kReduceScatter:
      return reduce(r * block + i);
    case Collective::kBroadcast:
      return Value(0, i);
    case Collective::kAllToAll:
      return Value(static_cast<int>(i / block), r * block + i % block);
    case Collective::kBarrier:
      return 0;
  }
  return 0;
}

// Buffers in host or device memory.
struct Buffer {
  MemoryKind kind = MemoryKind::kHost;
  std::vector<char> host;
  void* dev = nullptr;
  size_t bytes = 0;
  ~Buffer() {
    if (dev) ftccl::CudaFree(dev);
  }
  Status Init(MemoryKind k, size_t b) {
    kind = k;
    bytes = b;
    host.resize(std::max<size_t>(b, 1));
    if (k == MemoryKind::kCuda) {
      FL_ASSIGN_OR_RETURN(dev, ftccl::CudaAlloc(b));
    }
    return OkStatus();
  }
  void* ptr() { return kind == MemoryKind::kCuda ? dev : host.data(); }
  Status Upload(size_t n) {
    return kind == MemoryKind::kCuda && n ? ftccl::CudaCopyToDevice(dev, host.data(), n)
                                          : OkStatus();
  }
  Status Download(size_t n) {
    return kind == MemoryKind::kCuda && n ? ftccl::CudaCopyToHost(host.data(), dev, n) : OkStatus();
  }
};

struct Shape {
  size_t count;       // elements in the reported size
  size_t call_count;  // the count argument of the call
  size_t in_elems, out_elems;
};

Shape ShapeFor(const PerfOptions& o, uint64_t bytes, int n) {
  const size_t es = SizeOf(o.type);
  size_t count = std::max<size_t>(1, bytes / es);
  Shape s{};
  switch (o.coll) {
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll: {
      size_t block = std::max<size_t>(1, count / n);
      s = {block * n, block, 0, 0};
      s.in_elems = o.coll == Collective::kAllGather ? block : block * n;
      s.out_elems = o.coll == Collective::kReduceScatter ? block : block * n;
      break;
    }
    case Collective::kBarrier:
      s = {0, 0, 0, 0};
      break;
    default:
      s = {count, count, count, count};
      break;
  }
  return s;
}

Status Call(Communicator& c, const PerfOptions& o, const Shape& s, Buffer& in, Buffer& out) {
  CollectiveOptions co;
  co.timeout = o.timeout;
  co.memory = o.memory;
  co.algorithm = o.algorithm;
  switch (o.coll) {
    case Collective::kAllReduce:
      return c.AllReduce(in.ptr(), out.ptr(), s.call_count, o.type, o.op, co);
    case Collective::kAllGather:
      return c.AllGather(in.ptr(), out.ptr(), s.call_count, o.type, co);
    case Collective::kReduceScatter:
      return c.ReduceScatter(in.ptr(), out.ptr(), s.call_count, o.type, o.op, co);
    case Collective::kBroadcast:
      return c.Broadcast(out.ptr(), s.call_count, o.type, 0, co);
    case Collective::kAllToAll:
      return c.AllToAll(in.ptr(), out.ptr(), s.call_count, o.type, co);
    case Collective::kBarrier:
      return c.Barrier(co);
  }
  return InternalError("unknown collective");
}

// One rank's sweep. rows are filled on every rank with group-wide values (time: slowest rank,
// wrong: sum over ranks), reduced through the communicator itself, as nccl-tests does.
Status RankSweep(Communicator& c, const PerfOptions& o, std::vector<PerfRow>* rows,
                 std::ofstream* progress, std::mutex* progress_mu,
                 const std::function<void(const PerfRow&)>& on_row) {
  const int n = c.size(), r = c.rank();
  const size_t es = SizeOf(o.type);
  Shape big = ShapeFor(o, o.max_bytes, n);
  Buffer in, out;
  FL_RETURN_IF_ERROR(in.Init(o.memory, std::max(big.in_elems, big.out_elems) * es));
  FL_RETURN_IF_ERROR(out.Init(o.memory, std::max(big.in_elems, big.out_elems) * es));
  CollectiveOptions host;
  host.timeout = o.timeout;
  std::vector<uint64_t> sizes;
  for (uint64_t b = std::max<uint64_t>(o.min_bytes, 1); b <= o.max_bytes;
       b = o.factor > 1 ? b * o.factor : b + std::max<uint64_t>(1, o.factor)) {
    sizes.push_back(b);
    if (o.factor <= 1 && sizes.size() > 1000) break;
  }
  for (uint64_t bytes : sizes) {
    Shape s = ShapeFor(o, bytes, n);
    PerfRow row;
    row.bytes = s.count * es;
    row.count = s.count;
    int64_t wrong = -1;
    const bool checking = o.check && o.coll != Collective::kBarrier;
    // One checked call: fresh inputs, poisoned outputs, every element compared.
    auto checked_call = [&]() -> StatusOr<int64_t> {
      for (size_t i = 0; i < s.in_elems; ++i) SetElem(in.host.data(), i, o.type, Value(r, i));
      if (o.coll == Collective::kBroadcast) {
        for (size_t i = 0; i < s.out_elems; ++i) SetElem(out.host.data(), i, o.type, Value(r, i));
      } else {
        std::memset(out.host.data(), 0x7f, s.out_elems * es);
      }
      FL_RETURN_IF_ERROR(in.Upload(s.in_elems * es));
      FL_RETURN_IF_ERROR(out.Upload(s.out_elems * es));
      FL_RETURN_IF_ERROR(Call(c, o, s, in, out));
      FL_RETURN_IF_ERROR(out.Download(s.out_elems * es));
      int64_t w = 0;
      for (size_t i = 0; i < s.out_elems; ++i) {
        w += GetElem(out.host.data(), i, o.type) != Expected(o, n, r, i, s.call_count);
      }
      return w;
    };
    if (checking) {
      FL_ASSIGN_OR_RETURN(wrong, checked_call());
    }
    for (int i = 0; i < o.warmup; ++i) FL_RETURN_IF_ERROR(Call(c, o, s, in, out));
    FL_RETURN_IF_ERROR(c.Barrier(host));
    Nanos t0 = MonoNowNs();
    for (int i = 0; i < o.iters; ++i) {
      if (checking && o.check_all) {
        FL_ASSIGN_OR_RETURN(int64_t w, checked_call());
        wrong += w;
      } else {
        FL_RETURN_IF_ERROR(Call(c, o, s, in, out));
      }
      if (progress) {
        std::lock_guard<std::mutex> lock(*progress_mu);
        *progress << WallNowNs() << ' ' << r << ' ' << row.bytes << ' ' << i << '\n';
        progress->flush();
      }
    }
    int64_t elapsed = MonoNowNs() - t0;
    int64_t agg[2] = {elapsed, 0};
    FL_RETURN_IF_ERROR(c.AllReduce(agg, agg, 1, DataType::kInt64, ReduceOp::kMax, host));
    int64_t wsum = wrong < 0 ? 0 : wrong;
    FL_RETURN_IF_ERROR(c.AllReduce(&wsum, &wsum, 1, DataType::kInt64, ReduceOp::kSum, host));
    row.time_us = static_cast<double>(agg[0]) / 1000.0 / std::max(1, o.iters);
    row.algbw_gbs = row.time_us > 0 ? static_cast<double>(row.bytes) / (row.time_us * 1000.0) : 0;
    row.busbw_gbs = row.algbw_gbs * BusBandwidthFactor(o.coll, n);
    row.wrong = o.check && o.coll != Collective::kBarrier ? wsum : -1;
    rows->push_back(row);
    if (r == 0 && on_row) on_row(row);
  }
  return OkStatus();
}

}  // namespace

StatusOr<PerfResult> RunPerf(const PerfOptions& o,
                             const std::function<void(const PerfRow&)>& on_row) {
  if (o.min_bytes > o.max_bytes) return InvalidArgumentError("-b must not exceed -e");
  CclRegistry registry("ccl");
  FL_RETURN_IF_ERROR(RegisterBuiltinCcls(registry));
  if (!registry.Contains(o.ccl)) {
    auto r = registry.Create(o.ccl, CommConfig{});
    return r.status();
  }
  std::unique_ptr<FileEventSink> sink;
  if (!o.events_path.empty()) {
    sink = std::make_unique<FileEventSink>(o.events_path);
    if (!sink->ok()) return InvalidArgumentError("cannot open --events file " + o.events_path);
  }
  std::unique_ptr<std::ofstream> progress;
  std::mutex progress_mu;
  if (!o.progress_path.empty()) {
    progress = std::make_unique<std::ofstream>(o.progress_path, std::ios::app);
    if (!*progress) return InvalidArgumentError("cannot open --progress file " + o.progress_path);
  }
  PerfResult result;
  result.ccl = o.ccl;
  if (o.ranks > 0) {
    // All ranks share this machine's CPUs: a thread starved for a few hundred milliseconds
    // must not look like a dead path (FTCCL_DEAD_TIMEOUT_MS still overrides this). Ranks as
    // threads of one process share one "host": no host-local channels (they would be one
    // more loopback path next to the loopback NICs) unless asked for.
    FL_ASSIGN_OR_RETURN(OptionValues threaded,
                        CclOptionsFromEnvironment(
                            registry, o.ccl, {{"dead_timeout_ms", "2000"}, {"host_id", "none"}}));
    MemoryStore store;
    const int n = o.ranks;
    result.world_size = n;
    std::vector<Status> status(n);
    std::vector<std::vector<PerfRow>> rows(n);
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r) {
      threads.emplace_back([&, r] {
        CommConfig cfg;
        cfg.rank = r;
        cfg.world_size = n;
        cfg.job_id = o.job_id;
        cfg.store = &store;
        cfg.nics.clear();
        for (int k = 0; k < o.nics; ++k) {
          cfg.nics.push_back("127.0." + std::to_string(k + 1) + "." + std::to_string(r + 1));
        }
        cfg.failover = o.failover;
        cfg.events = sink.get();
        cfg.options = threaded;
        auto comm = registry.Create(o.ccl, cfg);
        if (!comm.ok()) {
          status[r] = comm.status();
          return;
        }
        status[r] = RankSweep(**comm, o, &rows[r], progress.get(), &progress_mu, on_row);
        if (!status[r].ok()) (*comm)->Abort();
      });
    }
    for (auto& t : threads) t.join();
    for (int r = 0; r < n; ++r) {
      if (!status[r].ok()) return status[r].Prepend("rank " + std::to_string(r));
    }
    result.rows = rows[0];
    return result;
  }
  // External launcher: this process is one rank.
  if (!o.rendezvous_dir.empty() && !o.store_spec.empty())
    return InvalidArgumentError("give --store or --rendezvous, not both");
  if (o.rendezvous_dir.empty() && o.store_spec.empty() && o.world_size > 1) {
    return InvalidArgumentError(
        "--store or --rendezvous (or FL_RENDEZVOUS) is required with a world size > 1");
  }
  std::unique_ptr<Store> store;
  if (!o.store_spec.empty()) {
    FL_ASSIGN_OR_RETURN(store, OpenStore(o.store_spec, o.store_token_file));
  } else {
    store = std::make_unique<FileStore>(o.rendezvous_dir.empty() ? "/tmp" : o.rendezvous_dir);
  }
  CommConfig cfg;
  cfg.rank = o.rank;
  cfg.world_size = o.world_size;
  cfg.job_id = o.job_id;
  cfg.store = store.get();
  if (!o.nic_addrs.empty()) cfg.nics = o.nic_addrs;
  cfg.failover = o.failover;
  cfg.events = sink.get();
  FL_ASSIGN_OR_RETURN(cfg.options, CclOptionsFromEnvironment(registry, o.ccl));
  result.world_size = o.world_size;
  FL_ASSIGN_OR_RETURN(auto comm, registry.Create(o.ccl, cfg));
  Status s = RankSweep(*comm, o, &result.rows, progress.get(), &progress_mu, on_row);
  if (!s.ok()) {
    comm->Abort();
    return s;
  }
  return result;
}

std::string PerfHeader(const PerfOptions& o) {
  char buf[512];
  std::snprintf(buf, sizeof(buf),
                "# ccl %s  collective %s  type %s  op %s\n"
                "#%13s %13s %8s %6s %10s %8s %8s %8s\n"
                "#%13s %13s %8s %6s %10s %8s %8s %8s\n",
                o.ccl.c_str(), std::string(Name(o.coll)).c_str(), std::string(Name(o.type)).c_str(),
                std::string(Name(o.op)).c_str(), "size", "count", "type", "redop", "time", "algbw",
                "busbw", "#wrong", "(B)", "(elements)", "", "", "(us)", "(GB/s)", "(GB/s)", "");
  return buf;
}

std::string FormatPerfRow(const PerfOptions& o, const PerfRow& row) {
  char buf[256];
  char wrong[32];
  if (row.wrong < 0) {
    std::snprintf(wrong, sizeof(wrong), "N/A");
  } else {
    std::snprintf(wrong, sizeof(wrong), "%" PRId64, row.wrong);
  }
  std::snprintf(buf, sizeof(buf), " %13" PRIu64 " %13" PRIu64 " %8s %6s %10.1f %8.3f %8.3f %8s\n",
                row.bytes, row.count, std::string(Name(o.type)).c_str(),
                std::string(Name(o.op)).c_str(), row.time_us, row.algbw_gbs, row.busbw_gbs, wrong);
  return buf;
}

std::string PerfJson(const PerfOptions& o, const PerfResult& res) {
  std::string s = "{\"ccl\":\"" + o.ccl + "\",\"collective\":\"" + std::string(Name(o.coll)) +
                  "\",\"type\":\"" + std::string(Name(o.type)) + "\",\"op\":\"" +
                  std::string(Name(o.op)) + "\",\"ranks\":" + std::to_string(res.world_size) +
                  ",\"rows\":[";
  for (size_t i = 0; i < res.rows.size(); ++i) {
    const PerfRow& r = res.rows[i];
    char buf[256];
    std::snprintf(buf, sizeof(buf),
                  "%s{\"bytes\":%" PRIu64 ",\"count\":%" PRIu64
                  ",\"time_us\":%.3f,\"algbw_gbs\":%.6f,\"busbw_gbs\":%.6f,\"wrong\":%" PRId64 "}",
                  i ? "," : "", r.bytes, r.count, r.time_us, r.algbw_gbs, r.busbw_gbs, r.wrong);
    s += buf;
  }
  return s + "]}";
}

}  // namespace fl::ccl
