// Broadcast (ftccl_comm.h): a pipelined chain from the root through the ring order.
#include "ccl_under_test/ftccl/ftccl_comm.h"

namespace fl::ccl::ftccl {

Status FtcclCommunicator::Chain(char* buf, size_t bytes, int root) {
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
      engine_->PostSend(next, MakeTag(coll_, 0, j), buf + j * sb, len(j), Cookie(kSendDone, 0, j));
    }
  } else {
    for (uint32_t j = 0; j < slices; ++j) {
      engine_->PostRecv(prev, MakeTag(coll_, 0, j), buf + j * sb, len(j), Cookie(kPlainRecv, 0, j));
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

}  // namespace fl::ccl::ftccl
