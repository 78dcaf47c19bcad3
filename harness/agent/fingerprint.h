// The environment fingerprint an agent reports at registration, so that two runs can be
// compared knowing what they ran on: kernel, NICs (driver and firmware via the ethtool ioctl,
// MAC and speed from sysfs), RDMA devices, GPUs, and the CCL build.
#pragma once

#include "harness/proto/faultline.pb.h"

namespace fl::harness {

// Reads the facts of the network namespace and machine this process runs in. Never fails:
// what cannot be read is left empty.
faultline::v1::Fingerprint CollectFingerprint();

}  // namespace fl::harness
