// ftccl's wire frames (frame.h): what encodes decodes to the same frame, and a truncated or
// corrupt frame is an InvalidArgument error, never a crash or a read past the buffer.
#include "ccl_under_test/ftccl/frame.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <string>

namespace fl::ccl::ftccl::frame {
namespace {

TEST_CASE("ftccl frames: the header layout is 32 bytes, as on the wire", "[unit]") {
  CHECK(kHeaderBytes == 32);
  FrameHeader h = MakeHeader(kData, 5, 7, 9, 11, kFlagRelayed);
  std::string b = EncodeFrame(h, "hello");
  REQUIRE(b.size() == 37);
  uint32_t magic;
  uint16_t type, flags;
  uint32_t len, aux;
  uint64_t seq, tag;
  std::memcpy(&magic, b.data(), 4);
  std::memcpy(&type, b.data() + 4, 2);
  std::memcpy(&flags, b.data() + 6, 2);
  std::memcpy(&len, b.data() + 8, 4);
  std::memcpy(&aux, b.data() + 12, 4);
  std::memcpy(&seq, b.data() + 16, 8);
  std::memcpy(&tag, b.data() + 24, 8);
  CHECK(magic == 0x46544343);
  CHECK(type == 2);
  CHECK(flags == 2);
  CHECK(len == 5);
  CHECK(aux == 7);
  CHECK(seq == 9);
  CHECK(tag == 11);
  CHECK(b.substr(32) == "hello");
}

TEST_CASE("ftccl frames: every frame type round-trips, with what follows left alone", "[unit]") {
  for (FrameType t : {kHello, kData, kAck, kPing, kPathDown, kBye, kProbe, kProbeAck}) {
    CAPTURE(static_cast<int>(t));
    const bool carries = t == kData || t == kProbe;
    const std::string payload = carries ? std::string("payload\0bytes", 13) : "";
    FrameHeader h = MakeHeader(t, carries ? 13 : 4242, 3, 1ull << 40, 77, kFlagForward);
    const std::string wire = EncodeFrame(h, payload) + "next frame";
    auto f = DecodeFrame(wire);
    REQUIRE(f.ok());
    CHECK(f->size == kHeaderBytes + payload.size());
    CHECK(f->payload == payload);
    CHECK(f->header.type == t);
    CHECK(f->header.len == h.len);  // kHello: the generation, not a payload length
    CHECK(f->header.aux == 3);
    CHECK(f->header.seq == (1ull << 40));
    CHECK(f->header.tag == 77);
    CHECK(f->header.flags == kFlagForward);
    CHECK(wire.substr(f->size) == "next frame");
  }
}

TEST_CASE("ftccl frames: a truncated frame is an error at every length", "[unit]") {
  const std::string wire = EncodeFrame(MakeHeader(kData, 100, 0, 1, 2), std::string(100, 'x'));
  for (size_t n = 0; n < wire.size(); ++n) {
    CAPTURE(n);
    auto f = DecodeFrame(std::string_view(wire).substr(0, n));
    REQUIRE_FALSE(f.ok());
    CHECK(f.status().code() == Code::kInvalidArgument);
    CHECK(f.status().message().find("truncated") != std::string::npos);
  }
  CHECK(DecodeFrame(wire).ok());
}

TEST_CASE("ftccl frames: bad magic, unknown types and oversized payloads are refused", "[unit]") {
  FrameHeader h = MakeHeader(kAck, 0, 0, 5, 0);
  CHECK(CheckHeader(h).ok());
  FrameHeader bad = h;
  bad.magic ^= 1;
  CHECK(CheckHeader(bad).message() == "bad frame magic");
  for (uint16_t t : {0, 9, 0xffff}) {
    bad = h;
    bad.type = t;
    Status s = CheckHeader(bad);
    CHECK(s.code() == Code::kInvalidArgument);
    CHECK(s.message().find("unknown frame type") != std::string::npos);
  }
  bad = MakeHeader(kData, kMaxPayload + 1, 0, 1, 0);
  CHECK(CheckHeader(bad).code() == Code::kInvalidArgument);
  CHECK(CheckHeader(MakeHeader(kData, kMaxPayload, 0, 1, 0)).ok());
  CHECK(CheckHeader(MakeHeader(kProbe, kMaxPayload + 1, 0, 1, 0)).message().find("probe frame") !=
        std::string::npos);
  // A control frame's len is not a payload length: a hello with a large generation is fine.
  CHECK(CheckHeader(MakeHeader(kHello, 0xffffffffu, 0, 1, 2)).ok());
  auto f = DecodeFrame(EncodeFrame(bad) + std::string(64, '\0'));
  CHECK(f.status().code() == Code::kInvalidArgument);
}

TEST_CASE("ftccl frames: corrupted bytes decode to an error or to a frame that re-encodes the same",
          "[unit]") {
  const std::string good = EncodeFrame(MakeHeader(kData, 40, 1, 2, 3), std::string(40, 'y'));
  std::mt19937 rng(7);
  int errors = 0, decoded = 0;
  for (int i = 0; i < 5000; ++i) {
    std::string b = good;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) b[rng() % b.size()] = static_cast<char>(rng());
    b.resize(rng() % (b.size() + 1));
    auto f = DecodeFrame(b);
    if (!f.ok()) {
      CHECK(f.status().code() == Code::kInvalidArgument);
      ++errors;
      continue;
    }
    ++decoded;
    REQUIRE(f->size <= b.size());
    CHECK(EncodeFrame(f->header, f->payload) == b.substr(0, f->size));
  }
  CHECK(errors > 0);
  CHECK(decoded > 0);
}

}  // namespace
}  // namespace fl::ccl::ftccl::frame
