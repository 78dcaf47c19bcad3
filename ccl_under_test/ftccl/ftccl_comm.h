// ftccl's communicator (ftccl.h) inside: the class every collective is a method of, and what
// they share (completion cookies, the host layout, Run's common frame). Included by the
// collectives' files only:
//   ftccl.cc              the communicator's calls, Run, option parsing, registration
//   ring.cc               the pipelined ring: AllReduce, ReduceScatter, AllGather (host and
//                         device buffers)
//   hier_allreduce.cc     the hierarchical AllReduce (ranks that share hosts)
//   chain_broadcast.cc    Broadcast: a pipelined chain from the root
//   direct_alltoall.cc    AllToAll: every block straight to its rank
//
// Thread-safety: as Communicator (one user thread); arrival actions run on the engine thread.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "ccl_under_test/api/communicator.h"
#include "ccl_under_test/ftccl/cuda/cuda_reduce.h"
#include "ccl_under_test/ftccl/engine.h"
#include "ccl_under_test/ftccl/host_reduce.h"
#include "common/log.h"
#include "common/units.h"

namespace fl::ccl::ftccl {

// Completion cookies: what completed, in which step, which slice.
enum CookieKind : uint64_t {
  kSendDone = 1,
  kRsRecv0 = 2,
  kRsRecv1 = 3,
  kAgRecv = 4,
  kPlainRecv = 5
};
inline uint64_t Cookie(CookieKind k, uint32_t step, uint32_t slice) {
  return static_cast<uint64_t>(k) << 56 | static_cast<uint64_t>(step) << 24 | slice;
}
inline CookieKind KindOf(uint64_t c) { return static_cast<CookieKind>(c >> 56); }
inline uint32_t StepOf(uint64_t c) { return static_cast<uint32_t>((c >> 24) & 0xffffffff); }
inline uint32_t SliceOf(uint64_t c) { return static_cast<uint32_t>(c & 0xffffff); }

inline int Mod(int a, int n) { return ((a % n) + n) % n; }

inline constexpr char kAlgorithms[] = "auto, ring, hier";

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

// The layout of the ranks by their host ids and NIC addresses (Engine::HostIds, NicAddrs).
HostLayout MakeHostLayout(const std::vector<std::string>& ids,
                          const std::vector<std::vector<std::string>>& nics);

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
              ReduceOp op, bool rs, bool ag, const DeviceReduce* dev);

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
  Status Hier(char* buf, const char* src, size_t count, size_t es, DataType type, ReduceOp op);

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
  Status Chain(char* buf, size_t bytes, int root);

  // Every rank sends block j to rank j directly (AllToAll).
  Status Direct(const char* send, char* recv, size_t block);

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

}  // namespace fl::ccl::ftccl
