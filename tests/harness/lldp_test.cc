// LLDP neighbours from lldpcli's JSON and the wiring compared with an inventory
// (harness/lab/lldp.h): lldpcli's shapes (one interface, several, a switch's ifname port, a
// Linux neighbour's MAC-typed port), moved, missing and unknown NICs ([unit]); and real lldpd
// in a local lab's host and ToR namespaces, whose neighbours match the lab's cabling
// ([.root][integration]).
#include "harness/lab/lldp.h"

#include <signal.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include "common/file_util.h"
#include "common/process.h"
#include "tests/harness/lldpd_testing.h"
#include "tests/injectors/lab_testing.h"
#include "tests/test_util.h"

namespace fl::lab {
namespace {

// What lldpcli 1.0.16 printed for one neighbour (a Linux lldpd behind a veth): the port id is
// a MAC, its name is in descr.
constexpr const char* kOneLinux = R"({
  "lldp": {"interface": {"fla0": {"via": "LLDP", "rid": "1",
    "chassis": {"leaf7": {"id": {"type": "mac", "value": "e6:fe:cb:4b:d3:58"},
                          "descr": "switchB"}},
    "port": {"id": {"type": "mac", "value": "e6:fe:cb:4b:d3:58"}, "descr": "flb0", "ttl": "4"}}}}
})";

// Several interfaces: a list of one-key objects; switches name their ports in the id.
constexpr const char* kTwoSwitch = R"({
  "lldp": {"interface": [
    {"ens1f0np0": {"chassis": {"leaf0": {"id": {"type": "mac", "value": "aa:bb:cc:00:00:01"}}},
                   "port": {"id": {"type": "ifname", "value": "Ethernet12"}, "descr": "to node01"}}},
    {"ens1f1np1": {"chassis": {"leaf1": {"id": {"type": "mac", "value": "aa:bb:cc:00:00:02"}}},
                   "port": {"id": {"type": "local", "value": "swp3"}}}}]}
})";

TEST_CASE("lldp: lldpcli's one-interface and several-interface shapes", "[unit]") {
  auto one = ParseLldpNeighbors(kOneLinux);
  REQUIRE(one.ok());
  REQUIRE(one->size() == 1);
  CHECK((*one)[0].ifname == "fla0");
  CHECK((*one)[0].chassis == "leaf7");
  CHECK((*one)[0].port == "flb0");  // descr: the id is a MAC
  auto two = ParseLldpNeighbors(kTwoSwitch);
  REQUIRE(two.ok());
  REQUIRE(two->size() == 2);
  CHECK((*two)[0].chassis == "leaf0");
  CHECK((*two)[0].port == "Ethernet12");  // the id, not "to node01"
  CHECK((*two)[1].ifname == "ens1f1np1");
  CHECK((*two)[1].port == "swp3");
  // No neighbour at all; not lldpcli's JSON.
  auto none = ParseLldpNeighbors(R"({"lldp": {}})");
  REQUIRE(none.ok());
  CHECK(none->empty());
  auto bad = ParseLldpNeighbors("{\"lldp\": ", "node01: lldpcli");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().rfind("node01: lldpcli: ", 0) == 0);
  CHECK_FALSE(ParseLldpNeighbors("[1, 2]").ok());
}

Inventory TwoHosts() {
  Inventory inv;
  for (const char* h : {"node01", "node02"}) {
    InventoryHost host;
    host.name = h;
    host.nics.push_back({"nic0",
                         "ens1f0np0",
                         "10.0.0.1",
                         true,
                         "leaf0",
                         std::string("Ethernet") + (h[5] == '1' ? "12" : "13"),
                         {}});
    host.nics.push_back({"nic1",
                         "ens1f1np1",
                         "10.1.0.1",
                         true,
                         "leaf1",
                         std::string("swp") + (h[5] == '1' ? "3" : "4"),
                         {}});
    inv.hosts.push_back(host);
  }
  return inv;
}

TEST_CASE(
    "lldp: the live wiring against an inventory - a match, a move, a missing host and NIC, "
    "an unknown NIC",
    "[unit]") {
  Inventory inv = TwoHosts();
  HostWiring n1{"node01", *ParseLldpNeighbors(kTwoSwitch)};
  HostWiring n2{"node02", {{"ens1f0np0", "leaf0", "Ethernet13"}, {"ens1f1np1", "leaf1", "swp4"}}};
  CHECK(CompareWiring(inv, {n1, n2}).empty());

  // node02's nic0 recabled to Ethernet20; its nic1 unplugged; a third NIC cabled.
  n2.neighbors = {{"ens1f0np0", "leaf0", "Ethernet20"}, {"ens3f0", "leaf2", "Ethernet1"}};
  auto d = CompareWiring(inv, {n1, n2});
  REQUIRE(d.size() == 3);
  CHECK(d[0] == "node02.nic0 (ens1f0np0): moved from leaf0 Ethernet13 to leaf0 Ethernet20");
  CHECK(d[1] == "node02.nic1 (ens1f1np1): no LLDP neighbour (expected leaf1 swp4)");
  CHECK(d[2] == "node02: ens3f0 is not in the inventory (cabled to leaf2 Ethernet1)");

  // A host that did not answer.
  d = CompareWiring(inv, {n1});
  REQUIRE(d.size() == 1);
  CHECK(d[0] == "node02: not seen");
}

TEST_CASE("lldp: real lldpd in a lab's host and ToR namespaces sees the lab's cabling",
          "[.root][integration]") {
  testing::ScopedStateDir state;
  testing::TempDir dir("fl_lldp");
  REQUIRE(chmod(dir.path().c_str(), 0755) ==
          0);  // lldpd's own unprivileged side opens its socket there
  auto l = testing::TestLab::Up(testing::kSmallRail);
  REQUIRE(l.ok());
  LocalLab& lab = (*l)->lab();
  // h0's nic0 is cabled to tor0's port "h0" (the local lab names a ToR's ports by host).
  auto host = testing::Lldpd::Start(lab.NetnsOf("h0"), dir.path(), "h0", "nic0");
  REQUIRE(host.ok());
  auto tor = testing::Lldpd::Start(lab.NetnsOf("tor0"), dir.path(), "tor0", "h0");
  REQUIRE(tor.ok());
  std::vector<LldpNeighbor> seen;
  bool found = WaitUntil(
      [&] {
        auto out = (*host)->Cli({"-f", "json", "show", "neighbors"});
        if (!out.ok()) return false;
        auto n = ParseLldpNeighbors(*out, "h0: lldpcli");
        if (!n.ok() || n->empty()) return false;
        seen = *n;
        return true;
      },
      Deadline::After(20 * kNsPerSec), 200 * kNsPerMs);
  REQUIRE(found);
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].ifname == "nic0");
  CHECK(seen[0].chassis == "tor0");
  CHECK(seen[0].port == "h0");

  Inventory inv;
  inv.hosts.push_back({"h0", 1, {{"nic0", "nic0", "10.0.0.1", true, "tor0", "h0", {}}}, {}, {}});
  CHECK(CompareWiring(inv, {{"h0", seen}}).empty());
  inv.hosts[0].nics[0].sw_port = "h1";  // what a recabling looks like
  auto d = CompareWiring(inv, {{"h0", seen}});
  REQUIRE(d.size() == 1);
  CHECK(d[0] == "h0.nic0 (nic0): moved from tor0 h1 to tor0 h0");
}

}  // namespace
}  // namespace fl::lab
