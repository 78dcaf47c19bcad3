// The host-local transport (abstract AF_UNIX sockets): addresses, a byte stream both ways,
// and errors for a name nobody listens on and for a closed peer.
#include <poll.h>

#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "ccl_under_test/ftccl/transport/unix/unix_transport.h"
#include "common/clock.h"

namespace fl::ccl {
namespace {

using ftccl::transport::Connection;

bool WaitFd(int fd, short events) {
  pollfd p{fd, events, 0};
  return poll(&p, 1, 5000) == 1;
}

// Moves all of `data` from a to b (non-blocking both ends, as ftccl's engine uses them).
std::string Pump(Connection& a, Connection& b, const std::string& data) {
  std::string got;
  size_t sent = 0;
  std::vector<char> buf(1 << 16);
  while (got.size() < data.size()) {
    if (sent < data.size()) {
      iovec v{const_cast<char*>(data.data()) + sent, data.size() - sent};
      auto n = a.Send(&v, 1);
      REQUIRE(n.ok());
      sent += *n;
    }
    auto n = b.Recv(buf.data(), buf.size());
    REQUIRE(n.ok());
    got.append(buf.data(), *n);
    if (*n == 0) WaitFd(b.fd(), POLLIN);
  }
  return got;
}

TEST_CASE(
    "unix transport: abstract names, a stream both ways, errors for no listener and a "
    "closed peer") {
  auto t = ftccl::transport::unix_socket::CreateUnixTransport();
  CHECK(t->properties().name == "unix");
  auto l = t->Listen("host-local");
  REQUIRE(l.ok());
  const std::string addr = (*l)->address();
  INFO("address " << addr);
  REQUIRE(addr.size() > 1);
  CHECK(addr[0] == '@');
  auto l2 = t->Listen("host-local");
  REQUIRE(l2.ok());
  CHECK((*l2)->address() != addr);  // the kernel picks a free name each time

  auto c = t->Connect("host-local", addr);
  REQUIRE(c.ok());
  REQUIRE(WaitFd((*c)->fd(), POLLOUT));
  REQUIRE((*c)->FinishConnect().ok());
  CHECK((*c)->Describe() == "host-local->" + addr);
  REQUIRE(WaitFd((*l)->fd(), POLLIN));
  auto s = (*l)->Accept();
  REQUIRE(s.ok());
  REQUIRE(*s);

  // 3 MB each way: more than fits in the socket buffers at once.
  std::string data(3 << 20, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 131 + 7);
  CHECK(Pump(**c, **s, data) == data);
  std::string back = data.substr(1000);
  CHECK(Pump(**s, **c, back) == back);

  // Nothing queued: Recv says 0 instead of blocking.
  char one;
  auto none = (*s)->Recv(&one, 1);
  REQUIRE(none.ok());
  CHECK(*none == 0);

  // A closed peer is Unavailable (the engine fails the channel over).
  c->reset();
  REQUIRE(WaitFd((*s)->fd(), POLLIN));
  auto eof = (*s)->Recv(&one, 1);
  CHECK(eof.status().code() == Code::kUnavailable);

  // A name nobody listens on, and a malformed address.
  auto refused = t->Connect("host-local", "@faultline-nobody-listens-here");
  CHECK(refused.status().code() == Code::kUnavailable);
  CHECK(t->Connect("host-local", "127.0.0.1:80").status().code() == Code::kInvalidArgument);
}

}  // namespace
}  // namespace fl::ccl
