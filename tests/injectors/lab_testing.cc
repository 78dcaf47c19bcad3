#include "tests/injectors/lab_testing.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <vector>

#include "common/process.h"
#include "harness/lab/topology.h"
#include "injectors/sys.h"

namespace fl::testing {

std::string UniqueLabName() {
  static std::atomic<int> n{0};
  // Fixed widths: "t" + 123 + 45 and "t" + 1234 + 5 would both be t12345, and root tests of
  // different processes run side by side.
  char name[16];
  std::snprintf(name, sizeof name, "t%04d%02d", static_cast<int>(getpid() % 10000),
                n.fetch_add(1) % 100);
  return name;
}

ScopedStateDir::ScopedStateDir() {
  char tmpl[] = "/tmp/fl_state_XXXXXX";
  path_ = mkdtemp(tmpl) ? tmpl : "/tmp/fl_state_fallback";
  setenv("FAULTLINE_STATE_DIR", path_.c_str(), 1);
}

ScopedStateDir::~ScopedStateDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
  unsetenv("FAULTLINE_STATE_DIR");
}

StatusOr<std::unique_ptr<TestLab>> TestLab::Up(const std::string& topology_yaml) {
  FL_ASSIGN_OR_RETURN(lab::Topology t, lab::ParseTopology(topology_yaml, "<test>"));
  std::unique_ptr<TestLab> tl(new TestLab());
  FL_ASSIGN_OR_RETURN(tl->lab_, lab::LocalLab::Create(t, UniqueLabName()));
  FL_RETURN_IF_ERROR(tl->lab_->Provision());
  return tl;
}

TestLab::~TestLab() {
  if (lab_) lab_->Teardown().IgnoreError();
}

std::string TestLab::Addr(const std::string& host, const std::string& ifname) const {
  auto a = lab_->AddressOf(host, ifname);
  return a.ok() ? *a : "";
}

Status InjectorEnv::Init(const char* topology) {
  FL_RETURN_IF_ERROR(injectors::RegisterBuiltinInjectors(registry));
  FL_ASSIGN_OR_RETURN(lab, TestLab::Up(topology));
  h0 = lab->lab().NetnsOf("h0");
  h1 = lab->lab().NetnsOf("h1");
  h1_addr = lab->Addr("h1", "nic0");
  return OkStatus();
}

namespace {

sockaddr_in Sockaddr(const std::string& addr, uint16_t port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  inet_pton(AF_INET, addr.c_str(), &sa.sin_addr);
  return sa;
}

// Reads exactly n bytes or fails at the deadline.
Status ReadFull(int fd, void* buf, size_t n, Deadline deadline) {
  size_t got = 0;
  while (got < n) {
    pollfd p{fd, POLLIN, 0};
    int rc = poll(&p, 1, deadline.RemainingMsForPoll());
    if (rc == 0 || deadline.Expired()) return DeadlineExceededError("read timed out");
    if (rc < 0 && errno == EINTR) continue;
    ssize_t r = recv(fd, static_cast<char*>(buf) + got, n - got, MSG_DONTWAIT);
    if (r == 0) return UnavailableError("connection closed");
    if (r < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return ErrnoStatus(errno, "recv");
    }
    got += r;
  }
  return OkStatus();
}

Status WriteFull(int fd, const void* buf, size_t n, Deadline deadline) {
  size_t sent = 0;
  while (sent < n) {
    pollfd p{fd, POLLOUT, 0};
    int rc = poll(&p, 1, deadline.RemainingMsForPoll());
    if (rc == 0 || deadline.Expired()) return DeadlineExceededError("write timed out");
    if (rc < 0 && errno == EINTR) continue;
    ssize_t w =
        send(fd, static_cast<const char*>(buf) + sent, n - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return ErrnoStatus(errno, "send");
    }
    sent += w;
  }
  return OkStatus();
}

}  // namespace

StatusOr<std::unique_ptr<TcpPair>> TcpPair::Open(const std::string& src_netns,
                                                 const std::string& dst_netns,
                                                 const std::string& dst_addr, Nanos timeout) {
  std::unique_ptr<TcpPair> p(new TcpPair());
  uint16_t port = 0;
  FL_RETURN_IF_ERROR(injectors::RunInNetns(dst_netns, [&]() -> Status {
    p->listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (p->listen_fd_ < 0) return ErrnoStatus(errno, "socket");
    sockaddr_in sa = Sockaddr(dst_addr, 0);
    if (bind(p->listen_fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0)
      return ErrnoStatus(errno, "bind " + dst_addr);
    if (listen(p->listen_fd_, 4) != 0) return ErrnoStatus(errno, "listen");
    socklen_t len = sizeof sa;
    getsockname(p->listen_fd_, reinterpret_cast<sockaddr*>(&sa), &len);
    port = ntohs(sa.sin_port);
    return OkStatus();
  }));
  FL_RETURN_IF_ERROR(injectors::RunInNetns(src_netns, [&]() -> Status {
    p->client_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (p->client_fd_ < 0) return ErrnoStatus(errno, "socket");
    int one = 1;
    setsockopt(p->client_fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in sa = Sockaddr(dst_addr, port);
    if (connect(p->client_fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 &&
        errno != EINPROGRESS)
      return ErrnoStatus(errno, "connect " + dst_addr);
    return OkStatus();
  }));
  Deadline deadline = Deadline::After(timeout);
  pollfd pl{p->listen_fd_, POLLIN, 0};
  if (poll(&pl, 1, deadline.RemainingMsForPoll()) <= 0)
    return DeadlineExceededError("accept timed out");
  p->server_fd_ = accept4(p->listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (p->server_fd_ < 0) return ErrnoStatus(errno, "accept");
  pollfd pc{p->client_fd_, POLLOUT, 0};
  if (poll(&pc, 1, deadline.RemainingMsForPoll()) <= 0)
    return DeadlineExceededError("connect timed out");
  int err = 0;
  socklen_t elen = sizeof err;
  getsockopt(p->client_fd_, SOL_SOCKET, SO_ERROR, &err, &elen);
  if (err) return ErrnoStatus(err, "connect");
  // Server: for each message (4-byte length + payload), answer with its sequence number.
  int sfd = p->server_fd_;
  auto* raw = p.get();
  p->server_ = std::thread([raw, sfd] {
    std::vector<char> buf(1 << 16);
    uint32_t seq = 0;
    while (!raw->stop_.load()) {
      uint32_t len = 0;
      Status s = ReadFull(sfd, &len, 4, Deadline::After(50 * kNsPerMs));
      if (s.code() == Code::kDeadlineExceeded) continue;
      if (!s.ok()) return;
      size_t left = ntohl(len);
      while (left > 0 && !raw->stop_.load()) {
        size_t chunk = std::min(left, buf.size());
        Status r = ReadFull(sfd, buf.data(), chunk, Deadline::After(100 * kNsPerMs));
        if (r.code() == Code::kDeadlineExceeded) continue;
        if (!r.ok()) return;
        left -= chunk;
      }
      uint32_t ack = htonl(++seq);
      if (!WriteFull(sfd, &ack, 4, Deadline::After(kNsPerSec)).ok()) return;
    }
  });
  return p;
}

TcpPair::~TcpPair() {
  stop_.store(true);
  if (server_.joinable()) server_.join();
  for (int fd : {listen_fd_, client_fd_, server_fd_})
    if (fd >= 0) close(fd);
}

Status TcpPair::RoundTrip(size_t bytes, Nanos timeout) {
  Deadline deadline = Deadline::After(timeout);
  uint32_t want = ++seq_;
  std::vector<char> msg(4 + bytes, 'x');
  uint32_t len = htonl(static_cast<uint32_t>(bytes));
  std::memcpy(msg.data(), &len, 4);
  FL_RETURN_IF_ERROR(WriteFull(client_fd_, msg.data(), msg.size(), deadline));
  while (true) {
    uint32_t ack = 0;
    FL_RETURN_IF_ERROR(ReadFull(client_fd_, &ack, 4, deadline));
    if (ntohl(ack) >= want) return OkStatus();  // older acks of stalled messages are skipped
  }
}

Status TcpWorks(const std::string& src_netns, const std::string& dst_netns,
                const std::string& dst_addr, Nanos timeout) {
  Deadline deadline = Deadline::After(timeout);
  FL_ASSIGN_OR_RETURN(auto p, TcpPair::Open(src_netns, dst_netns, dst_addr, timeout));
  return p->RoundTrip(1024, std::max<Nanos>(deadline.Remaining(), kNsPerMs));
}

StatusOr<size_t> UdpDelivered(const std::string& src_netns, const std::string& dst_netns,
                              const std::string& dst_addr, size_t n) {
  int rx = -1, tx = -1;
  uint16_t port = 0;
  FL_RETURN_IF_ERROR(injectors::RunInNetns(dst_netns, [&]() -> Status {
    rx = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (rx < 0) return ErrnoStatus(errno, "socket");
    int big = 8 << 20;
    setsockopt(rx, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof big);
    sockaddr_in sa = Sockaddr(dst_addr, 0);
    if (bind(rx, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0)
      return ErrnoStatus(errno, "bind");
    socklen_t len = sizeof sa;
    getsockname(rx, reinterpret_cast<sockaddr*>(&sa), &len);
    port = ntohs(sa.sin_port);
    return OkStatus();
  }));
  Status s = injectors::RunInNetns(src_netns, [&]() -> Status {
    tx = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (tx < 0) return ErrnoStatus(errno, "socket");
    sockaddr_in sa = Sockaddr(dst_addr, port);
    if (connect(tx, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0)
      return ErrnoStatus(errno, "connect");
    return OkStatus();
  });
  size_t got = 0;
  if (s.ok()) {
    char payload[64] = {};
    char buf[128];
    for (size_t i = 0; i < n; ++i) {
      std::memcpy(payload, &i, sizeof i);
      send(tx, payload, sizeof payload, 0);
      // Drain as we go so the receive buffer never overflows: every loss is the fault's.
      while (recv(rx, buf, sizeof buf, MSG_DONTWAIT) > 0) ++got;
    }
    Deadline quiet = Deadline::After(300 * kNsPerMs);
    while (!quiet.Expired()) {
      pollfd p{rx, POLLIN, 0};
      if (poll(&p, 1, 50) > 0 && recv(rx, buf, sizeof buf, MSG_DONTWAIT) > 0) {
        ++got;
        quiet = Deadline::After(300 * kNsPerMs);
      }
    }
  }
  if (rx >= 0) close(rx);
  if (tx >= 0) close(tx);
  if (!s.ok()) return s;
  return got;
}

Status PinNeighbours(const std::string& netns) {
  FL_ASSIGN_OR_RETURN(std::string ip, ResolveTool("ip"));
  FL_ASSIGN_OR_RETURN(RunResult shown, Run({ip, "-n", netns, "-4", "neigh", "show"}));
  if (shown.exit_code != 0) return InternalError("ip neigh show in " + netns + ": " + shown.err);
  size_t pinned = 0;
  std::istringstream lines(shown.out);
  for (std::string line; std::getline(lines, line);) {
    // "10.1.0.2 dev nic0 lladdr 02:00:00:00:00:01 REACHABLE"
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string word; words >> word;) w.push_back(word);
    if (w.size() < 5 || w[1] != "dev" || w[3] != "lladdr") continue;
    FL_ASSIGN_OR_RETURN(RunResult r, Run({ip, "-n", netns, "neigh", "replace", w[0], "dev", w[2],
                                          "lladdr", w[4], "nud", "permanent"}));
    if (r.exit_code != 0) return InternalError("ip neigh replace in " + netns + ": " + r.err);
    ++pinned;
  }
  if (pinned == 0) return FailedPreconditionError("no resolved neighbour in " + netns);
  return OkStatus();
}

}  // namespace fl::testing
