// The environment fingerprint an agent reports at registration, so that two runs can be
// compared knowing what they ran on: kernel, NICs (driver and firmware via the ethtool ioctl,
// MAC and speed from sysfs), RDMA devices, GPUs, the CCL build and NCCL's version. The
// coordinator adds the NCCL_* variables of the job's effective environment when it stores it.
#pragma once

#include <string>

#include "harness/proto/faultline.pb.h"

namespace fl::harness {

// Reads the facts of the network namespace and machine this process runs in. Never fails:
// what cannot be read is left empty.
faultline::v1::Fingerprint CollectFingerprint();

// The version of the NCCL that dlopen finds (FL_NCCL_LIBRARY, else libnccl.so.2), "2.21.5",
// with " +shrink" when it exports ncclCommShrink; "" when there is none (not an error).
std::string NcclVersion();

}  // namespace fl::harness
