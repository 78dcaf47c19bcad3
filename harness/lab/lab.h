// The Lab contract: a set of hosts and a fabric the harness can fault. LocalLab (local_lab.h)
// builds one from network namespaces on this machine; InventoryLab and SlurmLab (real hosts
// whose agents dial in) implement the same contract.
//
//   Provision()          builds every host, switch and link; on failure removes what it made
//   Describe()           hosts, NICs, links and rates, with live link state read back
//   RunInHost(h, argv)   runs a command inside host h (argv array, never a shell string)
//   Teardown()           removes everything the lab made; idempotent
//   fabric()             resolves topology names for the injectors
//
// Thread-safety: Describe, RunInHost and fabric() may be called concurrently; Provision and
// Teardown may not overlap anything else. Blocking: every call is bounded by deadlines.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "injectors/fabric.h"
#include "injectors/sys.h"

namespace fl::lab {

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

class Lab {
 public:
  virtual ~Lab() = default;
  virtual const std::string& name() const = 0;
  virtual Status Provision() = 0;
  virtual StatusOr<LabDescription> Describe() const = 0;
  virtual StatusOr<injectors::CommandResult> RunInHost(const std::string& host,
                                                       const std::vector<std::string>& argv,
                                                       Nanos timeout) const = 0;
  virtual Status Teardown() = 0;
  virtual const injectors::Fabric& fabric() const = 0;
};

}  // namespace fl::lab
