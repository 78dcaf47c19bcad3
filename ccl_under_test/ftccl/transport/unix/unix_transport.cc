#include "ccl_under_test/ftccl/transport/unix/unix_transport.h"

#include <errno.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "ccl_under_test/ftccl/transport/stream_socket.h"

namespace fl::ccl::ftccl::transport::unix_socket {
namespace {

constexpr int kBufferBytes = 4 << 20;

// "@name" <-> the abstract address (a leading NUL, no terminator).
StatusOr<std::pair<sockaddr_un, socklen_t>> MakeAddr(const std::string& address) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (address.size() < 2 || address[0] != '@' || address.size() > sizeof(a.sun_path)) {
    return InvalidArgumentError("not an abstract unix address: '" + address + "'");
  }
  std::memcpy(a.sun_path + 1, address.data() + 1, address.size() - 1);
  return std::make_pair(a,
                        static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + address.size()));
}

std::string AddrString(const sockaddr_un& a, socklen_t len) {
  const size_t n =
      len > offsetof(sockaddr_un, sun_path) ? len - offsetof(sockaddr_un, sun_path) : 0;
  if (n < 2 || a.sun_path[0] != '\0') return "@?";
  return "@" + std::string(a.sun_path + 1, n - 1);
}

void Tune(int fd) {
  for (int opt : {SO_SNDBUF, SO_RCVBUF}) {
    const int force = opt == SO_SNDBUF ? SO_SNDBUFFORCE : SO_RCVBUFFORCE;
    if (setsockopt(fd, SOL_SOCKET, force, &kBufferBytes, sizeof(int)) != 0) {
      setsockopt(fd, SOL_SOCKET, opt, &kBufferBytes, sizeof(int));
    }
  }
}

class UnixListener : public Listener {
 public:
  UnixListener(int fd, std::string label, std::string addr)
      : fd_(fd), label_(std::move(label)), addr_(std::move(addr)) {}
  ~UnixListener() override { close(fd_); }
  int fd() const override { return fd_; }
  std::string address() const override { return addr_; }
  StatusOr<std::unique_ptr<Connection>> Accept() override {
    int fd = accept4(fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED) {
        return std::unique_ptr<Connection>();
      }
      return ErrnoStatus(errno, "accept on " + addr_);
    }
    Tune(fd);
    return std::unique_ptr<Connection>(
        std::make_unique<SocketConnection>(fd, label_ + ":" + addr_ + "<-peer"));
  }

 private:
  int fd_;
  std::string label_;
  std::string addr_;
};

class UnixTransport : public Transport {
 public:
  Properties properties() const override { return {"unix", true, false}; }

  StatusOr<std::unique_ptr<Listener>> Listen(const std::string& label) override {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return ErrnoStatus(errno, "socket(AF_UNIX)");
    // Autobind: an address of just the family makes the kernel pick a free abstract name.
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(sa_family_t)) != 0 ||
        listen(fd, 128) != 0) {
      Status s = ErrnoStatus(errno, "listen on an abstract unix socket");
      close(fd);
      return s;
    }
    socklen_t len = sizeof(a);
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    return std::unique_ptr<Listener>(std::make_unique<UnixListener>(fd, label, AddrString(a, len)));
  }

  StatusOr<std::unique_ptr<Connection>> Connect(const std::string& label,
                                                const std::string& remote) override {
    FL_ASSIGN_OR_RETURN(auto to, MakeAddr(remote));
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return ErrnoStatus(errno, "socket(AF_UNIX)");
    Tune(fd);
    if (connect(fd, reinterpret_cast<sockaddr*>(&to.first), to.second) != 0 &&
        errno != EINPROGRESS) {
      Status s = PathError(errno, "connect " + label + "->" + remote);
      close(fd);
      return s;
    }
    return std::unique_ptr<Connection>(
        std::make_unique<SocketConnection>(fd, label + "->" + remote));
  }
};

}  // namespace

std::shared_ptr<Transport> CreateUnixTransport() { return std::make_shared<UnixTransport>(); }

}  // namespace fl::ccl::ftccl::transport::unix_socket
