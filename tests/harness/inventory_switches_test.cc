// Inventories with real switches ([unit]: nothing outside the process): the switches, the NICs'
// wiring and the uplinks with their errors at file:line:col; the catalog with and without
// switches; the routing of faults to the fabric agent; the fabric agent's site.
#include <catch2/catch.hpp>

#include <regex>

#include "common/file_util.h"
#include "harness/lab/inventory.h"
#include "harness/lab/open_lab.h"
#include "harness/scenario/scenario_loader.h"
#include "tests/harness/test_switch_driver.h"
#include "tests/test_util.h"

namespace fl::lab {
namespace {

using injectors::PortSide;

constexpr const char* kSw = R"(name: rack7
coordinator: {listen: 10.10.0.254:7070, token_file: /etc/faultline/token}
switches:
  - name: leaf0
    address: 10.10.0.201
    driver: test-driver
    user: admin
    key_file: /etc/fl/key
    known_hosts: /etc/fl/known_hosts
  - name: leaf1
    address: leaf1.mgmt
    port: 2222
    driver: test-driver
    user: fl
    key_file: /etc/fl/key
    host_key: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAITestTestTestTest"
    jump: ops@bastion:2200
    connect_timeout: 3s
  - name: spine0
    address: 10.10.0.210
    driver: test-driver
    known_hosts: /etc/fl/known_hosts
hosts:
  - name: node01
    ranks: 2
    nics:
      - {name: nic0, ifname: ens1f0, address: 10.0.0.1, switch: leaf0, port: Ethernet12}
      - {name: nic1, ifname: ens1f1, address: 10.1.0.1, switch: leaf1, port: Ethernet1/1}
  - name: node02
    ranks: 2
    nics:
      - {name: nic0, ifname: ens1f0, address: 10.0.0.2, switch: leaf0, port: Ethernet16}
      - {name: nic1, ifname: ens1f1, address: 10.1.0.2, switch: leaf1, port: Ethernet2/1, touch: false}
uplinks:
  - {switch: leaf0, port: Ethernet48, peer_switch: spine0, peer_port: swp1}
  - {switch: leaf1, port: Ethernet49/1, peer_switch: spine0, peer_port: swp2}
fabric_agent: {host: mgmt1}
)";

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  auto at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

// "i.yaml:LINE:COL" of the n-th (0-based) occurrence of needle in text.
std::string At(const std::string& text, const std::string& needle, int n = 0) {
  size_t at = text.find(needle);
  for (int i = 0; i < n && at != std::string::npos; ++i) at = text.find(needle, at + 1);
  REQUIRE(at != std::string::npos);
  auto [line, col] = LineColOf(text, at);
  return "i.yaml:" + std::to_string(line) + ":" + std::to_string(col);
}

Inventory MustParse(const std::string& text) {
  fl::testing::RegisterTestSwitchDriver();
  auto inv = ParseInventory(text, "i.yaml");
  INFO(inv.status().ToString());
  REQUIRE(inv.ok());
  return *inv;
}

// The error of text, which must start with the location of needle's n-th occurrence and
// hold `what`.
void ExpectError(const std::string& text, const std::string& needle, const std::string& what,
                 int n = 0) {
  fl::testing::RegisterTestSwitchDriver();
  auto inv = ParseInventory(text, "i.yaml");
  REQUIRE_FALSE(inv.ok());
  CHECK(inv.status().code() == Code::kInvalidArgument);
  const std::string msg = inv.status().message();
  INFO(msg);
  CHECK(msg.rfind(At(text, needle, n) + ": ", 0) == 0);
  CHECK(msg.find(what) != std::string::npos);
}

bool Has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

TEST_CASE("inventory switches: switches, wiring and uplinks parse into SwitchConns", "[unit]") {
  Inventory inv = MustParse(kSw);
  REQUIRE(inv.switches.size() == 3);
  const injectors::SwitchConn& l0 = *inv.FindSwitch("leaf0")->conn;
  CHECK(l0.name == "leaf0");
  CHECK(l0.driver == "test-driver");
  CHECK(l0.address == "10.10.0.201");
  CHECK(l0.port == 22);
  CHECK(l0.user == "admin");
  CHECK(l0.key_file == "/etc/fl/key");
  CHECK(l0.known_hosts == "/etc/fl/known_hosts");
  CHECK(l0.host_key.empty());
  CHECK(l0.jump.empty());
  CHECK(l0.connect_timeout == 5 * kNsPerSec);
  const injectors::SwitchConn& l1 = *inv.FindSwitch("leaf1")->conn;
  CHECK(l1.address == "leaf1.mgmt");
  CHECK(l1.port == 2222);
  CHECK(l1.host_key == "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAITestTestTestTest");
  CHECK(l1.known_hosts.empty());
  CHECK(l1.jump == "ops@bastion:2200");
  CHECK(l1.connect_timeout == 3 * kNsPerSec);
  CHECK(inv.FindSwitch("spine0")->conn->user.empty());
  CHECK(inv.FindSwitch("node01") == nullptr);
  CHECK(inv.hosts[0].nics[1].sw == "leaf1");
  CHECK(inv.hosts[0].nics[1].sw_port == "Ethernet1/1");
  REQUIRE(inv.uplinks.size() == 2);
  CHECK(inv.uplinks[1].port == "Ethernet49/1");
  CHECK(inv.uplinks[1].peer_sw == "spine0");
  CHECK(inv.uplinks[1].peer_port == "swp2");
  CHECK(inv.fabric_agent_host == "mgmt1");
}

TEST_CASE("inventory switches: a preset path is read beside the inventory", "[unit]") {
  fl::testing::TempDir dir("fl_invsw");
  REQUIRE_FALSE(dir.path().empty());
  REQUIRE(WriteFileAtomic(dir.path() + "/my_preset.yaml", "port_pattern: 'Ethernet[0-9]+'\n").ok());
  const std::string text = Replace(kSw, "    driver: test-driver\n    user: admin",
                                   "    driver: test-driver\n    preset: my_preset.yaml\n"
                                   "    user: admin");
  REQUIRE(WriteFileAtomic(dir.path() + "/inv.yaml", text).ok());
  fl::testing::RegisterTestSwitchDriver();
  auto inv = LoadInventory(dir.path() + "/inv.yaml");
  INFO(inv.status().ToString());
  REQUIRE(inv.ok());
  const injectors::SwitchConn& c = *inv->FindSwitch("leaf0")->conn;
  CHECK(c.preset == dir.path() + "/my_preset.yaml");
  CHECK(c.preset_text == "port_pattern: 'Ethernet[0-9]+'\n");
  // A missing preset is an error at its key's value.
  const std::string missing = Replace(text, "my_preset.yaml", "nope.yaml");
  auto bad = ParseInventory(missing, "i.yaml");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().rfind(At(missing, "nope.yaml") + ": switch leaf0: ", 0) == 0);
  CHECK(bad.status().message().find("nope.yaml") != std::string::npos);
}

TEST_CASE("inventory switches: every mistake names file:line:col", "[unit]") {
  const std::string k = kSw;
  ExpectError(Replace(k, "    user: admin", "    usr: admin"), "usr", "unknown key");
  ExpectError(Replace(k, "switch: leaf0, port: Ethernet16", "switch: leaf9, port: Ethernet16"),
              "leaf9", "node02.nic0: no switch 'leaf9' in switches (leaf0, leaf1, spine0)");
  ExpectError(Replace(k, "port: Ethernet16", "port: Eth16"), "Eth16",
              "node02.nic0: port 'Eth16' of switch leaf0: 'Eth16' does not match the port "
              "pattern Ethernet[0-9]+(/[0-9]+)?|swp[0-9]+");
  ExpectError(Replace(k, "port: Ethernet16", "port: \"Ether net\""), "\"Ether net\"",
              "is not a switch port name");
  ExpectError(Replace(k, "port: Ethernet16", "port: Ethernet12"), "Ethernet12",
              "node02.nic0: leaf0.Ethernet12 is wired twice (also to node01.nic0)", 1);
  // A NIC wired to an uplink's port (or the other way round) is wired twice too.
  ExpectError(Replace(k, "port: Ethernet48", "port: Ethernet12"), "Ethernet12",
              "leaf0.Ethernet12 is wired twice (also to node01.nic0)", 1);
  ExpectError(Replace(k, "switch: leaf0, port: Ethernet16", "port: Ethernet16"),
              "{name: nic0, ifname: ens1f0, address: 10.0.0.2", "'switch' and 'port' go together");
  ExpectError(Replace(k, "key_file: /etc/fl/key", "key_file: etc/fl/key"), "etc/fl/key",
              "key_file must be an absolute path");
  ExpectError(Replace(k, "known_hosts: /etc/fl/known_hosts", "known_hosts: rel/kh"), "rel/kh",
              "known_hosts must be an absolute path");
  ExpectError(
      Replace(k, "    known_hosts: /etc/fl/known_hosts\n  - name: leaf1", "  - name: leaf1"),
      "name: leaf0", "needs exactly one of known_hosts");
  ExpectError(Replace(k, "    jump: ops@bastion:2200",
                      "    known_hosts: /etc/fl/known_hosts\n    jump: ops@bastion:2200"),
              "name: leaf1", "needs exactly one of known_hosts");
  ExpectError(Replace(k, "host_key: \"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAITestTestTestTest\"",
                      "host_key: \"ssh-ed25519 not;a;key\""),
              "\"ssh-ed25519 not;a;key\"", "host_key must be one OpenSSH public key line");
  ExpectError(Replace(k, "address: 10.10.0.201", "address: -oProxyCommand=x"), "-oProxyCommand",
              "is not an IP address or DNS name");
  ExpectError(Replace(k, "jump: ops@bastion:2200", "jump: bastion"), "bastion",
              "jump wants user@host or user@host:port");
  ExpectError(Replace(k, "user: admin", "user: -l"), "-l", "is not a user name");
  ExpectError(Replace(k, "port: 2222", "port: 70000"), "70000", "port must be between");
  ExpectError(Replace(k, "connect_timeout: 3s", "connect_timeout: 1h"), "1h",
              "connect_timeout must be between");
  ExpectError(
      Replace(k, "    driver: test-driver\n    user: admin", "    driver: telnet\n    user: admin"),
      "telnet", "unknown switch driver 'telnet'");
  ExpectError(Replace(k, "name: spine0", "name: node02"), "node02", "has the name of a host");
  ExpectError(Replace(k, "name: spine0", "name: fabric"), "fabric", "must be 1-32 chars");
  ExpectError(Replace(k, "name: spine0", "name: rail1"), "rail1", "must be 1-32 chars");
  ExpectError(Replace(k, "name: spine0", "name: leaf1"), "leaf1", "appears twice", 2);
  ExpectError(
      Replace(k, "peer_switch: spine0, peer_port: swp2", "peer_switch: spine9, peer_port: swp2"),
      "spine9", "no switch 'spine9'");
  ExpectError(Replace(k, "peer_port: swp2", "peer_port: xe2"), "xe2",
              "does not match the port pattern");
  ExpectError(
      Replace(k, "peer_switch: spine0, peer_port: swp2", "peer_switch: leaf1, peer_port: swp2"),
      "leaf1, peer_port", "goes back to its own switch");
  ExpectError(
      Replace(k, "{switch: leaf1, port: Ethernet49/1,", "{switch: leaf1, prt: Ethernet49/1,"),
      "prt", "unknown key");
  ExpectError(Replace(k, "fabric_agent: {host: mgmt1}", "fabric_agent: {host: \"a b\"}"), "\"a b\"",
              "is not a host name or address");
  ExpectError(Replace(k, "coordinator:", "launcher: slurm\ncoordinator:"), "- name: leaf0",
              "switches need launcher: systemd");
}

TEST_CASE(
    "inventory switches: wiring without switches only records the cabling - uplinks without "
    "switches are refused",
    "[unit]") {
  // The inventory without its switches section: the NICs' wiring stays (what discovery writes
  // from LLDP), but no switch is driven, so no tor_port target or switch-side kind exists.
  std::string k = kSw;
  const size_t from = k.find("switches:\n"), to = k.find("hosts:\n");
  const std::string bare = k.substr(0, from) + k.substr(to);
  auto cabled = ParseInventory(bare.substr(0, bare.find("uplinks:")), "bare.yaml");
  REQUIRE(cabled.ok());
  CHECK(!cabled->has_switches());
  CHECK(cabled->hosts[0].nics[0].sw == "leaf0");
  CHECK(HostSideCatalog(*cabled)->Targets("tor_port").empty());
  // A port wired twice is still an error there.
  std::string twice = bare.substr(0, bare.find("uplinks:"));
  const std::string p1 = cabled->hosts[0].nics[0].sw_port, p2 = cabled->hosts[1].nics[0].sw_port;
  twice.replace(twice.find("port: " + p2), 6 + p2.size(), "port: " + p1);
  auto dup = ParseInventory(twice, "twice.yaml");
  REQUIRE(!dup.ok());
  CHECK(dup.status().message().find("is wired twice") != std::string::npos);
  std::string unwired =
      std::regex_replace(bare, std::regex(", switch: [a-z0-9]+, port: [^,}]+"), "");
  ExpectError(unwired, "- {switch: leaf0", "uplinks need switches");
  unwired = unwired.substr(0, unwired.find("uplinks:")) + "fabric_agent: {host: mgmt1}\n";
  ExpectError(unwired, "{host: mgmt1}", "fabric_agent needs switches");
}

TEST_CASE("inventory switches: the catalog gains switch-side kinds only with switches", "[unit]") {
  Inventory inv = MustParse(kSw);
  auto cat = HostSideCatalog(inv);
  auto kinds = cat->Kinds();
  CHECK(Has(kinds, "tor_port_down"));
  CHECK(Has(kinds, "tor_uplink_down"));
  CHECK(cat->TargetClasses("tor_port_down") ==
        std::vector<std::string>{"tor_port", "nic", "host", "rail"});
  CHECK(cat->TargetClasses("tor_uplink_down") == std::vector<std::string>{"uplink"});
  for (const char* gray : {"link_blackhole", "packet_loss", "bandwidth_throttle"})
    CHECK(cat->TargetClasses(gray) == std::vector<std::string>{"nic", "tor_port", "host", "rail"});
  CHECK(cat->TargetClasses("pfc_storm") == std::vector<std::string>{"nic", "host", "rail"});
  // touch: false (node02.nic1 on leaf1.Ethernet2/1) is no target on the switch side either.
  CHECK(cat->Targets("tor_port") ==
        std::vector<std::string>{"leaf0.Ethernet12", "leaf1.Ethernet1/1", "leaf0.Ethernet16"});
  CHECK(cat->Targets("uplink") == std::vector<std::string>{"leaf0.Ethernet48", "spine0.swp1",
                                                           "leaf1.Ethernet49/1", "spine0.swp2",
                                                           "leaf0", "leaf1", "spine0"});
  CHECK_FALSE(Has(cat->Targets("nic"), "node02.nic1"));

  // Without switches: today's catalog.
  std::string k = kSw;
  std::string bare = k.substr(0, k.find("switches:\n")) + k.substr(k.find("hosts:\n"));
  bare = std::regex_replace(bare, std::regex(", switch: [a-z0-9]+, port: [^,}]+"), "");
  bare = bare.substr(0, bare.find("uplinks:"));
  Inventory plain = MustParse(bare);
  auto c2 = HostSideCatalog(plain);
  CHECK_FALSE(Has(c2->Kinds(), "tor_port_down"));
  CHECK_FALSE(Has(c2->Kinds(), "tor_uplink_down"));
  CHECK(c2->TargetClasses("link_blackhole") == std::vector<std::string>{"nic", "host", "rail"});
  CHECK(c2->Targets("tor_port").empty());
  CHECK(c2->Targets("uplink").empty());
  CHECK(InventoryFaultKinds(plain) == InventoryFaultKinds());
  InventoryLab lab(plain);
  CHECK(lab.agent_names() == std::vector<std::string>{"node01", "node02"});
  CHECK(lab.AgentFor("link_blackhole", "node01.nic0") == "node01");
  CHECK(lab.AgentFor("container_kill", "rank3") == "node02");
}

TEST_CASE("inventory switches: faults are routed to the fabric agent or a host's", "[unit]") {
  InventoryLab lab(MustParse(kSw));
  CHECK(lab.agent_names() == std::vector<std::string>{"node01", "node02", "fabric"});
  CHECK(lab.CheckFault("pfc_storm", {{"mode", "frames"}}).ok());
  CHECK(lab.CheckFault("pfc_storm", {}).message().find("offer no pause stall") !=
        std::string::npos);
  CHECK(lab.CheckFault("tor_port_down", {}).ok());
  CHECK(lab.AgentFor("tor_port_down", "node01.nic0") == "fabric");  // through the wiring
  CHECK(lab.AgentFor("tor_port_down", "rail1") == "fabric");
  CHECK(lab.AgentFor("tor_port_down", "leaf0.Ethernet12") == "fabric");
  CHECK(lab.AgentFor("tor_uplink_down", "spine0") == "fabric");
  CHECK(lab.AgentFor("link_blackhole", "leaf1.Ethernet1/1") == "fabric");  // the switch end
  CHECK(lab.AgentFor("packet_loss", "node01.nic1") == "node01");           // the host end
  CHECK(lab.AgentFor("bandwidth_throttle", "node02") == "node02");
  CHECK(lab.AgentFor("container_kill", "rank2") == "node02");
  CHECK(lab.AgentFor("container_kill", "node01.rank1") == "node01");
  // The Lab default is the run driver's old rule.
  std::vector<JobHost> hosts = {{"h0", 2, {}}, {"h1", 2, {}}};
  CHECK(DefaultAgentFor("h1.nic0", hosts) == "h1");
  CHECK(DefaultAgentFor("rank1", hosts) == "h0");
  CHECK(DefaultAgentFor("rank2", hosts) == "h1");
  CHECK(DefaultAgentFor("tor0.h1", hosts) == "fabric");
  CHECK(DefaultAgentFor("h10.nic0", hosts) == "fabric");  // whole names, not prefixes
}

TEST_CASE("inventory switches: the fabric site resolves targets to switch ports", "[unit]") {
  Inventory inv = MustParse(kSw);
  InventoryFabricSite site(inv);
  const auto leaf0 = site.inventory().FindSwitch("leaf0")->conn;
  CHECK(site.host() == "fabric");
  CHECK(site.ranks() == 0);
  CHECK(site.GrayFaultSide() == PortSide::kSwitch);
  CHECK(site.StartRank(0, {"x"}).status().code() == Code::kFailedPrecondition);
  CHECK(site.Container("node01.rank0").status().code() == Code::kNotFound);
  CHECK_FALSE(site.disposable());

  auto by_port = site.HostLinks("leaf0.Ethernet16", PortSide::kSwitch);
  REQUIRE(by_port.ok());
  REQUIRE(by_port->size() == 1);
  const injectors::Port& p = (*by_port)[0];
  CHECK(p.name == "leaf0.Ethernet16");
  CHECK(p.sw == leaf0);  // shared, not copied
  CHECK(p.sw_port == "Ethernet16");
  CHECK(p.netns.empty());
  CHECK(p.ifname.empty());

  auto by_nic = site.HostLinks("node01.nic1", PortSide::kSwitch);
  REQUIRE(by_nic.ok());
  REQUIRE(by_nic->size() == 1);
  CHECK((*by_nic)[0].name == "leaf1.Ethernet1/1");
  CHECK((*by_nic)[0].sw->name == "leaf1");

  // A rail: one port per host; a host: its wired NICs; touch: false left out.
  auto rail0 = site.HostLinks("rail0", PortSide::kSwitch);
  REQUIRE(rail0.ok());
  REQUIRE(rail0->size() == 2);
  CHECK((*rail0)[0].name == "leaf0.Ethernet12");
  CHECK((*rail0)[1].name == "leaf0.Ethernet16");
  auto rail1 = site.HostLinks("rail1", PortSide::kSwitch);
  REQUIRE(rail1.ok());
  REQUIRE(rail1->size() == 1);
  CHECK((*rail1)[0].name == "leaf1.Ethernet1/1");
  auto host2 = site.HostLinks("node02", PortSide::kSwitch);
  REQUIRE(host2.ok());
  REQUIRE(host2->size() == 1);
  CHECK((*host2)[0].sw_port == "Ethernet16");
  // touch: false named, by NIC or by its switch port: refused.
  for (const char* t : {"node02.nic1", "leaf1.Ethernet2/1"}) {
    auto r = site.HostLinks(t, PortSide::kSwitch);
    CHECK(r.status().code() == Code::kFailedPrecondition);
    CHECK(r.status().message().find("touch: false") != std::string::npos);
  }
  CHECK(site.HostLinks("rail2", PortSide::kSwitch).status().code() == Code::kNotFound);
  CHECK(site.HostLinks("leaf0.Ethernet99", PortSide::kSwitch).status().code() == Code::kNotFound);
  CHECK(site.HostLinks("node01.nic7", PortSide::kSwitch).status().code() == Code::kNotFound);
  CHECK(site.HostLinks("bogus", PortSide::kSwitch).status().code() == Code::kNotFound);
  CHECK(site.HostLinks("node01.nic0", PortSide::kHost).status().code() ==
        Code::kFailedPrecondition);

  // Uplinks: one end, or every uplink end of a switch.
  auto up = site.Uplinks("leaf1.Ethernet49/1");
  REQUIRE(up.ok());
  REQUIRE(up->size() == 1);
  CHECK((*up)[0].sw->name == "leaf1");
  CHECK((*up)[0].sw_port == "Ethernet49/1");
  auto spine = site.Uplinks("spine0");
  REQUIRE(spine.ok());
  REQUIRE(spine->size() == 2);
  CHECK((*spine)[0].name == "spine0.swp1");
  CHECK((*spine)[1].name == "spine0.swp2");
  CHECK(site.Uplinks("leaf0.Ethernet12").status().code() == Code::kNotFound);  // a host link
  CHECK(site.UpstreamOf((*spine)[0]).status().code() == Code::kFailedPrecondition);

  // A host's own site is unchanged: switch-side links stay refused there.
  InventorySite host_site(inv, "node01");
  CHECK(host_site.HostLinks("node01.nic0", PortSide::kSwitch).status().code() ==
        Code::kFailedPrecondition);
  CHECK(host_site.GrayFaultSide() == PortSide::kHost);
}

TEST_CASE("inventory switches: --host fabric opens the fabric site", "[unit]") {
  fl::testing::TempDir dir("fl_invsw");
  REQUIRE_FALSE(dir.path().empty());
  fl::testing::RegisterTestSwitchDriver();
  REQUIRE(WriteFileAtomic(dir.path() + "/inv.yaml", kSw).ok());
  SiteOptions o;
  o.inventory = dir.path() + "/inv.yaml";
  o.host = "fabric";
  auto site = OpenSite(o);
  INFO(site.status().ToString());
  REQUIRE(site.ok());
  CHECK((*site)->host() == "fabric");
  CHECK((*site)->ranks() == 0);
  auto ports = (*site)->fabric().HostLinks("rail0", PortSide::kSwitch);
  REQUIRE(ports.ok());
  CHECK(ports->size() == 2);
  // An inventory without switches has no fabric agent.
  REQUIRE(WriteFileAtomic(dir.path() + "/plain.yaml",
                          "name: r\ncoordinator: {listen: 10.0.0.9:7070, token_file: /t}\nhosts:\n"
                          "  - {name: n1, nics: [{name: nic0, ifname: eth0, address: 10.0.0.1}]}\n")
              .ok());
  o.inventory = dir.path() + "/plain.yaml";
  auto none = OpenSite(o);
  CHECK(none.status().code() == Code::kFailedPrecondition);
}

TEST_CASE("inventory switches: the shipped example parses", "[unit]") {
  // Its switches use the ssh-template driver with the shipped presets; here the test driver
  // stands in (same port names), without presets.
  auto text = ReadFile(std::string(FL_SOURCE_DIR) + "/configs/inventories/example_switches.yaml");
  REQUIRE(text.ok());
  std::string t =
      std::regex_replace(*text, std::regex("driver: ssh-template"), "driver: test-driver");
  t = std::regex_replace(t, std::regex("\n +preset: [a-z]+[^\n]*"), "");
  Inventory inv = MustParse(t);
  CHECK(inv.switches.size() == 3);
  CHECK(inv.uplinks.size() == 2);
  CHECK(inv.fabric_agent_host == "mgmt1");
  CHECK(inv.FindSwitch("leaf1")->conn->jump == "ops@bastion.example.net:22");
  auto cat = HostSideCatalog(inv);
  CHECK(Has(cat->Targets("tor_port"), "leaf1.Ethernet1/1"));
  CHECK(Has(cat->Targets("uplink"), "spine0"));
  InventoryLab lab(inv);
  CHECK(lab.AgentFor("tor_port_down", "node02.nic1") == "fabric");
}

TEST_CASE("inventory switches: scenarios aim at switch ports, '/' included", "[unit]") {
  const std::string scenario = R"(name: sw
seed: 1
lab: {inventory: i.yaml}
job: {workload: allreduce_loop, ccl: ftccl, size: 1MiB, iterations: 10}
faults:
  - {kind: link_blackhole, target: leaf1.Ethernet1/1, at: 1s, duration: 1s}
  - {kind: tor_port_down, target_class: tor_port, at: 1s, duration: 1s}
  - {kind: tor_port_down, target: rail0, at: 1s, duration: 1s}
  - {kind: tor_uplink_down, target: spine0, at: 1s, duration: 1s}
expectations: {survives: true}
)";
  auto sc = harness::ParseScenario(scenario, "s.yaml");
  INFO(sc.status().ToString());
  REQUIRE(sc.ok());
  Inventory inv = MustParse(kSw);
  CHECK(harness::ValidateAgainstCatalog(*sc, *HostSideCatalog(inv)).ok());
  // Not a wired port that may be touched (touch: false), not an uplink end.
  auto bad =
      harness::ParseScenario(Replace(scenario, "leaf1.Ethernet1/1", "leaf1.Ethernet2/1"), "s.yaml");
  REQUIRE(bad.ok());
  CHECK_FALSE(harness::ValidateAgainstCatalog(*bad, *HostSideCatalog(inv)).ok());
  // Without switches a switch port is no target, and a switch-side kind is today's unknown
  // kind.
  std::string k = kSw;
  std::string plain = k.substr(0, k.find("switches:\n")) + k.substr(k.find("hosts:\n"));
  plain = std::regex_replace(plain, std::regex(", switch: [a-z0-9]+, port: [^,}]+"), "");
  plain = plain.substr(0, plain.find("uplinks:"));
  Status st = harness::ValidateAgainstCatalog(*sc, *HostSideCatalog(MustParse(plain)));
  CHECK(st.code() == Code::kInvalidArgument);
  CHECK(st.message().find("target 'leaf1.Ethernet1/1' is not in the lab") != std::string::npos);
  auto tor =
      harness::ParseScenario(Replace(scenario, "kind: link_blackhole, target: leaf1.Ethernet1/1",
                                     "kind: tor_port_down, target: node01.nic0"),
                             "s.yaml");
  REQUIRE(tor.ok());
  st = harness::ValidateAgainstCatalog(*tor, *HostSideCatalog(MustParse(plain)));
  CHECK(st.message().find("unknown fault kind 'tor_port_down'") != std::string::npos);
}

TEST_CASE("inventory switches: a host's agent needs neither presets nor drivers", "[unit]") {
  // A driver no process registered and a preset that is nowhere: the coordinator (and the
  // fabric agent) refuse the file, a host's agent reads it.
  const std::string text = std::regex_replace(std::string(kSw), std::regex("driver: test-driver"),
                                              "driver: ssh-template\n    preset: nowhere.yaml");
  CHECK(ParseInventory(text, "i.yaml").status().code() == Code::kInvalidArgument);
  InventoryOptions host_side;
  host_side.open_switch_drivers = false;
  auto inv = ParseInventory(text, "i.yaml", host_side);
  INFO(inv.status().ToString());
  REQUIRE(inv.ok());
  CHECK(inv->FindSwitch("leaf0")->conn->preset == "nowhere.yaml");
  CHECK(inv->FindSwitch("leaf0")->conn->preset_text.empty());
  // The wiring is still checked (not the driver's port pattern).
  CHECK(ParseInventory(Replace(text, "port: Ethernet16", "port: Ethernet12"), "i.yaml", host_side)
            .status()
            .message()
            .find("wired twice") != std::string::npos);
  CHECK(ParseInventory(Replace(text, "port: Ethernet16", "port: Eth16"), "i.yaml", host_side).ok());

  fl::testing::TempDir dir("fl_invsw");
  REQUIRE_FALSE(dir.path().empty());
  REQUIRE(WriteFileAtomic(dir.path() + "/inv.yaml", text).ok());
  SiteOptions o;
  o.inventory = dir.path() + "/inv.yaml";
  o.host = "node01";
  auto site = OpenSite(o);
  INFO(site.status().ToString());
  REQUIRE(site.ok());
  CHECK((*site)->fabric().HostLinks("node01.nic0", PortSide::kHost).ok());
  o.host = "fabric";
  CHECK(OpenSite(o).status().code() == Code::kInvalidArgument);
}

}  // namespace
}  // namespace fl::lab
