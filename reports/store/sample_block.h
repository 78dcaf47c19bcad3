// The sample_blocks codec (schema version 4): many samples of one run and one rank in one
// compact blob instead of one row each. TelemetryInserter (store.h) writes blocks with the
// encoder; Store::LoadRun and the fuzz target read them with the decoder.
//
// Thread-safety: an encoder is a value used by one thread; DecodeSampleBlock is reentrant.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "reports/store/records.h"

namespace fl::reports {

// The blob of one sample_blocks row (schema version 4): samples of one run and one rank, in
// the order added. Format byte 1, the count (4 bytes, little-endian), then per sample the
// zigzag varints of iteration, start_ns and bytes as deltas from the previous sample's (0
// before the first), of end_ns - start_ns, and one flags byte (1: verified, 2: mismatch).
// A sample of a steady stream (1 ms apart, 0.7 ms long, same size) costs 9 bytes, not a row.
class SampleBlockEncoder {
 public:
  void Add(const SampleRecord& s);
  size_t count() const { return count_; }
  int64_t first_iteration() const { return first_iteration_; }  // the smallest
  int64_t last_iteration() const { return last_iteration_; }    // the largest
  Nanos min_start_ns() const { return min_start_; }
  Nanos max_end_ns() const { return max_end_; }
  // The blob; valid until the next Add or Clear.
  std::span<const uint8_t> Bytes();
  void Clear();

 private:
  std::vector<uint8_t> buf_;
  size_t count_ = 0;
  int64_t prev_iteration_ = 0;
  Nanos prev_start_ = 0;
  uint64_t prev_bytes_ = 0;
  int64_t first_iteration_ = 0, last_iteration_ = 0;
  Nanos min_start_ = 0, max_end_ = 0;
};

// Appends the samples of a sample_blocks blob to out, with run_id and rank. DataLoss when
// the blob is malformed (truncated, unknown format, a count that does not match).
[[nodiscard]] Status DecodeSampleBlock(std::span<const uint8_t> blob, const std::string& run_id,
                                       int32_t rank, std::vector<SampleRecord>& out);

}  // namespace fl::reports
