#include "workloads/data.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace fl::workloads {
namespace {

uint16_t FloatToHalf(float f) {
  // Exact for the small non-negative integers used here (< 2048).
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = (x >> 13) & 0x3ff;
  if (f == 0.0f) return static_cast<uint16_t>(sign);
  if (exp <= 0) return static_cast<uint16_t>(sign);  // not used: values are integers >= 1
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7c00);
  return static_cast<uint16_t>(sign | (static_cast<uint32_t>(exp) << 10) | mant);
}

float HalfToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t x;
  if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {  // subnormal
      float v = std::ldexp(static_cast<float>(mant), -24);
      return sign ? -v : v;
    }
  } else if (exp == 31) {
    x = sign | 0x7f800000u | (mant << 13);
  } else {
    x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t FloatToBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return static_cast<uint16_t>(x >> 16);  // exact for integers <= 256
}

float Bf16ToFloat(uint16_t b) {
  uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

}  // namespace

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
  switch (t) {
    case ccl::DataType::kFloat32:
      static_cast<float*>(buf)[i] = static_cast<float>(v);
      break;
    case ccl::DataType::kFloat16:
      static_cast<uint16_t*>(buf)[i] = FloatToHalf(static_cast<float>(v));
      break;
    case ccl::DataType::kBFloat16:
      static_cast<uint16_t*>(buf)[i] = FloatToBf16(static_cast<float>(v));
      break;
    case ccl::DataType::kInt32:
      static_cast<int32_t*>(buf)[i] = static_cast<int32_t>(v);
      break;
    case ccl::DataType::kInt64:
      static_cast<int64_t*>(buf)[i] = static_cast<int64_t>(v);
      break;
  }
}

double Load(const void* buf, size_t i, ccl::DataType t) {
  switch (t) {
    case ccl::DataType::kFloat32:
      return static_cast<const float*>(buf)[i];
    case ccl::DataType::kFloat16:
      return HalfToFloat(static_cast<const uint16_t*>(buf)[i]);
    case ccl::DataType::kBFloat16:
      return Bf16ToFloat(static_cast<const uint16_t*>(buf)[i]);
    case ccl::DataType::kInt32:
      return static_cast<const int32_t*>(buf)[i];
    case ccl::DataType::kInt64:
      return static_cast<double>(static_cast<const int64_t*>(buf)[i]);
  }
  return 0;
}

void Fill(void* buf, size_t count, ccl::DataType t, int rank, uint64_t first_index,
          uint64_t iteration, uint32_t m) {
  for (size_t k = 0; k < count; ++k) Store(buf, k, t, Value(rank, first_index + k, iteration, m));
}

}  // namespace fl::workloads
