#include "ccl_under_test/ftccl/ftccl.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ccl_under_test/ftccl/cuda/cuda_reduce.h"
#include "ccl_under_test/ftccl/ftccl_plugin.h"
#include "ccl_under_test/ftccl/host_reduce.h"
#include "ccl_under_test/ftccl/transport/tcp/tcp_transport.h"
#include "common/log.h"
#include "common/units.h"

namespace fl::ccl::ftccl {
namespace {

// Completion cookies: what completed, in which step, which slice.
enum CookieKind : uint64_t {
  kSendDone = 1,
  kRsRecv0 = 2,
  kRsRecv1 = 3,
  kAgRecv = 4,
  kPlainRecv = 5
};
uint64_t Cookie(CookieKind k, uint32_t step, uint32_t slice) {
  return static_cast<uint64_t>(k) << 56 | static_cast<uint64_t>(step) << 24 | slice;
}
CookieKind KindOf(uint64_t c) { return static_cast<CookieKind>(c >> 56); }
uint32_t StepOf(uint64_t c) { return static_cast<uint32_t>((c >> 24) & 0xffffffff); }
uint32_t SliceOf(uint64_t c) { return static_cast<uint32_t>(c & 0xffffff); }

int Mod(int a, int n) { return ((a % n) + n) % n; }

constexpr char kAlgorithms[] = "auto, ring, hier";

// The ranks as hosts x local ranks, for the hierarchical AllReduce: equal numbers of ranks
// (>= 2) on each of >= 2 hosts, by the host ids the ranks published. Hosts are ordered by
// their lowest rank, the ranks of a host by rank: every rank computes the same layout.
struct HostLayout {
  int hosts = 0;
  int local = 0;
  std::vector<std::vector<int>> ranks;  // [host][local index]
  std::vector<int> host_of, local_of;   // per rank
  // The ranks of every host listen on the same NICs. Not so in a rail-per-rank placement
  // (each rank on its own NIC): there the hierarchical rings run rail by rail, and a rank
  // that loses its NIC could only be reached through two relays (its host's rank on another
  // rail, then the peer's host's rank on that rail); the engine relays one hop, so the
  // default keeps the flat ring there.
  bool shared_nics = false;
  // 2(H-1) ring steps and H each for the partners' two exchanges must fit the tags.
  bool usable() const {
    return hosts >= 2 && local >= 2 && 4 * static_cast<uint32_t>(hosts) - 2 <= kMaxSteps;
  }
};

// "ip:port" -> "ip", sorted.
std::vector<std::string> NicIps(std::vector<std::string> addrs) {
  for (auto& a : addrs) a = a.substr(0, a.rfind(':'));
  std::sort(addrs.begin(), addrs.end());
  return addrs;
}

HostLayout MakeHostLayout(const std::vector<std::string>& ids,
                          const std::vector<std::vector<std::string>>& nics) {
  HostLayout l;
  std::vector<std::string> order;
  for (const std::string& id : ids) {
    if (id.empty()) return {};
    if (std::find(order.begin(), order.end(), id) == order.end()) order.push_back(id);
  }
  l.ranks.resize(order.size());
  l.host_of.resize(ids.size());
  l.local_of.resize(ids.size());
  for (size_t r = 0; r < ids.size(); ++r) {
    const int h = static_cast<int>(std::find(order.begin(), order.end(), ids[r]) - order.begin());
    l.host_of[r] = h;
    l.local_of[r] = static_cast<int>(l.ranks[h].size());
    l.ranks[h].push_back(static_cast<int>(r));
  }
  for (const auto& host : l.ranks) {
    if (host.size() != l.ranks[0].size()) return {};
  }
  l.hosts = static_cast<int>(l.ranks.size());
  l.local = l.hosts ? static_cast<int>(l.ranks[0].size()) : 0;
  l.shared_nics = true;
  for (const auto& host : l.ranks) {
    for (int r : host) l.shared_nics &= NicIps(nics[r]) == NicIps(nics[host[0]]);
  }
  return l;
}

class FtcclCommunicator : public Communicator {
 public:
  FtcclCommunicator(std::unique_ptr<Engine> engine, std::string algorithm)
      : engine_(std::move(engine)),
        layout_(MakeHostLayout(engine_->HostIds(), engine_->NicAddrs())),
        algorithm_(std::move(algorithm)) {}

  int rank() const override { return engine_->rank(); }
  int size() const override { return engine_->size(); }
  std::string name() const override { return "ftccl"; }

  Status AllReduce(const void* send, void* recv, size_t count, DataType type, ReduceOp op,
                   const CollectiveOptions& opts) override {
    const size_t es = SizeOf(type);
    bool hier = false;
    const std::string& algorithm = opts.algorithm.empty() ? algorithm_ : opts.algorithm;
    if (algorithm == "hier") {
      if (!layout_.usable()) {
        return InvalidArgumentError(
            "ftccl: algorithm 'hier' needs >= 2 hosts (at most 1024) with the same number (>= 2) "
            "of ranks each");
      }
      hier = true;
    } else if (algorithm == "auto") {
      hier = layout_.usable() && layout_.shared_nics;
    } else if (algorithm != "ring") {
      return InvalidArgumentError("ftccl: unknown algorithm '" + algorithm + "' (" +
                                  std::string(kAlgorithms) + ")");
    }
    return Run(
        opts, {{send, count * es}}, {{recv, count * es}}, [&](char* const* in, char* const* out) {
          if (hier && !dev_out_ && count > 0) {
            return Hier(out[0], in[0] != out[0] ? in[0] : nullptr, count, es, type, op);
          }
          std::vector<size_t> off = EvenSegments(count);
          if (!dev_out_ || count == 0) {
            // Out of place: the reduce-scatter reads the input where it would have read a
            // copy of it (one pass over the buffer less).
            if (size() == 1 && in[0] != out[0] && count) std::memcpy(out[0], in[0], count * es);
            return Ring(out[0], in[0] != out[0] ? in[0] : nullptr, off, es, type, op,
                        /*rs=*/true, /*ag=*/true, nullptr);
          }
          if (in[0] != out[0]) std::memcpy(out[0], in[0], count * es);
          // Device buffers: the user's output buffer is the accumulator, reduced by
          // the CUDA kernel; the host copy carries the bytes over the network.
          FL_RETURN_IF_ERROR(CudaCopyToDevice(dev_out_, out[0], count * es));
          const size_t scratch_bytes = std::min(count * es, SliceElems(off[1] - off[0], es) * es);
          FL_ASSIGN_OR_RETURN(void* scratch, CudaAlloc(scratch_bytes));
          DeviceReduce dev{dev_out_, static_cast<char*>(scratch)};
          Status st = Ring(out[0], nullptr, off, es, type, op, /*rs=*/true, /*ag=*/true, &dev);
          CudaFree(scratch);
          return st;
        });
  }

  Status AllGather(const void* send, void* recv, size_t count, DataType type,
                   const CollectiveOptions& opts) override {
    const size_t es = SizeOf(type);
    const int n = size();
    return Run(opts, {{send, count * es}}, {{recv, count * es * n}},
               [&](char* const* in, char* const* out) {
                 char* dst = out[0] + static_cast<size_t>(rank()) * count * es;
                 if (count && dst != in[0]) std::memmove(dst, in[0], count * es);
                 return Ring(out[0], nullptr, BlockSegments(count), es, type, ReduceOp::kSum, false,
                             true, nullptr);
               });
  }

  Status ReduceScatter(const void* send, void* recv, size_t count, DataType type, ReduceOp op,
                       const CollectiveOptions& opts) override {
    const size_t es = SizeOf(type);
    const int n = size();
    return Run(opts, {{send, count * es * n}}, {{recv, count * es}},
               [&](char* const* in, char* const* out) {
                 if (work_.size() < count * es * n) work_.resize(count * es * n);
                 if (count) std::memcpy(work_.data(), in[0], count * es * n);
                 FL_RETURN_IF_ERROR(Ring(work_.data(), nullptr, BlockSegments(count), es, type, op,
                                         true, false, nullptr));
                 if (count)
                   std::memcpy(out[0], work_.data() + static_cast<size_t>(rank()) * count * es,
                               count * es);
                 return OkStatus();
               });
  }

  Status Broadcast(void* buf, size_t count, DataType type, int root,
                   const CollectiveOptions& opts) override {
    if (root < 0 || root >= size()) return InvalidArgumentError("broadcast: root out of range");
    const size_t es = SizeOf(type);
    return Run(opts, {}, {{buf, count * es}},
               [&](char* const*, char* const* out) { return Chain(out[0], count * es, root); });
  }

  Status AllToAll(const void* send, void* recv, size_t count, DataType type,
                  const CollectiveOptions& opts) override {
    const size_t es = SizeOf(type);
    const int n = size();
    return Run(opts, {{send, count * es * n}}, {{recv, count * es * n}},
               [&](char* const* in, char* const* out) {
                 const char* src = in[0];
                 if (src == out[0]) {  // in place: the blocks we send are overwritten
                   work_.assign(src, src + count * es * n);
                   src = work_.data();
                 }
                 return Direct(src, out[0], count * es);
               });
  }

  Status Barrier(const CollectiveOptions& opts) override {
    int32_t one = 1, sum = 0;
    CollectiveOptions o = opts;
    o.memory = MemoryKind::kHost;
    return AllReduce(&one, &sum, 1, DataType::kInt32, ReduceOp::kSum, o);
  }

  Status GetAsyncError() override { return engine_->error(); }
  EngineStats stats() const { return engine_->stats(); }
  void Abort() override { engine_->Abort(); }

 private:
  struct Buf {
    const void* ptr;
    size_t bytes;
  };
  // AllReduce on device buffers: acc is the device copy of the buffer being reduced (the
  // user's output); scratch holds one received slice on the device.
  struct DeviceReduce {
    char* acc;
    char* scratch;
  };

  // Segment offsets (in elements) of a buffer of count elements split over the ranks, the
  // remainder spread over the first segments.
  std::vector<size_t> EvenSegments(size_t count) const {
    const int n = size();
    std::vector<size_t> off(n + 1);
    for (int k = 0; k <= n; ++k) off[k] = k * (count / n) + std::min<size_t>(k, count % n);
    return off;
  }
  std::vector<size_t> BlockSegments(size_t count) const {
    std::vector<size_t> off(size() + 1);
    for (int k = 0; k <= size(); ++k) off[k] = k * count;
    return off;
  }
  // Slices of at most chunk_bytes, and at least two per segment down to kMinSliceBytes: with
  // a single slice per segment a ring step cannot start before the previous one has fully
  // arrived, so every step pays the hand-off from the engine to the reduction and back
  // while the link idles (4 MiB AllReduce over 8 ranks: one 512 KiB slice per step). Smaller
  // slices than that cost more per byte than they gain (64 KiB: 1 MiB AllReduce 20% slower).
  static constexpr size_t kMinSliceBytes = 256 * 1024;
  size_t SliceElems(size_t max_seg, size_t es) const {
    const size_t chunk = engine_->options().chunk_bytes;
    const size_t half = std::max(kMinSliceBytes, (max_seg * es + 1) / 2);
    size_t s = std::max<size_t>(1, std::min(chunk, half) / es);
    if ((max_seg + s - 1) / s > kMaxSlices) s = (max_seg + kMaxSlices - 1) / kMaxSlices;
    return s;
  }

  // Common frame of every collective: sequence number, events, deadline, CUDA staging, and
  // cleanup after a failure (no posted buffer is touched after we return).
  template <typename F>
  Status Run(const CollectiveOptions& opts, std::vector<Buf> ins, std::vector<Buf> outs, F body) {
    FL_RETURN_IF_ERROR(engine_->error());
    const uint64_t seq = ++seq_;
    engine_->EmitCollective(EventType::kCollectiveBegin, seq, "");
    deadline_ = Deadline::After(opts.timeout);
    coll_ = seq;
    std::vector<std::vector<char>> staged_in, staged_out;
    std::vector<char*> in_ptrs, out_ptrs;
    Status s;
    if (opts.memory == MemoryKind::kCuda) {
      if (!CudaBuilt()) {
        s = FailedPreconditionError("ftccl built without CUDA: device buffers not supported");
      }
      for (auto& b : ins) {
        if (!s.ok()) break;
        staged_in.emplace_back(b.bytes);
        if (b.bytes) s = CudaCopyToHost(staged_in.back().data(), b.ptr, b.bytes);
        in_ptrs.push_back(staged_in.back().data());
      }
      for (auto& b : outs) {
        if (!s.ok()) break;
        staged_out.emplace_back(b.bytes);
        // Broadcast (no input) reads its buffer: stage it in too.
        if (b.bytes && ins.empty()) s = CudaCopyToHost(staged_out.back().data(), b.ptr, b.bytes);
        out_ptrs.push_back(staged_out.back().data());
      }
      // In-place calls stay in place on the host copy.
      for (size_t i = 0; i < ins.size() && i < outs.size(); ++i) {
        if (ins[i].ptr == outs[i].ptr) in_ptrs[i] = out_ptrs[i];
      }
    } else {
      for (auto& b : ins) in_ptrs.push_back(const_cast<char*>(static_cast<const char*>(b.ptr)));
      for (auto& b : outs) out_ptrs.push_back(const_cast<char*>(static_cast<const char*>(b.ptr)));
    }
    dev_out_ = opts.memory == MemoryKind::kCuda && !outs.empty()
                   ? static_cast<char*>(const_cast<void*>(outs[0].ptr))
                   : nullptr;
    if (s.ok()) s = body(in_ptrs.data(), out_ptrs.data());
    dev_out_ = nullptr;
    if (s.ok() && opts.memory == MemoryKind::kCuda) {
      for (size_t i = 0; i < outs.size() && s.ok(); ++i) {
        if (outs[i].bytes)
          s = CudaCopyToDevice(const_cast<void*>(outs[i].ptr), out_ptrs[i], outs[i].bytes);
      }
    }
    if (!s.ok()) {
      if (s.code() == Code::kDeadlineExceeded) {
        std::string dump = engine_->DumpState();
        engine_->EmitCollective(EventType::kHangDump, seq, dump);
        FL_LOG(kError, "ftccl") << "collective " << seq
                                << " timed out; what each channel waits for:\n"
                                << dump;
        s = DeadlineExceededError("ftccl: collective " + std::to_string(seq) + " timed out after " +
                                  FormatDuration(opts.timeout) + "; state:\n" + dump);
        engine_->Fail(s);
      } else if (engine_->error().ok()) {
        engine_->Fail(s);
      }
      engine_->CancelAll();
    }
    engine_->EmitCollective(EventType::kCollectiveEnd, seq, s.ok() ? "ok" : s.ToString());
    return s;
  }

  // Pipelined ring over buf split into segments off[k]..off[k+1] (elements of es bytes).
  //   rs: reduce-scatter: after n-1 steps rank r holds the reduction of segment r;
  //   ag: all-gather: rank r's segment r travels to every rank.
  //   src: the reduce-scatter's own contribution when it is not already in buf (out-of-place
  //        AllReduce, host buffers): step 0 sends from it and each received slice is reduced
  //        with it into buf. nullptr = buf holds it.
  Status Ring(char* buf, const char* src, const std::vector<size_t>& off, size_t es, DataType type,
              ReduceOp op, bool rs, bool ag, const DeviceReduce* dev) {
    const int n = size();
    const int r = rank();
    if (n == 1) return OkStatus();
    const int prev = Mod(r - 1, n), next = Mod(r + 1, n);
    size_t max_seg = 0;
    for (int k = 0; k < n; ++k) max_seg = std::max(max_seg, off[k + 1] - off[k]);
    const size_t se = SliceElems(max_seg, es);
    auto seg_len = [&](int k) { return off[k + 1] - off[k]; };
    auto nslices = [&](int k) { return static_cast<uint32_t>((seg_len(k) + se - 1) / se); };
    auto slice_ptr = [&](int k, uint32_t j) { return buf + (off[k] + j * se) * es; };
    auto slice_bytes = [&](int k, uint32_t j) { return std::min(se, seg_len(k) - j * se) * es; };
    const uint32_t steps = static_cast<uint32_t>(n - 1);
    // Segment indices per step (see docs/ftccl.md for why these line up).
    auto rs_send = [&](uint32_t s) { return Mod(r - static_cast<int>(s) - 1, n); };
    auto rs_recv = [&](uint32_t s) { return Mod(r - static_cast<int>(s) - 2, n); };
    auto ag_send = [&](uint32_t t) { return Mod(r - static_cast<int>(t), n); };
    auto ag_recv = [&](uint32_t t) { return Mod(r - static_cast<int>(t) - 1, n); };
    const uint32_t max_slices = static_cast<uint32_t>((max_seg + se - 1) / se);
    size_t sends_posted = 0, sends_done = 0, recvs_expected = 0, recvs_done = 0;

    auto src_ptr = [&](int k, uint32_t j) { return src + (off[k] + j * se) * es; };
    auto send = [&](uint32_t step, int seg, uint32_t j) {
      const char* from = src && step == 0 ? src_ptr(seg, j) : slice_ptr(seg, j);
      engine_->PostSend(next, MakeTag(coll_, step, j), from, slice_bytes(seg, j),
                        Cookie(kSendDone, step, j));
      ++sends_posted;
    };
    if (!dev) {
      // Host buffers: every step runs on the engine thread the moment its slice arrives
      // (Engine::Arrival): a reduce-scatter slice is reduced with our own contribution into
      // buf and sent on, an all-gather slice lands in buf and is sent on. All receives are
      // posted up front; this thread only counts completions.
      size_t sends_expected = 0;
      auto then_send = [&](Arrival& a, uint32_t step, uint32_t j) {
        a.to = next;
        a.tag = MakeTag(coll_, step, j);
        a.send_cookie = Cookie(kSendDone, step, j);
        ++sends_expected;
      };
      if (rs) {
        for (uint32_t s = 0; s < steps; ++s) {
          const int seg = rs_recv(s);
          for (uint32_t j = 0; j < nslices(seg); ++j) {
            Arrival a;
            a.reduce = true;
            a.out = slice_ptr(seg, j);
            a.own = src ? src_ptr(seg, j) : nullptr;
            a.type = type;
            a.op = op;
            if (s + 1 < steps) {
              then_send(a, s + 1, j);
            } else if (ag) {
              then_send(a, steps, j);  // ag_send(0) == rs_recv(steps - 1) == r
            }
            engine_->PostRecv(prev, MakeTag(coll_, s, j), nullptr, slice_bytes(seg, j),
                              Cookie(kRsRecv0, s, j), a);
            ++recvs_expected;
          }
        }
      }
      if (ag) {
        for (uint32_t t = 0; t < steps; ++t) {
          const int seg = ag_recv(t);
          for (uint32_t j = 0; j < nslices(seg); ++j) {
            Arrival a;
            a.out = slice_ptr(seg, j);
            if (t + 1 < steps) then_send(a, steps + t + 1, j);
            engine_->PostRecv(prev, MakeTag(coll_, steps + t, j), slice_ptr(seg, j),
                              slice_bytes(seg, j), Cookie(kAgRecv, t, j), a);
            ++recvs_expected;
          }
        }
      }
      const uint32_t first = rs ? 0 : steps;
      const int first_seg = rs ? rs_send(0) : ag_send(0);
      for (uint32_t j = 0; j < nslices(first_seg); ++j) send(first, first_seg, j);
      return AwaitCompletions(recvs_expected, sends_expected + sends_posted);
    }
    // Device buffers: the reductions run here, through the CUDA kernel.
    // Reduce-scatter receives go to staging, two slots per slice: slice j of the next step
    // that has one is posted as soon as a slot frees up. (Segments may differ by one slice, so
    // a slice can be missing in some steps.)
    std::vector<uint32_t> next_rs(max_slices, 0);
    auto slot_ptr = [&](uint32_t slot, uint32_t j) {
      return staging_.data() + (static_cast<size_t>(slot) * max_slices + j) * se * es;
    };
    auto post_next_rs = [&](uint32_t j, uint32_t slot) {
      while (next_rs[j] < steps && j >= nslices(rs_recv(next_rs[j]))) ++next_rs[j];
      if (next_rs[j] >= steps) return;
      uint32_t s = next_rs[j]++;
      engine_->PostRecv(prev, MakeTag(coll_, s, j), slot_ptr(slot, j), slice_bytes(rs_recv(s), j),
                        Cookie(slot ? kRsRecv1 : kRsRecv0, s, j));
    };
    if (rs) {
      // Grow only: a small collective in between (a barrier, a stop flag) must not make the
      // next large one zero-fill its staging again.
      const size_t need = 2 * static_cast<size_t>(max_slices) * se * es;
      if (staging_.size() < need) staging_.resize(need);
      for (uint32_t s = 0; s < steps; ++s) recvs_expected += nslices(rs_recv(s));
      for (uint32_t j = 0; j < max_slices; ++j) {
        post_next_rs(j, 0);
        post_next_rs(j, 1);
      }
      for (uint32_t j = 0; j < nslices(rs_send(0)); ++j) send(0, rs_send(0), j);
    }
    if (ag) {
      for (uint32_t t = 0; t < steps; ++t) {
        int seg = ag_recv(t);
        for (uint32_t j = 0; j < nslices(seg); ++j) {
          engine_->PostRecv(prev, MakeTag(coll_, steps + t, j), slice_ptr(seg, j),
                            slice_bytes(seg, j), Cookie(kAgRecv, t, j));
        }
        recvs_expected += nslices(seg);
      }
      if (!rs) {
        for (uint32_t j = 0; j < nslices(ag_send(0)); ++j) send(steps, ag_send(0), j);
      }
    }
    bool detached = false;
    while (recvs_done < recvs_expected || sends_done < sends_posted) {
      DetachWhenReceived(recvs_done == recvs_expected, sends_done < sends_posted, &detached);
      FL_ASSIGN_OR_RETURN(Completion c, engine_->WaitCompletion(deadline_));
      const uint32_t step = StepOf(c.cookie), j = SliceOf(c.cookie);
      switch (KindOf(c.cookie)) {
        case kSendDone:
          ++sends_done;
          break;
        case kRsRecv0:
        case kRsRecv1: {
          ++recvs_done;
          const uint32_t slot = KindOf(c.cookie) == kRsRecv1 ? 1 : 0;
          int seg = rs_recv(step);
          // Staging plus a reduction kernel: the received slice goes up, is reduced into the
          // device buffer, and the result comes back to be sent on.
          {
            const size_t at = static_cast<size_t>(slice_ptr(seg, j) - buf);
            const size_t bytes = slice_bytes(seg, j);
            FL_RETURN_IF_ERROR(CudaCopyToDevice(dev->scratch, slot_ptr(slot, j), bytes));
            FL_RETURN_IF_ERROR(
                CudaReduceInPlace(dev->acc + at, dev->scratch, bytes / es, type, op, nullptr));
            FL_RETURN_IF_ERROR(CudaStreamSync(nullptr));
            FL_RETURN_IF_ERROR(CudaCopyToHost(slice_ptr(seg, j), dev->acc + at, bytes));
          }
          if (step + 1 < steps) {
            send(step + 1, seg, j);
          } else if (ag) {
            send(steps, seg, j);  // ag_send(0) == rs_recv(steps - 1) == r
          }
          post_next_rs(j, slot);
          break;
        }
        case kAgRecv: {
          ++recvs_done;
          if (step + 1 < steps) send(steps + step + 1, ag_recv(step), j);
          break;
        }
        default:
          return InternalError("ftccl: unexpected completion");
      }
    }
    return OkStatus();
  }

  // Hierarchical AllReduce on host buffers (layout_ usable), for ranks that share hosts: the
  // buffer is split into one part per local index i. Each rank
  //   A. sends its contribution to part q to the partner of its host with local index q, and
  //      reduces what its partners send of its own part i (host-local channels);
  //   B. runs the pipelined ring AllReduce over part i with the ranks of local index i on the
  //      other hosts (one ring per local index, side by side on the NICs);
  //   C. sends the final part i to its partners and receives theirs.
  // Each host puts 2(H-1)/H of the buffer on its NICs instead of the flat ring's 2(n-1)/n
  // (H hosts, n ranks). Everything runs on the engine thread as slices arrive: a slice of
  // part i is sent on once the ring's partial sum and every partner's contribution are in
  // (ArrivalJoin), so A and C overlap the ring slice by slice.
  Status Hier(char* buf, const char* src, size_t count, size_t es, DataType type, ReduceOp op) {
    const int H = layout_.hosts, L = layout_.local;
    const int me = rank(), hi = layout_.host_of[me], li = layout_.local_of[me];
    const int next = layout_.ranks[Mod(hi + 1, H)][li], prev = layout_.ranks[Mod(hi - 1, H)][li];
    const uint32_t steps = static_cast<uint32_t>(H - 1);
    // off[i][k]: first element of segment k of part i (off[i][H] = end of part i).
    std::vector<std::vector<size_t>> off(L, std::vector<size_t>(H + 1));
    size_t max_seg = 0;
    for (int i = 0; i < L; ++i) {
      const size_t begin = i * (count / L) + std::min<size_t>(i, count % L);
      const size_t len = count / L + (static_cast<size_t>(i) < count % L ? 1 : 0);
      for (int k = 0; k <= H; ++k) off[i][k] = begin + k * (len / H) + std::min<size_t>(k, len % H);
      for (int k = 0; k < H; ++k) max_seg = std::max(max_seg, off[i][k + 1] - off[i][k]);
    }
    const size_t se = SliceElems(max_seg, es);
    auto nslices = [&](int i, int k) {
      return static_cast<uint32_t>((off[i][k + 1] - off[i][k] + se - 1) / se);
    };
    auto at = [&](int i, int k, uint32_t j) { return (off[i][k] + j * se) * es; };
    auto bytes = [&](int i, int k, uint32_t j) {
      return std::min(se, off[i][k + 1] - off[i][k] - j * se) * es;
    };
    // Steps in tags: ring reduce-scatter 0..steps-1, ring all-gather steps..2*steps-1, then
    // A (part, segment k) and C, one step per segment.
    auto tag_a = [&](int k, uint32_t j) { return MakeTag(coll_, 2 * steps + k, j); };
    auto tag_c = [&](int k, uint32_t j) { return MakeTag(coll_, 2 * steps + H + k, j); };
    auto rs_send0 = Mod(hi - 1, H);
    std::vector<int> partners;
    for (int q = 0; q < L; ++q)
      if (q != li) partners.push_back(layout_.ranks[hi][q]);

    // One join per slice of our part for the reduce-scatter (partners + the ring), one for
    // the all-gather. Built in full before anything is posted: the engine may run an
    // arrival at once, and joins_ must not move while it can.
    uint32_t per_seg = 0;
    for (int k = 0; k < H; ++k) per_seg = std::max(per_seg, nslices(li, k));
    joins_.assign(2 * static_cast<size_t>(H) * per_seg, ArrivalJoin{});
    auto rs_join = [&](int k, uint32_t j) -> ArrivalJoin& { return joins_[k * per_seg + j]; };
    auto ag_join = [&](int k, uint32_t j) -> ArrivalJoin& {
      return joins_[(H + k) * static_cast<size_t>(per_seg) + j];
    };
    size_t sends = 0, recvs = 0;
    auto add_send = [&](ArrivalJoin& jn, int to, uint64_t tag) {
      jn.sends.push_back({to, tag, Cookie(kSendDone, 0, 0)});
      ++sends;
    };
    auto to_partners = [&](ArrivalJoin& jn, int k, uint32_t j) {
      for (int q : partners) add_send(jn, q, tag_c(k, j));
    };
    for (int k = 0; k < H; ++k) {
      // The ring step that receives segment k (none for the one we send first).
      const uint32_t s = static_cast<uint32_t>(Mod(hi - k - 2, H));
      for (uint32_t j = 0; j < nslices(li, k); ++j) {
        ArrivalJoin& rj = rs_join(k, j);
        rj.expected = L - 1;
        if (k == rs_send0) {
          add_send(rj, next, MakeTag(coll_, 0, j));
        } else {
          rj.expected += 1;
          if (s + 1 < steps) {
            add_send(rj, next, MakeTag(coll_, s + 1, j));
          } else {  // k == hi: final here; on to the ring's all-gather and our partners
            add_send(rj, next, MakeTag(coll_, steps, j));
            to_partners(rj, k, j);
          }
        }
        if (k != hi) {
          // The all-gather brings segment k in at step t = hi - k - 1.
          const uint32_t t = static_cast<uint32_t>(Mod(hi - k - 1, H));
          ArrivalJoin& aj = ag_join(k, j);
          if (t + 1 < steps) add_send(aj, next, MakeTag(coll_, steps + t + 1, j));
          to_partners(aj, k, j);
        }
      }
    }
    auto reduce_into = [&](int k, uint32_t j) {
      Arrival a;
      a.reduce = true;
      a.out = buf + at(li, k, j);
      a.own = src ? src + at(li, k, j) : nullptr;
      a.type = type;
      a.op = op;
      a.join = &rs_join(k, j);
      return a;
    };
    for (int k = 0; k < H; ++k) {
      for (uint32_t j = 0; j < nslices(li, k); ++j) {
        const size_t len = bytes(li, k, j);
        for (int q : partners) {  // A: partners' contributions to our part
          engine_->PostRecv(q, tag_a(k, j), nullptr, len, Cookie(kRsRecv0, 0, j),
                            reduce_into(k, j));
          ++recvs;
        }
        if (k != rs_send0) {  // the ring's partial sum
          const uint32_t s = static_cast<uint32_t>(Mod(hi - k - 2, H));
          engine_->PostRecv(prev, MakeTag(coll_, s, j), nullptr, len, Cookie(kRsRecv0, s, j),
                            reduce_into(k, j));
          ++recvs;
        }
        if (k != hi) {  // the ring's final segment
          const uint32_t t = static_cast<uint32_t>(Mod(hi - k - 1, H));
          Arrival a;
          a.out = buf + at(li, k, j);
          a.join = &ag_join(k, j);
          engine_->PostRecv(prev, MakeTag(coll_, steps + t, j), a.out, len, Cookie(kAgRecv, t, j),
                            a);
          ++recvs;
        }
      }
    }
    for (int q = 0; q < L; ++q) {  // C: the partners' final parts
      if (q == li) continue;
      const int from = layout_.ranks[hi][q];
      for (int k = 0; k < H; ++k) {
        for (uint32_t j = 0; j < nslices(q, k); ++j, ++recvs) {
          engine_->PostRecv(from, tag_c(k, j), buf + at(q, k, j), bytes(q, k, j),
                            Cookie(kPlainRecv, 0, j));
        }
      }
    }
    // A: our contribution to the partners' parts, segments in the order the partners' rings
    // need them (hi - 1 first, their step 0; they share our host index).
    const char* mine = src ? src : buf;
    for (int q = 0; q < L; ++q) {
      if (q == li) continue;
      const int to = layout_.ranks[hi][q];
      for (int d = 1; d <= H; ++d) {
        const int k = Mod(hi - d, H);
        for (uint32_t j = 0; j < nslices(q, k); ++j, ++sends) {
          engine_->PostSend(to, tag_a(k, j), mine + at(q, k, j), bytes(q, k, j),
                            Cookie(kSendDone, 0, j));
        }
      }
    }
    return AwaitCompletions(recvs, sends);
  }

  // The end of a collective that needs no per-message work from this thread (the host ring,
  // AllToAll): asleep until everything has arrived, then the sends still waiting for acks go
  // on from copies (Engine::DetachSends), and once more until every send is done.
  Status AwaitCompletions(size_t recvs, size_t sends) {
    size_t recvs_done = 0, sends_done = 0;
    FL_RETURN_IF_ERROR(engine_->WaitCounts(recvs, 0, &recvs_done, &sends_done, deadline_));
    if (sends_done < sends) engine_->DetachSends();
    return engine_->WaitCounts(recvs, sends, &recvs_done, &sends_done, deadline_);
  }

  // The same for loops that handle each completion: once everything has arrived, the caller
  // goes on to the next collective instead of idling the links for an ack round trip through
  // their queues.
  void DetachWhenReceived(bool all_received, bool sends_pending, bool* detached) {
    if (*detached || !all_received || !sends_pending) return;
    engine_->DetachSends();
    *detached = true;
  }

  // Pipelined chain from root through the ring order (Broadcast).
  Status Chain(char* buf, size_t bytes, int root) {
    const int n = size();
    if (n == 1 || bytes == 0) return OkStatus();
    const int r = rank();
    const int pos = Mod(r - root, n);
    const int prev = Mod(r - 1, n), next = Mod(r + 1, n);
    const size_t sb = engine_->options().chunk_bytes;
    const uint32_t slices = static_cast<uint32_t>((bytes + sb - 1) / sb);
    if (slices > kMaxSlices) return InvalidArgumentError("broadcast: message too large");
    auto len = [&](uint32_t j) { return std::min(sb, bytes - j * sb); };
    size_t sends_posted = 0, sends_done = 0, recvs_done = 0;
    const bool forward = pos < n - 1;
    if (pos == 0) {
      for (uint32_t j = 0; j < slices; ++j, ++sends_posted) {
        engine_->PostSend(next, MakeTag(coll_, 0, j), buf + j * sb, len(j),
                          Cookie(kSendDone, 0, j));
      }
    } else {
      for (uint32_t j = 0; j < slices; ++j) {
        engine_->PostRecv(prev, MakeTag(coll_, 0, j), buf + j * sb, len(j),
                          Cookie(kPlainRecv, 0, j));
      }
    }
    const size_t recvs_expected = pos == 0 ? 0 : slices;
    bool detached = false;
    while (recvs_done < recvs_expected || sends_done < sends_posted) {
      DetachWhenReceived(recvs_done == recvs_expected, sends_done < sends_posted, &detached);
      FL_ASSIGN_OR_RETURN(Completion c, engine_->WaitCompletion(deadline_));
      uint32_t j = SliceOf(c.cookie);
      if (KindOf(c.cookie) == kSendDone) {
        ++sends_done;
      } else {
        ++recvs_done;
        if (forward) {
          engine_->PostSend(next, MakeTag(coll_, 0, j), buf + j * sb, len(j),
                            Cookie(kSendDone, 0, j));
          ++sends_posted;
        }
      }
    }
    return OkStatus();
  }

  // Every rank sends block j to rank j directly (AllToAll).
  Status Direct(const char* send, char* recv, size_t block) {
    const int n = size();
    const int r = rank();
    if (block) std::memcpy(recv + r * block, send + r * block, block);
    if (n == 1 || block == 0) return OkStatus();
    const size_t sb = engine_->options().chunk_bytes;
    const uint32_t slices = static_cast<uint32_t>((block + sb - 1) / sb);
    if (slices > kMaxSlices) return InvalidArgumentError("alltoall: message too large");
    auto len = [&](uint32_t j) { return std::min(sb, block - j * sb); };
    size_t recvs = 0, sends = 0;
    for (int d = 1; d < n; ++d) {
      int from = Mod(r - d, n);
      for (uint32_t j = 0; j < slices; ++j, ++recvs) {
        engine_->PostRecv(from, MakeTag(coll_, 0, j), recv + from * block + j * sb, len(j),
                          Cookie(kPlainRecv, 0, j));
      }
    }
    for (int d = 1; d < n; ++d) {
      int to = Mod(r + d, n);
      for (uint32_t j = 0; j < slices; ++j, ++sends) {
        engine_->PostSend(to, MakeTag(coll_, 0, j), send + to * block + j * sb, len(j),
                          Cookie(kSendDone, 0, j));
      }
    }
    return AwaitCompletions(recvs, sends);
  }

  // The hierarchical AllReduce's joins: kept here so that they outlive the collective until
  // Run's CancelAll after a failure, and declared before engine_ so that they outlive the
  // engine thread too.
  std::vector<ArrivalJoin> joins_;
  std::unique_ptr<Engine> engine_;
  const HostLayout layout_;      // from engine_: declared after it
  const std::string algorithm_;  // for calls that name none
  uint64_t seq_ = 0;
  uint64_t coll_ = 0;
  Deadline deadline_ = Deadline::Never();
  std::vector<char> staging_;
  std::vector<char> work_;
  char* dev_out_ = nullptr;  // the user's device output buffer during a kCuda collective
};

}  // namespace

std::optional<EngineStats> GetStats(const Communicator& comm) {
  auto* f = dynamic_cast<const FtcclCommunicator*>(&comm);
  if (!f) return std::nullopt;
  return f->stats();
}

FtcclOptions FtcclOptionsFrom(const OptionValues& v, FtcclOptions o) {
  EngineOptions& e = o.engine;
  e.chunk_bytes = v.Bytes("chunk_bytes").value_or(e.chunk_bytes);
  e.window_bytes = v.Bytes("window_bytes").value_or(e.window_bytes);
  e.channels_per_nic = static_cast<int>(v.Int("channels_per_nic").value_or(e.channels_per_nic));
  e.keepalive_interval = v.Duration("keepalive_ms").value_or(e.keepalive_interval);
  e.dead_timeout = v.Duration("dead_timeout_ms").value_or(e.dead_timeout);
  e.peer_dead_timeout = v.Duration("peer_dead_ms").value_or(e.peer_dead_timeout);
  if (auto h = v.Text("host_id")) e.host_id = *h == "none" ? "" : *h;
  o.algorithm = v.Text("algorithm").value_or(o.algorithm);
  return o;
}

StatusOr<std::unique_ptr<Communicator>> CreateFtcclCommunicator(const CommConfig& config,
                                                                const FtcclOptions& options) {
  auto transport = options.transport;
  if (!transport) {
    transport::tcp::TcpOptions tcp;
    tcp.user_timeout = std::max<Nanos>(options.engine.dead_timeout * 4, kNsPerSec);
    transport = transport::tcp::CreateTcpTransport(tcp);
  }
  if (options.algorithm != "auto" && options.algorithm != "ring" && options.algorithm != "hier") {
    return InvalidArgumentError("ftccl: unknown algorithm '" + options.algorithm + "' (" +
                                kAlgorithms + ")");
  }
  FL_ASSIGN_OR_RETURN(auto engine,
                      Engine::Create(config, transport, options.engine, options.host_transport));
  return std::unique_ptr<Communicator>(
      std::make_unique<FtcclCommunicator>(std::move(engine), options.algorithm));
}

Status RegisterFtccl(CclRegistry& registry) {
  const CclPlugin& p = FtcclPlugin();
  return registry.Register(
      p.name,
      [](const CommConfig& config) {
        FtcclOptions base;
        base.engine.host_id = "auto";  // host-local channels and relay between ranks of one host
        return CreateFtcclCommunicator(config, FtcclOptionsFrom(config.options, base));
      },
      p.options);
}

}  // namespace fl::ccl::ftccl
