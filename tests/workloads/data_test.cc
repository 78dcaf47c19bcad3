#include "workloads/data.h"

#include <catch2/catch.hpp>
#include <vector>

namespace fl::workloads {
namespace {

using ccl::DataType;

TEST_CASE("data: every type stores and loads the workload values exactly", "[unit]") {
  for (DataType t : {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16, DataType::kInt32,
                     DataType::kInt64}) {
    std::vector<unsigned char> buf(300 * ccl::SizeOf(t));
    for (uint32_t v = 0; v <= 256; ++v) {
      Store(buf.data(), v, t, v);
      INFO("type " << ccl::Name(t) << " value " << v);
      REQUIRE(Load(buf.data(), v, t) == static_cast<double>(v));
    }
  }
}

TEST_CASE("data: sums over ranks stay exact in bfloat16 for any world size", "[unit]") {
  for (int world : {1, 2, 3, 4, 8, 16, 64, 300}) {
    uint32_t m = ValueModulus(world);
    CHECK(m >= 2);
    uint32_t max_sum = 0;
    for (uint64_t i = 0; i < 200; ++i) max_sum = std::max(max_sum, ExpectedSum(world, i, 3, m));
    if (world <= 128) CHECK(max_sum <= 256);  // bfloat16 holds integers to 256 exactly
  }
  // the values differ across ranks, elements and iterations (a stale buffer would be caught)
  uint32_t m = ValueModulus(8);
  CHECK(Value(0, 0, 0, m) != Value(1, 0, 0, m));
  CHECK(Value(0, 0, 0, m) != Value(0, 1, 0, m));
  CHECK(Value(0, 0, 0, m) != Value(0, 0, 1, m));
}

}  // namespace
}  // namespace fl::workloads
