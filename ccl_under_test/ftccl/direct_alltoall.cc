// AllToAll (ftccl_comm.h): every rank sends block j straight to rank j.
#include "ccl_under_test/ftccl/ftccl_comm.h"

namespace fl::ccl::ftccl {

Status FtcclCommunicator::Direct(const char* send, char* recv, size_t block) {
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

}  // namespace fl::ccl::ftccl
