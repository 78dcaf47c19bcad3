// The environment fingerprint an agent reports at registration, so that two runs can be
// compared knowing what they ran on: kernel, NICs (driver and firmware via the ethtool ioctl,
// MAC and speed from sysfs), RDMA devices, GPUs, the CCL build and NCCL's version. The
// coordinator adds the NCCL_* variables of the job's effective environment when it stores it.
#pragma once

#include <string>

#include "harness/proto/faultline.pb.h"

namespace fl::harness {

// Where the facts come from beyond the kernel's own interfaces.
struct FingerprintOptions {
  // lldpd's control socket for `lldpcli -u` (empty: lldpd's default, /run/lldpd.socket). A
  // lab's namespaces each run an lldpd of their own, with a socket each.
  std::string lldp_socket;
};

// Reads the facts of the network namespace and machine this process runs in. Never fails:
// what cannot be read is left empty. Per NIC (interfaces of this namespace but lo): driver,
// firmware and speed (ethtool ioctl), MAC, state (IFF_UP and carrier), IPv4 addresses, PCI
// address and NUMA node (sysfs, for a NIC on a PCI bus), its RDMA device and port, and its
// LLDP neighbour when lldpd runs (lldpcli -f json show neighbors, at most 3 s); the GPUs'
// PCI addresses and NUMA nodes from the nvidia driver's sysfs; what the injectors need that
// the host lacks (ip, tc, nft, cgroup v2, AF_PACKET). The policy fields are the caller's.
faultline::v1::Fingerprint CollectFingerprint(const FingerprintOptions& options = {});

// The version of the NCCL that dlopen finds (FL_NCCL_LIBRARY, else libnccl.so.2), "2.21.5",
// with " +shrink" when it exports ncclCommShrink; "" when there is none (not an error).
std::string NcclVersion();

}  // namespace fl::harness
