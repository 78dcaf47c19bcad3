// Inventory: a lab of real hosts whose agents dial in, instead of a LocalLab built from a
// topology. The coordinator provisions nothing: it listens where the inventory says, waits
// for an agent per host, and runs the job on the hosts' own NICs. Only host-side faults exist
// (no switch access): a NIC taken down, a blackhole/loss/throttle at the host's end of its
// link, a rank's container killed.
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
//                                     # touch: false: ranks use it, no fault may touch it
//       containers:                   # optional: ranks in engine containers (container_kill
//         - {rank: 0, runtime: docker, id: trainer-0}   # goes through docker/podman)
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
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "harness/lab/lab.h"
#include "injectors/container_runtime.h"
#include "injectors/fabric.h"

namespace fl::lab {

struct InventoryNic {
  std::string name;  // "nic0": the target is "<host>.<name>"
  std::string ifname;
  std::string address;  // IPv4 the ranks bind to
  bool touch = true;    // false: no fault may act on it (ranks still use it)
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

  int world_size() const;
  // The host and local rank of a global rank (hosts in file order, ranks consecutive).
  const InventoryHost* HostOfRank(int rank, int* local) const;
  const InventoryHost* FindHost(std::string_view name) const;
};

// 1-32 chars [a-z0-9_-], not starting with '-': host and NIC names (they become target and
// agent names).
bool IsHostName(std::string_view s);

// Errors are InvalidArgument "FILE:LINE:COL: ..."; nothing outside the process is touched.
StatusOr<Inventory> LoadInventory(const std::string& path);
StatusOr<Inventory> ParseInventory(std::string_view text, const std::string& source);

// Fault kinds a lab of real hosts can take (host-side only: no switch access).
std::vector<std::string> InventoryFaultKinds();
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
  std::vector<std::string> agent_names() const override;
  Nanos agent_wait() const override { return inv_.agent_wait_ns; }
  Status CheckFault(const std::string& kind,
                    const std::map<std::string, std::string>& params) const override {
    return CheckHostSideFault(kind, params);
  }
  std::optional<LostAgent> PollLostAgent() override { return std::nullopt; }
  void StopAgents(Deadline) override {}
  Rendezvous RendezvousFor(const LabRun& run) const override;
  Status Teardown() override;

  const Inventory& inventory() const { return inv_; }

 private:
  Inventory inv_;
  std::unique_ptr<harness::FaultCatalog> catalog_;
  std::string made_dir_;  // a rendezvous folder this lab made (removed at teardown)
};

// The catalog of a lab of real hosts: host-side kinds; targets host, nic (touchable NICs),
// rail, container, rank.
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

// Opens the site for `host`: NotFound when the inventory has no such host.
StatusOr<std::unique_ptr<InventorySite>> OpenInventorySite(const std::string& path,
                                                           const std::string& host,
                                                           const std::string& mgmt_ifname = "");

}  // namespace fl::lab
