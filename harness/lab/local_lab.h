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

#include <memory>
#include <string>
#include <vector>

#include "harness/lab/lab.h"
#include "harness/lab/topology.h"
#include "injectors/container_runtime.h"
#include "injectors/fabric.h"
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
};

struct NodeInfo {
  std::string name;  // "h0", "tor1", "spine0", "mgmt"
  std::string netns;
  bool is_switch = false;
  std::string mgmt_addr;
  int ranks = 0;
  std::vector<PortInfo> ports;
};

struct LabDescription {
  std::string name;
  std::string topology;   // the file it came from
  std::string mgmt_root;  // root namespace address on the management network
  std::vector<NodeInfo> nodes;
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
  const std::string& source() const override { return topology_.source; }
  const std::string& text() const override { return topology_.text; }
  const harness::FaultCatalog& catalog() const override;
  std::vector<JobHost> hosts() const override;
  Status CheckJob(const harness::JobSpec& job) const override;
  Status Preflight() const override;
  Status Provision(const LabRun& run) override;
  StatusOr<ControlPlane> Control(const LabRun& run) override;
  Status StartAgents(const AgentLaunch& launch) override;
  std::vector<std::string> agent_names() const override;
  Nanos agent_wait() const override { return 30 * kNsPerSec; }
  std::optional<LostAgent> PollLostAgent() override;
  void StopAgents(Deadline deadline) override;
  Rendezvous RendezvousFor(const LabRun& run) const override;

  // Fabric.
  StatusOr<std::vector<injectors::Port>> HostLinks(std::string_view target,
                                                   injectors::PortSide side) const override;
  StatusOr<std::vector<injectors::Port>> Uplinks(std::string_view target) const override;
  StatusOr<std::vector<injectors::Port>> UpstreamOf(const injectors::Port& port) const override;
  StatusOr<injectors::ContainerRef> Container(std::string_view target) const override;

  const Topology& topology() const { return topology_; }
  const LabPlan& plan() const { return plan_; }
  std::string NetnsOf(const std::string& node) const { return plan_.prefix + node; }
  // Host data address of NIC port ifname on host ("198.18.0.1"), for tests and tools.
  StatusOr<std::string> AddressOf(const std::string& host, const std::string& ifname) const;
  std::string CgroupDir() const;  // <cgroup2>/faultline/fl-<lab>

 private:
  LocalLab(Topology t, LabPlan p) : topology_(std::move(t)), plan_(std::move(p)) {}
  std::string StatePath() const;
  Status ProvisionSteps();
  const NodeObj* FindNode(std::string_view name) const;

  Topology topology_;
  LabPlan plan_;
  int mgmt_index_ = 0;
  mutable std::unique_ptr<harness::FaultCatalog> catalog_;
  struct AgentProc {
    std::string name;
    pid_t pid = -1;
  };
  std::vector<AgentProc> agents_;
};

// Tears a lab down when it goes out of scope (tests, benchmarks).
class LabGuard {
 public:
  explicit LabGuard(LocalLab* lab) : lab_(lab) {}
  LabGuard(const LabGuard&) = delete;
  LabGuard& operator=(const LabGuard&) = delete;
  ~LabGuard() {
    if (lab_) lab_->Teardown().IgnoreError();
  }

 private:
  LocalLab* lab_;
};

}  // namespace fl::lab
