// What hardware this ftccl build can use on this machine: CUDA devices and RDMA devices.
#pragma once

#include <string>

namespace fl::ccl::ftccl {

// A few human-readable lines: "CUDA: built, 1 device(s): 0 NVIDIA H200 (139 GiB, sm_90)".
std::string DescribeDevices();

}  // namespace fl::ccl::ftccl
