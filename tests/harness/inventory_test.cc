// Inventory parsing and the site's name resolution ([unit]: nothing outside the process).
#include "harness/lab/inventory.h"

#include <catch2/catch.hpp>

namespace fl::lab {
namespace {

constexpr const char* kInv = R"(name: rack7
coordinator: {listen: 10.10.0.254:7070, token_file: /etc/faultline/token}
agent_wait: 5s
hosts:
  - name: node01
    ranks: 2
    nics:
      - {name: nic0, ifname: ens1f0, address: 10.0.0.1}
      - {name: nic1, ifname: ens1f1, address: 10.1.0.1}
  - name: node02
    ranks: 2
    nics:
      - {name: nic0, ifname: ens1f0, address: 10.0.0.2}
      - {name: nic1, ifname: ens1f1, address: 10.1.0.2}
)";

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  auto at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

TEST_CASE("inventory: the shipped example and a valid file load", "[unit]") {
  auto ex = LoadInventory(std::string(FL_SOURCE_DIR) + "/configs/inventories/example.yaml");
  REQUIRE(ex.ok());
  CHECK(ex->hosts.size() == 2);
  CHECK(ex->world_size() == 16);
  CHECK(ex->rendezvous_dir == "/shared/faultline");

  auto inv = ParseInventory(kInv, "i.yaml");
  REQUIRE(inv.ok());
  CHECK(inv->listen == "10.10.0.254:7070");
  CHECK(inv->agent_wait_ns == 5 * kNsPerSec);
  CHECK(inv->world_size() == 4);
  int local = -1;
  const InventoryHost* h = inv->HostOfRank(3, &local);
  REQUIRE(h != nullptr);
  CHECK(h->name == "node02");
  CHECK(local == 1);
  CHECK(inv->HostOfRank(4, &local) == nullptr);
  CHECK(inv->hosts[1].nics[1].address == "10.1.0.2");
}

TEST_CASE("inventory: bad input names file:line:col", "[unit]") {
  auto err = [](const std::string& text) {
    auto r = ParseInventory(text, "i.yaml");
    REQUIRE_FALSE(r.ok());
    return r.status().message();
  };
  CHECK(err(Replace(kInv, "agent_wait", "agent_wiat")).rfind("i.yaml:3:1: unknown key", 0) == 0);
  CHECK(err(Replace(kInv, "10.10.0.254:7070", "10.10.0.254")).find("i.yaml:2:23: listen wants") ==
        0);
  CHECK(err(Replace(kInv, "address: 10.0.0.2", "address: ten")).find("i.yaml:13:47:") == 0);
  CHECK(err(Replace(kInv, "name: node02", "name: node01")).find("appears twice") !=
        std::string::npos);
  CHECK(err(Replace(kInv,
                    "    ranks: 2\n    nics:\n      - {name: nic0, ifname: ens1f0, address: "
                    "10.0.0.2}",
                    "    ranks: 3\n    nics:\n      - {name: nic0, ifname: ens1f0, address: "
                    "10.0.0.2}"))
            .find("same number of ranks and NICs") != std::string::npos);
  CHECK(err(Replace(kInv, "ifname: ens1f0, address: 10.0.0.1", "ifname: a;b, address: 10.0.0.1"))
            .find("is not an interface name") != std::string::npos);
  // Numbers are bounded, with their location.
  CHECK(err(Replace(kInv, "agent_wait: 5s", "agent_wait: 100h")) ==
        "i.yaml:3:13: agent_wait must be between 1s and 1h, not 100h");
  CHECK(err(Replace(kInv, "agent_wait: 5s", "agent_wait: 0s"))
            .rfind("i.yaml:3:13: agent_wait must be between 1s and 1h", 0) == 0);
  CHECK(err(Replace(kInv,
                    "    ranks: 2\n    nics:\n      - {name: nic0, ifname: ens1f0, "
                    "address: 10.0.0.1}",
                    "    ranks: 4000000000\n    nics:\n      - {name: nic0, ifname: ens1f0, "
                    "address: 10.0.0.1}"))
            .rfind("i.yaml:6:12: ", 0) == 0);
  CHECK(err(Replace(kInv,
                    "    ranks: 2\n    nics:\n      - {name: nic0, ifname: ens1f0, "
                    "address: 10.0.0.1}",
                    "    ranks: 65\n    nics:\n      - {name: nic0, ifname: ens1f0, "
                    "address: 10.0.0.1}")) ==
        "i.yaml:6:12: ranks must be between 1 and 64, not 65");
  CHECK(err(Replace(kInv, "10.10.0.254:7070", "10.10.0.254:7070x")).find("i.yaml:2:23: listen") ==
        0);
  CHECK(err(Replace(kInv, "10.10.0.254:7070", "10.10.0.254:99999999999999"))
            .find("i.yaml:2:23: listen") == 0);
}

TEST_CASE("inventory: a host's site resolves its own NICs and refuses switch-side targets",
          "[unit]") {
  auto inv = ParseInventory(kInv, "i.yaml");
  REQUIRE(inv.ok());
  InventorySite site(*inv, "node02");
  auto one = site.HostLinks("node02.nic1", injectors::PortSide::kHost);
  REQUIRE(one.ok());
  REQUIRE(one->size() == 1);
  CHECK((*one)[0].ifname == "ens1f1");
  CHECK((*one)[0].netns.empty());  // the agent's own namespace
  auto all = site.HostLinks("node02", injectors::PortSide::kHost);
  REQUIRE(all.ok());
  CHECK(all->size() == 2);
  CHECK(site.HostLinks("node01.nic0", injectors::PortSide::kHost).status().code() ==
        Code::kNotFound);  // another host's agent acts on it
  CHECK(site.HostLinks("node02.nic0", injectors::PortSide::kSwitch).status().code() ==
        Code::kFailedPrecondition);
  CHECK(site.Uplinks("tor0").status().code() == Code::kFailedPrecondition);
  CHECK(site.Container("node01.rank0").status().code() == Code::kNotFound);
  CHECK(site.CgroupDir().find("/faultline/inv-rack7-node02") != std::string::npos);
}

}  // namespace
}  // namespace fl::lab
