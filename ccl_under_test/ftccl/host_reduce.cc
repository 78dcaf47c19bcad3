#include "ccl_under_test/ftccl/host_reduce.h"

#include <cmath>
#include <cstring>

namespace fl::ccl::ftccl {

float HalfToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t man = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        man <<= 1;
      } while ((man & 0x400u) == 0);
      bits = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (man & 0x3ffu) << 13;
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | man << 13;
  } else {
    bits = sign | (exp + 127 - 15) << 23 | man << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t FloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) return sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0);
  if (absx >= 0x477ff000u) return sign | 0x7c00u;  // overflow to infinity
  if (absx < 0x38800000u) {                        // subnormal or zero
    float a;
    std::memcpy(&a, &absx, 4);
    return sign | static_cast<uint16_t>(std::nearbyint(a * 16777216.0f));  // 2^24
  }
  uint32_t mant_odd = (absx >> 13) & 1u;
  absx += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round to nearest even
  return sign | static_cast<uint16_t>(absx >> 13);
}

float BFloat16ToFloat(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t FloatToBFloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

namespace {

// The collectives reduce every received byte once (7/8 of the buffer per rank and AllReduce
// with 8 ranks), so this loop is on the hot path: dst and src never overlap (a posted slice and
// a staging slot), and saying so with __restrict (plus -O3 for this file, see CMakeLists.txt)
// lets the compiler vectorise it. Element-wise, so the results are the scalar loop's exactly.
template <typename T, typename F>
void Loop(void* dst, const void* src, size_t n, F f) {
  T* __restrict d = static_cast<T*>(dst);
  const T* __restrict s = static_cast<const T*>(src);
  for (size_t i = 0; i < n; ++i) d[i] = f(d[i], s[i]);
}

template <typename T>
void Typed(void* dst, const void* src, size_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      Loop<T>(dst, src, n, [](T a, T b) { return static_cast<T>(a + b); });
      break;
    case ReduceOp::kMax:
      Loop<T>(dst, src, n, [](T a, T b) { return a > b ? a : b; });
      break;
    case ReduceOp::kMin:
      Loop<T>(dst, src, n, [](T a, T b) { return a < b ? a : b; });
      break;
  }
}

template <float (*ToF)(uint16_t), uint16_t (*FromF)(float)>
void Half(void* dst, const void* src, size_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      Loop<uint16_t>(dst, src, n, [](uint16_t a, uint16_t b) { return FromF(ToF(a) + ToF(b)); });
      break;
    case ReduceOp::kMax:
      Loop<uint16_t>(dst, src, n, [](uint16_t a, uint16_t b) { return ToF(a) >= ToF(b) ? a : b; });
      break;
    case ReduceOp::kMin:
      Loop<uint16_t>(dst, src, n, [](uint16_t a, uint16_t b) { return ToF(a) <= ToF(b) ? a : b; });
      break;
  }
}

}  // namespace

void HostReduce(void* dst, const void* src, size_t count, DataType type, ReduceOp op) {
  switch (type) {
    case DataType::kFloat32:
      Typed<float>(dst, src, count, op);
      break;
    case DataType::kInt32:
      Typed<int32_t>(dst, src, count, op);
      break;
    case DataType::kInt64:
      Typed<int64_t>(dst, src, count, op);
      break;
    case DataType::kFloat16:
      Half<HalfToFloat, FloatToHalf>(dst, src, count, op);
      break;
    case DataType::kBFloat16:
      Half<BFloat16ToFloat, FloatToBFloat16>(dst, src, count, op);
      break;
  }
}

double GetElement(const void* buf, size_t i, DataType t) {
  switch (t) {
    case DataType::kFloat32:
      return static_cast<const float*>(buf)[i];
    case DataType::kInt32:
      return static_cast<const int32_t*>(buf)[i];
    case DataType::kInt64:
      return static_cast<double>(static_cast<const int64_t*>(buf)[i]);
    case DataType::kFloat16:
      return HalfToFloat(static_cast<const uint16_t*>(buf)[i]);
    case DataType::kBFloat16:
      return BFloat16ToFloat(static_cast<const uint16_t*>(buf)[i]);
  }
  return 0;
}

void SetElement(void* buf, size_t i, DataType t, double v) {
  switch (t) {
    case DataType::kFloat32:
      static_cast<float*>(buf)[i] = static_cast<float>(v);
      break;
    case DataType::kInt32:
      static_cast<int32_t*>(buf)[i] = static_cast<int32_t>(v);
      break;
    case DataType::kInt64:
      static_cast<int64_t*>(buf)[i] = static_cast<int64_t>(v);
      break;
    case DataType::kFloat16:
      static_cast<uint16_t*>(buf)[i] = FloatToHalf(static_cast<float>(v));
      break;
    case DataType::kBFloat16:
      static_cast<uint16_t*>(buf)[i] = FloatToBFloat16(static_cast<float>(v));
      break;
  }
}

}  // namespace fl::ccl::ftccl
