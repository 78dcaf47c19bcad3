#include "ccl_under_test/tools/perf.h"

#include <unistd.h>

#include <algorithm>
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
#include "common/enum_names.h"
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

// Rows kept in PerfResult (a -N 0 run goes on for hours; its summary needs only the sums).
constexpr size_t kMaxKeptRows = 1 << 16;

double Value(int rank, size_t i) {
  return static_cast<double>(static_cast<int64_t>((rank + 1) * 31 + i * 7) % 17) - 8;
}

void SetElem(void* buf, size_t i, DataType t, double v) { ftccl::SetElement(buf, i, t, v); }

double GetElem(const void* buf, size_t i, DataType t) { return ftccl::GetElement(buf, i, t); }

bool Reduces(Collective c) {
  return c == Collective::kAllReduce || c == Collective::kReduceScatter;
}

double Expected(const PerfOptions& o, ReduceOp op, int n, int r, size_t i, size_t block) {
  auto reduce = [&](size_t idx) {
    double acc = Value(0, idx);
    for (int k = 1; k < n; ++k) acc = ftccl::ReduceScalar(acc, Value(k, idx), op);
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
      return Value(o.root, i);
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
  char* ptr() { return static_cast<char*>(kind == MemoryKind::kCuda ? dev : host.data()); }
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

Shape ShapeFor(const PerfOptions& o, DataType type, uint64_t bytes, int n) {
  const size_t es = SizeOf(type);
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

// What one call reads and writes. Out of place: in -> out. In place, nccl-tests' layouts:
// AllReduce and AllToAll out -> out; AllGather sends its block where it lands in out;
// ReduceScatter receives into its own block of in. Broadcast (one buffer) and Barrier are the
// same call both ways.
struct Placement {
  const void* send;
  void* recv;
  Buffer* result;        // the buffer holding the result
  size_t result_offset;  // elements before the result in it
};

Placement Place(const PerfOptions& o, const Shape& s, DataType type, int r, bool in_place,
                Buffer& in, Buffer& out) {
  const size_t es = SizeOf(type);
  if (!in_place) return {in.ptr(), out.ptr(), &out, 0};
  switch (o.coll) {
    case Collective::kAllGather:
      return {out.ptr() + r * s.call_count * es, out.ptr(), &out, 0};
    case Collective::kReduceScatter:
      return {in.ptr(), in.ptr() + r * s.call_count * es, &in, r * s.call_count};
    default:
      return {out.ptr(), out.ptr(), &out, 0};
  }
}

Status Call(Communicator& c, const PerfOptions& o, const Shape& s, DataType type, ReduceOp op,
            const Placement& p, Buffer& out) {
  CollectiveOptions co;
  co.timeout = o.timeout;
  co.memory = o.memory;
  co.algorithm = o.algorithm;
  switch (o.coll) {
    case Collective::kAllReduce:
      return c.AllReduce(p.send, p.recv, s.call_count, type, op, co);
    case Collective::kAllGather:
      return c.AllGather(p.send, p.recv, s.call_count, type, co);
    case Collective::kReduceScatter:
      return c.ReduceScatter(p.send, p.recv, s.call_count, type, op, co);
    case Collective::kBroadcast:
      return c.Broadcast(out.ptr(), s.call_count, type, o.root, co);
    case Collective::kAllToAll:
      return c.AllToAll(p.send, p.recv, s.call_count, type, co);
    case Collective::kBarrier:
      return c.Barrier(co);
  }
  return InternalError("unknown collective");
}

std::string HostName() {
  char buf[256] = {};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  std::string h(buf);
  return h.substr(0, h.find('.'));
}

// nccl-tests' "#  Rank %2d Group %2d Pid %6d on %10s device %2d [0x%02x] %s", with the
// device as ftccl-perf uses it: "cpu" for host buffers, the CUDA device for --memory cuda.
std::string DeviceLine(int rank, MemoryKind memory) {
  char buf[512];
  char device[300];
  std::snprintf(device, sizeof(device), "cpu [host] host memory");
  if (memory == MemoryKind::kCuda) {
    auto devs = ftccl::CudaDevices();
    if (devs.empty()) {
      std::snprintf(device, sizeof(device), " ? [cuda] no CUDA device");
    } else {
      std::snprintf(device, sizeof(device), "%2d [cuda] %s", devs[0].index,
                    devs[0].name.substr(0, 200).c_str());
    }
  }
  std::snprintf(buf, sizeof(buf), "#  Rank %2d Group %2d Pid %6d on %10s device %s", rank, 0,
                static_cast<int>(getpid()), HostName().c_str(), device);
  return buf;
}

// Every rank's device line, on every rank, through the communicator (fixed 256-byte slots).
StatusOr<std::vector<std::string>> GatherDeviceLines(Communicator& c, MemoryKind memory,
                                                     Nanos timeout) {
  constexpr size_t kSlot = 256;
  const int n = c.size();
  std::vector<char> mine(kSlot, 0), all(kSlot * n, 0);
  std::string line = DeviceLine(c.rank(), memory);
  std::memcpy(mine.data(), line.data(), std::min(line.size(), kSlot - 1));
  CollectiveOptions host;
  host.timeout = timeout;
  FL_RETURN_IF_ERROR(
      c.AllGather(mine.data(), all.data(), kSlot / sizeof(int32_t), DataType::kInt32, host));
  std::vector<std::string> lines;
  for (int r = 0; r < n; ++r) {
    const char* slot = all.data() + r * kSlot;
    lines.emplace_back(slot, strnlen(slot, kSlot));
  }
  return lines;
}

std::vector<uint64_t> Sizes(const PerfOptions& o) {
  std::vector<uint64_t> sizes;
  for (uint64_t b = std::max<uint64_t>(o.min_bytes, 1); b <= o.max_bytes;
       b = o.factor > 1 ? b * o.factor : b + std::max<uint64_t>(1, o.step_bytes)) {
    sizes.push_back(b);
    if (sizes.size() > 100000) break;
  }
  return sizes;
}

// One rank's sweep. rows are filled on every rank with group-wide values (time: slowest rank,
// wrong: sum over ranks), reduced through the communicator itself, as nccl-tests does.
Status RankSweep(Communicator& c, const PerfOptions& o, PerfResult* result, std::ofstream* progress,
                 std::mutex* progress_mu, const std::function<void(const PerfRow&)>& on_row) {
  const int n = c.size(), r = c.rank();
  size_t largest = 0;
  for (DataType t : o.types) {
    Shape big = ShapeFor(o, t, o.max_bytes, n);
    largest = std::max(largest, std::max(big.in_elems, big.out_elems) * SizeOf(t));
  }
  Buffer in, out;
  FL_RETURN_IF_ERROR(in.Init(o.memory, largest));
  FL_RETURN_IF_ERROR(out.Init(o.memory, largest));
  CollectiveOptions host;
  host.timeout = o.timeout;
  const std::vector<uint64_t> sizes = Sizes(o);
  const std::vector<ReduceOp> ops =
      Reduces(o.coll) ? o.ops : std::vector<ReduceOp>{o.ops.empty() ? ReduceOp::kSum : o.ops[0]};
  bool stop = false;
  for (DataType type : o.types) {
    for (ReduceOp op : ops) {
      for (int cycle = 0; !stop && (o.run_cycles == 0 || cycle < o.run_cycles); ++cycle) {
        for (uint64_t bytes : sizes) {
          const size_t es = SizeOf(type);
          Shape s = ShapeFor(o, type, bytes, n);
          PerfRow row;
          row.bytes = s.count * es;
          row.count = s.count;
          row.type = type;
          row.op = op;
          row.cycle = cycle;
          const bool checking = o.check && o.coll != Collective::kBarrier;
          // One checked call: fresh inputs, poisoned outputs, every element compared.
          auto checked_call = [&](const Placement& p, bool in_place) -> StatusOr<int64_t> {
            std::memset(out.host.data(), 0x7f, std::max(s.in_elems, s.out_elems) * es);
            if (o.coll == Collective::kBroadcast) {
              for (size_t i = 0; i < s.out_elems; ++i)
                SetElem(out.host.data(), i, type, Value(r, i));
            } else if (!in_place || o.coll == Collective::kReduceScatter) {
              for (size_t i = 0; i < s.in_elems; ++i) SetElem(in.host.data(), i, type, Value(r, i));
            } else if (o.coll == Collective::kAllGather) {
              for (size_t i = 0; i < s.in_elems; ++i)
                SetElem(out.host.data(), r * s.call_count + i, type, Value(r, i));
            } else {
              for (size_t i = 0; i < s.in_elems; ++i)
                SetElem(out.host.data(), i, type, Value(r, i));
            }
            const size_t span = std::max(s.in_elems, s.out_elems) * es;
            FL_RETURN_IF_ERROR(in.Upload(span));
            FL_RETURN_IF_ERROR(out.Upload(span));
            FL_RETURN_IF_ERROR(Call(c, o, s, type, op, p, out));
            FL_RETURN_IF_ERROR(p.result->Download(span));
            int64_t w = 0;
            for (size_t i = 0; i < s.out_elems; ++i) {
              w += GetElem(p.result->host.data(), p.result_offset + i, type) !=
                   Expected(o, op, n, r, i, s.call_count);
            }
            return w;
          };
          int64_t elapsed[2] = {0, 0};
          int64_t wrong[2] = {0, 0};
          for (int half = 0; half < 2; ++half) {
            const bool in_place = half == 1;
            Placement p = Place(o, s, type, r, in_place, in, out);
            if (checking) {
              FL_ASSIGN_OR_RETURN(wrong[half], checked_call(p, in_place));
            }
            if (!in_place) {
              for (int i = 0; i < o.warmup; ++i)
                FL_RETURN_IF_ERROR(Call(c, o, s, type, op, p, out));
            } else if (!o.check_all) {
              // Repeated in-place reductions compound (a sum of sums); on zeros they stay
              // zeros, with no integer overflow and no float infinities in the timing.
              const size_t span = std::max(s.in_elems, s.out_elems) * es;
              std::memset(in.host.data(), 0, span);
              std::memset(out.host.data(), 0, span);
              FL_RETURN_IF_ERROR(in.Upload(span));
              FL_RETURN_IF_ERROR(out.Upload(span));
            }
            FL_RETURN_IF_ERROR(c.Barrier(host));
            Nanos t0 = MonoNowNs();
            for (int i = 0; i < o.iters; ++i) {
              if (checking && o.check_all) {
                FL_ASSIGN_OR_RETURN(int64_t w, checked_call(p, in_place));
                wrong[half] += w;
              } else {
                FL_RETURN_IF_ERROR(Call(c, o, s, type, op, p, out));
              }
              if (progress) {
                std::lock_guard<std::mutex> lock(*progress_mu);
                *progress << WallNowNs() << ' ' << r << ' ' << row.bytes << ' '
                          << (half * o.iters + i) << '\n';
                progress->flush();
              }
            }
            elapsed[half] = MonoNowNs() - t0;
          }
          // Slowest rank's times, and whether any rank was asked to stop (max); #wrong (sum).
          const bool stop_here = o.stop && o.stop->load();
          int64_t agg[3] = {elapsed[0], elapsed[1], stop_here ? 1 : 0};
          FL_RETURN_IF_ERROR(c.AllReduce(agg, agg, 3, DataType::kInt64, ReduceOp::kMax, host));
          FL_RETURN_IF_ERROR(c.AllReduce(wrong, wrong, 2, DataType::kInt64, ReduceOp::kSum, host));
          for (int half = 0; half < 2; ++half) {
            PerfHalf& h = half == 0 ? row.out_of_place : row.in_place;
            h.time_us = static_cast<double>(agg[half]) / 1000.0 / std::max(1, o.iters);
            h.algbw_gbs = h.time_us > 0 ? static_cast<double>(row.bytes) / (h.time_us * 1000.0) : 0;
            h.busbw_gbs = h.algbw_gbs * BusBandwidthFactor(o.coll, n);
            h.wrong = checking ? wrong[half] : -1;
          }
          ++result->row_count;
          for (const PerfHalf* h : {&row.out_of_place, &row.in_place}) {
            result->wrong_results += h->wrong > 0;
            result->busbw_sum += h->busbw_gbs;
          }
          if (result->rows.size() < kMaxKeptRows) result->rows.push_back(row);
          if (r == 0 && on_row) on_row(row);
          if (agg[2]) {
            stop = true;
            result->stopped = true;
            break;
          }
        }
      }
      if (stop) return OkStatus();
    }
  }
  return OkStatus();
}

}  // namespace

StatusOr<PerfResult> RunPerf(
    const PerfOptions& o, const std::function<void(const PerfRow&)>& on_row,
    const std::function<void(const std::vector<std::string>&)>& on_header) {
  if (o.min_bytes > o.max_bytes) return InvalidArgumentError("-b must not exceed -e");
  if (o.types.empty() || o.ops.empty()) return InvalidArgumentError("no data type or reduction");
  if (o.run_cycles < 0) return InvalidArgumentError("-N must be 0 (forever) or more");
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
    std::vector<PerfResult> results(n);
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
        auto lines = GatherDeviceLines(**comm, o.memory, o.timeout);
        if (!lines.ok()) {
          status[r] = lines.status();
          (*comm)->Abort();
          return;
        }
        if (r == 0 && on_header) on_header(*lines);
        status[r] = RankSweep(**comm, o, &results[r], progress.get(), &progress_mu, on_row);
        if (!status[r].ok()) (*comm)->Abort();
      });
    }
    for (auto& t : threads) t.join();
    for (int r = 0; r < n; ++r) {
      if (!status[r].ok()) return status[r].Prepend("rank " + std::to_string(r));
    }
    results[0].world_size = n;
    results[0].ccl = o.ccl;
    return results[0];
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
  auto lines = GatherDeviceLines(*comm, o.memory, o.timeout);
  if (!lines.ok()) {
    comm->Abort();
    return lines.status();
  }
  if (o.rank == 0 && on_header) on_header(*lines);
  Status s = RankSweep(*comm, o, &result, progress.get(), &progress_mu, on_row);
  if (!s.ok()) {
    comm->Abort();
    return s;
  }
  return result;
}

StatusOr<Collective> ParsePerfCollective(std::string_view name) {
  std::string_view n = name;
  if (n.size() > 5 && n.substr(n.size() - 5) == "_perf") n.remove_suffix(5);
  for (std::string_view missing :
       {"reduce", "sendrecv", "scatter", "gather", "hypercube", "alltoallv"}) {
    if (n == missing) {
      return InvalidArgumentError(
          "ftccl-perf has no " + std::string(name) +
          " (all_reduce_perf, all_gather_perf, reduce_scatter_perf, broadcast_perf, "
          "alltoall_perf, barrier)");
    }
  }
  auto c = ParseCollective(n);
  if (!c.ok()) {
    return InvalidArgumentError("unknown collective '" + std::string(name) +
                                "' (all_reduce_perf, all_gather_perf, reduce_scatter_perf, "
                                "broadcast_perf, alltoall_perf, barrier)");
  }
  return *c;
}

constexpr NamedValue<Collective> kPerfPrograms[] = {
    {Collective::kAllReduce, "all_reduce_perf"},
    {Collective::kAllGather, "all_gather_perf"},
    {Collective::kReduceScatter, "reduce_scatter_perf"},
    {Collective::kBroadcast, "broadcast_perf"},
    {Collective::kAllToAll, "alltoall_perf"},
    {Collective::kBarrier, "barrier"}};

std::string_view PerfProgramName(Collective coll) { return NameIn(kPerfPrograms, coll, "?"); }

constexpr NamedValue<DataType> kNcclTestsTypes[] = {{DataType::kFloat32, "float"},
                                                    {DataType::kFloat16, "half"},
                                                    {DataType::kBFloat16, "bfloat16"},
                                                    {DataType::kInt32, "int32"},
                                                    {DataType::kInt64, "int64"}};

std::string_view NcclTestsTypeName(DataType type) { return NameIn(kNcclTestsTypes, type, "?"); }

StatusOr<std::vector<DataType>> ParsePerfTypes(std::string_view name) {
  if (name == "all") {
    return std::vector<DataType>{DataType::kInt32, DataType::kInt64, DataType::kFloat16,
                                 DataType::kFloat32, DataType::kBFloat16};
  }
  auto t = ParseDataType(name);
  if (!t.ok()) {
    return InvalidArgumentError("data type '" + std::string(name) +
                                "' is not one ftccl-perf has (float, half, bfloat16, int32, "
                                "int64, all)");
  }
  return std::vector<DataType>{*t};
}

StatusOr<std::vector<ReduceOp>> ParsePerfOps(std::string_view name) {
  if (name == "all") return std::vector<ReduceOp>{ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin};
  auto op = ParseReduceOp(name);
  if (!op.ok()) {
    return InvalidArgumentError("reduction '" + std::string(name) +
                                "' is not one ftccl-perf has (sum, max, min, all)");
  }
  return std::vector<ReduceOp>{*op};
}

std::string PerfHeader(const PerfOptions& o, const std::vector<std::string>& devices) {
  char buf[1024];
  const bool factor = o.factor > 1;
  std::string out;
  std::snprintf(buf, sizeof(buf),
                "# nThread 1 nGpus 1 minBytes %" PRIu64 " maxBytes %" PRIu64 " step: %" PRIu64
                "(%s) warmup iters: %d iters: %d agg iters: 1 validation: %d graph: 0\n",
                o.min_bytes, o.max_bytes, factor ? o.factor : o.step_bytes,
                factor ? "factor" : "bytes", o.warmup, o.iters, o.check ? 1 : 0);
  out += buf;
  std::snprintf(buf, sizeof(buf), "# ftccl-perf %s: ccl %s, memory %s, run cycles %d%s\n",
                std::string(PerfProgramName(o.coll)).c_str(), o.ccl.c_str(),
                o.memory == MemoryKind::kCuda ? "cuda" : "host", o.run_cycles,
                o.run_cycles == 0 ? " (until SIGTERM/SIGINT)" : "");
  out += buf;
  out += "#\n# Using devices\n";
  for (const std::string& d : devices) out += d + "\n";
  out += "#\n";
  std::snprintf(buf, sizeof(buf),
                "# %10s  %12s  %8s  %6s  %6s           out-of-place                       "
                "in-place          \n",
                "", "", "", "", "");
  out += buf;
  std::snprintf(buf, sizeof(buf),
                "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n", "size",
                "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
                "algbw", "busbw", "#wrong");
  out += buf;
  std::snprintf(buf, sizeof(buf),
                "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n", "(B)",
                "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
                "(GB/s)", "");
  out += buf;
  return out;
}

namespace {
std::string FormatHalf(const PerfHalf& h) {
  char time[32], wrong[32], buf[128];
  if (h.time_us >= 10000.0) {
    std::snprintf(time, sizeof(time), "%7.0f", h.time_us);
  } else if (h.time_us >= 100.0) {
    std::snprintf(time, sizeof(time), "%7.1f", h.time_us);
  } else {
    std::snprintf(time, sizeof(time), "%7.2f", h.time_us);
  }
  if (h.wrong < 0) {
    std::snprintf(wrong, sizeof(wrong), "N/A");
  } else {
    std::snprintf(wrong, sizeof(wrong), "%g", static_cast<double>(h.wrong));
  }
  std::snprintf(buf, sizeof(buf), "  %7s  %6.2f  %6.2f  %5s", time, h.algbw_gbs, h.busbw_gbs,
                wrong);
  return buf;
}
}  // namespace

std::string FormatPerfRow(const PerfOptions& o, const PerfRow& row) {
  char buf[256];
  const bool rooted = o.coll == Collective::kBroadcast;
  std::snprintf(buf, sizeof(buf), "%12" PRIu64 "  %12" PRIu64 "  %8s  %6s  %6d", row.bytes,
                row.count, std::string(NcclTestsTypeName(row.type)).c_str(),
                Reduces(o.coll) ? std::string(Name(row.op)).c_str() : "none", rooted ? o.root : -1);
  return buf + FormatHalf(row.out_of_place) + FormatHalf(row.in_place) + "\n";
}

int64_t PerfWrongResults(const PerfResult& res) { return res.wrong_results; }

double PerfAvgBusbw(const PerfResult& res) {
  return res.row_count ? res.busbw_sum / (2.0 * static_cast<double>(res.row_count)) : 0;
}

std::string PerfSummary(const PerfResult& res, double min_busbw_gbs) {
  char buf[256];
  const int64_t wrong = PerfWrongResults(res);
  const double avg = PerfAvgBusbw(res);
  std::string out;
  std::snprintf(buf, sizeof(buf), "# Out of bounds values : %" PRId64 " %s\n", wrong,
                wrong ? "FAILED" : "OK");
  out += buf;
  std::snprintf(buf, sizeof(buf), "# Avg bus bandwidth    : %g %s\n", avg,
                min_busbw_gbs <= 0 ? "" : (avg < min_busbw_gbs * 0.9 ? "FAILED" : "OK"));
  out += buf;
  out += "#\n";
  return out;
}

std::string PerfJson(const PerfOptions& o, const PerfResult& res) {
  std::string s = "{\"ccl\":\"" + o.ccl + "\",\"collective\":\"" + std::string(Name(o.coll)) +
                  "\",\"ranks\":" + std::to_string(res.world_size) +
                  ",\"stopped\":" + (res.stopped ? "true" : "false") + ",\"rows\":[";
  for (size_t i = 0; i < res.rows.size(); ++i) {
    const PerfRow& r = res.rows[i];
    const PerfHalf& a = r.out_of_place;
    const PerfHalf& b = r.in_place;
    char buf[512];
    // The out-of-place half under the plain keys (as before in-place columns existed).
    std::snprintf(buf, sizeof(buf),
                  "%s{\"bytes\":%" PRIu64 ",\"count\":%" PRIu64
                  ",\"type\":\"%s\",\"op\":\"%s\",\"cycle\":%d"
                  ",\"time_us\":%.3f,\"algbw_gbs\":%.6f,\"busbw_gbs\":%.6f,\"wrong\":%" PRId64
                  ",\"in_place_time_us\":%.3f,\"in_place_algbw_gbs\":%.6f"
                  ",\"in_place_busbw_gbs\":%.6f,\"in_place_wrong\":%" PRId64 "}",
                  i ? "," : "", r.bytes, r.count, std::string(Name(r.type)).c_str(),
                  std::string(Name(r.op)).c_str(), r.cycle, a.time_us, a.algbw_gbs, a.busbw_gbs,
                  a.wrong, b.time_us, b.algbw_gbs, b.busbw_gbs, b.wrong);
    s += buf;
  }
  return s + "]}";
}

}  // namespace fl::ccl
