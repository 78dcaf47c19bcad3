// Redial and lost hosts: real gRPC in-process, the agent's connection going through a TCP
// relay that the test cuts (a network blip) or cuts and keeps refusing (a long outage); and
// the faultline-agent process in --service mode.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <mutex>
#include <thread>

#include "common/file_util.h"
#include "harness/agent/agent_session.h"
#include "harness/control/auth.h"
#include "harness/coordinator/control_server.h"
#include "tests/test_util.h"

extern char** environ;

namespace fl::harness {
namespace {

namespace pb = faultline::v1;

// 127.0.0.1:port() → 127.0.0.1:target. Cut() ends every relayed connection; with
// SetRefusing(true) new connections are closed as soon as they are accepted.
class TcpRelay {
 public:
  explicit TcpRelay(int target) : target_(target) {
    lfd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (lfd_ < 0 || bind(lfd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        listen(lfd_, 16) != 0 || getsockname(lfd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      return;
    port_ = ntohs(a.sin_port);
    accept_thread_ = std::thread([this] { AcceptLoop(); });
  }
  ~TcpRelay() {
    stop_ = true;
    if (accept_thread_.joinable()) accept_thread_.join();
    Cut();
    for (auto& t : pumps_) t.join();
    for (int fd : fds_) close(fd);
    if (lfd_ >= 0) close(lfd_);
  }
  int port() const { return port_; }
  void Cut() {
    std::lock_guard lock(mu_);
    for (int fd : fds_) shutdown(fd, SHUT_RDWR);
  }
  void SetRefusing(bool r) { refusing_ = r; }
  int accepted() const { return accepted_; }

 private:
  void AcceptLoop() {
    while (!stop_) {
      pollfd p{lfd_, POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) continue;
      int c = accept4(lfd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      if (refusing_) {
        close(c);
        continue;
      }
      int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      a.sin_port = htons(static_cast<uint16_t>(target_));
      if (s < 0 || connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        close(c);
        if (s >= 0) close(s);
        continue;
      }
      ++accepted_;
      std::lock_guard lock(mu_);
      fds_.push_back(c);
      fds_.push_back(s);
      pumps_.emplace_back([c, s] { Pump(c, s); });
      pumps_.emplace_back([c, s] { Pump(s, c); });
    }
  }
  static void Pump(int from, int to) {
    char buf[16384];
    for (;;) {
      ssize_t n = read(from, buf, sizeof buf);
      if (n <= 0) break;
      for (ssize_t off = 0; off < n;) {
        ssize_t w = send(to, buf + off, static_cast<size_t>(n - off), MSG_NOSIGNAL);
        if (w <= 0) goto done;
        off += w;
      }
    }
  done:
    shutdown(to, SHUT_RDWR);
    shutdown(from, SHUT_RDWR);
  }

  int target_;
  int lfd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false}, refusing_{false};
  std::atomic<int> accepted_{0};
  std::thread accept_thread_;
  std::mutex mu_;
  std::vector<int> fds_;
  std::vector<std::thread> pumps_;
};

// An in-process agent: counts the commands it obeyed and the faults it holds; a lapse
// "reverts" them.
struct FakeAgent {
  std::atomic<int> commands{0};
  std::atomic<int> faults{0};
  std::atomic<int> lapses{0};
  std::atomic<Nanos> lapsed_at{0};

  AgentHandlers Handlers() {
    AgentHandlers h;
    h.on_command = [this](const pb::CoordinatorMessage& m) {
      ++commands;
      if (m.has_inject()) ++faults;
      pb::Ack ack;
      ack.set_ok(true);
      return ack;
    };
    h.on_lease_lapsed = [this] {
      faults = 0;
      lapsed_at = MonoNowNs();
      ++lapses;
    };
    h.heartbeat = [this] {
      pb::Heartbeat hb;
      hb.set_faults_applied(static_cast<uint32_t>(faults.load()));
      return hb;
    };
    return h;
  }
};

ControlServerOptions ServerOptions(Nanos lease) {
  ControlServerOptions o;
  o.token = "t0k3n-for-the-redial-tests";
  o.run_id = "r-redial";
  o.lease_ns = lease;
  o.heartbeat_interval_ns = 100 * kNsPerMs;
  return o;
}

AgentSessionOptions AgentOptions(int port, const std::string& token) {
  AgentSessionOptions a;
  a.coordinator = "127.0.0.1:" + std::to_string(port);
  a.token = token;
  a.host = "h0";
  a.heartbeat_interval_ns = 100 * kNsPerMs;
  a.connect_timeout_ns = 5 * kNsPerSec;
  return a;
}

pb::CoordinatorMessage Inject(const std::string& id) {
  pb::CoordinatorMessage m;
  m.mutable_inject()->set_fault_id(id);
  m.mutable_inject()->set_kind("marker");
  return m;
}

TEST_CASE(
    "control: an agent whose stream is cut re-dials within the lease and resumes the run, "
    "nothing is reverted",
    "[integration]") {
  const Nanos lease = 1500 * kNsPerMs;
  auto server = ControlServer::Start(ServerOptions(lease));
  REQUIRE(server.ok());
  TcpRelay relay((*server)->port());
  REQUIRE(relay.port() > 0);
  FakeAgent fake;
  auto agent = AgentSession::Connect(AgentOptions(relay.port(), "t0k3n-for-the-redial-tests"),
                                     fake.Handlers());
  REQUIRE(agent.ok());
  auto ack = (*server)->Call("h0", Inject("f0"), Deadline::After(5 * kNsPerSec));
  REQUIRE(ack.ok());
  REQUIRE(ack->ok());
  const std::string instance = (*agent)->instance_id();
  CHECK((*server)->Agent("h0")->instance == instance);

  relay.Cut();  // a network blip: both ends see the connection end
  REQUIRE(WaitUntil([&] { return (*agent)->resumes() == 1 && (*agent)->connected(); },
                    Deadline::After(lease)));
  CHECK(relay.accepted() >= 2);  // a new connection: the old one is gone
  CHECK((*server)->stats().resumes == 1);
  // The coordinator's next command reaches the same agent, which still holds its fault.
  ack = (*server)->Call("h0", Inject("f1"), Deadline::After(5 * kNsPerSec));
  REQUIRE(ack.ok());
  CHECK(ack->ok());
  CHECK(fake.commands == 2);
  CHECK(fake.faults == 2);
  auto info = (*server)->Agent("h0");
  REQUIRE(info.ok());
  CHECK(info->instance == instance);
  CHECK(info->resumes == 1);
  CHECK(info->connected);
  // The lease goes on being renewed: more than a lease later nothing has lapsed or been lost.
  CHECK_FALSE((*agent)->WaitEnded(Deadline::After(lease + 500 * kNsPerMs)));
  CHECK(fake.lapses == 0);
  CHECK(fake.faults == 2);
  CHECK_FALSE((*server)->TakeLostAgent().has_value());

  // A coordinator-side cut (DropSession) is resumed the same way.
  (*server)->DropSession("h0");
  REQUIRE(WaitUntil([&] { return (*agent)->resumes() == 2 && (*agent)->connected(); },
                    Deadline::After(lease)));
  ack = (*server)->Call("h0", Inject("f2"), Deadline::After(5 * kNsPerSec));
  REQUIRE(ack.ok());
  CHECK(ack->ok());
  CHECK(fake.lapses == 0);
  CHECK((*server)->stats().lost == 0);
  (*agent)->Stop();
}

TEST_CASE(
    "control: an agent cut off for longer than its lease reverts, and the coordinator reports "
    "the host lost within the lease",
    "[integration]") {
  const Nanos lease = kNsPerSec;
  auto server = ControlServer::Start(ServerOptions(lease));
  REQUIRE(server.ok());
  TcpRelay relay((*server)->port());
  REQUIRE(relay.port() > 0);
  FakeAgent fake;
  auto agent = AgentSession::Connect(AgentOptions(relay.port(), "t0k3n-for-the-redial-tests"),
                                     fake.Handlers());
  REQUIRE(agent.ok());
  auto ack = (*server)->Call("h0", Inject("f0"), Deadline::After(5 * kNsPerSec));
  REQUIRE(ack.ok());
  REQUIRE(fake.faults == 1);

  relay.SetRefusing(true);
  relay.Cut();
  const Nanos cut_at = MonoNowNs();
  // Regression: a broken stream alone does not revert. Half a lease later the fault is held.
  CHECK_FALSE((*agent)->WaitEnded(Deadline::After(lease / 2)));
  CHECK(fake.lapses == 0);
  CHECK(fake.faults == 1);
  CHECK_FALSE((*server)->TakeLostAgent().has_value());

  std::optional<LostAgentReport> lost;
  REQUIRE(WaitUntil([&] { return (lost = (*server)->TakeLostAgent()).has_value(); },
                    Deadline::After(lease + 3 * kNsPerSec)));
  const Nanos lost_after = MonoNowNs() - cut_at;
  CHECK(lost->host == "h0");
  CHECK(lost->reason.find("no session") != std::string::npos);
  CHECK(lost_after >= lease / 2);
  CHECK(lost_after < lease + 3 * kNsPerSec);
  CHECK_FALSE((*server)->TakeLostAgent().has_value());  // reported once

  // The agent's own lease lapses: it reverts.
  REQUIRE((*agent)->WaitEnded(Deadline::After(lease + 3 * kNsPerSec)));
  CHECK((*agent)->lease_lapsed());
  CHECK(fake.lapses == 1);
  CHECK(fake.faults == 0);
  CHECK(fake.lapsed_at.load() - cut_at >= lease / 2);

  // Calls to the lost host fail at once, not at their deadline.
  const Nanos t0 = MonoNowNs();
  auto late = (*server)->Call("h0", Inject("f1"), Deadline::After(30 * kNsPerSec));
  CHECK(late.status().code() == Code::kUnavailable);
  CHECK(late.status().message().find("lost") != std::string::npos);
  CHECK(MonoNowNs() - t0 < kNsPerSec);

  // Reachable again, the host is still lost for this run: a new agent process is refused.
  relay.SetRefusing(false);
  FakeAgent second;
  auto again = AgentSession::Connect(AgentOptions(relay.port(), "t0k3n-for-the-redial-tests"),
                                     second.Handlers());
  CHECK(again.status().code() == Code::kFailedPrecondition);
  CHECK(again.status().message().find("lost") != std::string::npos);
  CHECK(second.commands == 0);
  (*agent)->Stop();
}

TEST_CASE(
    "control: a restarted agent (new instance) is not taken for the old one: the host is lost "
    "at once",
    "[integration]") {
  const Nanos lease = 3 * kNsPerSec;
  auto server = ControlServer::Start(ServerOptions(lease));
  REQUIRE(server.ok());
  const std::string token = "t0k3n-for-the-redial-tests";

  // Before any command a restart loses nothing: the new instance simply registers.
  FakeAgent early;
  auto first = AgentSession::Connect(AgentOptions((*server)->port(), token), early.Handlers());
  REQUIRE(first.ok());
  (*first)->Stop();  // as a process that died: its connection ends
  REQUIRE(WaitUntil([&] { return !(*server)->Agent("h0")->connected; },
                    Deadline::After(5 * kNsPerSec)));
  FakeAgent old_agent;
  auto old_session =
      AgentSession::Connect(AgentOptions((*server)->port(), token), old_agent.Handlers());
  REQUIRE(old_session.ok());
  CHECK((*server)->Agent("h0")->instance == (*old_session)->instance_id());
  CHECK((*server)->stats().lost == 0);

  // Given a command, the host has something to lose.
  REQUIRE((*server)->Call("h0", Inject("f0"), Deadline::After(5 * kNsPerSec)).ok());
  const std::string old_instance = (*old_session)->instance_id();
  (*old_session)->Stop();  // killed: its ranks and faults are gone with it
  REQUIRE(WaitUntil([&] { return !(*server)->Agent("h0")->connected; },
                    Deadline::After(5 * kNsPerSec)));

  // Restarted at once (well within the lease), as systemd would: refused, and the host lost
  // now rather than a lease later.
  const Nanos t0 = MonoNowNs();
  FakeAgent restarted;
  auto fresh = AgentSession::Connect(AgentOptions((*server)->port(), token), restarted.Handlers());
  CHECK(fresh.status().code() == Code::kFailedPrecondition);
  auto lost = (*server)->TakeLostAgent();
  REQUIRE(lost.has_value());
  CHECK(lost->host == "h0");
  CHECK(lost->reason.find("restarted") != std::string::npos);
  CHECK(MonoNowNs() - t0 < lease);
  CHECK(restarted.commands == 0);
  auto info = (*server)->Agent("h0");
  REQUIRE(info.ok());
  CHECK(info->lost);
  CHECK(info->instance == old_instance);
  CHECK((*server)->Call("h0", Inject("f1"), Deadline::After(30 * kNsPerSec)).status().code() ==
        Code::kUnavailable);
}

TEST_CASE("control: a command that runs longer than the lease does not lapse it", "[integration]") {
  // Regression: commands ran on the thread that reads the coordinator's heartbeats, so a
  // command longer than the lease (a rank stop with its grace) lapsed a live coordinator's
  // lease: the agent reverted everything and left, and its stream broke with it.
  const Nanos lease = 500 * kNsPerMs;
  auto server = ControlServer::Start(ServerOptions(lease));
  REQUIRE(server.ok());
  FakeAgent fake;
  AgentHandlers h = fake.Handlers();
  auto fast = h.on_command;
  h.on_command = [&](const pb::CoordinatorMessage& m) {
    if (m.has_stop())  // a slow command: three leases of work
      WaitUntil([] { return false; }, Deadline::After(3 * lease), 10 * kNsPerMs);
    return fast(m);
  };
  auto agent = AgentSession::Connect(AgentOptions((*server)->port(), "t0k3n-for-the-redial-tests"),
                                     std::move(h));
  REQUIRE(agent.ok());
  REQUIRE((*server)->Call("h0", Inject("f0"), Deadline::After(5 * kNsPerSec)).ok());
  pb::CoordinatorMessage stop;
  stop.mutable_stop()->set_grace_ms(1500);
  auto ack = (*server)->Call("h0", stop, Deadline::After(10 * kNsPerSec));
  REQUIRE(ack.ok());
  CHECK(ack->ok());
  CHECK_FALSE((*agent)->lease_lapsed());
  CHECK(fake.lapses == 0);
  CHECK(fake.faults == 1);
  CHECK((*agent)->connected());
  CHECK_FALSE((*server)->TakeLostAgent().has_value());
  (*agent)->Stop();
}

// A child process, SIGKILLed and reaped if the test ends first.
class Proc {
 public:
  explicit Proc(std::vector<std::string> argv) {
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    if (posix_spawn(&pid_, args[0], nullptr, nullptr, args.data(), environ) != 0) pid_ = -1;
  }
  ~Proc() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  int pid() const { return pid_; }
  std::optional<int> Wait(Deadline deadline) {
    int status = 0;
    if (!WaitUntil([&] { return waitpid(pid_, &status, WNOHANG) == pid_; }, deadline, 5 * kNsPerMs))
      return std::nullopt;
    reaped_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
};

TEST_CASE(
    "control: faultline-agent --service dials until a coordinator listens, resumes after a cut, "
    "and exits 0 after the run's Shutdown",
    "[integration]") {
  testing::TempDir dir("fl_redial");
  auto token = CreateTokenFile(dir.path() + "/token");
  REQUIRE(token.ok());
  // A port that nobody listens on yet: taken from a server that is stopped at once.
  int port = 0;
  {
    auto probe = ControlServer::Start(ServerOptions(kNsPerSec));
    REQUIRE(probe.ok());
    port = (*probe)->port();
  }
  TcpRelay relay(port);  // the agent's way to the coordinator, cut below
  REQUIRE(relay.port() > 0);
  Proc agent({std::string(FL_BUILD_DIR) + "/bin/faultline-agent", "--service", "--coordinator",
              "127.0.0.1:" + std::to_string(relay.port()), "--token-file", dir.path() + "/token",
              "--host", "h0", "--connect-timeout", "0.5", "--journal-dir",
              dir.path() + "/journal"});
  REQUIRE(agent.pid() > 0);
  // Several tries fail (nothing listens): the agent keeps going.
  CHECK_FALSE(agent.Wait(Deadline::After(1500 * kNsPerMs)).has_value());

  ControlServerOptions o = ServerOptions(3 * kNsPerSec);
  o.token = *token;
  o.listen_address = "127.0.0.1:" + std::to_string(port);
  auto server = ControlServer::Start(o);
  REQUIRE(server.ok());
  REQUIRE((*server)->WaitForAgents({"h0"}, Deadline::After(20 * kNsPerSec)).ok());
  pb::CoordinatorMessage stop;  // a command, so that the host has something to lose
  stop.mutable_stop()->set_grace_ms(100);
  auto ack = (*server)->Call("h0", stop, Deadline::After(10 * kNsPerSec));
  REQUIRE(ack.ok());
  CHECK(ack->ok());
  const std::string instance = (*server)->Agent("h0")->instance;

  relay.Cut();  // the agent process re-dials and resumes; it does not exit or revert
  REQUIRE(
      WaitUntil([&] { return (*server)->stats().resumes == 1; }, Deadline::After(3 * kNsPerSec)));
  CHECK_FALSE(agent.Wait(Deadline::After(100 * kNsPerMs)).has_value());
  ack = (*server)->Call("h0", stop, Deadline::After(10 * kNsPerSec));
  REQUIRE(ack.ok());
  CHECK(ack->ok());
  CHECK((*server)->Agent("h0")->instance == instance);

  pb::CoordinatorMessage bye;
  bye.mutable_shutdown()->set_reason("run over");
  ack = (*server)->Call("h0", bye, Deadline::After(10 * kNsPerSec));
  REQUIRE(ack.ok());
  CHECK(ack->ok());
  CHECK(agent.Wait(Deadline::After(10 * kNsPerSec)) == 0);
  CHECK((*server)->Agent("h0")->retired);
  CHECK_FALSE((*server)->TakeLostAgent().has_value());
}

}  // namespace
}  // namespace fl::harness
