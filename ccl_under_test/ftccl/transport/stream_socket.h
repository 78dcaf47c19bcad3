// A Connection over a non-blocking stream socket, shared by the TCP and AF_UNIX transports:
// Send/Recv move what they can and return 0 when they would block; every other error is
// Unavailable (a path fault to the engine, whatever errno says). Owns and closes the fd.
#pragma once

#include <string>

#include "ccl_under_test/ftccl/transport/transport.h"

namespace fl::ccl::ftccl::transport {

Status PathError(int err, const std::string& what);

class SocketConnection : public Connection {
 public:
  // desc names the path in errors and in Describe().
  SocketConnection(int fd, std::string desc) : fd_(fd), desc_(std::move(desc)) {}
  ~SocketConnection() override;
  int fd() const override { return fd_; }
  // SO_ERROR of the finished non-blocking connect.
  Status FinishConnect() override;
  StatusOr<size_t> Send(const iovec* iov, int iovcnt) override;
  // EOF is Unavailable ("connection closed by peer").
  StatusOr<size_t> Recv(void* buf, size_t len) override;
  std::string Describe() const override { return desc_; }

 protected:
  const int fd_;
  std::string desc_;
};

}  // namespace fl::ccl::ftccl::transport
