// `faultline inventory discover`'s pure part (harness/lab/inventory_discovery.h): which NICs a
// host's facts make into the inventory, the inventory written from them (it parses, wiring and
// expect: filled), and the drift of a live fleet from an inventory, one line per difference.
#include <catch2/catch.hpp>

#include "harness/lab/inventory.h"
#include "harness/lab/inventory_discovery.h"

namespace fl::lab {
namespace {

HostFacts::Nic Nic(const std::string& ifname, const std::string& ip, const std::string& pci = "",
                   const std::string& sw = "", const std::string& port = "") {
  HostFacts::Nic n;
  n.ifname = ifname;
  if (!ip.empty()) n.ipv4 = {ip};
  n.pci = pci;
  n.driver = pci.empty() ? "veth" : "mlx5_core";
  n.firmware = pci.empty() ? "" : "28.39.1002";
  n.numa = pci.empty() ? -1 : 0;
  n.speed_mbps = pci.empty() ? 10000 : 400000;
  n.mac = "02:00:00:00:00:" + std::to_string(10 + ifname.size());
  n.state = "up";
  n.lldp_switch = sw;
  n.lldp_port = port;
  return n;
}

// A real host: two data NICs on PCI (given out of rail order), a docker bridge with an
// address, the management NIC it dialled from, and two GPUs.
HostFacts RealHost(const std::string& name, int index) {
  HostFacts h;
  h.host = name;
  const std::string i = std::to_string(index);
  h.peer_ip = "10.10.0." + i;
  h.lldp_read = true;
  h.nics = {Nic("ens1f1np1", "10.1.0." + i, "0000:3b:00.1", "leaf1", "Ethernet" + i),
            Nic("eno1", "10.10.0." + i, "0000:01:00.0", "mgmt-sw", "ge-0/0/" + i),
            Nic("docker0", "172.17.0.1"),
            Nic("ens1f0np0", "10.0.0." + i, "0000:3b:00.0", "leaf0", "Ethernet" + i)};
  h.nics[0].rdma_device = "mlx5_1";
  h.nics[0].rdma_port = 1;
  h.gpus = {{"0000:19:00.0", 0, "NVIDIA H200"}, {"0000:3a:00.0", 0, "NVIDIA H200"}};
  return h;
}

DiscoverOptions Options() {
  DiscoverOptions o;
  o.name = "rack7";
  o.listen = "10.10.0.254:7070";
  o.token_file = "/etc/faultline/token";
  return o;
}

TEST_CASE("discover: data NICs are chosen without the management one, on PCI first, rail order",
          "[unit]") {
  HostFacts h = RealHost("node01", 1);
  auto sel = SelectNics(h, {});
  REQUIRE(sel.size() == 2);  // not eno1 (the agent dialled from it), not docker0 (no PCI)
  CHECK(sel[0]->ifname == "ens1f0np0");
  CHECK(sel[1]->ifname == "ens1f1np1");
  // A lab of veths: nothing on PCI, so every addressed interface but the management one, in
  // natural order.
  HostFacts lab;
  lab.host = "h0";
  lab.peer_ip = "198.19.0.2";
  lab.nics = {Nic("nic10", "198.18.10.1"), Nic("mgmt", "198.19.0.2"), Nic("nic2", "198.18.2.1"),
              Nic("nic0", ""), Nic("nic1", "198.18.1.1")};
  sel = SelectNics(lab, {});
  REQUIRE(sel.size() == 3);
  CHECK(sel[0]->ifname == "nic1");
  CHECK(sel[1]->ifname == "nic2");
  CHECK(sel[2]->ifname == "nic10");
  // --nics says exactly which.
  sel = SelectNics(h, {"ens1f1*", "docker*"});
  REQUIRE(sel.size() == 2);
  CHECK(sel[0]->ifname == "ens1f1np1");
  CHECK(sel[1]->ifname == "docker0");
}

TEST_CASE("discover: the written inventory parses, with wiring, facts and GPUs", "[unit]") {
  std::vector<HostFacts> hosts = {RealHost("node01", 1), RealHost("node02", 2)};
  hosts[1].lldp_read = false;
  hosts[1].lldp_note = "lldpd is not running (no /run/lldpd.socket)";
  for (auto& n : hosts[1].nics) n.lldp_switch = n.lldp_port = "";
  auto yaml = InventoryYamlFromFacts(hosts, Options());
  REQUIRE(yaml.ok());
  INFO(*yaml);
  auto inv = ParseInventory(*yaml, "discovered.yaml", {.open_switch_drivers = false});
  REQUIRE(inv.ok());
  CHECK(inv->name == "rack7");
  CHECK(inv->listen == "10.10.0.254:7070");
  REQUIRE(inv->hosts.size() == 2);
  const InventoryHost& n1 = inv->hosts[0];
  CHECK(n1.ranks == 2);  // its GPUs
  REQUIRE(n1.nics.size() == 2);
  CHECK(n1.nics[0].name == "nic0");
  CHECK(n1.nics[0].ifname == "ens1f0np0");
  CHECK(n1.nics[0].address == "10.0.0.1");
  CHECK(n1.nics[0].sw == "leaf0");
  CHECK(n1.nics[0].sw_port == "Ethernet1");
  CHECK(n1.nics[0].expect.firmware == "28.39.1002");
  CHECK(n1.nics[0].expect.pci == "0000:3b:00.0");
  CHECK(n1.nics[0].expect.numa == 0);
  CHECK(n1.nics[1].expect.rdma == "mlx5_1/1");
  REQUIRE(n1.gpus.size() == 2);
  CHECK(n1.gpus[1].pci == "0000:3a:00.0");
  CHECK(n1.gpus[1].model == "NVIDIA H200");
  // node02's lldpd did not answer: no wiring, and the file says why.
  CHECK(inv->hosts[1].nics[0].sw.empty());
  CHECK(yaml->find("# no wiring: lldpd is not running") != std::string::npos);
  // And it is its own drift-free baseline.
  CHECK(CheckDrift(*inv, {RealHost("node01", 1), hosts[1]}).empty());
}

TEST_CASE("discover: hosts that cannot make one inventory are refused, saying why", "[unit]") {
  std::vector<HostFacts> hosts = {RealHost("node01", 1), RealHost("node02", 2)};
  hosts[1].nics.pop_back();  // node02 lost ens1f0np0
  auto bad = InventoryYamlFromFacts(hosts, Options());
  REQUIRE(!bad.ok());
  CHECK(bad.status().message().find("node01 2, node02 1") != std::string::npos);
  hosts = {RealHost("node01", 1)};
  hosts[0].nics = {Nic("eno1", "10.10.0.1", "0000:01:00.0")};
  bad = InventoryYamlFromFacts(hosts, Options());
  REQUIRE(!bad.ok());
  CHECK(bad.status().message().find("host node01: no data NIC found") != std::string::npos);
  DiscoverOptions o = Options();
  o.name = "Rack 7";
  bad = InventoryYamlFromFacts({RealHost("node01", 1)}, o);
  REQUIRE(!bad.ok());
  CHECK(bad.status().message().find("--name") != std::string::npos);
}

TEST_CASE("discover --check: each difference of the live fleet is one line", "[unit]") {
  auto yaml = InventoryYamlFromFacts({RealHost("node01", 1), RealHost("node02", 2)}, Options());
  REQUIRE(yaml.ok());
  auto inv = ParseInventory(*yaml, "inv.yaml", {.open_switch_drivers = false});
  REQUIRE(inv.ok());

  // node01: nic0 recabled, nic1's firmware upgraded and its link down, a GPU gone, a new NIC.
  HostFacts n1 = RealHost("node01", 1);
  n1.nics[3].lldp_port = "Ethernet9";
  n1.nics[0].firmware = "28.40.1000";
  n1.nics[0].state = "no-carrier";
  n1.gpus.pop_back();
  n1.nics.push_back(Nic("ens2f0np0", "10.2.0.1", "0000:5e:00.0", "leaf2", "Ethernet1"));
  // node03 dialled in too; node02 did not.
  HostFacts n3 = RealHost("node03", 3);
  auto d = CheckDrift(*inv, {n1, n3});
  INFO([&] {
    std::string all;
    for (const auto& l : d) all += l + "\n";
    return all;
  }());
  REQUIRE(d.size() == 7);
  CHECK(d[0] == "node01.nic0 (ens1f0np0): moved from leaf0 Ethernet1 to leaf0 Ethernet9");
  CHECK(d[1] == "node01.nic1 (ens1f1np1): firmware changed from 28.39.1002 to 28.40.1000");
  CHECK(d[2] == "node01.nic1 (ens1f1np1): link is no-carrier");
  CHECK(d[3] == "node01: GPU 0000:3a:00.0 missing");
  CHECK(d[4] ==
        "node01: new NIC ens2f0np0 (10.2.0.1, cabled to leaf2 Ethernet1) is not in the inventory");
  CHECK(d[5] == "node02: not seen (no agent dialled in)");
  CHECK(d[6] == "node03: new host (its agent dialled in; the inventory does not list it)");

  // A NIC that is gone, and a host whose lldpd is down: its wiring is not checked.
  HostFacts n2 = RealHost("node02", 2);
  n2.nics.erase(n2.nics.begin());  // ens1f1np1
  n2.lldp_read = false;
  n2.lldp_note = "lldpd is not running";
  d = CheckDrift(*inv, {RealHost("node01", 1), n2});
  REQUIRE(d.size() == 2);
  CHECK(d[0] == "node02.nic1 (ens1f1np1): missing (no such interface on the host)");
  CHECK(d[1] == "node02: wiring not checked (lldpd is not running)");
}

}  // namespace
}  // namespace fl::lab
