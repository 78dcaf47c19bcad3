#include "workloads/data.h"

#include "ccl_under_test/ftccl/host_reduce.h"

#include <algorithm>

namespace fl::workloads {

uint32_t ValueModulus(int world_size) {
  int w = std::max(1, world_size);
  return static_cast<uint32_t>(std::max(2, std::min(64, 256 / w)));
}

uint32_t ExpectedSum(int world_size, uint64_t index, uint64_t iteration, uint32_t m) {
  uint32_t s = 0;
  for (int r = 0; r < world_size; ++r) s += Value(r, index, iteration, m);
  return s;
}

void Store(void* buf, size_t i, ccl::DataType t, uint32_t v) {
  ccl::ftccl::SetElement(buf, i, t, static_cast<double>(v));
}

double Load(const void* buf, size_t i, ccl::DataType t) {
  return ccl::ftccl::GetElement(buf, i, t);
}

void Fill(void* buf, size_t count, ccl::DataType t, int rank, uint64_t first_index,
          uint64_t iteration, uint32_t m) {
  for (size_t k = 0; k < count; ++k) Store(buf, k, t, Value(rank, first_index + k, iteration, m));
}

}  // namespace fl::workloads
