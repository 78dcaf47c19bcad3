// Control-plane tests: real gRPC between real processes (the faultline-agent binary, and
// control_peer for the side a test kills).
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>

#include "common/file_util.h"
#include "harness/agent/agent_session.h"
#include "harness/control/auth.h"
#include "harness/control/certs.h"
#include "harness/control/clock_sync.h"
#include "harness/coordinator/control_server.h"
#include "tests/test_util.h"

extern char** environ;

namespace fl::harness {
namespace {

// A child process that is SIGKILLed and reaped if the test ends before it does.
class Child {
 public:
  explicit Child(std::vector<std::string> argv) {
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    if (posix_spawn(&pid_, args[0], nullptr, nullptr, args.data(), environ) != 0) pid_ = -1;
  }
  ~Child() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  int pid() const { return pid_; }
  // Exit code, -signal when killed, or nullopt when still running at the deadline.
  std::optional<int> Wait(Deadline deadline) {
    int status = 0;
    bool done =
        WaitUntil([&] { return waitpid(pid_, &status, WNOHANG) == pid_; }, deadline, 5 * kNsPerMs);
    if (!done) return std::nullopt;
    reaped_ = true;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
};

using testing::TempDir;

std::string Bin(const std::string& name) { return std::string(FL_BUILD_DIR) + "/bin/" + name; }

TEST_CASE("control: clock offset uses the probe with the shortest round trip", "[unit]") {
  // agent clock is 1 s ahead; the second probe has the shortest RTT (2 ms)
  std::vector<ClockProbeSample> s = {
      {0, kNsPerSec + 9 * kNsPerMs, 20 * kNsPerMs},
      {100 * kNsPerMs, kNsPerSec + 101 * kNsPerMs, 102 * kNsPerMs},
      {200 * kNsPerMs, kNsPerSec + 200 * kNsPerMs, 260 * kNsPerMs},
  };
  ClockOffset off = EstimateClockOffset(s);
  CHECK(off.offset_ns == kNsPerSec);
  CHECK(off.uncertainty_ns == kNsPerMs);
  CHECK(off.probes == 3);
  CHECK(off.ToCoordinator(5 * kNsPerSec) == 4 * kNsPerSec);
  CHECK(TokensEqual("abc", "abc"));
  CHECK_FALSE(TokensEqual("abc", "abd"));
  CHECK_FALSE(TokensEqual("abc", "abcd"));
}

TEST_CASE("control: the clock measurement stops at an unanswered probe or a probe's error",
          "[unit]") {
  const Deadline later = Deadline::After(10 * kNsPerSec);
  std::vector<ClockProbeSample> answers = {
      {0, kNsPerSec + 9 * kNsPerMs, 20 * kNsPerMs},
      {100 * kNsPerMs, kNsPerSec + 101 * kNsPerMs, 102 * kNsPerMs},
  };
  size_t asked = 0;
  // Two answers, then silence: the third probe ends the measurement, the fourth is not made.
  auto two_then_silent = [&](Deadline) -> StatusOr<std::optional<ClockProbeSample>> {
    if (asked == answers.size()) return std::optional<ClockProbeSample>();
    return std::optional<ClockProbeSample>(answers.at(asked++));
  };
  StatusOr<ClockOffset> off = MeasureClockOffset("h0", 4, later, two_then_silent);
  REQUIRE(off.ok());
  CHECK(off->offset_ns == kNsPerSec);
  CHECK(off->probes == 2);

  auto silent = [](Deadline) -> StatusOr<std::optional<ClockProbeSample>> {
    return std::optional<ClockProbeSample>();
  };
  StatusOr<ClockOffset> none = MeasureClockOffset("h0", 4, later, silent);
  CHECK(none.status().code() == Code::kDeadlineExceeded);
  CHECK(none.status().ToString().find("no clock probe to h0") != std::string::npos);

  int calls = 0;
  auto gone = [&](Deadline) -> StatusOr<std::optional<ClockProbeSample>> {
    ++calls;
    return UnavailableError("agent h0 disconnected");
  };
  CHECK(MeasureClockOffset("h0", 4, later, gone).status().code() == Code::kUnavailable);
  CHECK(calls == 1);
  CHECK(MeasureClockOffset("h0", 4, Deadline::After(0), gone).status().code() ==
        Code::kDeadlineExceeded);
  CHECK(calls == 1);
}

TEST_CASE(
    "control: an agent process registers, reports its fingerprint, syncs its clock and obeys "
    "shutdown",
    "[integration]") {
  TempDir dir("fl_control");
  auto token = CreateTokenFile(dir.path() + "/token");
  REQUIRE(token.ok());
  ControlServerOptions o;
  o.token = *token;
  o.run_id = "r-test";
  o.lease_ns = 2 * kNsPerSec;
  o.heartbeat_interval_ns = 100 * kNsPerMs;
  auto server = ControlServer::Start(o);
  REQUIRE(server.ok());
  Child agent({Bin("faultline-agent"), "--coordinator", (*server)->address(), "--token-file",
               dir.path() + "/token", "--host", "h0"});
  REQUIRE(agent.pid() > 0);
  REQUIRE((*server)->WaitForAgents({"h0"}, Deadline::After(20 * kNsPerSec)).ok());
  auto info = (*server)->Agent("h0");
  REQUIRE(info.ok());
  CHECK(info->connected);
  CHECK(info->fingerprint.kernel().rfind("Linux ", 0) == 0);
  CHECK(info->fingerprint.ccl_build().find("ftccl") == 0);

  auto clock = (*server)->SyncClock("h0", 8, Deadline::After(10 * kNsPerSec));
  REQUIRE(clock.ok());
  CHECK(clock->probes == 8);
  // same machine, same clock: the estimate must be within its own uncertainty (plus slack
  // for scheduling between reading the clock and sending)
  CHECK(std::llabs(clock->offset_ns) <= clock->uncertainty_ns + 5 * kNsPerMs);

  faultline::v1::CoordinatorMessage bye;
  bye.mutable_shutdown()->set_reason("test done");
  auto ack = (*server)->Call("h0", bye, Deadline::After(10 * kNsPerSec));
  REQUIRE(ack.ok());
  CHECK(ack->ok());
  CHECK(agent.Wait(Deadline::After(10 * kNsPerSec)) == 0);
  CHECK(WaitUntil([&] { return !(*server)->Agent("h0")->connected; },
                  Deadline::After(5 * kNsPerSec)));
  CHECK((*server)->Call("h0", bye, Deadline::After(kNsPerSec)).status().code() ==
        Code::kUnavailable);
}

TEST_CASE("control: the agent refuses out-of-range commands with InvalidArgument and lives on",
          "[integration]") {
  TempDir dir("fl_control");
  auto token = CreateTokenFile(dir.path() + "/token");
  REQUIRE(token.ok());
  ControlServerOptions o;
  o.token = *token;
  o.run_id = "r-test";
  o.lease_ns = 2 * kNsPerSec;
  o.heartbeat_interval_ns = 100 * kNsPerMs;
  auto server = ControlServer::Start(o);
  REQUIRE(server.ok());
  Child agent({Bin("faultline-agent"), "--coordinator", (*server)->address(), "--token-file",
               dir.path() + "/token", "--host", "h0", "--journal-dir", dir.path() + "/journal"});
  REQUIRE(agent.pid() > 0);
  REQUIRE((*server)->WaitForAgents({"h0"}, Deadline::After(20 * kNsPerSec)).ok());
  auto refused = [&](const faultline::v1::CoordinatorMessage& m) {
    auto ack = (*server)->Call("h0", m, Deadline::After(10 * kNsPerSec));
    REQUIRE(ack.ok());
    CHECK_FALSE(ack->ok());
    CHECK(ack->error_code() == static_cast<int>(Code::kInvalidArgument));
    return ack->error();
  };
  faultline::v1::CoordinatorMessage inject;
  inject.mutable_inject()->set_fault_id("f0");
  inject.mutable_inject()->set_kind("nic_port_flap");
  inject.mutable_inject()->set_target("h0.nic0");
  inject.mutable_inject()->set_duration_ms(-5);
  CHECK(refused(inject).find("duration_ms") != std::string::npos);
  inject.mutable_inject()->set_duration_ms(INT64_MAX);
  refused(inject);
  inject.mutable_inject()->set_duration_ms(10);
  inject.mutable_inject()->set_fault_id("");
  refused(inject);
  faultline::v1::CoordinatorMessage stop;
  stop.mutable_stop()->set_grace_ms(-1);
  refused(stop);
  // Still there, and still obeys.
  faultline::v1::CoordinatorMessage bye;
  bye.mutable_shutdown()->set_reason("test done");
  auto ack = (*server)->Call("h0", bye, Deadline::After(10 * kNsPerSec));
  REQUIRE(ack.ok());
  CHECK(ack->ok());
  CHECK(agent.Wait(Deadline::After(10 * kNsPerSec)) == 0);
}

TEST_CASE("control: an agent with the wrong token is refused", "[integration]") {
  TempDir dir("fl_control");
  REQUIRE(CreateTokenFile(dir.path() + "/token").ok());
  REQUIRE(WriteFileAtomic(dir.path() + "/wrong", "not-the-token\n").ok());
  ControlServerOptions o;
  o.token = *ReadTokenFile(dir.path() + "/token");
  auto server = ControlServer::Start(o);
  REQUIRE(server.ok());
  Child agent({Bin("faultline-agent"), "--coordinator", (*server)->address(), "--token-file",
               dir.path() + "/wrong", "--host", "h0"});
  CHECK(agent.Wait(Deadline::After(20 * kNsPerSec)) == 3);
  CHECK((*server)->stats().rejected == 1);
  CHECK((*server)->Agents().empty());
}

TEST_CASE(
    "control: faultline-agent --tls-dir registers over mutual TLS, and without its certificate "
    "it exits 2",
    "[integration]") {
  TempDir dir("fl_control");
  const std::string tls = dir.path() + "/tls";
  REQUIRE(InitLabCa(tls).ok());
  IssueOptions coord;
  coord.role = CertRole::kCoordinator;
  coord.extra_names = {"127.0.0.1"};
  REQUIRE(IssueCertificate(tls, "coordinator-host", coord).ok());
  REQUIRE(IssueCertificate(tls, "h0", {}).ok());
  auto token = CreateTokenFile(dir.path() + "/token");
  REQUIRE(token.ok());
  ControlServerOptions o;
  o.token = *token;
  o.run_id = "r-tls";
  auto material = LoadTlsMaterial(tls, CertRole::kCoordinator, "");
  REQUIRE(material.ok());
  o.tls = *material;
  auto server = ControlServer::Start(o);
  REQUIRE(server.ok());

  Child stranger({Bin("faultline-agent"), "--coordinator", (*server)->address(), "--token-file",
                  dir.path() + "/token", "--tls-dir", tls, "--host", "h1"});
  CHECK(stranger.Wait(Deadline::After(20 * kNsPerSec)) == 2);  // no h1.crt: refused locally

  Child agent({Bin("faultline-agent"), "--coordinator", (*server)->address(), "--token-file",
               dir.path() + "/token", "--tls-dir", tls, "--host", "h0"});
  REQUIRE((*server)->WaitForAgents({"h0"}, Deadline::After(20 * kNsPerSec)).ok());
  faultline::v1::CoordinatorMessage bye;
  bye.mutable_shutdown()->set_reason("test done");
  auto ack = (*server)->Call("h0", bye, Deadline::After(10 * kNsPerSec));
  REQUIRE(ack.ok());
  CHECK(ack->ok());
  CHECK(agent.Wait(Deadline::After(10 * kNsPerSec)) == 0);
  CHECK((*server)->stats().rejected == 0);
}

TEST_CASE(
    "control: when the coordinator is SIGKILLed the agent reverts its faults within the lease",
    "[integration]") {
  TempDir dir("fl_control");
  REQUIRE(CreateTokenFile(dir.path() + "/token").ok());
  const Nanos lease = 600 * kNsPerMs;
  Child coordinator({std::string(FL_BUILD_DIR) + "/tests/control_peer", "coordinator",
                     dir.path() + "/port", dir.path() + "/token",
                     std::to_string(lease / kNsPerMs)});
  REQUIRE(WaitUntil([&] { return ReadFile(dir.path() + "/port").ok(); },
                    Deadline::After(20 * kNsPerSec)));
  std::string addr = "127.0.0.1:" + *ReadFile(dir.path() + "/port");
  Child agent({std::string(FL_BUILD_DIR) + "/tests/control_peer", "agent", addr,
               dir.path() + "/token", dir.path()});
  const std::string marker = dir.path() + "/f0";
  REQUIRE(WaitUntil([&] { return access(marker.c_str(), F_OK) == 0; },
                    Deadline::After(20 * kNsPerSec)));

  // The fault stays while the coordinator lives: several leases long.
  CHECK_FALSE(agent.Wait(Deadline::After(3 * lease)).has_value());
  CHECK(access(marker.c_str(), F_OK) == 0);

  kill(coordinator.pid(), SIGKILL);
  Nanos killed_at = MonoNowNs();
  REQUIRE(coordinator.Wait(Deadline::After(5 * kNsPerSec)) == -SIGKILL);
  // Reverted by the lease: the agent removes the marker and exits 0. The bound is generous
  // (the lease plus scheduling on a busy 2-core machine); the exact figure is a benchmark.
  CHECK(agent.Wait(Deadline::After(lease + 5 * kNsPerSec)) == 0);
  CHECK(access(marker.c_str(), F_OK) != 0);
  CHECK(MonoNowNs() - killed_at >= lease / 2);  // not before the lease could have lapsed
}

// Regression (bench_coordinator_agents --agents 1024 crashed at the end of every run): the
// heartbeat thread wrote to a session whose stream handler had already returned (a freed
// stream). Many agents leaving while heartbeats are sent every millisecond hit that window.
TEST_CASE("control: agents leaving while heartbeats are being sent do not crash the server",
          "[integration]") {
  ControlServerOptions o;
  o.token = "t0k3n-for-the-churn-test";
  o.run_id = "churn";
  o.lease_ns = 2 * kNsPerSec;
  o.heartbeat_interval_ns = kNsPerMs;
  auto server = ControlServer::Start(o);
  REQUIRE(server.ok());
  const int kRounds = 6, kAgents = 48;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<std::unique_ptr<AgentSession>> agents;
    std::vector<std::string> hosts;
    for (int i = 0; i < kAgents; ++i) {
      AgentSessionOptions a;
      a.coordinator = (*server)->address();
      a.token = o.token;
      a.host = "churn" + std::to_string(i);
      a.heartbeat_interval_ns = 50 * kNsPerMs;
      auto s = AgentSession::Connect(a, {});
      REQUIRE(s.ok());
      agents.push_back(std::move(*s));
      hosts.push_back(a.host);
    }
    REQUIRE((*server)->WaitForAgents(hosts, Deadline::After(20 * kNsPerSec)).ok());
    for (auto& a : agents) a->Stop();  // every stream ends while heartbeats go out
    REQUIRE(WaitUntil(
        [&] {
          for (const auto& info : (*server)->Agents())
            if (info.connected) return false;
          return true;
        },
        Deadline::After(20 * kNsPerSec)));
  }
  CHECK((*server)->stats().sessions == static_cast<uint64_t>(kRounds * kAgents));
}

}  // namespace
}  // namespace fl::harness
