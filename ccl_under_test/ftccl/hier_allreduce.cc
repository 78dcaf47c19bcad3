// The hierarchical AllReduce (ftccl_comm.h): partners on a host exchange parts over the
// host-local channels, one ring per local index runs across the hosts.
#include "ccl_under_test/ftccl/ftccl_comm.h"

namespace fl::ccl::ftccl {

Status FtcclCommunicator::Hier(char* buf, const char* src, size_t count, size_t es, DataType type,
                               ReduceOp op) {
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
        engine_->PostRecv(q, tag_a(k, j), nullptr, len, Cookie(kRsRecv0, 0, j), reduce_into(k, j));
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
        engine_->PostRecv(prev, MakeTag(coll_, steps + t, j), a.out, len, Cookie(kAgRecv, t, j), a);
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

}  // namespace fl::ccl::ftccl
