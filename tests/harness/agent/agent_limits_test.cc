// A real faultline-agent on a real (small) lab, told by a coordinator peer process to apply a
// NIC flap: the agent's own deadline and its lease cap bring the NIC back, whatever the
// coordinator asked for; and a SIGKILLed --service agent, restarted as its systemd unit would
// restart it, reverts from its journal while the coordinator marks the host lost. Root only
// (namespaces, links).
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>

#include "common/file_util.h"
#include "harness/control/auth.h"
#include "harness/coordinator/control_server.h"
#include "harness/lab/local_lab.h"
#include "tests/child_process.h"
#include "tests/harness/agent/agent_testing.h"
#include "tests/test_util.h"

namespace fl::harness {
namespace {

using testing::ChildProcess;
using testing::TempDir;
using testing::TestLab;

struct Setup {
  TempDir dir{"fl_limits"};
  std::unique_ptr<TestLab> lab;
  std::unique_ptr<ChildProcess> coordinator, agent;

  // The coordinator asks for lease_ms and a nic_port_flap on h0.nic0 for duration_ms; the
  // agent runs under `policy`. Returns once the fault is applied (the coordinator's ack).
  void Start(const std::string& policy, int64_t lease_ms, int64_t duration_ms) {
    lab = std::make_unique<TestLab>(dir.path());
    REQUIRE(CreateTokenFile(dir.path() + "/token").ok());
    REQUIRE(WriteFileAtomic(dir.path() + "/policy.yaml", policy).ok());
    ChildProcess::Options co;
    co.out = dir.path() + "/coordinator.log";
    coordinator = std::make_unique<ChildProcess>(
        std::vector<std::string>{std::string(FL_BUILD_DIR) + "/tests/fault_coordinator_peer",
                                 dir.path() + "/port", dir.path() + "/token",
                                 std::to_string(lease_ms), "nic_port_flap", "h0.nic0",
                                 std::to_string(duration_ms), dir.path() + "/ack"},
        co);
    REQUIRE(WaitUntil([&] { return ReadFile(dir.path() + "/port").ok(); },
                      Deadline::After(20 * kNsPerSec)));
    ChildProcess::Options ao;
    ao.out = dir.path() + "/agent.log";
    agent = std::make_unique<ChildProcess>(
        std::vector<std::string>{std::string(FL_BUILD_DIR) + "/bin/faultline-agent",
                                 "--coordinator", "127.0.0.1:" + *ReadFile(dir.path() + "/port"),
                                 "--token-file", dir.path() + "/token", "--host", "h0", "--lab",
                                 lab->name(), "--policy", dir.path() + "/policy.yaml"},
        ao);
    // On a timeout, what both processes said (where the next engineer starts looking).
    if (!WaitUntil([&] { return ReadFile(dir.path() + "/ack").ok(); },
                   Deadline::After(60 * kNsPerSec), 5 * kNsPerMs))
      FAIL("no ack from the coordinator peer in 60 s; agent "
           << (agent->Wait(Deadline::After(0)).has_value() ? "exited" : "still running")
           << ", coordinator "
           << (coordinator->Wait(Deadline::After(0)).has_value() ? "exited" : "still running")
           << "\n"
           << Logs());
    INFO(ReadFile(dir.path() + "/agent.log").value_or(""));
    REQUIRE(*ReadFile(dir.path() + "/ack") == "ok");
  }
  std::string Logs() const {
    return ReadFile(dir.path() + "/agent.log").value_or("") +
           ReadFile(dir.path() + "/coordinator.log").value_or("");
  }
};

TEST_CASE(
    "agent limits: a fault declared longer than max_fault_duration is reverted by the "
    "agent at the cap while the coordinator lives",
    "[.root][integration]") {
  Setup s;
  s.Start("allow_kinds: [nic_port_flap]\nmax_fault_duration: 1s\n", 20000, 5000);
  const Nanos applied = MonoNowNs();
  INFO(s.Logs());
  CHECK_FALSE(s.lab->NicUp());
  // The coordinator never sends a revert and keeps heartbeating: the agent's deadline (1 s)
  // brings nic0 back, long before the declared 5 s.
  REQUIRE(
      WaitUntil([&] { return s.lab->NicUp(); }, Deadline::After(10 * kNsPerSec), 20 * kNsPerMs));
  const Nanos held = MonoNowNs() - applied;
  CHECK(held < 4 * kNsPerSec);
  CHECK(held >= 500 * kNsPerMs);
  CHECK_FALSE(s.coordinator->Wait(Deadline::After(0)).has_value());  // still alive
  CHECK_FALSE(s.agent->Wait(Deadline::After(0)).has_value());        // and so is the agent
  kill(s.agent->pid(), SIGTERM);
  CHECK(s.agent->Wait(Deadline::After(20 * kNsPerSec)) == 0);
}

TEST_CASE(
    "agent limits: a 600 s lease is cut to the policy's max_lease: with the coordinator "
    "SIGKILLed the fault is reverted within the cap",
    "[.root][integration]") {
  Setup s;
  // The regression: `--lease 600` was kept, so a NIC stayed down long after the coordinator
  // died. max_fault_duration is long here, so that only the lease can bring it back.
  s.Start("allow_kinds: [nic_port_flap]\nmax_fault_duration: 60s\nmax_lease: 2s\n", 600000, 30000);
  INFO(s.Logs());
  CHECK_FALSE(s.lab->NicUp());
  kill(s.coordinator->pid(), SIGKILL);
  const Nanos killed = MonoNowNs();
  REQUIRE(s.coordinator->Wait(Deadline::After(5 * kNsPerSec)) == -SIGKILL);
  // Within the capped lease (2 s) plus 1 s.
  CHECK(WaitUntil([&] { return s.lab->NicUp(); }, Deadline::After(3 * kNsPerSec), 20 * kNsPerMs));
  CHECK(MonoNowNs() - killed >= kNsPerSec);  // by the lease, not at once
  // The agent exits 1 (lease lapsed, faults reverted).
  CHECK(s.agent->Wait(Deadline::After(20 * kNsPerSec)) == 1);
}

TEST_CASE(
    "agent service: kill -9 of an agent holding a fault: restarted as its unit would be, it "
    "reverts the fault from its journal and the coordinator has the host lost within the lease",
    "[.root][integration]") {
  TempDir dir("fl_service");
  TestLab lab(dir.path());
  auto token = CreateTokenFile(dir.path() + "/token");
  REQUIRE(token.ok());
  REQUIRE(WriteFileAtomic(dir.path() + "/policy.yaml",
                          "allow_kinds: [nic_port_flap]\nmax_fault_duration: 120s\n")
              .ok());
  ControlServerOptions so;
  so.token = *token;
  so.run_id = "service-run";
  so.lease_ns = 2 * kNsPerSec;
  so.heartbeat_interval_ns = 200 * kNsPerMs;
  auto server = ControlServer::Start(so);
  REQUIRE(server.ok());
  // The unit's command line (configs/systemd/faultline-agent@.service), on the local lab.
  const std::vector<std::string> argv = {std::string(FL_BUILD_DIR) + "/bin/faultline-agent",
                                         "--service",
                                         "--coordinator",
                                         (*server)->address(),
                                         "--token-file",
                                         dir.path() + "/token",
                                         "--host",
                                         "h0",
                                         "--lab",
                                         lab.name(),
                                         "--policy",
                                         dir.path() + "/policy.yaml",
                                         "--journal-dir",
                                         dir.path() + "/journal"};
  ChildProcess::Options ao;
  ao.out = dir.path() + "/agent.log";
  auto agent = std::make_unique<ChildProcess>(argv, ao);
  REQUIRE((*server)->WaitForAgents({"h0"}, Deadline::After(30 * kNsPerSec)).ok());
  faultline::v1::CoordinatorMessage inject;
  inject.mutable_inject()->set_fault_id("f0");
  inject.mutable_inject()->set_kind("nic_port_flap");
  inject.mutable_inject()->set_target("h0.nic0");
  inject.mutable_inject()->set_duration_ms(120000);
  auto ack = (*server)->Call("h0", inject, Deadline::After(20 * kNsPerSec));
  INFO(ReadFile(dir.path() + "/agent.log").value_or(""));
  REQUIRE(ack.ok());
  REQUIRE(ack->ok());
  REQUIRE_FALSE(lab.NicUp());

  kill(agent->pid(), SIGKILL);
  const Nanos killed = MonoNowNs();
  REQUIRE(agent->Wait(Deadline::After(5 * kNsPerSec)) == -SIGKILL);
  CHECK_FALSE(lab.NicUp());  // nobody else reverts it: no lease runs in a dead agent
  ao.out = dir.path() + "/agent2.log";
  ChildProcess restarted(argv, ao);  // Restart=always
  // At start it reverts what the journal holds (the NIC comes back long before the 120 s),
  // then dials in as a new instance: the coordinator loses the host rather than resuming it.
  CHECK(WaitUntil([&] { return lab.NicUp(); }, Deadline::After(10 * kNsPerSec), 20 * kNsPerMs));
  std::optional<LostAgentReport> lost;
  CHECK(WaitUntil([&] { return (lost = (*server)->TakeLostAgent()).has_value(); },
                  Deadline::After(so.lease_ns + 3 * kNsPerSec)));
  const Nanos lost_after = MonoNowNs() - killed;
  INFO(ReadFile(dir.path() + "/agent2.log").value_or(""));
  REQUIRE(lost.has_value());
  CHECK(lost->host == "h0");
  CHECK(lost_after < so.lease_ns + 3 * kNsPerSec);
  CHECK((*server)->Call("h0", inject, Deadline::After(30 * kNsPerSec)).status().code() ==
        Code::kUnavailable);
  CHECK(ReadFile(dir.path() + "/agent2.log").value_or("").find("reverted fault") !=
        std::string::npos);
  // Refused for this run, the service agent keeps dialling; SIGTERM ends it cleanly.
  CHECK_FALSE(restarted.Wait(Deadline::After(500 * kNsPerMs)).has_value());
  kill(restarted.pid(), SIGTERM);
  CHECK(restarted.Wait(Deadline::After(20 * kNsPerSec)) == 0);
}

}  // namespace
}  // namespace fl::harness
