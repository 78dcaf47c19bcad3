// ftccl's wire frames: what the engine's channels carry, and their encoding.
//
// Every frame is a 32-byte header (host byte order: ranks of one job share an architecture),
// then, for kData and kProbe only, `len` payload bytes. A receiver checks each header (CheckHeader)
// before it acts on it; DecodeFrame takes a whole frame out of a buffer (tests, fuzzing, tools),
// and the engine reads headers and payloads straight off its sockets into the same layout.
// A header that fails the check is a protocol error: the engine fails the channel.
//
// Thread-safety: pure functions. Blocking: none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace fl::ccl::ftccl::frame {

inline constexpr uint32_t kMagic = 0x46544343;  // "FTCC"

// kProbe: a drained path's test load (path_health.h), `len` bytes the receiver discards
// before it answers kProbeAck with the same seq.
enum FrameType : uint16_t {
  kHello = 1,
  kData = 2,
  kAck = 3,
  kPing = 4,
  kPathDown = 5,
  kBye = 6,
  kProbe = 7,
  kProbeAck = 8,
};

// Relay through a rank of the same host (docs/ftccl.md, "Relay"). S has no working path to D
// and sends through R; acknowledgements are end to end (D's ack travels back through R).
enum FrameFlags : uint16_t {
  kFlagForward = 1,   // kData S->R: forward this chunk (S's sequence number) to rank aux
  kFlagRelayed = 2,   // kData R->D: a chunk of rank aux, forwarded; kAck D->R: its ack
  kFlagRelayAck = 4,  // kAck R->S: D's ack of our chunk to rank aux
};

struct FrameHeader {
  uint32_t magic;
  uint16_t type;
  uint16_t flags;
  uint32_t len;  // kData, kProbe: payload bytes; kHello: connection generation
  uint32_t aux;  // kHello: sender rank; kPathDown: channel index; relayed kData/kAck: a rank
  uint64_t seq;  // kData/kAck: chunk sequence; kHello: channel index; kPathDown: generation;
                 // kProbe/kProbeAck: probe id
  uint64_t tag;  // kData: message tag; kHello: world size
};
static_assert(sizeof(FrameHeader) == 32);
inline constexpr size_t kHeaderBytes = sizeof(FrameHeader);

// The largest payload a data frame may announce: chunk_bytes is at most 1 GiB (the option's
// bound), so a longer frame is corrupt (and would have the receiver allocate it).
inline constexpr uint32_t kMaxPayload = 1u << 30;

FrameHeader MakeHeader(FrameType type, uint32_t len, uint32_t aux, uint64_t seq, uint64_t tag,
                       uint16_t flags = 0);

// Whether a received header can be acted on: the magic, a known type, a data payload within
// kMaxPayload. InvalidArgument saying what is wrong otherwise. Ranks and channel indices in
// aux/seq are the engine's to check (it knows the world size).
[[nodiscard]] Status CheckHeader(const FrameHeader& h);

// Payload bytes that follow this header on the wire (len for kData and kProbe, else 0).
inline size_t PayloadBytes(const FrameHeader& h) {
  return h.type == kData || h.type == kProbe ? h.len : 0;
}

// Header and payload as the wire carries them. REQUIRES: payload.size() == PayloadBytes(h).
std::string EncodeFrame(const FrameHeader& h, std::string_view payload = {});

struct DecodedFrame {
  FrameHeader header{};
  std::string_view payload;  // points into the decoded buffer
  size_t size = 0;           // bytes of the buffer the frame took (header + payload)
};
// The frame at the start of `bytes` (which may hold more after it). InvalidArgument, saying
// how many bytes were there and how many the frame needs, for a truncated frame; the
// CheckHeader error for a bad header.
[[nodiscard]] StatusOr<DecodedFrame> DecodeFrame(std::string_view bytes);

}  // namespace fl::ccl::ftccl::frame
