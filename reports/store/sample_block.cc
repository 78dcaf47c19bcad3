#include "reports/store/sample_block.h"

#include <algorithm>

namespace fl::reports {

namespace {

constexpr uint8_t kSampleBlockFormat = 1;
constexpr size_t kSampleBlockHeader = 5;  // format byte + 4-byte count

// Differences are taken modulo 2^64 (no signed overflow) and zigzagged so that small
// negative steps stay short too.
uint64_t ZigZag(uint64_t delta) { return (delta << 1) ^ (0 - (delta >> 63)); }
uint64_t UnZigZag(uint64_t v) { return (v >> 1) ^ (0 - (v & 1)); }

void PutVarint(std::vector<uint8_t>& buf, uint64_t v) {
  while (v >= 0x80) {
    buf.push_back(static_cast<uint8_t>(v) | 0x80);
    v >>= 7;
  }
  buf.push_back(static_cast<uint8_t>(v));
}

bool GetVarint(const uint8_t*& p, const uint8_t* end, uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (p == end) return false;
    uint8_t b = *p++;
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;  // more than 10 bytes
}

}  // namespace

void SampleBlockEncoder::Add(const SampleRecord& s) {
  if (count_ == 0) {
    buf_.assign(kSampleBlockHeader, 0);
    first_iteration_ = last_iteration_ = s.iteration;
    min_start_ = s.start_ns;
    max_end_ = s.end_ns;
  } else {
    first_iteration_ = std::min(first_iteration_, s.iteration);
    last_iteration_ = std::max(last_iteration_, s.iteration);
    min_start_ = std::min(min_start_, s.start_ns);
    max_end_ = std::max(max_end_, s.end_ns);
  }
  const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
  PutVarint(buf_, ZigZag(u(s.iteration) - u(prev_iteration_)));
  PutVarint(buf_, ZigZag(u(s.start_ns) - u(prev_start_)));
  PutVarint(buf_, ZigZag(u(s.end_ns) - u(s.start_ns)));
  PutVarint(buf_, ZigZag(s.bytes - prev_bytes_));
  buf_.push_back(static_cast<uint8_t>((s.verified ? 1 : 0) | (s.mismatch ? 2 : 0)));
  prev_iteration_ = s.iteration;
  prev_start_ = s.start_ns;
  prev_bytes_ = s.bytes;
  ++count_;
}

std::span<const uint8_t> SampleBlockEncoder::Bytes() {
  if (count_ == 0) buf_.assign(kSampleBlockHeader, 0);
  buf_[0] = kSampleBlockFormat;
  for (size_t i = 0; i < 4; ++i) buf_[1 + i] = static_cast<uint8_t>(count_ >> (8 * i));
  return buf_;
}

void SampleBlockEncoder::Clear() {
  buf_.clear();
  count_ = 0;
  prev_iteration_ = 0;
  prev_start_ = 0;
  prev_bytes_ = 0;
}

Status DecodeSampleBlock(std::span<const uint8_t> blob, const std::string& run_id, int32_t rank,
                         std::vector<SampleRecord>& out) {
  auto bad = [&](std::string_view why) {
    return DataLossError("sample block of run " + run_id + " rank " + std::to_string(rank) + ": " +
                         std::string(why));
  };
  if (blob.size() < kSampleBlockHeader) return bad("shorter than its header");
  if (blob[0] != kSampleBlockFormat) {
    return bad("unknown format " + std::to_string(blob[0]) + " (newer faultline?)");
  }
  uint32_t count = 0;
  for (size_t i = 0; i < 4; ++i) count |= static_cast<uint32_t>(blob[1 + i]) << (8 * i);
  // Each sample takes at least 5 bytes: a count beyond that is corruption, not a reason to
  // reserve gigabytes.
  if (count > (blob.size() - kSampleBlockHeader) / 5) return bad("count exceeds its bytes");
  const uint8_t* p = blob.data() + kSampleBlockHeader;
  const uint8_t* end = blob.data() + blob.size();
  // Grow geometrically: an exact reserve per block would copy the whole run every block.
  if (out.capacity() < out.size() + count)
    out.reserve(std::max(out.size() + count, 2 * out.size()));
  uint64_t iteration = 0, start = 0, bytes = 0;
  for (uint32_t i = 0; i < count; ++i) {
    uint64_t d_iter, d_start, dur, d_bytes;
    if (!GetVarint(p, end, d_iter) || !GetVarint(p, end, d_start) || !GetVarint(p, end, dur) ||
        !GetVarint(p, end, d_bytes) || p == end) {
      return bad("truncated at sample " + std::to_string(i));
    }
    const uint8_t flags = *p++;
    if (flags > 3) return bad("bad flags at sample " + std::to_string(i));
    iteration += UnZigZag(d_iter);
    start += UnZigZag(d_start);
    bytes += UnZigZag(d_bytes);
    const uint64_t finish = start + UnZigZag(dur);
    out.push_back({run_id, rank, static_cast<int64_t>(iteration), static_cast<Nanos>(start),
                   static_cast<Nanos>(finish), bytes, (flags & 1) != 0, (flags & 2) != 0});
  }
  if (p != end) return bad("trailing bytes after " + std::to_string(count) + " samples");
  return OkStatus();
}

}  // namespace fl::reports
