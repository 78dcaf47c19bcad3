// The agent runtime's switch_ports check ([unit]: no switch, no network, no root): a fabric
// agent on an inventory with switches refuses a fault on a switch port its policy does not
// name, before anything is journaled (so before any switch is contacted).
#include <catch2/catch.hpp>

#include <filesystem>

#include "common/file_util.h"
#include "harness/agent/agent_runtime.h"
#include "tests/harness/test_switch_driver.h"
#include "tests/test_util.h"

namespace fl::harness {
namespace {

namespace pb = faultline::v1;

constexpr const char* kInventory = R"(name: rack7
coordinator: {listen: 10.10.0.254:7070, token_file: /etc/faultline/token}
switches:
  - {name: leaf0, address: 10.10.0.201, driver: test-driver, known_hosts: /etc/fl/kh}
  - {name: leaf1, address: 10.10.0.202, driver: test-driver, known_hosts: /etc/fl/kh}
hosts:
  - name: node01
    nics:
      - {name: nic0, ifname: ens1f0, address: 10.0.0.1, switch: leaf0, port: Ethernet12}
      - {name: nic1, ifname: ens1f1, address: 10.1.0.1, switch: leaf1, port: Ethernet12}
)";

pb::CoordinatorMessage Inject(const std::string& kind, const std::string& target) {
  pb::CoordinatorMessage m;
  m.mutable_inject()->set_fault_id("f0");
  m.mutable_inject()->set_kind(kind);
  m.mutable_inject()->set_target(target);
  m.mutable_inject()->set_duration_ms(1000);
  return m;
}

size_t JournalEntries(const std::string& dir) {
  size_t n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".json") ++n;
  return n;
}

TEST_CASE("agent runtime: a fabric agent refuses switch ports outside switch_ports", "[unit]") {
  fl::testing::RegisterTestSwitchDriver();
  fl::testing::TempDir dir("fl_swpol");
  REQUIRE_FALSE(dir.path().empty());
  const std::string inv = dir.path() + "/inv.yaml";
  REQUIRE(WriteFileAtomic(inv, kInventory).ok());

  auto runtime_with = [&](const std::string& policy_text) {
    auto policy = ParseAgentPolicy(policy_text, "p.yaml");
    REQUIRE(policy.ok());
    AgentRuntimeOptions o;
    o.host = "fabric";
    o.site.inventory = inv;
    o.site.host = "fabric";
    o.journal_dir = dir.path() + "/journal";
    o.policy = *policy;
    auto rt = AgentRuntime::Create(o);
    INFO(rt.status().ToString());
    REQUIRE(rt.ok());
    return std::move(*rt);
  };

  {  // No switch_ports: every switch port is refused, by its name.
    auto rt = runtime_with("allow_kinds: [tor_port_down, tor_uplink_down, link_blackhole]\n");
    pb::Ack ack = rt->Handle(Inject("tor_port_down", "node01.nic0"));
    CHECK_FALSE(ack.ok());
    CHECK(ack.error_code() == static_cast<int>(Code::kFailedPrecondition));
    CHECK(ack.error().find("switch port leaf0:Ethernet12 (leaf0.Ethernet12) is not in "
                           "switch_ports") != std::string::npos);
    ack = rt->Handle(Inject("link_blackhole", "leaf1.Ethernet12"));
    CHECK_FALSE(ack.ok());
    CHECK(ack.error().find("leaf1:Ethernet12") != std::string::npos);
    CHECK(JournalEntries(dir.path() + "/journal") == 0);
  }
  {  // leaf1 only: a rail with one port on each is refused for leaf0's; leaf1's passes the
     // policy (and then fails in the test driver, which reaches no switch).
    auto rt = runtime_with("allow_kinds: [tor_port_down]\nswitch_ports: [leaf1]\n");
    pb::Ack ack = rt->Handle(Inject("tor_port_down", "node01"));
    CHECK_FALSE(ack.ok());
    CHECK(ack.error().find("leaf0:Ethernet12") != std::string::npos);
    ack = rt->Handle(Inject("tor_port_down", "node01.nic1"));
    CHECK(ack.error().find("switch_ports") == std::string::npos);
    CHECK(JournalEntries(dir.path() + "/journal") == 0);
  }
}

}  // namespace
}  // namespace fl::harness
