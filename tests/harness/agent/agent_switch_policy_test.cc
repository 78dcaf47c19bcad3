// The agent runtime's switch_ports check ([unit]: no switch, no network, no root): a fabric
// agent on an inventory with switches refuses a fault on a switch port its policy does not
// name, before anything is journaled (so before any switch is contacted).
#include <catch2/catch.hpp>

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>

#include "common/file_util.h"
#include "harness/agent/agent_runtime.h"
#include "harness/lab/inventory.h"
#include "injectors/injection.h"
#include "injectors/injector.h"
#include "tests/harness/agent/agent_testing.h"
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

using testing::JournalEntries;

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

// An injector that only resolves its target's switch-side ports (and counts its Applies).
class ResolveOnly : public injectors::Injector {
 public:
  std::string_view kind() const override { return "tor_port_down"; }
  std::string_view help() const override { return "test"; }
  Status Validate(const injectors::FaultSpec&) const override { return OkStatus(); }
  StatusOr<injectors::FaultHandle> Prepare(const injectors::FaultSpec& spec,
                                           const injectors::Fabric& fabric) override {
    FL_ASSIGN_OR_RETURN(auto ports, fabric.HostLinks(spec.target, injectors::PortSide::kSwitch));
    injectors::FaultHandle h;
    h.spec = spec;
    h.state["ports"] = nlohmann::json::array();
    for (const auto& p : ports) h.state["ports"].push_back(injectors::PortToJson(p));
    return h;
  }
  Status Apply(injectors::FaultHandle&) override {
    ++applied;
    return OkStatus();
  }
  Status Revert(const injectors::FaultHandle&) override { return OkStatus(); }
  Status Verify(const injectors::FaultHandle&, injectors::Expect) override { return OkStatus(); }
  int applied = 0;
};

// The fabric site of kInventory, a journal in a temporary directory, an injector that only
// resolves, and the admit hook of a policy that allows tor_port_down on leaf0's ports only
// (the handle's ports decide, not the target's name).
struct AdmitSetup {
  fl::testing::TempDir dir{"fl_swpol"};
  std::unique_ptr<lab::InventoryFabricSite> site;
  std::unique_ptr<injectors::FaultJournal> journal;
  ResolveOnly inj;
  injectors::FaultSpec spec;
  std::optional<AgentPolicy> policy;
  std::function<Status(const injectors::FaultHandle&)> admit;

  AdmitSetup() {
    fl::testing::RegisterTestSwitchDriver();
    REQUIRE_FALSE(dir.path().empty());
    auto inv = lab::ParseInventory(kInventory, "i.yaml");
    REQUIRE(inv.ok());
    site = std::make_unique<lab::InventoryFabricSite>(*inv);
    journal = std::make_unique<injectors::FaultJournal>(JournalDir());
    spec.kind = "tor_port_down";
    auto p = ParseAgentPolicy("allow_kinds: [tor_port_down]\nswitch_ports: [leaf0]\n", "p");
    REQUIRE(p.ok());
    policy = *std::move(p);
    admit = [this](const injectors::FaultHandle& h) {
      std::vector<injectors::Port> ports;
      for (const auto& port : h.state["ports"]) ports.push_back(injectors::PortFromJson(port));
      return CheckSwitchPorts(*policy, ports);
    };
  }
  std::string JournalDir() const { return dir.path() + "/journal"; }
};

TEST_CASE("InjectFault's admit hook refuses a prepared fault before the journal", "[unit]") {
  AdmitSetup t;
  t.spec.target = "rail1";  // leaf1's port
  ResolveOnly& inj = t.inj;
  injectors::FaultSpec& spec = t.spec;
  lab::InventoryFabricSite& site = *t.site;
  injectors::FaultJournal& journal = *t.journal;
  const auto& admit = t.admit;
  auto refused = injectors::InjectFault(inj, spec, site, &journal, admit);
  CHECK(refused.status().code() == Code::kFailedPrecondition);
  CHECK(refused.status().message().find("leaf1:Ethernet12") != std::string::npos);
  CHECK(inj.applied == 0);
  CHECK(JournalEntries(t.JournalDir()) == 0);
  spec.target = "rail0";
  auto ok = injectors::InjectFault(inj, spec, site, &journal, admit);
  INFO(ok.status().ToString());
  REQUIRE(ok.ok());
  CHECK(inj.applied == 1);
  CHECK(injectors::RevertFault(inj, *ok, &journal).ok());
  CHECK(JournalEntries(t.JournalDir()) == 0);
}

TEST_CASE(
    "PrepareFault journals without applying, CancelPrepared leaves nothing, FireFault applies",
    "[unit]") {
  AdmitSetup t;
  ResolveOnly& inj = t.inj;
  injectors::FaultSpec& spec = t.spec;
  lab::InventoryFabricSite& site = *t.site;
  injectors::FaultJournal& journal = *t.journal;
  const auto& admit = t.admit;
  // The admit hook (the policy) applies to a prepared fault as to an immediate one.
  spec.target = "rail1";
  CHECK(injectors::PrepareFault(inj, spec, site, &journal, admit).status().code() ==
        Code::kFailedPrecondition);
  CHECK(JournalEntries(t.JournalDir()) == 0);
  spec.target = "rail0";
  auto prepared = injectors::PrepareFault(inj, spec, site, &journal, admit);
  REQUIRE(prepared.ok());
  CHECK(inj.applied == 0);
  CHECK(JournalEntries(t.JournalDir()) == 1);  // "applying", for recovery
  CHECK(injectors::CancelPrepared(*prepared, &journal).ok());
  CHECK(inj.applied == 0);
  CHECK(JournalEntries(t.JournalDir()) == 0);

  auto again = injectors::PrepareFault(inj, spec, site, &journal, admit);
  REQUIRE(again.ok());
  CHECK(injectors::FireFault(inj, *again, &journal).ok());
  CHECK(inj.applied == 1);
  auto entries = journal.List();
  REQUIRE(entries.ok());
  REQUIRE(entries->size() == 1);
  CHECK((*entries)[0].phase == "applied");
  CHECK(injectors::RevertFault(inj, *again, &journal).ok());
  CHECK(JournalEntries(t.JournalDir()) == 0);
}

}  // namespace
}  // namespace fl::harness
