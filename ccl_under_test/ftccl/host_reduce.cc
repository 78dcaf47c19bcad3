#include "ccl_under_test/ftccl/host_reduce.h"

#include <algorithm>
#include <bit>
#include <cmath>

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
  return std::bit_cast<float>(bits);
}

uint16_t FloatToHalf(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) return sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0);
  if (absx >= 0x477ff000u) return sign | 0x7c00u;  // overflow to infinity
  if (absx < 0x38800000u) {                        // subnormal or zero
    const float a = std::bit_cast<float>(absx);
    return sign | static_cast<uint16_t>(std::nearbyint(a * 16777216.0f));  // 2^24
  }
  uint32_t mant_odd = (absx >> 13) & 1u;
  absx += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round to nearest even
  return sign | static_cast<uint16_t>(absx >> 13);
}

float BFloat16ToFloat(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

uint16_t FloatToBFloat16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
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

// The same with a separate output: d[i] = f(a[i], b[i]).
template <typename T, typename F>
void Loop3(void* dst, const void* a, const void* b, size_t n, F f) {
  T* __restrict d = static_cast<T*>(dst);
  const T* __restrict x = static_cast<const T*>(a);
  const T* __restrict y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) d[i] = f(x[i], y[i]);
}

// In place (a == nullptr: d = f(d, b)) or out of place.
template <typename T, typename F>
void Run(void* dst, const void* a, const void* b, size_t n, F f) {
  if (a == nullptr) {
    Loop<T>(dst, b, n, f);
  } else {
    Loop3<T>(dst, a, b, n, f);
  }
}

template <typename T>
void Typed(void* dst, const void* a, const void* b, size_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      Run<T>(dst, a, b, n, [](T x, T y) { return static_cast<T>(x + y); });
      break;
    case ReduceOp::kMax:
      Run<T>(dst, a, b, n, [](T x, T y) { return x > y ? x : y; });
      break;
    case ReduceOp::kMin:
      Run<T>(dst, a, b, n, [](T x, T y) { return x < y ? x : y; });
      break;
  }
}

template <float (*ToF)(uint16_t), uint16_t (*FromF)(float)>
void Half(void* dst, const void* a, const void* b, size_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      Run<uint16_t>(dst, a, b, n, [](uint16_t x, uint16_t y) { return FromF(ToF(x) + ToF(y)); });
      break;
    case ReduceOp::kMax:
      Run<uint16_t>(dst, a, b, n, [](uint16_t x, uint16_t y) { return ToF(x) >= ToF(y) ? x : y; });
      break;
    case ReduceOp::kMin:
      Run<uint16_t>(dst, a, b, n, [](uint16_t x, uint16_t y) { return ToF(x) <= ToF(y) ? x : y; });
      break;
  }
}

// a == nullptr: dst = op(dst, b).
void Reduce(void* dst, const void* a, const void* b, size_t count, DataType type, ReduceOp op) {
  switch (type) {
    case DataType::kFloat32:
      Typed<float>(dst, a, b, count, op);
      break;
    case DataType::kInt32:
      Typed<int32_t>(dst, a, b, count, op);
      break;
    case DataType::kInt64:
      Typed<int64_t>(dst, a, b, count, op);
      break;
    case DataType::kFloat16:
      Half<HalfToFloat, FloatToHalf>(dst, a, b, count, op);
      break;
    case DataType::kBFloat16:
      Half<BFloat16ToFloat, FloatToBFloat16>(dst, a, b, count, op);
      break;
  }
}

}  // namespace

void HostReduce(void* dst, const void* src, size_t count, DataType type, ReduceOp op) {
  Reduce(dst, nullptr, src, count, type, op);
}

void HostReduce3(void* dst, const void* a, const void* b, size_t count, DataType type,
                 ReduceOp op) {
  Reduce(dst, a, b, count, type, op);
}

double ReduceScalar(double a, double b, ReduceOp op) {
  return op == ReduceOp::kSum ? a + b : op == ReduceOp::kMax ? std::max(a, b) : std::min(a, b);
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
