// Mutual TLS on the control plane: the lab's certificates (harness/control/certs.h) and an
// in-process coordinator and agents on 127.0.0.1, port 0.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <mutex>
#include <thread>

#include "harness/agent/agent_session.h"
#include "harness/control/certs.h"
#include "harness/coordinator/control_server.h"
#include "tests/test_util.h"

namespace fl::harness {
namespace {

using testing::TempDir;

constexpr const char* kToken = "s3cret-t0ken-that-must-not-leak-0123456789";

// A lab TLS directory: CA, a coordinator certificate for 127.0.0.1, agents h0 and h1.
void MakeLab(const std::string& dir) {
  REQUIRE(InitLabCa(dir).ok());
  IssueOptions coord;
  coord.role = CertRole::kCoordinator;
  coord.extra_names = {"127.0.0.1"};
  REQUIRE(IssueCertificate(dir, "coord.test", coord).ok());
  for (const char* h : {"h0", "h1"}) REQUIRE(IssueCertificate(dir, h, {}).ok());
}

ControlServerOptions ServerOptions(std::optional<TlsMaterial> tls) {
  ControlServerOptions o;
  o.token = kToken;
  o.run_id = "tls-test";
  o.lease_ns = 2 * kNsPerSec;
  o.heartbeat_interval_ns = 100 * kNsPerMs;
  o.tls = std::move(tls);
  return o;
}

AgentSessionOptions AgentOptions(const std::string& address, const std::string& host,
                                 std::optional<TlsMaterial> tls) {
  AgentSessionOptions a;
  a.coordinator = address;
  a.token = kToken;
  a.host = host;
  a.tls = std::move(tls);
  a.connect_timeout_ns = 3 * kNsPerSec;
  a.heartbeat_interval_ns = 100 * kNsPerMs;
  return a;
}

TlsMaterial Load(const std::string& dir, CertRole role, const std::string& name) {
  auto m = LoadTlsMaterial(dir, role, name);
  INFO(m.status().ToString());
  REQUIRE(m.ok());
  return *m;
}

// A plain TCP listener on 127.0.0.1 that keeps every byte any client sends it (answering
// nothing), for checking what an agent says before it has verified its peer.
class CaptureServer {
 public:
  CaptureServer() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        listen(fd_, 16) != 0 || getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      return;
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Loop(); });
  }
  ~CaptureServer() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    for (int c : clients_) close(c);
    if (fd_ >= 0) close(fd_);
  }
  int port() const { return port_; }
  std::string bytes() const {
    std::lock_guard lock(mu_);
    return bytes_;
  }

 private:
  void Loop() {
    while (!stop_) {
      std::vector<pollfd> fds = {{fd_, POLLIN, 0}};
      for (int c : clients_) fds.push_back({c, POLLIN, 0});
      if (poll(fds.data(), fds.size(), 20) <= 0) continue;
      if (fds[0].revents & POLLIN) {
        int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c >= 0) clients_.push_back(c);
      }
      for (size_t i = 1; i < fds.size(); ++i) {
        if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        char buf[4096];
        ssize_t n = read(fds[i].fd, buf, sizeof buf);
        if (n > 0) {
          std::lock_guard lock(mu_);
          bytes_.append(buf, static_cast<size_t>(n));
        }
      }
    }
  }

  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::vector<int> clients_;  // the loop's own
  mutable std::mutex mu_;
  std::string bytes_;
};

TEST_CASE("certs: a lab CA signs coordinator and agent certificates that name their host",
          "[unit]") {
  TempDir tmp("fl_tls");
  const std::string dir = tmp.path() + "/tls";
  MakeLab(dir);
  struct stat st;
  for (const char* key : {"ca.key", "coordinator.key", "h0.key", "h1.key"}) {
    REQUIRE(stat((dir + "/" + key).c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
  }
  REQUIRE(stat(dir.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);

  TlsMaterial h0 = Load(dir, CertRole::kAgent, "h0");
  auto id = ReadCertificate(h0.cert_pem);
  REQUIRE(id.ok());
  CHECK(id->common_name == "h0");
  CHECK(id->dns_names == std::vector<std::string>{"h0"});
  CHECK(id->role == CertRole::kAgent);
  CHECK(CertNamesHost(*id, "h0"));
  CHECK_FALSE(CertNamesHost(*id, "h1"));
  auto coord = ReadCertificate(Load(dir, CertRole::kCoordinator, "").cert_pem);
  REQUIRE(coord.ok());
  CHECK(coord->common_name == "coord.test");
  CHECK(coord->ip_names == std::vector<std::string>{"127.0.0.1"});
  CHECK(coord->role == CertRole::kCoordinator);

  // Nothing is overwritten; bad names and roles are refused before anything is written.
  CHECK(InitLabCa(dir).code() == Code::kFailedPrecondition);
  CHECK(IssueCertificate(dir, "h0", {}).status().code() == Code::kFailedPrecondition);
  CHECK(IssueCertificate(dir, "h2,DNS:evil", {}).status().code() == Code::kInvalidArgument);
  CHECK(access((dir + "/h2,DNS:evil.key").c_str(), F_OK) != 0);
  CHECK(ParseCertRole("admin").status().code() == Code::kInvalidArgument);
  // Loading checks the files against each other: another host's name, a missing file, a
  // certificate of another lab's CA.
  CHECK(LoadTlsMaterial(dir, CertRole::kAgent, "h7").status().code() == Code::kFailedPrecondition);
  CHECK(LoadTlsMaterial(dir, CertRole::kFabricAgent, "h0").status().code() ==
        Code::kFailedPrecondition);
  const std::string other = tmp.path() + "/other";
  MakeLab(other);
  REQUIRE(rename((other + "/h0.crt").c_str(), (dir + "/h9.crt").c_str()) == 0);
  REQUIRE(rename((other + "/h0.key").c_str(), (dir + "/h9.key").c_str()) == 0);
  auto foreign = LoadTlsMaterial(dir, CertRole::kAgent, "h9");
  CHECK(foreign.status().code() == Code::kFailedPrecondition);
  CHECK(foreign.status().message().find("not accepted by the lab CA") != std::string::npos);
  CHECK(DefaultTlsDir("/etc/faultline/token") == "/etc/faultline/tls");
}

TEST_CASE("tls: an agent and the coordinator of one lab register over mutual TLS",
          "[integration]") {
  TempDir tmp("fl_tls");
  const std::string dir = tmp.path() + "/tls";
  MakeLab(dir);
  auto server = ControlServer::Start(ServerOptions(Load(dir, CertRole::kCoordinator, "")));
  REQUIRE(server.ok());
  AgentHandlers handlers;
  handlers.on_command = [](const faultline::v1::CoordinatorMessage&) {
    faultline::v1::Ack ack;
    ack.set_ok(true);
    return ack;
  };
  auto agent = AgentSession::Connect(
      AgentOptions((*server)->address(), "h0", Load(dir, CertRole::kAgent, "h0")), handlers);
  INFO(agent.status().ToString());
  REQUIRE(agent.ok());
  faultline::v1::CoordinatorMessage cmd;
  cmd.mutable_inject()->set_fault_id("f0");
  auto ack = (*server)->Call("h0", cmd, Deadline::After(10 * kNsPerSec));
  REQUIRE(ack.ok());
  CHECK(ack->ok());
}

TEST_CASE("tls: an agent refuses a coordinator whose certificate is not from the lab CA",
          "[integration]") {
  TempDir tmp("fl_tls");
  const std::string lab = tmp.path() + "/lab", rogue = tmp.path() + "/rogue";
  MakeLab(lab);
  MakeLab(rogue);
  // The impostor trusts the lab's agents but can only show a certificate of its own CA.
  TlsMaterial impostor = Load(rogue, CertRole::kCoordinator, "");
  impostor.ca_pem = Load(lab, CertRole::kCoordinator, "").ca_pem;
  auto server = ControlServer::Start(ServerOptions(impostor));
  REQUIRE(server.ok());
  auto agent = AgentSession::Connect(
      AgentOptions((*server)->address(), "h0", Load(lab, CertRole::kAgent, "h0")), {});
  CHECK(agent.status().code() == Code::kUnavailable);
  CHECK((*server)->stats().sessions == 0);
  CHECK((*server)->Agents().empty());
}

TEST_CASE("tls: the coordinator refuses an agent whose certificate names another host",
          "[integration]") {
  TempDir tmp("fl_tls");
  const std::string dir = tmp.path() + "/tls";
  MakeLab(dir);
  REQUIRE(IssueCertificate(dir, "fabric", {}).ok());  // role agent, not fabric-agent
  auto server = ControlServer::Start(ServerOptions(Load(dir, CertRole::kCoordinator, "")));
  REQUIRE(server.ok());
  // h1's certificate, claiming h0
  auto agent = AgentSession::Connect(
      AgentOptions((*server)->address(), "h0", Load(dir, CertRole::kAgent, "h1")), {});
  CHECK(agent.status().code() == Code::kFailedPrecondition);
  CHECK(agent.status().message().find("h1") != std::string::npos);
  // a certificate naming "fabric" without the fabric-agent role
  auto fabric = AgentSession::Connect(
      AgentOptions((*server)->address(), "fabric", Load(dir, CertRole::kAgent, "fabric")), {});
  CHECK(fabric.status().code() == Code::kFailedPrecondition);
  CHECK((*server)->stats().rejected == 2);
  CHECK((*server)->stats().sessions == 0);
  CHECK((*server)->Agents().empty());
}

TEST_CASE("tls: a second agent claiming a live host is refused and the first keeps its session",
          "[integration]") {
  TempDir tmp("fl_tls");
  const std::string dir = tmp.path() + "/tls";
  MakeLab(dir);
  auto server = ControlServer::Start(ServerOptions(Load(dir, CertRole::kCoordinator, "")));
  REQUIRE(server.ok());
  std::atomic<int> first_commands{0};
  AgentHandlers handlers;
  handlers.on_command = [&](const faultline::v1::CoordinatorMessage&) {
    ++first_commands;
    faultline::v1::Ack ack;
    ack.set_ok(true);
    return ack;
  };
  const TlsMaterial h0 = Load(dir, CertRole::kAgent, "h0");
  auto first = AgentSession::Connect(AgentOptions((*server)->address(), "h0", h0), handlers);
  REQUIRE(first.ok());
  auto second = AgentSession::Connect(AgentOptions((*server)->address(), "h0", h0), {});
  CHECK(second.status().code() == Code::kFailedPrecondition);
  CHECK(second.status().message().find("live session") != std::string::npos);
  CHECK((*first)->connected());
  CHECK((*server)->stats().sessions == 1);
  CHECK((*server)->stats().rejected == 1);
  // Commands still reach the first agent.
  faultline::v1::CoordinatorMessage cmd;
  cmd.mutable_inject()->set_fault_id("f0");
  auto ack = (*server)->Call("h0", cmd, Deadline::After(10 * kNsPerSec));
  REQUIRE(ack.ok());
  CHECK(ack->ok());
  CHECK(first_commands == 1);
}

TEST_CASE("tls: the token is not among the bytes an agent sends to an unverified peer",
          "[integration]") {
  TempDir tmp("fl_tls");
  const std::string dir = tmp.path() + "/tls";
  MakeLab(dir);
  CaptureServer capture;
  REQUIRE(capture.port() > 0);
  AgentSessionOptions a = AgentOptions("127.0.0.1:" + std::to_string(capture.port()), "h0",
                                       Load(dir, CertRole::kAgent, "h0"));
  a.connect_timeout_ns = 1500 * kNsPerMs;
  auto agent = AgentSession::Connect(a, {});
  CHECK_FALSE(agent.ok());
  const std::string got = capture.bytes();
  // The agent did talk to the listener: a TLS handshake record (ClientHello) ...
  REQUIRE_FALSE(got.empty());
  CHECK(static_cast<unsigned char>(got[0]) == 0x16);
  // ... and no token: neither the metadata nor the Hello went out unverified.
  CHECK(got.find(kToken) == std::string::npos);
  CHECK(got.find("x-faultline-token") == std::string::npos);
}

}  // namespace
}  // namespace fl::harness
