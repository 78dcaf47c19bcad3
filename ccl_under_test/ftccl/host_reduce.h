// Host-memory reductions: dst[i] = op(dst[i], src[i]), or dst[i] = op(a[i], b[i]). float16/bfloat16
// are computed in float and rounded back (round to nearest even), as NCCL does on devices without
// native half arithmetic.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ccl_under_test/api/types.h"

namespace fl::ccl::ftccl {

void HostReduce(void* dst, const void* src, size_t count, DataType type, ReduceOp op);
// dst[i] = op(a[i], b[i]); dst must not overlap a or b (out-of-place AllReduce: output =
// own input op received slice, which saves copying the input to the output first).
void HostReduce3(void* dst, const void* a, const void* b, size_t count, DataType type, ReduceOp op);

// op(a, b) in double precision: what a reduction's result should be (for checks and test
// data).
double ReduceScalar(double a, double b, ReduceOp op);
// Element i of a buffer of `type`, as a double (for checks and test data).
double GetElement(const void* buf, size_t i, DataType type);
void SetElement(void* buf, size_t i, DataType type, double value);

float HalfToFloat(uint16_t h);
uint16_t FloatToHalf(float f);
float BFloat16ToFloat(uint16_t b);
uint16_t FloatToBFloat16(float f);

}  // namespace fl::ccl::ftccl
