// Root-gated: switch-side injectors through the ssh-template switch driver, against a local lab
// whose switches run a real sshd with the SONiC shim (switch_control: ssh). Each fault is made
// with the shipped SONiC preset over SSH, read back on the switch, and seen on the host (carrier
// lost; traffic dropped while carrier stays up); reverted and verified. Then the ways a switch
// can fail: a wrong key, an unreachable address, a command that fails, a read-back that does
// not match — each an error naming the switch and the command, with nothing left applied.
#include <catch2/catch.hpp>

#include <functional>

#include "common/file_util.h"
#include "harness/lab/local_lab.h"
#include "injectors/injection.h"
#include "injectors/netlink.h"
#include "injectors/switch/switch_driver.h"
#include "injectors/switch_drivers.h"
#include "injectors/sys.h"
#include "tests/injectors/lab_testing.h"
#include "tests/test_util.h"

namespace fl::injectors {
namespace {

using testing::TcpPair;
using testing::TcpWorks;
using testing::TempDir;

constexpr const char* kSshRail =
    "name: x\nhosts: 2\ngpus_per_host: 1\nnics_per_host: 1\nlink: {rate: 1gbit}\n"
    "switch_control: ssh\n";
constexpr const char* kSshSpine =
    "name: x\nhosts: 2\ngpus_per_host: 1\nnics_per_host: 1\nhosts_per_tor: 1\nspines: 1\n"
    "link: {rate: 1gbit}\nswitch_control: ssh\n";

struct Env : testing::InjectorEnv {
  explicit Env(const char* topology) { REQUIRE(Init(topology).ok()); }
  std::unique_ptr<Injector> Make(const std::string& kind) {
    auto inj = InjectorEnv::Make(kind);
    REQUIRE(inj.ok());
    return std::move(*inj);
  }
  bool Carrier(const std::string& netns, const std::string& ifname) {
    auto st = GetLink(netns, ifname);
    return st.ok() && st->carrier;
  }
  // What the switch itself says about one of its ports, over SSH with the lab's own key.
  SwitchPortState ReadOnSwitch(const std::string& node, const std::string& ifname) {
    auto conn = lab->lab().SwitchConnOf(node);
    REQUIRE(conn.ok());
    auto driver = OpenSwitchDriver(**conn);
    REQUIRE(driver.ok());
    auto st = (*driver)->ReadPort(lab->lab().SonicPortName(node, ifname),
                                  Deadline::After(10 * kNsPerSec));
    INFO(st.status().ToString());
    REQUIRE(st.ok());
    return *st;
  }
};

// Every port of the handle went through a switch driver.
void CheckViaSwitch(const FaultHandle& h) {
  REQUIRE(h.state.contains("ports"));
  REQUIRE(!h.state["ports"].empty());
  for (const auto& p : h.state["ports"]) {
    CHECK(p.contains("switch"));
    CHECK(p.value("switch_port", "").rfind("Ethernet", 0) == 0);
  }
}

TEST_CASE(
    "tor_port_down over SSH: the SONiC command takes the ToR port down, the host loses "
    "carrier, the revert brings it back",
    "[.root][integration]") {
  Env env(kSshRail);
  const std::string tor_ns = env.lab->lab().NetnsOf("tor0");
  auto pair = TcpPair::Open(env.h0, env.h1, env.h1_addr);
  REQUIRE(pair.ok());
  REQUIRE((*pair)->RoundTrip(4096, 2 * kNsPerSec).ok());
  auto inj = env.Make("tor_port_down");
  FaultSpec spec{"tor_port_down", "tor0.h1", {}, 0, 1};
  auto h = InjectFault(*inj, spec, env.fabric(), &env.journal);
  INFO(h.status().ToString());
  REQUIRE(h.ok());
  CheckViaSwitch(*h);
  CHECK_FALSE(env.Carrier(env.h1, "nic0"));  // the host's view: carrier lost
  CHECK_FALSE(env.ReadOnSwitch("tor0", "h1").admin_up);
  CHECK_FALSE((*pair)->RoundTrip(4096, 400 * kNsPerMs).ok());
  REQUIRE(RevertFault(*inj, *h, &env.journal).ok());
  CHECK(env.journal.List()->empty());
  CHECK(env.ReadOnSwitch("tor0", "h1").admin_up);
  CHECK(WaitUntil([&] { return env.Carrier(env.h1, "nic0"); }, Deadline::After(5 * kNsPerSec)));
  CHECK(TcpWorks(env.h0, env.h1, env.h1_addr, 5 * kNsPerSec).ok());
}

TEST_CASE(
    "tor_uplink_down over SSH: the ToR's uplink goes down, traffic between pods stops, "
    "the revert restores it",
    "[.root][integration]") {
  Env env(kSshSpine);
  auto inj = env.Make("tor_uplink_down");
  FaultSpec spec{"tor_uplink_down", "tor0p0.up0", {}, 0, 1};
  REQUIRE(TcpWorks(env.h0, env.h1, env.h1_addr, 5 * kNsPerSec).ok());
  auto h = InjectFault(*inj, spec, env.fabric(), &env.journal);
  INFO(h.status().ToString());
  REQUIRE(h.ok());
  CheckViaSwitch(*h);
  CHECK_FALSE(env.ReadOnSwitch("tor0p0", "up0").admin_up);
  CHECK_FALSE(TcpWorks(env.h0, env.h1, env.h1_addr, 500 * kNsPerMs).ok());
  REQUIRE(RevertFault(*inj, *h, &env.journal).ok());
  CHECK(env.ReadOnSwitch("tor0p0", "up0").admin_up);
  CHECK(TcpWorks(env.h0, env.h1, env.h1_addr, 5 * kNsPerSec).ok());
}

TEST_CASE(
    "link_blackhole over SSH: an ACL on the ToR port drops everything while carrier stays "
    "up - the revert removes it",
    "[.root][integration]") {
  Env env(kSshRail);
  auto pair = TcpPair::Open(env.h0, env.h1, env.h1_addr);
  REQUIRE(pair.ok());
  REQUIRE((*pair)->RoundTrip(4096, 2 * kNsPerSec).ok());
  auto inj = env.Make("link_blackhole");
  FaultSpec spec{"link_blackhole", "tor0.h1", {}, 0, 1};
  auto h = InjectFault(*inj, spec, env.fabric(), &env.journal);
  INFO(h.status().ToString());
  REQUIRE(h.ok());
  CheckViaSwitch(*h);
  Status during = (*pair)->RoundTrip(4096, 400 * kNsPerMs);
  CHECK(during.code() == Code::kDeadlineExceeded);  // dropped, not refused
  CHECK(env.Carrier(env.h1, "nic0"));               // a gray failure: the link stays up
  CHECK(env.ReadOnSwitch("tor0", "h1").oper_up);
  // The drop is the switch's ACL: no nft table of faultline's own in the ToR's namespace
  // outside the shim's.
  REQUIRE(RevertFault(*inj, *h, &env.journal).ok());
  CHECK(env.journal.List()->empty());
  CHECK(TcpWorks(env.h0, env.h1, env.h1_addr, 5 * kNsPerSec).ok());
  // Reverting again is harmless (the rules are gone; removing them again is no error).
  CHECK(RevertFault(*inj, *h, &env.journal).ok());
}

// The lab's fabric with every switch connection changed by `alter`.
class AlteredFabric : public Fabric {
 public:
  AlteredFabric(const Fabric& base, std::function<void(SwitchConn&)> alter)
      : base_(base), alter_(std::move(alter)) {}
  StatusOr<std::vector<Port>> HostLinks(std::string_view t, PortSide side) const override {
    FL_ASSIGN_OR_RETURN(auto ports, base_.HostLinks(t, side));
    return Alter(std::move(ports));
  }
  StatusOr<std::vector<Port>> Uplinks(std::string_view t) const override {
    FL_ASSIGN_OR_RETURN(auto ports, base_.Uplinks(t));
    return Alter(std::move(ports));
  }
  StatusOr<std::vector<Port>> UpstreamOf(const Port& p) const override {
    return base_.UpstreamOf(p);
  }
  StatusOr<ContainerRef> Container(std::string_view t) const override { return base_.Container(t); }

 private:
  std::vector<Port> Alter(std::vector<Port> ports) const {
    for (auto& p : ports)
      if (p.sw) {
        SwitchConn c = *p.sw;
        alter_(c);
        p.sw = std::make_shared<const SwitchConn>(std::move(c));
      }
    return ports;
  }
  const Fabric& base_;
  std::function<void(SwitchConn&)> alter_;
};

std::string ReplaceFirst(std::string s, const std::string& from, const std::string& to) {
  auto at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

TEST_CASE(
    "a switch that fails: wrong key, unreachable, a failing command, a read-back that does "
    "not match - each names the switch and the command and leaves nothing applied",
    "[.root][integration]") {
  Env env(kSshRail);
  TempDir dir("fl_swfail");
  const std::string other_key = dir.path() + "/other_key";
  REQUIRE(RunChecked({"ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", other_key}).ok());

  struct Case {
    std::string name;
    std::string kind;
    std::function<void(SwitchConn&)> alter;
    std::vector<std::string> said;  // what the message must contain besides the switch
  };
  auto unreachable = [](SwitchConn& c) {
    c.address = c.address.substr(0, c.address.rfind('.')) + ".250";  // nobody there
    c.connect_timeout = kNsPerSec;
  };
  const std::vector<Case> cases = {
      {"wrong key",
       "tor_port_down",
       [&](SwitchConn& c) { c.key_file = other_key; },
       {"show interfaces status", "Permission denied"}},
      {"wrong key",
       "link_blackhole",
       [&](SwitchConn& c) { c.key_file = other_key; },
       {"Permission denied"}},
      {"unreachable", "tor_port_down", unreachable, {"show interfaces status"}},
      {"unreachable", "link_blackhole", unreachable, {"show interfaces status"}},
      {"failing command",
       "tor_port_down",
       [](SwitchConn& c) {
         c.preset_text = ReplaceFirst(c.preset_text, "shutdown, '{port}'", "shutdwn, '{port}'");
       },
       {"config interface shutdwn Ethernet", "exit 1"}},
      // The second command of the drop fails after the first made the ACL table: undone.
      {"failing command",
       "link_blackhole",
       [](SwitchConn& c) { c.preset_text = ReplaceFirst(c.preset_text, "hset,", "hsett,"); },
       {"sonic-db-cli CONFIG_DB hsett", "exit 1"}},
      {"read-back mismatch",
       "tor_port_down",
       [](SwitchConn& c) {
         c.preset_text =
             ReplaceFirst(c.preset_text, "(up|down)\\s+down\\b'", "(up|down)\\s+sideways\\b'");
         c.command_timeout = 3 * kNsPerSec;
       },
       {"read-back", "show interfaces status Ethernet"}},
      {"read-back mismatch",
       "link_blackhole",
       [](SwitchConn& c) {
         c.preset_text = ReplaceFirst(c.preset_text, "9999\\s+DROP\\b", "9999\\s+DENY\\b");
         c.command_timeout = 3 * kNsPerSec;
       },
       {"read-back", "show acl rule"}},
  };
  for (const auto& c : cases) {
    {  // one lab for every case: each must leave it as it found it
      INFO(c.name << " - " << c.kind);
      AlteredFabric fabric(env.fabric(), c.alter);
      auto inj = env.Make(c.kind);
      FaultSpec spec{c.kind, "tor0.h1", {}, 0, 1};
      auto h = InjectFault(*inj, spec, fabric, &env.journal);
      CHECK_FALSE(h.ok());
      if (h.ok()) {
        RevertFault(*inj, *h, &env.journal).IgnoreError();
        continue;
      }
      const std::string msg = h.status().ToString();
      INFO(msg);
      CHECK(msg.find("switch tor0") != std::string::npos);
      for (const auto& said : c.said) CHECK(msg.find(said) != std::string::npos);
      // Nothing applied: the journal is empty, the port is up, traffic flows both ways.
      CHECK(env.journal.List()->empty());
      CHECK(env.ReadOnSwitch("tor0", "h1").admin_up);
      CHECK(WaitUntil([&] { return env.Carrier(env.h1, "nic0"); }, Deadline::After(5 * kNsPerSec)));
      CHECK(TcpWorks(env.h0, env.h1, env.h1_addr, 5 * kNsPerSec).ok());
    }
  }
}

}  // namespace
}  // namespace fl::injectors
