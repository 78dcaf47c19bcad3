// Fuzzes the TCP rendezvous store's server (ccl_under_test/api/tcp_store.h), which reads what
// anything on the network sends to the coordinator's store port. Each input is sent over a
// real loopback connection to one in-process TcpStoreServer: the first byte chooses whether
// the peer authenticates first (odd) or not, the rest is the byte stream. The server must
// neither crash nor hang, and must still serve a well-behaved client afterwards. The frame
// parser is also checked on its own: what decodes re-encodes to the same frame.
// Seeds: tests/fuzz/corpus/tcp_store/ (first byte, then frames as TcpStore sends them).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "ccl_under_test/api/tcp_store.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

constexpr const char* kToken = "fuzz-token";

fl::ccl::TcpStoreServer& Server() {
  static std::unique_ptr<fl::ccl::TcpStoreServer> srv = [] {
    fl::ccl::TcpStoreServer::Options o;
    o.max_wait_ms = 5;  // a kGet from the input must not hold the run up
    // Not shorter: with 200 ms, a loaded 2-core machine (ASan, two fuzzers, two compilers)
    // took longer than that between the hello and our kAuth twice in 10^6 inputs, and the
    // server rightly dropped the connection. Every input ends its connection itself (shutdown
    // after its bytes), so a long limit holds nothing up.
    o.auth_timeout = 5 * fl::kNsPerSec;
    o.limits.max_value = 64 * 1024;
    auto s = fl::ccl::TcpStoreServer::Start("127.0.0.1:0", kToken, o);
    FL_FUZZ_CHECK(s.ok());
    return std::move(*s);
  }();
  return *srv;
}

int Connect(const std::string& addr) {
  auto hp = fl::ccl::ParseHostPort(addr);
  FL_FUZZ_CHECK(hp.ok());
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(hp->port);
  inet_pton(AF_INET, hp->host.c_str(), &sa.sin_addr);
  // libFuzzer's timers interrupt system calls (EINTR): retried here and in ReadFrame.
  int rc;
  do {
    rc = connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  } while (rc != 0 && (errno == EINTR || errno == EALREADY));
  if (rc != 0 && errno == EISCONN) rc = 0;
  if (rc != 0) {
    std::fprintf(stderr, "connect: %s\n", std::strerror(errno));
    FL_FUZZ_CHECK(false);
  }
  // Closed with a reset: tens of thousands of connections must not use up loopback's
  // ephemeral ports in TIME_WAIT.
  linger lg{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  return fd;
}

// Reads one frame body within 8 s (beyond the server's auth limit); empty when the connection
// closed first. A real hang is libFuzzer's -timeout (10 s) to find.
std::string ReadFrame(int fd, fl::ccl::kv::FrameReader& in) {
  fl::Deadline d = fl::Deadline::After(8 * fl::kNsPerSec);
  while (true) {
    std::string body;
    if (in.Next(1 << 20, &body) == fl::ccl::kv::FrameReader::Result::kFrame) return body;
    pollfd p{fd, POLLIN, 0};
    int pr = poll(&p, 1, d.RemainingMsForPoll());
    if (pr < 0 && errno == EINTR) continue;
    if (pr <= 0) return {};
    char buf[4096];
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return {};
    in.Append(buf, static_cast<size_t>(n));
  }
}

// A finding: the server did not answer as it must; its counters help reading it.
[[noreturn]] void Fail(const char* what) {
  auto st = Server().stats();
  std::fprintf(stderr,
               "%s: connections %zu keys %zu accepted %llu refused %llu malformed %llu "
               "auth failures %llu auth timeouts %llu\n",
               what, st.connections, st.keys, static_cast<unsigned long long>(st.accepted),
               static_cast<unsigned long long>(st.refused),
               static_cast<unsigned long long>(st.malformed),
               static_cast<unsigned long long>(st.auth_failures),
               static_cast<unsigned long long>(st.auth_timeouts));
  std::abort();
}

void CheckParser(std::string_view bytes) {
  fl::ccl::kv::FrameReader r;
  r.Append(bytes.data(), bytes.size());
  fl::ccl::kv::Limits l;
  std::string body;
  while (r.Next(l.MaxFrame(), &body) == fl::ccl::kv::FrameReader::Result::kFrame) {
    auto m = fl::ccl::kv::Decode(body, l);
    if (!m.ok()) {
      FL_FUZZ_CHECK(m.status().code() == fl::Code::kInvalidArgument);
      continue;
    }
    std::string again = fl::ccl::kv::Encode(*m);
    FL_FUZZ_CHECK(again.size() == body.size() + 4 && again.substr(4) == body);
  }
}

}  // namespace

// Starts the server and does one round trip before the first input, so that OpenSSL's lazily
// allocated state (the HMAC digest, each thread's error state) exists before libFuzzer starts
// looking for leaks per input.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fl::ccl::TcpStore c(Server().address(), kToken);
  FL_FUZZ_CHECK(c.Set("fuzz/warm", "1").ok());
  FL_FUZZ_CHECK(c.Get("fuzz/warm", fl::Deadline::After(2 * fl::kNsPerSec)).ok());
  // The server thread's OpenSSL error state is freed when the thread ends: end it before
  // LeakSanitizer's check at exit (registered before main, so it runs after this).
  std::atexit([] { Server().Stop(); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fl;
  if (size == 0) return 0;
  std::string_view text = fuzz::AsText(data, size);
  CheckParser(text.substr(1));
  ccl::TcpStoreServer& srv = Server();
  int fd = Connect(srv.address());
  ccl::kv::FrameReader in;
  std::string hello = ReadFrame(fd, in);
  auto h = ccl::kv::Decode(hello, {});
  if (!(h.ok() && h->type == ccl::kv::Type::kHello)) Fail("no hello");
  if (data[0] & 1) {
    std::string mine(ccl::kv::kNonceBytes, 'f');
    std::string auth =
        ccl::kv::EncodeAuth(mine, ccl::kv::AuthMac(kToken, ccl::kv::kClientLabel, h->nonce, mine));
    send(fd, auth.data(), auth.size(), MSG_NOSIGNAL);
    if (ReadFrame(fd, in).empty()) Fail("no reply to a valid kAuth");
  }
  send(fd, data + 1, size - 1, MSG_NOSIGNAL);
  shutdown(fd, SHUT_WR);
  // The server answers what it can and closes (EOF, a malformed frame, or a failed auth).
  while (!ReadFrame(fd, in).empty()) {
  }
  close(fd);
  // Still serving.
  static int n = 0;
  if (++n % 64 == 0) {
    ccl::TcpStore c(srv.address(), kToken);
    FL_FUZZ_CHECK(c.Set("fuzz/alive", "1").ok());
    auto v = c.Get("fuzz/alive", Deadline::After(2 * kNsPerSec));
    FL_FUZZ_CHECK(v.ok() && *v == "1");
  }
  return 0;
}
