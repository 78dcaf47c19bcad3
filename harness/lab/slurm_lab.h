// SlurmLab: a lab whose hosts are the nodes of a Slurm allocation (docs/lab.md, "SlurmLab").
//
// Provision attaches to the allocation the coordinator runs in (SLURM_JOB_ID in its
// environment: `faultline run` inside sbatch/salloc) or asks for one itself (`salloc
// --no-shell`, bounded by allocation_wait) and cancels that one again at Teardown. The node
// names come from Slurm and are the agents' names. StartAgents starts every agent as ONE
// step: `srun --jobid=ID --overlap --ntasks-per-node=1 ... faultline-agent ...`; the agents
// name themselves after SLURMD_NODENAME. The step ending early is a lost agent; StopAgents
// waits for srun, then ends it by pid and cancels the step. Ranks meet through the
// coordinator's TCP store (no shared filesystem). Only host-side faults exist.
//
// Scenario section (unknown keys are errors with file:line:col):
//   lab:
//     slurm:
//       name: gpu                   # 1-10 chars [a-z0-9] (cgroups, records); default "slurm"
//       partition: batch            # optional (-p)
//       nodes: 4                    # a node count, or a list: [gpu01, gpu02] (-w)
//       ranks_per_node: 8           # default 1
//       nics: [ens1f0np0, ens2f0np0]  # interface names, rail order, the same on every node
//       coordinator:
//         listen: 10.0.0.254:0      # an address of the coordinator the nodes reach; port 0:
//                                   # the kernel picks, the agents are told
//         token_file: /shared/fl/token  # the same file on every node (0600)
//         tls_dir: /shared/fl/tls   # mutual TLS; default: tls/ beside the token file
//       agent_wait: 60s             # how long the agents may take to register
//       allocation_wait: 120s       # how long salloc may wait for the nodes
//
// Thread-safety: as lab.h (PollLostAgent is locked; everything else on one thread).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/process.h"
#include "common/status.h"
#include "common/yaml_util.h"
#include "harness/lab/lab.h"
#include "harness/scenario/scenario_loader.h"

namespace fl::lab {

struct SlurmNic {
  std::string name;    // the target name on each node: "<node>.<name>" ("nic0")
  std::string ifname;  // the interface on the node ("ens1f0np0")
};

struct SlurmLabConfig {
  std::string source;  // the file the config came from (scenario or inventory)
  std::string text;    // its text (stored beside the scenario's)
  std::string name = "slurm";
  std::string partition;           // empty: the cluster's default
  int node_count = 0;              // nodes to run on (= nodes.size() when nodes are listed)
  std::vector<std::string> nodes;  // named nodes (-w); empty: any node_count nodes
  int ranks_per_node = 1;
  std::vector<SlurmNic> nics;  // rail order, the same on every node
  // From an inventory: per node, the IPv4 address of each NIC (rail order) that the ranks
  // bind. Nodes without an entry (and every node of a scenario section) bind by interface
  // name (JobHost::nics = the ifnames).
  std::map<std::string, std::vector<std::string>> nic_addresses;
  // The control plane: where the coordinator listens (reachable from the nodes) and the
  // credentials every node reads at the same path. tls_dir empty: token only (--no-tls).
  std::string listen;
  std::string token_file;
  std::string tls_dir;
  Nanos agent_wait_ns = 60 * kNsPerSec;
  Nanos allocation_wait_ns = 120 * kNsPerSec;
  // Tests and transitions only: rewrites the agent's argv (everything after srun's own
  // options) before the step starts. Null: the argv as built.
  std::function<std::vector<std::string>(std::vector<std::string>)> agent_argv_hook;
};

// Reads a `slurm:` section. `text` is YAML whose root is the scenario (the section is
// lab.slurm), a map with the key `slurm`, or the section itself; errors are InvalidArgument
// "SOURCE:LINE:COL: ..." pointing into text (pass the whole scenario file for positions in
// it). Relative token_file/tls_dir are resolved beside source.
StatusOr<SlurmLabConfig> ParseSlurmSection(std::string_view text, const std::string& source);
// The same over a document already parsed.
StatusOr<SlurmLabConfig> ParseSlurmSection(const YamlDoc& doc);
// The same for a section node of an already parsed document (positions in that document).
StatusOr<SlurmLabConfig> ParseSlurmSectionNode(const YamlDoc& doc, const YAML::Node& section);

class SlurmLab : public Lab {
 public:
  // Checks the config (node names, NICs, numbers); nothing is touched.
  static StatusOr<std::unique_ptr<SlurmLab>> Create(SlurmLabConfig config);
  ~SlurmLab() override;  // StopAgents + Teardown when the caller did not

  std::string_view kind() const override { return "slurm"; }
  bool ranks_get_slurm_env() const override { return true; }
  const std::string& name() const override { return cfg_.name; }
  const std::string& source() const override { return cfg_.source; }
  const std::string& text() const override { return cfg_.text; }

  // With listed nodes: their names. With a node count the names are Slurm's and unknown until
  // Provision, so the catalog holds positional placeholders node0..node<N-1> (nic
  // node0.nic0, container node0.rank0) until then and the real names after: class draws and
  // rank/rail targets validate and plan the same before and after (same sizes, same order,
  // so a plan redone after Provision with the same seed picks the same positions), while a
  // target naming a node needs a node list. See docs/lab.md.
  const harness::FaultCatalog& catalog() const override { return *catalog_; }
  std::vector<JobHost> hosts() const override;

  Status Provision(const LabRun& run) override;
  StatusOr<ControlPlane> Control(const LabRun& run) override;
  Status StartAgents(const AgentLaunch& launch) override;
  std::vector<std::string> agent_names() const override;
  Nanos agent_wait() const override { return cfg_.agent_wait_ns; }
  Status CheckFault(const std::string& kind,
                    const std::map<std::string, std::string>& params) const override;
  // The srun step ended before StopAgents: every agent of it is lost, reported one per call.
  // (One agent dying alone does not end the step, --kill-on-bad-exit=0: its loss shows as a
  // lapsed session.)
  std::optional<LostAgent> PollLostAgent() override;
  Status StopAgents(Deadline deadline) override;
  Rendezvous RendezvousFor(const LabRun& run) const override;
  Status Teardown() override;

  // After Provision: the job id, and whether this lab asked for it (then Teardown cancels it).
  const std::string& job_id() const { return job_id_; }
  bool owns_allocation() const { return owns_allocation_; }
  // The pid of the agents' srun while this lab holds it (-1: none), for tests.
  int agent_step_pid() const {
    std::lock_guard<std::mutex> lock(mu_);
    return srun_pid_;
  }
  // The agent's argv on every node (before agent_argv_hook), and the whole srun argv
  // StartAgents runs (after Provision), for tests and --dry-run output.
  std::vector<std::string> AgentArgv(const AgentLaunch& launch) const;
  std::vector<std::string> AgentStepArgv(const AgentLaunch& launch) const;

 private:
  explicit SlurmLab(SlurmLabConfig config);
  void RebuildCatalog();
  std::vector<std::string> HostNames() const;  // nodes_, or placeholders before Provision
  StatusOr<std::vector<std::string>> Hostnames(const std::string& nodelist) const;
  StatusOr<std::string> Allocate(const LabRun& run);
  StatusOr<RunResult> Tool(const std::vector<std::string>& argv, Nanos timeout) const;
  bool JobListed(const std::string& id) const;
  Status CancelSteps();

  SlurmLabConfig cfg_;
  std::unique_ptr<harness::StaticFaultCatalog> catalog_;
  std::string run_id_;
  std::string job_id_;
  bool owns_allocation_ = false;
  std::vector<std::string> nodes_;  // the allocation's nodes we run on (after Provision)
  std::string step_name_;

  mutable std::mutex mu_;  // guards the srun state below (PollLostAgent from any thread)
  int srun_pid_ = -1;
  std::optional<ExitStatus> srun_exit_;
  bool stopping_ = false;
  size_t lost_reported_ = 0;
};

// A SlurmLab over an inventory with `launcher: slurm` (its hosts are the nodes, their NICs by
// the inventory's addresses); every host needs the same interface names.
struct Inventory;
StatusOr<std::unique_ptr<SlurmLab>> SlurmLabOfInventory(const Inventory& inventory);

// The site of an agent that srun started on a node (`--slurm-nics`, `--slurm-ranks`): the
// node's NICs by interface name (rail order), `mgmt` the interface that is never a target.
StatusOr<std::unique_ptr<Site>> OpenSlurmNodeSite(const std::string& host,
                                                  const std::vector<std::string>& nics, int ranks,
                                                  const std::string& mgmt);

}  // namespace fl::lab
