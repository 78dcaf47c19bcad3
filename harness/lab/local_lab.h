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

class LocalLab : public injectors::Fabric {
 public:
  // A lab to be provisioned from topology; lab_name empty: the topology's name.
  static StatusOr<std::unique_ptr<LocalLab>> Create(const Topology& topology,
                                                    const std::string& lab_name = "");
  // A provisioned lab, from its state file.
  static StatusOr<std::unique_ptr<LocalLab>> Open(const std::string& lab_name);
  // Names of labs with a state file.
  static std::vector<std::string> List();

  const std::string& name() const { return plan_.lab; }
  Status Provision();
  StatusOr<LabDescription> Describe() const;
  StatusOr<injectors::CommandResult> RunInHost(const std::string& host,
                                               const std::vector<std::string>& argv,
                                               Nanos timeout) const;
  Status Teardown();
  const injectors::Fabric& fabric() const { return *this; }

  // Runs argv in host with the caller's stdin/stdout/stderr; returns its exit code (128+sig
  // when killed by a signal).
  StatusOr<int> ExecInteractive(const std::string& host, const std::vector<std::string>& argv,
                                Nanos timeout) const;
  // Starts rank local_rank of host as a container ("h0.rank1"); the caller reaps init_pid.
  StatusOr<injectors::ContainerInfo> StartContainer(const std::string& host, int local_rank,
                                                    const std::vector<std::string>& argv);

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
