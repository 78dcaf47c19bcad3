// Deterministic workload data with closed-form expected results.
//
// Rank r's element i at iteration t is V(r, i, t) = (3r + 7i + 5t + 1) mod m, with
// m = max(2, min(64, 256 / world_size)), so the sum over ranks is below 256: exact in every
// supported type (bfloat16 holds integers up to 256 exactly).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "ccl_under_test/api/types.h"
#include "common/status.h"

namespace fl::workloads {

uint32_t ValueModulus(int world_size);
inline uint32_t Value(int rank, uint64_t index, uint64_t iteration, uint32_t m) {
  return static_cast<uint32_t>((3ull * rank + 7ull * index + 5ull * iteration + 1) % m);
}
// Sum over ranks 0..world-1 of Value(r, index, iteration, m).
uint32_t ExpectedSum(int world_size, uint64_t index, uint64_t iteration, uint32_t m);

// Writes value as element i of a buffer of type t.
void Store(void* buf, size_t i, ccl::DataType t, uint32_t value);
// Reads element i of a buffer of type t as a double (exact for the values used here).
double Load(const void* buf, size_t i, ccl::DataType t);

// Fills count elements with Value(rank, first_index + k, iteration, m).
void Fill(void* buf, size_t count, ccl::DataType t, int rank, uint64_t first_index,
          uint64_t iteration, uint32_t m);

}  // namespace fl::workloads
