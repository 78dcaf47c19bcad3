#include "ccl_under_test/ftccl/device_info.h"

#include "ccl_under_test/ftccl/cuda/cuda_reduce.h"
#include "ccl_under_test/ftccl/rdma/verbs_devices.h"
#include "common/units.h"

namespace fl::ccl::ftccl {

std::string DescribeDevices() {
  std::string s;
  if (!CudaBuilt()) {
    s += "CUDA: not built (host buffers only)\n";
  } else {
    auto devs = CudaDevices();
    s += "CUDA: built, " + std::to_string(devs.size()) + " device(s)\n";
    for (const auto& d : devs) {
      s += "  " + std::to_string(d.index) + " " + d.name + " (" + FormatBytes(d.memory_bytes) +
           ", sm_" + std::to_string(d.sm_major) + std::to_string(d.sm_minor) + ")\n";
    }
  }
  auto rdma = ListRdmaDevices();
  s += "RDMA: " + std::to_string(rdma.size()) + " device(s)" +
       (rdma.empty() ? " (TCP transport only)" : "") + "\n";
  for (const auto& d : rdma)
    s += "  " + d.name + " guid " + d.node_guid + " ports " + std::to_string(d.ports) + "\n";
  return s;
}

}  // namespace fl::ccl::ftccl
