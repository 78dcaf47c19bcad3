// LocalLab: the embedded lab. Hosts and switches are network namespaces, switches are Linux
// bridges, links are veth pairs shaped with tc tbf on both ends, a separate management
// bridge joins every host's mgmt0 and the root namespace. See docs/lab.md.
//
// A provisioned lab is remembered in $FAULTLINE_STATE_DIR/labs/<name>.json (written before
// the first object is created), so that other processes can Open it and `lab down` can
// remove a half-built one. Containers (ranks) live in cgroup v2 leaves under
// <cgroup2>/faultline/fl-<lab>/.
//
// Thread-safety: see lab.h. Ownership: a LocalLab object does not tear the lab down when
// destroyed (labs outlive the CLI process); use LabGuard for scoped labs.
#pragma once

#include <sys/types.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/unique_fd.h"
#include "harness/lab/lab.h"
#include "harness/lab/topology.h"
#include "injectors/container_runtime.h"
#include "injectors/fabric.h"
#include "injectors/switch/switch_driver.h"
#include "injectors/sys.h"

namespace fl::lab {

// What Describe() reads back.
struct PortInfo {
  std::string name;  // target name: "h0.nic1", "tor1.h0", "tor0.up0"
  std::string ifname;
  std::string addr;         // "198.18.2.1/24" or ""
  std::string peer;         // target name of the other end
  uint64_t rate_bps = 0;    // configured egress rate (0 = unshaped)
  uint64_t shaped_bps = 0;  // read back from tc (0 = no tbf)
  bool admin_up = false;
  bool carrier = false;
  std::string sw_port;  // switch_control ssh: its SONiC name on the switch ("Ethernet4")
};

struct NodeInfo {
  std::string name;  // "h0", "tor1", "spine0", "mgmt"
  std::string netns;
  bool is_switch = false;
  std::string mgmt_addr;
  int ranks = 0;
  std::vector<PortInfo> ports;
  // routing bgp, switches: "AS 65001: 2/2 BGP sessions established (up0 Established, ...)".
  std::string bgp;
};

struct LabDescription {
  std::string name;
  std::string topology;   // the file it came from
  std::string mgmt_root;  // root namespace address on the management network
  std::vector<NodeInfo> nodes;
  // switch_control ssh: how to reach the switches' sshd (user root, port 22, at each
  // switch's mgmt_addr); empty with netlink.
  std::string switch_control;  // "netlink" | "ssh"
  std::string routing;         // "l2" | "bgp"
  std::string ssh_key;         // the lab's client private key
  std::string known_hosts;     // every switch's mgmt address with the lab's host key
};

class LocalLab : public Lab, public injectors::Fabric {
 public:
  // A lab to be provisioned from topology; lab_name empty: the topology's name.
  static StatusOr<std::unique_ptr<LocalLab>> Create(const Topology& topology,
                                                    const std::string& lab_name = "");
  // A provisioned lab, from its state file.
  static StatusOr<std::unique_ptr<LocalLab>> Open(const std::string& lab_name);
  // Names of labs with a state file.
  static std::vector<std::string> List();

  const std::string& name() const override { return plan_.lab; }
  // Builds the lab under its current name.
  Status Provision();
  StatusOr<LabDescription> Describe() const;
  StatusOr<injectors::CommandResult> RunInHost(const std::string& host,
                                               const std::vector<std::string>& argv,
                                               Nanos timeout) const;
  Status Teardown() override;
  const injectors::Fabric& fabric() const { return *this; }

  // Runs argv in host with the caller's stdin/stdout/stderr; returns its exit code (128+sig
  // when killed by a signal).
  StatusOr<int> ExecInteractive(const std::string& host, const std::vector<std::string>& argv,
                                Nanos timeout) const;
  // Starts rank local_rank of host as a container ("h0.rank1"); the caller reaps init_pid.
  StatusOr<injectors::ContainerInfo> StartContainer(const std::string& host, int local_rank,
                                                    const std::vector<std::string>& argv);

  // Lab (local_lab_run.cc): the coordinator's side of a run on this lab. Provision(run)
  // renames the lab to run.lab_name and builds it; the agents are started by the coordinator
  // in the hosts' namespaces (and one fabric agent in the root namespace) and ended by pid.
  std::string_view kind() const override { return "local"; }
  // Every run builds its own namespaces (named after the run): runs never share one.
  // (A lab kept up across runs, UseRunningLab, takes one run at a time.)
  bool exclusive() const override { return attached_; }
  const std::string& source() const override { return topology_.source; }
  const std::string& text() const override { return topology_.text; }
  const harness::FaultCatalog& catalog() const override;
  std::vector<JobHost> hosts() const override;
  Status CheckJob(const harness::JobSpec& job) const override;
  Status Preflight() const override;
  // local_lab_keep.cc: the lab named `name` must be up and built from the same topology text.
  Status UseRunningLab(const std::string& name) override;
  Status Provision(const LabRun& run) override;
  StatusOr<ControlPlane> Control(const LabRun& run) override;
  Status StartAgents(const AgentLaunch& launch) override;
  std::vector<std::string> agent_names() const override;
  Nanos agent_wait() const override { return 30 * kNsPerSec; }
  std::optional<LostAgent> PollLostAgent() override;
  // routing bgp: the ToRs' and spines' route changes since the last call ("route_change":
  // switch, prefix, action add|delete, and the nexthop group id or gateway and device), read
  // from rtnetlink in each switch's namespace while this object has the lab up.
  std::vector<LabEvent> TakeEvents() override;
  Status StopAgents(Deadline deadline) override;
  Rendezvous RendezvousFor(const LabRun& run) const override;

  // Fabric.
  StatusOr<std::vector<injectors::Port>> HostLinks(std::string_view target,
                                                   injectors::PortSide side) const override;
  StatusOr<std::vector<injectors::Port>> Uplinks(std::string_view target) const override;
  StatusOr<std::vector<injectors::Port>> UpstreamOf(const injectors::Port& port) const override;
  StatusOr<injectors::ContainerRef> Container(std::string_view target) const override;

  // local_lab_keep.cc. What a lab's namespaces hold, as text compared between runs: per
  // namespace its links (state and carrier), queueing disciplines and nftables ruleset. Taken
  // when the lab is built (kept in its state file) and again before each run on a lab kept up.
  StatusOr<std::string> StateFingerprint() const;
  // FailedPrecondition naming the first difference when the lab is not as it was built.
  Status CheckClean() const;
  bool attached() const { return attached_; }

  const Topology& topology() const { return topology_; }
  const LabPlan& plan() const { return plan_; }
  std::string NetnsOf(const std::string& node) const { return plan_.prefix + node; }
  // Host data address of NIC port ifname on host ("198.18.0.1"), for tests and tools.
  StatusOr<std::string> AddressOf(const std::string& host, const std::string& ifname) const;
  std::string CgroupDir() const;  // <cgroup2>/faultline/fl-<lab>

  // switch_control ssh: the lab's management-plane directory, 0700:
  // $FAULTLINE_STATE_DIR/labs/<lab>.mgmt (client_key, host_key, authorized_keys, known_hosts,
  // sshd-<switch>.conf/.log, switches/<switch>.json: the shim's port map and ACL state).
  std::string MgmtDir() const;
  // routing bgp: the FRR directory, 0700: $FAULTLINE_STATE_DIR/labs/<lab>.frr/<switch>/
  // (frr.conf, zebra/bgpd pid files, logs, the zserv socket and the vty sockets).
  std::string FrrDir() const;
  // routing bgp: runs vtysh -c command against switch node's daemons; its stdout.
  StatusOr<std::string> Vtysh(const std::string& node, const std::string& command) const;
  // routing bgp: peers of switch node and their BGP state ("Established", "Active", ...).
  StatusOr<std::vector<std::pair<std::string, std::string>>> BgpPeers(
      const std::string& node) const;

  // How the ssh-template driver reaches switch `node` (a ToR or spine): NotFound for another
  // name, FailedPrecondition with switch_control netlink.
  StatusOr<std::shared_ptr<const injectors::SwitchConn>> SwitchConnOf(
      const std::string& node) const;
  // The SONiC name of switch port ifname on node ("Ethernet4"), "" when none.
  std::string SonicPortName(const std::string& node, const std::string& ifname) const;

 private:
  LocalLab(Topology t, LabPlan p) : topology_(std::move(t)), plan_(std::move(p)) {}
  std::string StatePath() const;
  Status ProvisionSteps();
  Status ProvisionSwitchMgmt();
  Status ProvisionFrr();
  // with_sw: a switch end of an ssh-controlled lab carries its SwitchConn and SONiC name.
  injectors::Port MakePort(const LinkObj& l, bool a_side, bool with_sw) const;
  const NodeObj* FindNode(std::string_view name) const;

  Topology topology_;
  LabPlan plan_;
  int mgmt_index_ = 0;
  UniqueFd mgmt_choice_lock_;      // while mgmt_index_ is chosen and not yet visible to other labs
  std::string clean_fingerprint_;  // StateFingerprint() right after it was built
  bool attached_ = false;          // UseRunningLab: this run did not build it
  Status TeardownAttached();
  mutable std::unique_ptr<harness::FaultCatalog> catalog_;
  struct AgentProc {
    std::string name;
    pid_t pid = -1;
  };
  std::vector<AgentProc> agents_;
  std::vector<pid_t> sshd_pids_;  // started (and so reaped) by this object
  std::vector<pid_t> frr_pids_;   // zebra and bgpd started (and so reaped) by this object
  class RouteMonitor;
  std::shared_ptr<RouteMonitor> routes_;  // routing bgp, while this object has the lab up
  // SwitchConnOf's results, per switch; cleared when the plan changes.
  mutable std::mutex sw_mu_;
  mutable std::map<std::string, std::shared_ptr<const injectors::SwitchConn>> sw_cache_;
};

// The site of an agent of host `host` (or "fabric") of the LocalLab named lab_name, which
// must be up on this machine.
StatusOr<std::unique_ptr<Site>> OpenLocalSite(const std::string& lab_name, const std::string& host);

// A lab a dead coordinator left behind on this machine (a LocalLab named lab_name): removed.
// False when there is none.
StatusOr<bool> RemoveLeftoverLocalLab(const std::string& lab_name);

// Tears a lab down when it goes out of scope (tests, benchmarks).
class LabGuard {
 public:
  explicit LabGuard(LocalLab* lab) : lab_(lab) {}
  LabGuard(const LabGuard&) = delete;
  LabGuard& operator=(const LabGuard&) = delete;
  ~LabGuard() {
    // A destructor cannot return it; Teardown logs each thing it cannot remove.
    if (lab_) lab_->Teardown().IgnoreError();
  }

 private:
  LocalLab* lab_;
};

}  // namespace fl::lab
