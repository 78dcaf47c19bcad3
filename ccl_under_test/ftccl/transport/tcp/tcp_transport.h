// TCP implementation of the ftccl Transport: one socket per connection, bound to the local
// NIC's address so the path is fixed (source address + destination on the same rail).
// Sockets are non-blocking, TCP_NODELAY, and carry TCP_USER_TIMEOUT so that the kernel also
// gives up on a path whose data stays unacknowledged.
#pragma once

#include <memory>

#include "ccl_under_test/ftccl/transport/transport.h"

namespace fl::ccl::ftccl::transport::tcp {

struct TcpOptions {
  // TCP_USER_TIMEOUT: unacknowledged data older than this fails the socket (0 = kernel default).
  Nanos user_timeout = 2 * kNsPerSec;
  // SO_SNDBUF/SO_RCVBUF; 0 = kernel autotuning.
  int socket_buffer_bytes = 0;
};

std::shared_ptr<Transport> CreateTcpTransport(const TcpOptions& options = {});

// "ip:port" -> (ip, port); InvalidArgument when malformed.
StatusOr<std::pair<std::string, int>> SplitHostPort(const std::string& address);

}  // namespace fl::ccl::ftccl::transport::tcp
