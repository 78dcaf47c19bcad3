// The pipelined ring (ftccl_comm.h): the reduce-scatter and all-gather halves of AllReduce,
// ReduceScatter and AllGather alone, on host buffers (arrival actions on the engine thread)
// and on device buffers (CUDA reductions on this thread).
#include "ccl_under_test/ftccl/ftccl_comm.h"

namespace fl::ccl::ftccl {

Status FtcclCommunicator::Ring(char* buf, const char* src, const std::vector<size_t>& off,
                               size_t es, DataType type, ReduceOp op, bool rs, bool ag,
                               const DeviceReduce* dev) {
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

}  // namespace fl::ccl::ftccl
