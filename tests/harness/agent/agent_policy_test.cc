// The agent's policy decisions (harness/agent/agent_policy.h), as pure functions: no process,
// no clock.
#include "harness/agent/agent_policy.h"

#include <catch2/catch.hpp>

#include "common/file_util.h"
#include "injectors/switch/switch_driver.h"

namespace fl::harness {
namespace {

namespace pb = faultline::v1;

pb::InjectFault Fault(const std::string& kind, const std::string& target, int64_t duration_ms) {
  pb::InjectFault f;
  f.set_fault_id("f0");
  f.set_kind(kind);
  f.set_target(target);
  f.set_duration_ms(duration_ms);
  return f;
}

AgentPolicy MustParse(const std::string& text) {
  auto p = ParseAgentPolicy(text, "p.yaml");
  INFO(p.status().ToString());
  REQUIRE(p.ok());
  return *p;
}

std::string ParseError(const std::string& text) {
  auto p = ParseAgentPolicy(text, "p.yaml");
  REQUIRE_FALSE(p.ok());
  CHECK(p.status().code() == Code::kInvalidArgument);
  return p.status().message();
}

TEST_CASE("agent policy: the file's numbers are bounded, with file:line:col", "[unit]") {
  AgentPolicy p = MustParse(
      "allow_kinds: [nic_port_flap]\nmax_fault_duration: 5s\n"
      "max_lease: 2s\nmax_ranks: 8\nworker_dirs: [/shared/fl]\n");
  CHECK(p.source == "p.yaml");
  CHECK(p.max_fault_duration_ns == 5 * kNsPerSec);
  CHECK(p.max_lease_ns == 2 * kNsPerSec);
  CHECK(p.max_ranks == 8);
  CHECK(MustParse("allow_ranks: true\n").max_lease_ns == 30 * kNsPerSec);  // the default cap
  CHECK(ParseError("max_lease: 600s\n") ==
        "p.yaml:1:12: max_lease must be between 100ms and 5m, not 10m");
  CHECK(ParseError("max_lease: 0s\n").rfind("p.yaml:1:12: max_lease must be between", 0) == 0);
  CHECK(ParseError("max_fault_duration: 0s\n")
            .rfind("p.yaml:1:21: max_fault_duration must be between 1ms and 168h", 0) == 0);
  CHECK(ParseError("max_ranks: 4000000000\n").rfind("p.yaml:1:12: ", 0) == 0);
  CHECK(ParseError("worker_dirs: [relative/dir]\n").rfind("p.yaml:1:15: worker_dirs", 0) == 0);
  CHECK(ParseError("worker_dirs: [/a/../etc]\n").rfind("p.yaml:1:15: worker_dirs", 0) == 0);
  CHECK(ParseError("max_fault_duraton: 5s\n").rfind("p.yaml:1:1: unknown key", 0) == 0);
}

TEST_CASE("agent policy: the shipped local lab policy loads", "[unit]") {
  auto p = LoadAgentPolicy(std::string(FL_SOURCE_DIR) + "/configs/policies/local_lab.yaml");
  REQUIRE(p.ok());
  CHECK_FALSE(p->allow_kinds.empty());
  CHECK(p->max_fault_duration_ns > 0);
  CHECK(p->max_lease_ns <= kMaxLeaseCapNs);
  auto inv = LoadAgentPolicy(std::string(FL_SOURCE_DIR) + "/configs/policies/inventory_host.yaml");
  REQUIRE(inv.ok());
  CHECK(
      DecideInject(*inv, false, "node01", Fault("nic_port_flap", "node01.nic0", 1000)).status.ok());
  CHECK_FALSE(DecideInject(*inv, false, "node01", Fault("nic_port_flap", "node010.nic0", 1000))
                  .status.ok());
}

TEST_CASE("agent policy: target prefixes match whole dot-separated names", "[unit]") {
  CHECK(TargetMatchesPrefix("h1", "h1"));
  CHECK(TargetMatchesPrefix("h1.nic0", "h1"));
  CHECK(TargetMatchesPrefix("h1.nic0", "h1.nic0"));
  CHECK_FALSE(TargetMatchesPrefix("h10.nic0", "h1"));  // the regression: a string prefix
  CHECK_FALSE(TargetMatchesPrefix("h1.nic01", "h1.nic0"));
  CHECK_FALSE(TargetMatchesPrefix("h1", "h1.nic0"));
  CHECK_FALSE(TargetMatchesPrefix("h1", ""));

  AgentPolicy p = MustParse("target_prefixes: [h1, tor0.h1]\n");
  CHECK(DecideInject(p, true, "h1", Fault("nic_port_flap", "h1.nic0", 1000)).status.ok());
  CHECK(DecideInject(p, true, "fabric", Fault("tor_port_down", "tor0.h1", 1000)).status.ok());
  auto d = DecideInject(p, true, "h1", Fault("nic_port_flap", "h10.nic0", 1000));
  CHECK(d.status.code() == Code::kFailedPrecondition);
  CHECK(d.status.message().find("'h10.nic0' is outside") != std::string::npos);
  CHECK(DecideInject(p, true, "fabric", Fault("tor_port_down", "tor0.h10", 1000)).status.code() ==
        Code::kFailedPrecondition);
}

TEST_CASE("agent policy: default-deny for an agent that serves real hosts", "[unit]") {
  const pb::InjectFault f = Fault("nic_port_flap", "node01.nic0", 1000);
  // A local lab's agent without a policy file accepts (the lab is the coordinator's own).
  CHECK(DecideInject(AgentPolicy{}, true, "h0", f).status.ok());
  // An inventory agent without a policy file refuses every fault.
  auto none = DecideInject(AgentPolicy{}, false, "node01", f);
  CHECK(none.status.code() == Code::kFailedPrecondition);
  CHECK(none.status.message().find("no --policy") != std::string::npos);
  // ... and with a file whose allow list is empty.
  auto empty = DecideInject(MustParse("max_fault_duration: 5s\n"), false, "node01", f);
  CHECK(empty.status.code() == Code::kFailedPrecondition);
  CHECK(empty.status.message().find("allow_kinds") != std::string::npos);
  // A file that names the kind allows it.
  CHECK(DecideInject(MustParse("allow_kinds: [nic_port_flap]\n"), false, "node01", f).status.ok());
  CHECK(DecideInject(MustParse("allow_kinds: [container_kill]\n"), false, "node01", f)
            .status.code() == Code::kFailedPrecondition);
}

TEST_CASE("agent policy: every held fault gets an agent deadline within max_fault_duration",
          "[unit]") {
  AgentPolicy capped = MustParse("max_fault_duration: 1s\n");
  // Declared 5 s, cap 1 s: applied, and reverted by the agent at 1 s.
  auto d = DecideInject(capped, true, "h0", Fault("nic_port_flap", "h0.nic0", 5000));
  CHECK(d.status.ok());
  CHECK(d.hold_ns == kNsPerSec);
  CHECK(d.capped);
  // "Until reverted" (0) is held at most the cap too.
  d = DecideInject(capped, true, "h0", Fault("nic_port_flap", "h0.nic0", 0));
  CHECK(d.hold_ns == kNsPerSec);
  CHECK(d.capped);
  // Shorter than the cap: its own duration plus the grace, still within the cap.
  d = DecideInject(capped, true, "h0", Fault("nic_port_flap", "h0.nic0", 300));
  CHECK(d.hold_ns == kNsPerSec);
  CHECK_FALSE(d.capped);
  d = DecideInject(MustParse("max_fault_duration: 1m\n"), true, "h0",
                   Fault("nic_port_flap", "h0.nic0", 2000));
  CHECK(d.hold_ns == 2 * kNsPerSec + kFaultDeadlineGraceNs);
  // No cap: the declared duration (plus grace); "until reverted" is left to the lease.
  CHECK(DecideInject(AgentPolicy{}, true, "h0", Fault("packet_loss", "h0.nic0", 2000)).hold_ns ==
        2 * kNsPerSec + kFaultDeadlineGraceNs);
  CHECK(DecideInject(AgentPolicy{}, true, "h0", Fault("packet_loss", "h0.nic0", 0)).hold_ns == 0);
  // A kill holds nothing.
  CHECK(DecideInject(capped, true, "h0", Fault("container_kill", "h0.rank0", 0)).hold_ns == 0);
  // A negative or absurd duration from the coordinator is refused, not scaled into overflow.
  CHECK(DecideInject(capped, true, "h0", Fault("nic_port_flap", "h0.nic0", -5)).status.code() ==
        Code::kInvalidArgument);
  CHECK(DecideInject(capped, true, "h0", Fault("nic_port_flap", "h0.nic0", INT64_MAX / 2))
            .status.code() == Code::kInvalidArgument);
}

TEST_CASE("agent policy: the lease is capped, never extended", "[unit]") {
  const Nanos cap = 30 * kNsPerSec;
  CHECK(EffectiveLease(cap, 600 * kNsPerSec, 5 * kNsPerSec) == cap);  // --lease 600
  CHECK(EffectiveLease(cap, 3 * kNsPerSec, 5 * kNsPerSec) == 3 * kNsPerSec);
  CHECK(EffectiveLease(cap, 0, 5 * kNsPerSec) == 5 * kNsPerSec);  // Welcome without a lease
  CHECK(EffectiveLease(cap, 1, 5 * kNsPerSec) == kMinLeaseNs);
  CHECK(EffectiveLease(2 * kNsPerSec, 0, 5 * kNsPerSec) == 2 * kNsPerSec);
}

TEST_CASE("agent policy: launches are bounded", "[unit]") {
  AgentPolicy p = MustParse("max_ranks: 2\nmax_world_size: 8\nmax_rank_bytes: 1GiB\n");
  auto launch = [](int n, int world) {
    pb::LaunchRanks l;
    for (int i = 0; i < n; ++i) {
      auto* r = l.add_ranks();
      r->set_rank(i);
      r->set_world_size(world);
      r->add_nics("198.18.0.1");
    }
    return l;
  };
  const std::vector<std::string> dirs = {"/var/lib/faultline"};
  const std::vector<std::string> ok_args = {"--store-dir", "/var/lib/faultline/runs/r1/store",
                                            "--size", "262144"};
  CHECK(CheckLaunch(p, launch(2, 4), ok_args, dirs).ok());
  CHECK(CheckLaunch(p, launch(3, 4), ok_args, dirs).code() == Code::kFailedPrecondition);
  CHECK(CheckLaunch(p, launch(1, 9), ok_args, dirs).message() ==
        "world_size must be between 1 and 8, not 9");
  pb::LaunchRanks bad_rank = launch(1, 4);
  bad_rank.mutable_ranks(0)->set_rank(4);
  CHECK(CheckLaunch(p, bad_rank, ok_args, dirs).message() == "rank must be between 0 and 3, not 4");
  pb::LaunchRanks bad_nic = launch(1, 4);
  bad_nic.mutable_ranks(0)->set_nics(0, "a,b");
  CHECK(CheckLaunch(p, bad_nic, ok_args, dirs).code() == Code::kInvalidArgument);

  auto args_with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = ok_args;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  CHECK(CheckLaunch(p, launch(1, 4), {"--size", "4294967296"}, dirs).message() ==
        "worker --size must be between 1 B and 1 GiB, not 4 GiB");
  CHECK(CheckLaunch(p, launch(1, 4), {"--size", "99999999999999999999999"}, dirs).code() ==
        Code::kInvalidArgument);
  CHECK(CheckLaunch(p, launch(1, 4), {"--store-dir", "/etc"}, dirs).code() ==
        Code::kFailedPrecondition);
  CHECK(CheckLaunch(p, launch(1, 4), {"--store-dir", "/var/lib/faultline2/x"}, dirs).code() ==
        Code::kFailedPrecondition);
  CHECK(
      CheckLaunch(p, launch(1, 4), {"--store-dir", "/var/lib/faultline/../../etc"}, dirs).code() ==
      Code::kInvalidArgument);
  // The telemetry socket and the rank's identity are the agent's to set.
  CHECK(CheckLaunch(p, launch(1, 4), args_with({"--telemetry", "/tmp/evil.sock"}), dirs).code() ==
        Code::kFailedPrecondition);
  CHECK(CheckLaunch(p, launch(1, 4), args_with({"--rank=3"}), dirs).code() ==
        Code::kFailedPrecondition);
  CHECK(CheckLaunch(p, launch(1, 4), std::vector<std::string>(257, "--x"), dirs).code() ==
        Code::kInvalidArgument);
  CHECK(CheckLaunch(p, launch(1, 4), {std::string(5000, 'a')}, dirs).code() ==
        Code::kInvalidArgument);
  // A policy's worker_dirs replace the agent's defaults.
  AgentPolicy shared = MustParse("worker_dirs: [/shared/fl]\n");
  CHECK(CheckLaunch(shared, launch(1, 4), {"--store-dir", "/shared/fl/r1"}, dirs).ok());
  CHECK(CheckLaunch(shared, launch(1, 4), ok_args, dirs).code() == Code::kFailedPrecondition);
  CHECK(CheckLaunch(MustParse("allow_ranks: false\n"), launch(1, 4), ok_args, dirs).code() ==
        Code::kFailedPrecondition);
}

injectors::Port SwitchPort(const std::string& sw, const std::string& port) {
  auto conn = std::make_shared<injectors::SwitchConn>();
  conn->name = sw;
  conn->address = "10.0.0.201";
  injectors::Port p;
  p.name = sw + "." + port;
  p.sw = conn;
  p.sw_port = port;
  return p;
}

TEST_CASE("agent policy: switch_ports entries are SWITCH or SWITCH:PORT", "[unit]") {
  AgentPolicy p = MustParse(
      "allow_kinds: [tor_port_down]\nswitch_ports: [leaf1, \"leaf2:Ethernet12\", "
      "\"leaf3:Ethernet1/1\"]\n");
  CHECK(p.switch_ports ==
        std::vector<std::string>{"leaf1", "leaf2:Ethernet12", "leaf3:Ethernet1/1"});
  CHECK(MustParse("allow_kinds: [tor_port_down]\n").switch_ports.empty());
  CHECK(ParseError("switch_ports: [leaf1, \"Leaf2\"]\n")
            .rfind("p.yaml:1:23: switch_ports entries "
                   "are SWITCH or SWITCH:PORT",
                   0) == 0);
  CHECK(ParseError("switch_ports: [\"leaf1:\"]\n").rfind("p.yaml:1:16: ", 0) == 0);
  CHECK(ParseError("switch_ports: [\"leaf1:Eth 1\"]\n").rfind("p.yaml:1:16: ", 0) == 0);
  CHECK(ParseError("switch_ports: [\":Ethernet1\"]\n").rfind("p.yaml:1:16: ", 0) == 0);
  CHECK(ParseError("switch_ports: leaf1\n").rfind("p.yaml:1:15: ", 0) == 0);
}

TEST_CASE("agent policy: switch ports outside switch_ports are refused", "[unit]") {
  injectors::Port kernel;
  kernel.name = "node01.nic0";
  kernel.ifname = "ens1f0";
  const injectors::Port l1_12 = SwitchPort("leaf1", "Ethernet12");
  const injectors::Port l1_16 = SwitchPort("leaf1", "Ethernet16");
  const injectors::Port l2_12 = SwitchPort("leaf2", "Ethernet12");

  // No switch_ports: every switch port is refused, kernel ports pass.
  AgentPolicy none = MustParse("allow_kinds: [tor_port_down]\n");
  CHECK(CheckSwitchPorts(none, {kernel}).ok());
  CHECK(CheckSwitchPorts(none, {}).ok());
  Status st = CheckSwitchPorts(none, {kernel, l1_12});
  CHECK(st.code() == Code::kFailedPrecondition);
  CHECK(st.message() ==
        "policy: switch port leaf1:Ethernet12 (leaf1.Ethernet12) is not in switch_ports (the "
        "policy names none: every switch port is refused)");

  // A whole switch, or one port of it.
  AgentPolicy some =
      MustParse("allow_kinds: [tor_port_down]\nswitch_ports: [leaf1, \"leaf2:Ethernet16\"]\n");
  CHECK(CheckSwitchPorts(some, {l1_12, l1_16, kernel}).ok());
  st = CheckSwitchPorts(some, {l1_12, l2_12});
  CHECK(st.code() == Code::kFailedPrecondition);
  CHECK(st.message().find("leaf2:Ethernet12") != std::string::npos);
  CHECK(st.message().find("names none") == std::string::npos);
  AgentPolicy one =
      MustParse("allow_kinds: [tor_port_down]\nswitch_ports: [\"leaf1:Ethernet16\"]\n");
  CHECK(CheckSwitchPorts(one, {l1_16}).ok());
  CHECK_FALSE(CheckSwitchPorts(one, {l1_16, l1_12}).ok());
  // "leaf1" does not cover "leaf10".
  CHECK_FALSE(CheckSwitchPorts(some, {SwitchPort("leaf10", "Ethernet12")}).ok());
}

TEST_CASE("agent policy: the shipped fabric agent policy parses", "[unit]") {
  auto p = LoadAgentPolicy(std::string(FL_SOURCE_DIR) + "/configs/policies/fabric_agent.yaml");
  INFO(p.status().ToString());
  REQUIRE(p.ok());
  CHECK(p->switch_ports ==
        std::vector<std::string>{"leaf0", "leaf1:Ethernet1/1", "leaf1:Ethernet49/1"});
  CHECK_FALSE(p->allow_ranks);
}

}  // namespace
}  // namespace fl::harness

namespace fl::harness {
namespace {

TEST_CASE("faults sent ahead: due times classified and fired from a cancellable wait", "[unit]") {
  const Nanos now = 1'000'000 * kNsPerSec;
  // No due time, one past, or one within kFireAtOnceNs: applied at once, as before.
  CHECK(ClassifyDue(now, 0) == AheadMode::kNow);
  CHECK(ClassifyDue(now, now - kNsPerSec) == AheadMode::kNow);
  CHECK(ClassifyDue(now, now + kFireAtOnceNs) == AheadMode::kNow);
  CHECK(ClassifyDue(now, now + kFireAtOnceNs + 1) == AheadMode::kAhead);
  CHECK(ClassifyDue(now, now + 200 * kNsPerMs) == AheadMode::kAhead);
  CHECK(ClassifyDue(now, now + kMaxAheadNs) == AheadMode::kAhead);
  CHECK(ClassifyDue(now, now + kMaxAheadNs + 1) == AheadMode::kTooFar);

  // A fake clock walks the fire thread to a fault due 200 ms ahead: coarse (cancellable)
  // waits until the margin is left, then the exact sleep.
  const Nanos due = now + 200 * kNsPerMs;
  FireStep step = NextFireStep(now, due);
  CHECK_FALSE(step.fire);
  CHECK(step.wait_ns == 200 * kNsPerMs - kFireMarginNs);
  // Woken early (a new fault, a revert): waits for the rest only.
  step = NextFireStep(now + 50 * kNsPerMs, due);
  CHECK_FALSE(step.fire);
  CHECK(step.wait_ns == 150 * kNsPerMs - kFireMarginNs);
  // The condition variable's wait ended a little late, inside the margin: fire.
  CHECK(NextFireStep(due - kFireMarginNs + 100 * kNsPerUs, due).fire);
  CHECK(NextFireStep(due - kFireMarginNs, due).fire);
  // Overslept past the due time (a loaded machine): fire at once, never wait.
  step = NextFireStep(due + 5 * kNsPerMs, due);
  CHECK(step.fire);
  CHECK(step.wait_ns == 0);
}

}  // namespace
}  // namespace fl::harness
