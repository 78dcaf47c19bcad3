#include "ccl_under_test/ftccl/transport/tcp/tcp_transport.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ccl_under_test/ftccl/transport/stream_socket.h"

namespace fl::ccl::ftccl::transport::tcp {

bool ReadTcpCounters(int fd, uint64_t* segs_out, uint64_t* total_retrans,
                     int64_t* rtt_ns);  // tcp_counters.cc

namespace {

StatusOr<sockaddr_in> MakeAddr(const std::string& ip, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, ip.c_str(), &a.sin_addr) != 1) {
    return InvalidArgumentError("not an IPv4 address: '" + ip + "'");
  }
  return a;
}

std::string AddrString(const sockaddr_in& a) {
  char buf[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &a.sin_addr, buf, sizeof(buf));
  return std::string(buf) + ":" + std::to_string(ntohs(a.sin_port));
}

void Tune(int fd, const TcpOptions& o) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (o.user_timeout > 0) {
    unsigned ms = static_cast<unsigned>(o.user_timeout / kNsPerMs);
    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof(ms));
  }
  if (o.socket_buffer_bytes > 0) {
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &o.socket_buffer_bytes, sizeof(int));
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &o.socket_buffer_bytes, sizeof(int));
  }
}

// A TCP connection learns its local port when the connect finishes.
class TcpConnection : public SocketConnection {
 public:
  using SocketConnection::SocketConnection;
  bool ReadCounters(Counters* out) const override {
    return ReadTcpCounters(fd_, &out->segs_out, &out->total_retrans, &out->rtt);
  }
  Status FinishConnect() override {
    FL_RETURN_IF_ERROR(SocketConnection::FinishConnect());
    sockaddr_in local{};
    socklen_t ll = sizeof(local);
    if (getsockname(fd_, reinterpret_cast<sockaddr*>(&local), &ll) == 0) {
      desc_ = AddrString(local) + desc_.substr(desc_.find("->"));
    }
    return OkStatus();
  }
};

class TcpListener : public Listener {
 public:
  TcpListener(int fd, std::string addr, TcpOptions o) : fd_(fd), addr_(std::move(addr)), o_(o) {}
  ~TcpListener() override { close(fd_); }
  int fd() const override { return fd_; }
  std::string address() const override { return addr_; }
  StatusOr<std::unique_ptr<Connection>> Accept() override {
    sockaddr_in peer{};
    socklen_t len = sizeof(peer);
    int fd = accept4(fd_, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED) {
        return std::unique_ptr<Connection>();
      }
      return ErrnoStatus(errno, "accept on " + addr_);
    }
    Tune(fd, o_);
    return std::unique_ptr<Connection>(
        std::make_unique<TcpConnection>(fd, addr_ + "<-" + AddrString(peer)));
  }

 private:
  int fd_;
  std::string addr_;
  TcpOptions o_;
};

class TcpTransport : public Transport {
 public:
  explicit TcpTransport(TcpOptions o) : o_(o) {}
  Properties properties() const override { return {"tcp", true, false}; }

  StatusOr<std::unique_ptr<Listener>> Listen(const std::string& local_ip) override {
    FL_ASSIGN_OR_RETURN(sockaddr_in addr, MakeAddr(local_ip, 0));
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return ErrnoStatus(errno, "socket");
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 128) != 0) {
      Status s = ErrnoStatus(errno, "listen on " + local_ip);
      close(fd);
      return s;
    }
    socklen_t len = sizeof(addr);
    getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    return std::unique_ptr<Listener>(std::make_unique<TcpListener>(fd, AddrString(addr), o_));
  }

  StatusOr<std::unique_ptr<Connection>> Connect(const std::string& local_ip,
                                                const std::string& remote) override {
    FL_ASSIGN_OR_RETURN(auto hp, SplitHostPort(remote));
    FL_ASSIGN_OR_RETURN(sockaddr_in to, MakeAddr(hp.first, hp.second));
    FL_ASSIGN_OR_RETURN(sockaddr_in from, MakeAddr(local_ip, 0));
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return ErrnoStatus(errno, "socket");
    Tune(fd, o_);
    if (bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0) {
      Status s = PathError(errno, "bind " + local_ip);
      close(fd);
      return s;
    }
    if (connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0 && errno != EINPROGRESS) {
      Status s = PathError(errno, "connect " + local_ip + "->" + remote);
      close(fd);
      return s;
    }
    return std::unique_ptr<Connection>(
        std::make_unique<TcpConnection>(fd, local_ip + "->" + remote));
  }

 private:
  TcpOptions o_;
};

}  // namespace

std::shared_ptr<Transport> CreateTcpTransport(const TcpOptions& options) {
  return std::make_shared<TcpTransport>(options);
}

StatusOr<std::pair<std::string, int>> SplitHostPort(const std::string& address) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size()) {
    return InvalidArgumentError("expected ip:port, got '" + address + "'");
  }
  int port = 0;
  for (size_t i = colon + 1; i < address.size(); ++i) {
    if (address[i] < '0' || address[i] > '9') {
      return InvalidArgumentError("bad port in '" + address + "'");
    }
    port = port * 10 + (address[i] - '0');
    if (port > 65535) return InvalidArgumentError("bad port in '" + address + "'");
  }
  return std::make_pair(address.substr(0, colon), port);
}

}  // namespace fl::ccl::ftccl::transport::tcp
