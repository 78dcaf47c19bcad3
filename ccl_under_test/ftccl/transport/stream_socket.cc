#include "ccl_under_test/ftccl/transport/stream_socket.h"

#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

namespace fl::ccl::ftccl::transport {

Status PathError(int err, const std::string& what) {
  Status s = ErrnoStatus(err, what);
  if (s.code() == Code::kUnavailable) return s;
  return UnavailableError(s.message());
}

SocketConnection::~SocketConnection() {
  if (fd_ >= 0) close(fd_);
}

Status SocketConnection::FinishConnect() {
  int err = 0;
  socklen_t len = sizeof(err);
  if (getsockopt(fd_, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  if (err != 0) return PathError(err, "connect " + desc_);
  return OkStatus();
}

StatusOr<size_t> SocketConnection::Send(const iovec* iov, int iovcnt) {
  msghdr msg{};
  msg.msg_iov = const_cast<iovec*>(iov);
  msg.msg_iovlen = static_cast<size_t>(iovcnt);
  ssize_t n = sendmsg(fd_, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (n >= 0) return static_cast<size_t>(n);
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return size_t{0};
  return PathError(errno, "send " + desc_);
}

StatusOr<size_t> SocketConnection::Recv(void* buf, size_t len) {
  ssize_t n = recv(fd_, buf, len, MSG_DONTWAIT);
  if (n > 0) return static_cast<size_t>(n);
  if (n == 0) return UnavailableError("recv " + desc_ + ": connection closed by peer");
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return size_t{0};
  return PathError(errno, "recv " + desc_);
}

}  // namespace fl::ccl::ftccl::transport
