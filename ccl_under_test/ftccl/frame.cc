#include "ccl_under_test/ftccl/frame.h"

#include <cstring>

namespace fl::ccl::ftccl::frame {

FrameHeader MakeHeader(FrameType type, uint32_t len, uint32_t aux, uint64_t seq, uint64_t tag,
                       uint16_t flags) {
  FrameHeader h{};
  h.magic = kMagic;
  h.type = type;
  h.flags = flags;
  h.len = len;
  h.aux = aux;
  h.seq = seq;
  h.tag = tag;
  return h;
}

Status CheckHeader(const FrameHeader& h) {
  if (h.magic != kMagic) return InvalidArgumentError("bad frame magic");
  if (h.type < kHello || h.type > kProbeAck) {
    return InvalidArgumentError("unknown frame type " + std::to_string(h.type));
  }
  if (PayloadBytes(h) > kMaxPayload) {
    return InvalidArgumentError(std::string(h.type == kData ? "data" : "probe") + " frame of " +
                                std::to_string(h.len) + " bytes (at most " +
                                std::to_string(kMaxPayload) + ")");
  }
  return OkStatus();
}

std::string EncodeFrame(const FrameHeader& h, std::string_view payload) {
  std::string out(kHeaderBytes + payload.size(), '\0');
  std::memcpy(out.data(), &h, kHeaderBytes);
  if (!payload.empty()) std::memcpy(out.data() + kHeaderBytes, payload.data(), payload.size());
  return out;
}

StatusOr<DecodedFrame> DecodeFrame(std::string_view bytes) {
  DecodedFrame f;
  if (bytes.size() < kHeaderBytes) {
    return InvalidArgumentError("ftccl frame: truncated header (" + std::to_string(bytes.size()) +
                                " of " + std::to_string(kHeaderBytes) + " bytes)");
  }
  std::memcpy(&f.header, bytes.data(), kHeaderBytes);
  Status s = CheckHeader(f.header);
  if (!s.ok()) return InvalidArgumentError("ftccl frame: " + s.message());
  const size_t payload = PayloadBytes(f.header);
  if (bytes.size() - kHeaderBytes < payload) {
    return InvalidArgumentError("ftccl frame: truncated payload (" +
                                std::to_string(bytes.size() - kHeaderBytes) + " of " +
                                std::to_string(payload) + " bytes)");
  }
  f.payload = bytes.substr(kHeaderBytes, payload);
  f.size = kHeaderBytes + payload;
  return f;
}

}  // namespace fl::ccl::ftccl::frame
