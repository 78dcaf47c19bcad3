// Issue 29: an agent of no site (neither --lab nor --inventory nor --slurm-nics, a host set up
// by hand) sent its token in clear to whatever answered on the coordinator's address. Now it
// dials without TLS only loopback or a lab namespace's address, unless told --insecure. A
// fake server with no certificate, on an address that is neither, in a namespace of the
// test's own, captures the first bytes each agent sends. Root only (a network namespace).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>
#include <thread>

#include "common/file_util.h"
#include "common/process.h"
#include "harness/control/auth.h"
#include "harness/control/certs.h"
#include "harness/control/clear_dial.h"
#include "tests/child_process.h"
#include "tests/test_util.h"

namespace fl::harness {
namespace {

using testing::ChildProcess;
using testing::TempDir;

constexpr const char* kAddr = "10.213.7.1";  // on the namespace's loopback only

struct Netns {
  std::string name = "fl-clear-" + std::to_string(getpid());
  Netns() {
    REQUIRE(Run({"ip", "netns", "add", name})->exit_code == 0);
    REQUIRE(Run({"ip", "-n", name, "link", "set", "lo", "up"})->exit_code == 0);
    REQUIRE(Run({"ip", "-n", name, "addr", "add", std::string(kAddr) + "/32", "dev", "lo"})
                ->exit_code == 0);
  }
  // Best effort: a namespace left behind would show in the suite's leftover check.
  ~Netns() { Run({"ip", "netns", "del", name}).status().IgnoreError(); }
};

// A listening TCP socket on kAddr inside the namespace: setns is per thread, and the socket
// stays in the namespace it was made in.
int ListenIn(const std::string& ns, int* port) {
  int fd = -1;
  std::thread t([&] {
    int nsfd = open(("/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
    if (nsfd < 0 || setns(nsfd, CLONE_NEWNET) != 0) return;
    close(nsfd);
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    inet_pton(AF_INET, kAddr, &a.sin_addr);
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, 8) != 0) return;
    socklen_t len = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    *port = ntohs(a.sin_port);
  });
  t.join();
  return fd;
}

// Everything the first connection sends within `for_ns`; empty when nobody connected.
std::string Capture(int listener, Nanos for_ns) {
  std::string got;
  int c = -1;
  Deadline d = Deadline::After(for_ns);
  while (!d.Expired()) {
    if (c < 0) {
      c = accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      // An HTTP/2 server's first frames, empty SETTINGS and its ACK, without TLS: enough for
      // a gRPC client to call the connection ready and send its first request's headers.
      static const char kSettings[] = {0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 4, 1, 0, 0, 0, 0};
      if (c >= 0 && write(c, kSettings, sizeof kSettings) != sizeof kSettings) {
        close(c);
        c = -1;
      }
    }
    if (c >= 0) {
      char buf[4096];
      ssize_t n = read(c, buf, sizeof buf);
      if (n > 0) got.append(buf, static_cast<size_t>(n));
    }
    usleep(10000);
  }
  if (c >= 0) close(c);
  return got;
}

TEST_CASE(
    "agent of no site: no token in clear to an address that is not loopback or a lab's - "
    "--insecure sends it and says so",
    "[.root][integration]") {
  TempDir dir("fl_clear");
  Netns ns;
  int port = 0;
  int listener = ListenIn(ns.name, &port);
  REQUIRE(listener >= 0);
  REQUIRE(port > 0);
  auto token = CreateTokenFile(dir.path() + "/token");
  REQUIRE(token.ok());
  const std::string coordinator = std::string(kAddr) + ":" + std::to_string(port);
  auto agent = [&](bool insecure, const std::string& log) {
    std::vector<std::string> argv = {std::string(FL_BUILD_DIR) + "/bin/faultline-agent",
                                     "--coordinator",
                                     coordinator,
                                     "--token-file",
                                     dir.path() + "/token",
                                     "--host",
                                     "h0",
                                     "--connect-timeout",
                                     "3"};
    if (insecure) argv.push_back("--insecure");
    ChildProcess::Options o;
    o.out = dir.path() + "/" + log;
    o.netns = ns.name;
    return std::make_unique<ChildProcess>(argv, o);
  };
  {
    auto a = agent(false, "refused.log");
    auto rc = a->Wait(Deadline::After(20 * kNsPerSec));
    const std::string log = ReadFile(dir.path() + "/refused.log").value_or("");
    INFO(log);
    REQUIRE(rc.has_value());
    CHECK(*rc == 2);
    CHECK(log.find("no TLS to " + coordinator) != std::string::npos);
    CHECK(log.find("--insecure") != std::string::npos);
    CHECK(Capture(listener, 500 * kNsPerMs).empty());  // it never connected
  }
  {
    // The same capture sees the token when the operator asks for plaintext: the check above
    // could fail.
    auto a = agent(true, "insecure.log");
    const std::string got = Capture(listener, 3 * kNsPerSec);
    a.reset();
    const std::string log = ReadFile(dir.path() + "/insecure.log").value_or("");
    INFO(log);
    CHECK(got.find(*token) != std::string::npos);
    CHECK(log.find("the token goes in clear to " + coordinator) != std::string::npos);
  }
  close(listener);
}

TEST_CASE(
    "inventory agents (a host's and the fabric agent) open TLS before anything: a server "
    "without a certificate sees a ClientHello and no token",
    "[.root][integration]") {
  TempDir dir("fl_clear");
  Netns ns;
  REQUIRE(Run({"ip", "-n", ns.name, "link", "add", "eth9", "type", "veth", "peer", "name", "eth9p"})
              ->exit_code == 0);
  int port = 0;
  int listener = ListenIn(ns.name, &port);
  REQUIRE(listener >= 0);
  auto token = CreateTokenFile(dir.path() + "/token");
  REQUIRE(token.ok());
  // The TLS material the inventory implies (DefaultTlsDir: "tls" beside the token).
  const std::string tls = dir.path() + "/tls";
  REQUIRE(InitLabCa(tls).ok());
  IssueOptions agent, fabric;
  agent.role = CertRole::kAgent;
  fabric.role = CertRole::kFabricAgent;
  REQUIRE(IssueCertificate(tls, "h0", agent).ok());
  REQUIRE(IssueCertificate(tls, "fabric", fabric).ok());
  REQUIRE(WriteFileAtomic(dir.path() + "/key", "not a key\n").ok());
  REQUIRE(WriteFileAtomic(dir.path() + "/known_hosts", "\n").ok());
  const std::string inv = dir.path() + "/inv.yaml";
  REQUIRE(WriteFileAtomic(inv, "name: clear\ncoordinator: {listen: " + std::string(kAddr) + ":" +
                                   std::to_string(port) + ", token_file: " + dir.path() +
                                   "/token}\nswitches:\n  - {name: leaf0, address: 10.213.7.9, "
                                   "driver: ssh-template, preset: sonic, user: admin, key_file: " +
                                   dir.path() + "/key, known_hosts: " + dir.path() +
                                   "/known_hosts}\nhosts:\n  - name: h0\n    ranks: 1\n    nics:\n"
                                   "      - {name: nic0, ifname: eth9, address: 10.213.8.1, "
                                   "switch: leaf0, port: Ethernet0}\nfabric_agent: {host: mgmt1}\n")
              .ok());
  for (const std::string host : {"h0", "fabric"}) {
    CAPTURE(host);
    ChildProcess::Options o;
    o.out = dir.path() + "/" + host + ".log";
    o.netns = ns.name;
    auto agent = std::make_unique<ChildProcess>(
        std::vector<std::string>{std::string(FL_BUILD_DIR) + "/bin/faultline-agent",
                                 "--coordinator", std::string(kAddr) + ":" + std::to_string(port),
                                 "--token-file", dir.path() + "/token", "--inventory", inv,
                                 "--host", host, "--connect-timeout", "3"},
        o);
    const std::string got = Capture(listener, 3 * kNsPerSec);
    agent.reset();
    INFO(ReadFile(o.out).value_or(""));
    REQUIRE(got.size() >= 6);
    CHECK(got[0] == 0x16);  // a TLS handshake record
    CHECK(got[5] == 0x01);  // ClientHello
    CHECK(got.find(*token) == std::string::npos);
    CHECK(got.find("PRI * HTTP/2") == std::string::npos);  // no plaintext HTTP/2
  }
  close(listener);
}

TEST_CASE("worker: its first bytes to a TCP rendezvous store prove the token without sending it",
          "[.root][integration]") {
  // A fake store with no token of its own greets as the real one does (kHello: version and a
  // nonce, tcp_store_protocol.h) and records what the worker answers.
  TempDir dir("fl_clear");
  Netns ns;
  int port = 0;
  int listener = ListenIn(ns.name, &port);
  REQUIRE(listener >= 0);
  auto token = CreateTokenFile(dir.path() + "/token");
  REQUIRE(token.ok());
  ChildProcess::Options o;
  o.out = dir.path() + "/worker.log";
  o.netns = ns.name;
  o.stop_signal = SIGKILL;  // nothing of its end is checked; SIGTERM took 30 s here
  ChildProcess worker(
      {std::string(FL_BUILD_DIR) + "/bin/faultline-worker", "--rank", "0", "--world-size", "2",
       "--nics", kAddr, "--store", "tcp://" + std::string(kAddr) + ":" + std::to_string(port),
       "--store-token-file", dir.path() + "/token", "--iterations", "1", "--init-timeout", "5s"},
      o);
  std::string got;
  int c = -1;
  Deadline d = Deadline::After(10 * kNsPerSec);
  while (!d.Expired() && got.size() < 69) {
    if (c < 0) {
      c = accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (c >= 0) {
        std::string hello = {0, 0, 0, 34, 1 /*kHello*/, 1 /*version*/};
        hello += std::string(32, '\x5a');  // the server's nonce
        REQUIRE(write(c, hello.data(), hello.size()) == static_cast<ssize_t>(hello.size()));
      }
    }
    if (c >= 0) {
      char buf[4096];
      ssize_t n = read(c, buf, sizeof buf);
      if (n > 0) got.append(buf, static_cast<size_t>(n));
    }
    usleep(5000);
  }
  if (c >= 0) close(c);
  close(listener);
  INFO(ReadFile(dir.path() + "/worker.log").value_or(""));
  // One kAuth frame (its nonce and an HMAC: 65 bytes of body) and nothing else before the
  // server answers; the token is in none of it.
  REQUIRE(got.size() == 69);
  CHECK(got.substr(0, 5) == std::string({0, 0, 0, 65, 2 /*kAuth*/}));
  CHECK(got.find(*token) == std::string::npos);
  CHECK(got.find(token->substr(0, 8)) == std::string::npos);
}

TEST_CASE("clear dial: loopback and the lab ranges are local, other addresses are not",
          "[.root][integration]") {
  CHECK(IsLocalOrLabAddress("127.0.0.1:50051"));
  CHECK(IsLocalOrLabAddress("localhost:1"));
  CHECK(IsLocalOrLabAddress("[::1]:5"));
  CHECK(IsLocalOrLabAddress("198.19.3.254:7000"));
  CHECK(IsLocalOrLabAddress("198.18.0.1:7000"));
  CHECK_FALSE(IsLocalOrLabAddress("198.20.0.1:7000"));
  CHECK_FALSE(IsLocalOrLabAddress("10.0.0.1:7000"));
  CHECK_FALSE(IsLocalOrLabAddress("[2001:db8::1]:7000"));
  CHECK_FALSE(IsLocalOrLabAddress(":7000"));
  CHECK(CheckClearDial("10.0.0.1:7000", true, "x").ok());
  Status st = CheckClearDial("10.0.0.1:7000", false, "x");
  CHECK(st.code() == Code::kFailedPrecondition);
  CHECK(st.message().find("--tls-dir") != std::string::npos);
}

}  // namespace
}  // namespace fl::harness
