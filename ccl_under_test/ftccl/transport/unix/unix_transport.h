// Host-local transport of ftccl: stream sockets in the abstract AF_UNIX namespace, for the
// channel between two ranks of one host. Half the hops of a ring run between ranks of one
// host when each host runs several ranks; over AF_UNIX such a hop costs about half the CPU
// per byte of TCP over loopback (no TCP/IP stack, no softirq), which the NIC hops need.
//
// Addresses: Listen() binds an abstract name chosen by the kernel (autobind) and reports it
// as "@xxxxx". Abstract names belong to a network namespace, so exactly the ranks that share
// one (ftccl's host id "auto" = boot id + network namespace) reach each other; nothing is
// left in the filesystem. The local address passed to Listen/Connect is only a label (ftccl
// passes "host-local"): it names the path in events and in FaultyTransport rules.
// Buffers: 4 MiB each way (SO_SNDBUFFORCE when allowed, else what SO_SNDBUF grants), so a
// 512 KiB chunk is written in one call.
#pragma once

#include <memory>

#include "ccl_under_test/ftccl/transport/transport.h"

namespace fl::ccl::ftccl::transport::unix_socket {

std::shared_ptr<Transport> CreateUnixTransport();

}  // namespace fl::ccl::ftccl::transport::unix_socket
