#include "ccl_under_test/api/types.h"

#include <string>

#include "common/enum_names.h"

namespace fl::ccl {

size_t SizeOf(DataType type) {
  switch (type) {
    case DataType::kFloat32:
      return 4;
    case DataType::kFloat16:
      return 2;
    case DataType::kBFloat16:
      return 2;
    case DataType::kInt32:
      return 4;
    case DataType::kInt64:
      return 8;
  }
  return 0;
}

constexpr NamedValue<DataType> kDataTypeNames[] = {{DataType::kFloat32, "float32"},
                                                   {DataType::kFloat16, "float16"},
                                                   {DataType::kBFloat16, "bfloat16"},
                                                   {DataType::kInt32, "int32"},
                                                   {DataType::kInt64, "int64"}};

std::string_view Name(DataType type) { return NameIn(kDataTypeNames, type, "?"); }

constexpr NamedValue<ReduceOp> kReduceOpNames[] = {
    {ReduceOp::kSum, "sum"}, {ReduceOp::kMax, "max"}, {ReduceOp::kMin, "min"}};

std::string_view Name(ReduceOp op) { return NameIn(kReduceOpNames, op, "?"); }

constexpr NamedValue<Collective> kCollectiveNames[] = {
    {Collective::kAllReduce, "allreduce"},         {Collective::kAllGather, "allgather"},
    {Collective::kReduceScatter, "reducescatter"}, {Collective::kBroadcast, "broadcast"},
    {Collective::kAllToAll, "alltoall"},           {Collective::kBarrier, "barrier"}};

std::string_view Name(Collective coll) { return NameIn(kCollectiveNames, coll, "?"); }

StatusOr<DataType> ParseDataType(std::string_view n) {
  if (n == "float32" || n == "float" || n == "f32") return DataType::kFloat32;
  if (n == "float16" || n == "half" || n == "f16") return DataType::kFloat16;
  if (n == "bfloat16" || n == "bf16") return DataType::kBFloat16;
  if (n == "int32" || n == "int" || n == "i32") return DataType::kInt32;
  if (n == "int64" || n == "i64") return DataType::kInt64;
  return InvalidArgumentError("unknown data type '" + std::string(n) +
                              "' (float32, float16, bfloat16, int32, int64)");
}

StatusOr<ReduceOp> ParseReduceOp(std::string_view n) {
  if (n == "sum") return ReduceOp::kSum;
  if (n == "max") return ReduceOp::kMax;
  if (n == "min") return ReduceOp::kMin;
  return InvalidArgumentError("unknown reduction '" + std::string(n) + "' (sum, max, min)");
}

StatusOr<Collective> ParseCollective(std::string_view n) {
  std::string s;
  for (char c : n)
    if (c != '_' && c != '-') s.push_back(c);
  for (Collective c : {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
                       Collective::kBroadcast, Collective::kAllToAll, Collective::kBarrier}) {
    if (s == Name(c)) return c;
  }
  return InvalidArgumentError(
      "unknown collective '" + std::string(n) +
      "' (allreduce, allgather, reducescatter, broadcast, alltoall, barrier)");
}

double BusBandwidthFactor(Collective coll, int n) {
  if (n <= 1) return 1.0;
  switch (coll) {
    case Collective::kAllReduce:
      return 2.0 * (n - 1) / n;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll:
      return static_cast<double>(n - 1) / n;
    case Collective::kBroadcast:
    case Collective::kBarrier:
      return 1.0;
  }
  return 1.0;
}

}  // namespace fl::ccl
