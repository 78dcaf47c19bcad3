// Inventory parsing and the site's name resolution ([unit]: nothing outside the process).
#include "harness/lab/inventory.h"
#include "harness/lab/open_lab.h"

#include <catch2/catch.hpp>

#include <algorithm>

#include "common/file_util.h"
#include "common/yaml_util.h"
#include "harness/scenario/scenario_loader.h"
#include "tests/test_util.h"

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

TEST_CASE("inventory: rail targets, untouchable NICs and the management interface", "[unit]") {
  auto inv =
      ParseInventory(Replace(kInv, "{name: nic1, ifname: ens1f1, address: 10.1.0.2}",
                             "{name: nic1, ifname: ens1f1, address: 10.1.0.2, touch: false}"),
                     "i.yaml");
  REQUIRE(inv.ok());
  InventorySite site(*inv, "node02", /*mgmt_ifname=*/"");
  CHECK(site.GrayFaultSide() == injectors::PortSide::kHost);  // no switch access
  auto rail0 = site.HostLinks("rail0", injectors::PortSide::kHost);
  REQUIRE(rail0.ok());
  REQUIRE(rail0->size() == 1);
  CHECK((*rail0)[0].name == "node02.nic0");
  // touch: false: never a target by name, and left out of host and rail targets.
  auto named = site.HostLinks("node02.nic1", injectors::PortSide::kHost);
  CHECK(named.status().code() == Code::kFailedPrecondition);
  CHECK(named.status().message().find("touch: false") != std::string::npos);
  auto host = site.HostLinks("node02", injectors::PortSide::kHost);
  REQUIRE(host.ok());
  CHECK(host->size() == 1);
  CHECK(site.HostLinks("rail1", injectors::PortSide::kHost).status().code() == Code::kNotFound);
  // The interface that carries the route to the coordinator is never a target.
  InventorySite mgmt(*inv, "node02", "ens1f0");
  auto m = mgmt.HostLinks("node02.nic0", injectors::PortSide::kHost);
  CHECK(m.status().code() == Code::kFailedPrecondition);
  CHECK(m.status().message().find("management") != std::string::npos);
  // The catalog leaves the untouchable NIC out as well.
  auto catalog = HostSideCatalog(*inv);
  auto nics = catalog->Targets("nic");
  CHECK(std::find(nics.begin(), nics.end(), "node02.nic1") == nics.end());
  CHECK(std::find(nics.begin(), nics.end(), "node01.nic1") != nics.end());
  CHECK(catalog->Targets("rank").size() == 4);
  CHECK(catalog->TargetClasses("link_blackhole").front() == "nic");
  // Switch-side classes are not offered on real hosts.
  auto classes = catalog->TargetClasses("bandwidth_throttle");
  CHECK(std::find(classes.begin(), classes.end(), "tor_port") == classes.end());
  auto kinds = catalog->Kinds();
  CHECK(std::find(kinds.begin(), kinds.end(), "tor_port_down") == kinds.end());
  CHECK(kinds.size() == 6);
}

TEST_CASE("inventory: launcher and touch are checked, with their location", "[unit]") {
  auto err = [](const std::string& text) {
    auto inv = ParseInventory(text, "i.yaml");
    return inv.ok() ? std::string("ok") : inv.status().message();
  };
  CHECK(err(Replace(kInv, "agent_wait: 5s", "agent_wait: 5s\nlauncher: pbs"))
            .rfind("i.yaml:4:11: launcher must be systemd", 0) == 0);
  auto slurm =
      ParseInventory(Replace(kInv, "agent_wait: 5s", "agent_wait: 5s\nlauncher: slurm"), "i.yaml");
  REQUIRE(slurm.ok());
  CHECK(slurm->launcher == "slurm");
  CHECK(err(Replace(kInv, "address: 10.0.0.2}", "address: 10.0.0.2, touch: maybe}"))
            .rfind("i.yaml:", 0) == 0);
}

TEST_CASE("OpenLab tells a topology from an inventory - an inventory lab's contract", "[unit]") {
  testing::TempDir dir("fl_openlab");
  const std::string inv_path = dir.path() + "/inv.yaml";
  REQUIRE(WriteFileAtomic(inv_path, kInv).ok());
  auto lab = OpenLab(LabSource{inv_path, "", "", ""}, "check");
  REQUIRE(lab.ok());
  CHECK((*lab)->kind() == "inventory");
  CHECK((*lab)->text() == kInv);
  CHECK((*lab)->agent_names() == std::vector<std::string>{"node01", "node02"});
  auto hosts = (*lab)->hosts();
  REQUIRE(hosts.size() == 2);
  CHECK(hosts[1].nics == std::vector<std::string>{"10.0.0.2", "10.1.0.2"});
  LabRun run;
  run.run_id = "r1";
  auto rdv = (*lab)->RendezvousFor(run);
  CHECK(rdv.kind == Rendezvous::Kind::kTcp);  // no shared directory needed
  CHECK(rdv.listen == "10.10.0.254:0");
  auto control = (*lab)->Control(run);
  REQUIRE(control.ok());
  CHECK(control->listen == "10.10.0.254:7070");
  CHECK(control->tls_dir == "/etc/faultline/tls");  // mutual TLS by default on real hosts
  run.no_tls = true;
  CHECK((*lab)->Control(run)->tls_dir.empty());

  auto topo = OpenLab(
      LabSource{std::string(FL_SOURCE_DIR) + "/configs/labs/rail4.yaml", "", "", ""}, "check");
  REQUIRE(topo.ok());
  CHECK((*topo)->kind() == "local");
  CHECK((*topo)->agent_names().size() == 5);  // four hosts and the fabric agent
  CHECK((*topo)->catalog().Targets("tor_port").size() == 8);
  run.tls_dir = "/x";
  CHECK((*topo)->Control(run).status().code() == Code::kInvalidArgument);

  // A stored text wins over the file (a replay uses the run's lab as it was).
  auto stored = OpenLab(LabSource{inv_path, Replace(kInv, "rack7", "rack8"), "", ""}, "check");
  REQUIRE(stored.ok());
  CHECK((*stored)->name() == "rack8");
  auto missing = OpenLab(LabSource{dir.path() + "/none.yaml", "", "", "s.yaml:3:5"}, "check");
  CHECK(missing.status().code() == Code::kInvalidArgument);
  CHECK(missing.status().message().rfind("s.yaml:3:5: ", 0) == 0);
}

TEST_CASE("OpenLab parses a lab file once, whichever kind claims it", "[unit]") {
  testing::TempDir dir("fl_openlab_once");
  const std::string inv_path = dir.path() + "/inv.yaml";
  REQUIRE(WriteFileAtomic(inv_path, kInv).ok());
  const std::string slurm_path = dir.path() + "/slurm.yaml";
  REQUIRE(WriteFileAtomic(slurm_path,
                          Replace(kInv, "agent_wait: 5s", "agent_wait: 5s\nlauncher: slurm"))
              .ok());
  struct Case {
    LabSource source;
    std::string kind;
  };
  const std::vector<Case> cases = {
      {{inv_path, "", "", ""}, "inventory"},
      {{slurm_path, "", "", ""}, "slurm"},
      {{std::string(FL_SOURCE_DIR) + "/configs/labs/rail4.yaml", "", "", ""}, "local"},
      {{"s.yaml", "",
        "slurm: {nodes: [n1, n2], nics: [eth1], coordinator: {listen: 10.0.0.254:0, "
        "token_file: /t}}\n",
        ""},
       "slurm"},
      // A stored run's scenario with its inline section (a replay).
      {{"r.yaml",
        "name: r\nlab:\n  slurm: {nodes: [n1], nics: [eth1], coordinator: {listen: "
        "10.0.0.254:0, token_file: /t}}\n",
        "", ""},
       "slurm"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.source.path);
    const uint64_t before = YamlDoc::ParseCount();
    auto lab = OpenLab(c.source, "check");
    REQUIRE(lab.ok());
    CHECK((*lab)->kind() == c.kind);
    CHECK(YamlDoc::ParseCount() - before == 1);
  }
  // Every kind says what it is; the last claims whatever the others leave.
  REQUIRE(LabKinds().size() == 3);
  CHECK(LabKinds().back().name == "local");
  for (const LabKind& k : LabKinds()) CHECK(!k.summary.empty());
}

TEST_CASE("inventory: ranks in docker or podman containers are killed through their engine",
          "[unit]") {
  auto inv = ParseInventory(
      Replace(kInv, "      - {name: nic1, ifname: ens1f1, address: 10.1.0.2}\n",
              "      - {name: nic1, ifname: ens1f1, address: 10.1.0.2}\n    containers:\n"
              "      - {rank: 1, runtime: podman, id: trainer-1}\n"),
      "i.yaml");
  REQUIRE(inv.ok());
  InventorySite site(*inv, "node02");
  auto c = site.Container("node02.rank1");
  REQUIRE(c.ok());
  CHECK(c->runtime == "podman");
  CHECK(c->id == "trainer-1");
  auto by_rank = site.Container("rank3");  // global rank 3 = node02's local rank 1
  REQUIRE(by_rank.ok());
  CHECK(by_rank->id == "trainer-1");
  CHECK(site.Container("node02.rank0").status().code() == Code::kNotFound);  // not running
  auto err = [&](const std::string& containers) {
    auto bad = ParseInventory(
        Replace(kInv, "      - {name: nic1, ifname: ens1f1, address: 10.1.0.2}\n",
                "      - {name: nic1, ifname: ens1f1, address: 10.1.0.2}\n    containers:\n" +
                    containers),
        "i.yaml");
    return bad.ok() ? std::string("ok") : bad.status().message();
  };
  const std::string lxc = err("      - {rank: 1, runtime: lxc, id: x}\n");
  CHECK(lxc.rfind("i.yaml:", 0) == 0);
  CHECK(lxc.find("runtime must be docker or podman") != std::string::npos);
  const std::string rank2 = err("      - {rank: 2, runtime: docker, id: x}\n");
  CHECK(rank2.rfind("i.yaml:", 0) == 0);
  CHECK(rank2.find("between 0 and 1") != std::string::npos);
  CHECK(err("      - {rank: 1, runtime: docker, id: \"a b\"}\n").rfind("i.yaml:", 0) == 0);
  CHECK(CheckHostSideFault("pfc_storm", {}).code() == Code::kInvalidArgument);
  CHECK(CheckHostSideFault("pfc_storm", {{"mode", "frames"}}).ok());
  CHECK(CheckHostSideFault("link_blackhole", {}).ok());
}

TEST_CASE("OpenSite needs exactly one site", "[unit]") {
  SiteOptions none;
  none.host = "h0";
  CHECK(OpenSite(none).status().code() == Code::kInvalidArgument);
  SiteOptions two = none;
  two.local_lab = "x";
  two.inventory = "/y";
  CHECK(OpenSite(two).status().code() == Code::kInvalidArgument);
  SiteOptions slurm;
  slurm.host = "n1";
  slurm.slurm_nics = {"lo"};
  slurm.slurm_ranks = 2;
  auto site = OpenSite(slurm);
  REQUIRE(site.ok());
  CHECK((*site)->ranks() == 2);
  CHECK((*site)->fabric().GrayFaultSide() == injectors::PortSide::kHost);
  auto nic = (*site)->fabric().HostLinks("n1.nic0", injectors::PortSide::kHost);
  REQUIRE(nic.ok());
  CHECK((*nic)[0].ifname == "lo");
  slurm.slurm_nics = {"bad name"};
  CHECK(OpenSite(slurm).status().code() == Code::kInvalidArgument);
}

}  // namespace
}  // namespace fl::lab
