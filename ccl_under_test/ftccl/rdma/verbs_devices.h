// The one place ftccl talks to libibverbs to enumerate devices. ibv_get_device_list() returns
// NULL on machines without an RDMA stack (and an empty list without devices): both are an
// empty result here, never an error.
#pragma once

#include <string>
#include <vector>

namespace fl::ccl::ftccl {

struct RdmaDeviceInfo {
  std::string name;       // "mlx5_0"
  std::string node_guid;  // hex
  int ports = 0;
};

std::vector<RdmaDeviceInfo> ListRdmaDevices();

}  // namespace fl::ccl::ftccl
