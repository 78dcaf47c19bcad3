// Element types and reduction operators shared by every CCL behind the Communicator contract,
// and the byte counts of collectives (nccl-tests' algbw/busbw definitions).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/status.h"

namespace fl::ccl {

enum class DataType : uint8_t { kFloat32, kFloat16, kBFloat16, kInt32, kInt64 };
enum class ReduceOp : uint8_t { kSum, kMax, kMin };
enum class Collective : uint8_t {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kAllToAll,
  kBarrier
};

size_t SizeOf(DataType type);
std::string_view Name(DataType type);
std::string_view Name(ReduceOp op);
std::string_view Name(Collective coll);
StatusOr<DataType> ParseDataType(std::string_view name);      // "float32"/"float", "int32", ...
StatusOr<ReduceOp> ParseReduceOp(std::string_view name);      // "sum", "max", "min"
StatusOr<Collective> ParseCollective(std::string_view name);  // "allreduce", "all_reduce", ...

// nccl-tests' bus-bandwidth factor: busbw = algbw * factor for n ranks.
double BusBandwidthFactor(Collective coll, int n_ranks);

}  // namespace fl::ccl
