// Inventory: a lab of real hosts whose agents dial in, instead of a LocalLab built from a
// topology. The coordinator provisions nothing: it listens where the inventory says, waits
// for an agent per host, and runs the job on the hosts' own NICs. Without `switches:` only
// host-side faults exist (no switch access): a NIC taken down, a blackhole/loss/throttle at
// the host's end of its link, a rank's container killed. With switches, switch-side faults
// too, made by the fabric agent through each switch's driver (below).
//
// File format (configs/inventories/*.yaml; unknown keys are errors with file:line:col):
//   name: rack7                       # 1-10 chars [a-z0-9]; names the cgroups of the ranks
//   coordinator:
//     listen: 10.0.0.254:7070         # where the coordinator listens and agents dial
//     token_file: /etc/faultline/token  # shared token (0600), the same file on every host
//   agent_wait: 60s                   # how long to wait for every host's agent
//   launcher: systemd                 # systemd (default): agents run as a service on the
//                                     # hosts and dial in; slurm: the coordinator starts them
//                                     # as one srun step (a SlurmLab on these hosts)
//   rendezvous_dir: /shared/faultline # optional: a directory every host sees at this path
//                                     # (NFS) for the ranks to meet in; without it they meet
//                                     # through a TCP store the coordinator serves
//   hosts:
//     - name: node01                  # [a-z0-9_-], unique; targets are node01, node01.nic0
//       ranks: 8                      # ranks (GPUs) on this host: node01.rank0..7
//       nics:                         # rail order: NIC i of every host is on rail i
//         - {name: nic0, ifname: ens1f0np0, address: 10.0.0.1}
//         - {name: nic1, ifname: ens1f1np1, address: 10.1.0.1, touch: false}
//                                     # expect: {driver, firmware, pci, numa, speed_mbps, mac,
//                                     # rdma: mlx5_1/1}: what discovery saw, for --check
//                                     # touch: false: ranks use it, no fault may touch it
//       gpus:                         # optional, as discovered (compared by --check)
//         - {pci: "0000:19:00.0", numa: 0, model: NVIDIA H200}
//       containers:                   # optional: ranks in engine containers (container_kill
//         - {rank: 0, runtime: docker, id: trainer-0}   # goes through docker/podman)
//
//   switches:                         # optional: real switches the fabric agent drives
//     - name: leaf1                   # [a-z0-9_-], unique, not a host name; targets leaf1.PORT
//       address: 10.0.0.201           # management address (IP or DNS name)
//       port: 22                      # optional (SSH port)
//       driver: ssh-template          # SwitchDriver registry name (default ssh-template)
//       preset: sonic                 # sonic|eos|nvue (configs/switches/NAME.yaml) or a path
//                                     # beside this file; required by ssh-template
//       user: admin
//       key_file: /etc/faultline/switch_key                # absolute
//       known_hosts: /etc/faultline/switch_known_hosts     # absolute, or:
//       host_key: "ssh-ed25519 AAAA..."                     # pinned; exactly one of the two
//       jump: ops@bastion:22          # optional jump host
//       connect_timeout: 5s           # optional
//   (a host NIC names its switch port: {name: nic0, ..., switch: leaf1, port: Ethernet12})
//   (without `switches:` the wiring only records where a NIC is cabled, as `faultline
//   inventory discover` writes it from LLDP for --check: no switch is driven, no tor_port target)
//   uplinks:                          # optional: switch-to-switch links, both ends listed
//     - {switch: leaf1, port: Ethernet48, peer_switch: spine1, peer_port: Ethernet0}
//   fabric_agent: {host: mgmt1}       # optional: where the fabric agent runs (messages only)
//
// With switches, the switch-side kinds exist (tor_port_down, tor_uplink_down; link_blackhole,
// packet_loss, bandwidth_throttle on tor_port targets) and are routed to the agent named
// "fabric" (`faultline-agent --host fabric --inventory FILE`), whose Site (InventoryFabricSite)
// resolves targets to switch ports (Port::sw). Every port is checked against its driver's
// port pattern (SwitchDriver::CheckPortName) when the file is read; no port is wired twice.
//
// Every host lists the same number of NICs and ranks (rails must line up). On each host the
// agent runs `faultline-agent --coordinator ADDR --token-file FILE --host NAME --inventory
// FILE` (configs/systemd/); it acts on interfaces in its own network namespace and runs ranks
// in cgroups under <cgroup2>/faultline/inv-<name>-<host>. The interface that carries the
// agent's route to the coordinator (the management network) is never a target.
//
// InventoryLab is the coordinator's Lab for an inventory; InventorySite the agent's Site.
//
// Thread-safety: Inventory is a value; InventorySite allows concurrent const calls.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "harness/lab/lab.h"
#include "injectors/container_runtime.h"
#include "injectors/fabric.h"
#include "injectors/switch/switch_driver.h"

namespace fl {
class YamlDoc;
}  // namespace fl

namespace fl::lab {

// What a NIC was when the inventory was discovered (`expect:`), for `inventory discover
// --check`: empty strings, numa -1 and speed 0 are "not said" (not compared).
struct NicFacts {
  std::string driver, firmware, pci, mac;
  int numa = -1;
  uint64_t speed_mbps = 0;
  std::string rdma;  // "mlx5_0/1": RDMA device and port
  bool empty() const {
    return driver.empty() && firmware.empty() && pci.empty() && mac.empty() && numa < 0 &&
           speed_mbps == 0 && rdma.empty();
  }
};

// A GPU the host had when discovered (`gpus:` of a host; informational and for --check).
struct InventoryGpu {
  std::string pci;  // "0000:19:00.0"
  int numa = -1;
  std::string model;  // "NVIDIA H200"
};

struct InventoryNic {
  std::string name;  // "nic0": the target is "<host>.<name>"
  std::string ifname;
  std::string address;  // IPv4 the ranks bind to
  bool touch = true;    // false: no fault may act on it (ranks still use it)
  std::string sw;       // the switch its link goes to ("" = not wired)
  std::string sw_port;  // that switch's port ("Ethernet12")
  NicFacts expect;      // what discovery saw (`expect:`); compared by --check
};

// A real switch: what its driver needs (the SwitchConn, shared by every Port on it).
struct InventorySwitch {
  std::string name;
  std::shared_ptr<const injectors::SwitchConn> conn;
};

// A switch-to-switch link; both ends are uplink targets ("leaf1.Ethernet48").
struct InventoryUplink {
  std::string sw, port;
  std::string peer_sw, peer_port;
};

// A rank that runs in a docker or podman container the user's stack started: container_kill
// of it goes through that engine's CLI (by absolute path, argv only).
struct InventoryContainer {
  int rank = 0;         // the local rank it holds
  std::string runtime;  // "docker" | "podman"
  std::string id;       // the container's name or ID
};

struct InventoryHost {
  std::string name;
  int ranks = 1;
  std::vector<InventoryNic> nics;
  std::vector<InventoryContainer> containers;
  std::vector<InventoryGpu> gpus;  // `gpus:` (discovered; compared by --check)
};

struct Inventory {
  std::string source;
  std::string name;
  std::string listen;      // host:port
  std::string token_file;  // absolute, resolved against the inventory's folder
  Nanos agent_wait_ns = 60 * kNsPerSec;
  std::string rendezvous_dir;        // empty: a TCP store served by the coordinator
  std::string launcher = "systemd";  // or "slurm"
  std::string text;                  // the file's text
  std::vector<InventoryHost> hosts;
  std::vector<InventorySwitch> switches;  // empty: no switch access (host-side kinds only)
  std::vector<InventoryUplink> uplinks;
  std::string fabric_agent_host;  // where the fabric agent runs ("" = not said)

  int world_size() const;
  bool has_switches() const { return !switches.empty(); }
  const InventorySwitch* FindSwitch(std::string_view name) const;
  // The host and local rank of a global rank (hosts in file order, ranks consecutive).
  const InventoryHost* HostOfRank(int rank, int* local) const;
  const InventoryHost* FindHost(std::string_view name) const;
};

// 1-32 chars [a-z0-9_-], not starting with '-': host and NIC names (they become target and
// agent names).
bool IsHostName(std::string_view s);

// Errors are InvalidArgument "FILE:LINE:COL: ..."; nothing outside the process is touched.
struct InventoryOptions {
  // Resolve and read each switch's preset and open its driver (which must be registered) to
  // check every port against the driver's pattern. False for a host's agent, which never acts
  // on a switch: it needs neither the presets nor the drivers (the rest is checked the same;
  // SwitchConn.preset is then the name as written, preset_text empty).
  bool open_switch_drivers = true;
};
StatusOr<Inventory> LoadInventory(const std::string& path, const InventoryOptions& options = {});
StatusOr<Inventory> ParseInventory(std::string_view text, const std::string& source,
                                   const InventoryOptions& options = {});
// The same over a document already parsed (its name is the source).
StatusOr<Inventory> ParseInventory(const YamlDoc& doc, const InventoryOptions& options = {});

// Fault kinds a lab of real hosts can take: host-side only without switches; with switches
// also tor_port_down and tor_uplink_down.
std::vector<std::string> InventoryFaultKinds();
std::vector<std::string> InventoryFaultKinds(const Inventory& inventory);

// "<switch>.<port>": the target name of a switch port.
std::string SwitchPortTarget(const std::string& sw, const std::string& port);

// The agent that acts on a fault on an inventory: "fabric" for tor_port_down and
// tor_uplink_down and for a target that is a switch or one of its ports (when the inventory
// has switches); else DefaultAgentFor.
std::string InventoryAgentFor(const Inventory& inventory, const std::string& kind,
                              const std::string& target);
// "rail1", "rail12": a rail target (NIC k of every host).
bool IsRailName(std::string_view s);
// What a host-side fault cannot be on real hosts: pfc_storm other than mode=frames (the stall
// emulation acts on a switch port). InvalidArgument saying what to use instead.
Status CheckHostSideFault(const std::string& kind,
                          const std::map<std::string, std::string>& params);

// The coordinator's side of an inventory whose agents run as a service and dial in.
class InventoryLab : public Lab {
 public:
  explicit InventoryLab(Inventory inventory);

  std::string_view kind() const override { return "inventory"; }
  const std::string& name() const override { return inv_.name; }
  const std::string& source() const override { return inv_.source; }
  const std::string& text() const override { return inv_.text; }
  const harness::FaultCatalog& catalog() const override { return *catalog_; }
  std::vector<JobHost> hosts() const override;
  Status Provision(const LabRun& run) override;
  StatusOr<ControlPlane> Control(const LabRun& run) override;
  Status StartAgents(const AgentLaunch&) override { return OkStatus(); }
  std::vector<std::string> agent_names() const override;  // hosts, and "fabric" with switches
  Nanos agent_wait() const override { return inv_.agent_wait_ns; }
  std::string AgentFor(const std::string& kind, const std::string& target) const override {
    return InventoryAgentFor(inv_, kind, target);
  }
  Status CheckFault(const std::string& kind,
                    const std::map<std::string, std::string>& params) const override;
  std::optional<LostAgent> PollLostAgent() override { return std::nullopt; }
  // Real hosts' agents are not started by the lab: nothing to end.
  Status StopAgents(Deadline) override { return OkStatus(); }
  Rendezvous RendezvousFor(const LabRun& run) const override;
  Status Teardown() override;

  const Inventory& inventory() const { return inv_; }

 private:
  Inventory inv_;
  std::unique_ptr<harness::FaultCatalog> catalog_;
  std::string made_dir_;  // a rendezvous folder this lab made (removed at teardown)
};

// The catalog of a lab of real hosts: host-side kinds; targets host, nic (touchable NICs),
// rail, container, rank. With switches also tor_port_down (tor_port, nic, host, rail) and
// tor_uplink_down (uplink); link_blackhole, packet_loss and bandwidth_throttle take tor_port
// targets too. tor_port: "<switch>.<port>" of every wired touchable NIC; uplink: every
// uplink end "<switch>.<port>" and every switch with uplinks "<switch>".
std::unique_ptr<harness::FaultCatalog> HostSideCatalog(const Inventory& inventory);

// The hosts of an inventory as a Fabric and a place to run containers. `self` is the host this
// process serves (its interfaces are in the caller's namespace); targets on other hosts are
// NotFound here (their own agent resolves them). Gray faults act on the host's own NICs.
class InventorySite : public Site, public injectors::Fabric {
 public:
  // mgmt_ifname: the interface that carries the route to the coordinator ("" = unknown);
  // never a target.
  InventorySite(Inventory inventory, std::string self, std::string mgmt_ifname = "");

  // Site.
  const std::string& host() const override { return self_->name; }
  const injectors::Fabric& fabric() const override { return *this; }
  int ranks() const override { return self_->ranks; }
  StatusOr<injectors::ContainerInfo> StartRank(int local_rank,
                                               const std::vector<std::string>& argv) override;
  std::vector<std::string> WorkerDirs() const override;
  void Close() override { RemoveCgroupDir(); }
  std::vector<std::string> KillLeftoverRanks() override;

  // Fabric.
  StatusOr<std::vector<injectors::Port>> HostLinks(std::string_view target,
                                                   injectors::PortSide side) const override;
  StatusOr<std::vector<injectors::Port>> Uplinks(std::string_view target) const override;
  StatusOr<std::vector<injectors::Port>> UpstreamOf(const injectors::Port& port) const override;
  StatusOr<injectors::ContainerRef> Container(std::string_view target) const override;
  injectors::PortSide GrayFaultSide() const override { return injectors::PortSide::kHost; }

  // Starts rank `local_rank` of this host in a container (cgroup; the host's own network).
  StatusOr<injectors::ContainerInfo> StartContainer(int local_rank,
                                                    const std::vector<std::string>& argv);
  // Removes this host's (empty) cgroup directory; call when every rank is gone.
  void RemoveCgroupDir() const;
  std::string CgroupDir() const;
  const Inventory& inventory() const { return inv_; }
  const InventoryHost& self() const { return *self_; }

 private:
  Inventory inv_;
  const InventoryHost* self_ = nullptr;
  std::string mgmt_ifname_;
};

// The fabric agent's site on an inventory with switches (host "fabric"): targets resolve to
// switch ports (Port::sw = the switch's SwitchConn, sw_port, name "<switch>.<port>", no
// netns/ifname). HostLinks(kSwitch) takes "<switch>.<port>" of a wired NIC, a NIC, a host or a
// rail (one port per host; NICs with touch: false or not wired are skipped in host and rail
// targets, refused when named); HostLinks(kHost) is refused. Uplinks takes "<switch>.<port>"
// of an uplink end or "<switch>" (all its uplink ends). It runs no ranks.
class InventoryFabricSite : public Site, public injectors::Fabric {
 public:
  explicit InventoryFabricSite(Inventory inventory);

  // Site.
  const std::string& host() const override { return host_; }
  const injectors::Fabric& fabric() const override { return *this; }
  int ranks() const override { return 0; }
  StatusOr<injectors::ContainerInfo> StartRank(int local_rank,
                                               const std::vector<std::string>& argv) override;
  std::vector<std::string> WorkerDirs() const override { return {}; }
  void Close() override {}

  // Fabric.
  StatusOr<std::vector<injectors::Port>> HostLinks(std::string_view target,
                                                   injectors::PortSide side) const override;
  StatusOr<std::vector<injectors::Port>> Uplinks(std::string_view target) const override;
  StatusOr<std::vector<injectors::Port>> UpstreamOf(const injectors::Port& port) const override;
  StatusOr<injectors::ContainerRef> Container(std::string_view target) const override;
  injectors::PortSide GrayFaultSide() const override { return injectors::PortSide::kSwitch; }

  const Inventory& inventory() const { return inv_; }

 private:
  // The switch-side Port of a host NIC (FailedPrecondition when not wired or touch: false).
  StatusOr<injectors::Port> NicPort(const InventoryHost& host, const InventoryNic& nic) const;
  injectors::Port SwitchPort(const std::string& sw, const std::string& port) const;

  Inventory inv_;
  std::string host_ = "fabric";
};

// Opens the fabric agent's site: FailedPrecondition when the inventory lists no switches.
StatusOr<std::unique_ptr<InventoryFabricSite>> OpenInventoryFabricSite(const std::string& path);

// Opens the site for `host`: NotFound when the inventory has no such host.
StatusOr<std::unique_ptr<InventorySite>> OpenInventorySite(const std::string& path,
                                                           const std::string& host,
                                                           const std::string& mgmt_ifname = "");

}  // namespace fl::lab
