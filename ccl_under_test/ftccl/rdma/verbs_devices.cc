#include "ccl_under_test/ftccl/rdma/verbs_devices.h"

#include <infiniband/verbs.h>

#include <cstdio>

namespace fl::ccl::ftccl {

std::vector<RdmaDeviceInfo> ListRdmaDevices() {
  std::vector<RdmaDeviceInfo> out;
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr) return out;  // no RDMA stack / no kernel support: not an error
  for (int i = 0; i < n; ++i) {
    RdmaDeviceInfo info;
    info.name = ibv_get_device_name(list[i]);
    char guid[24];
    std::snprintf(guid, sizeof guid, "%016llx",
                  static_cast<unsigned long long>(be64toh(ibv_get_device_guid(list[i]))));
    info.node_guid = guid;
    if (ibv_context* ctx = ibv_open_device(list[i])) {
      ibv_device_attr attr;
      if (ibv_query_device(ctx, &attr) == 0) info.ports = attr.phys_port_cnt;
      ibv_close_device(ctx);
    }
    out.push_back(std::move(info));
  }
  ibv_free_device_list(list);
  return out;
}

}  // namespace fl::ccl::ftccl
