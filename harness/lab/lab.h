// The two lab contracts (ARCHITECTURE.md §4). Nothing outside harness/lab knows which kind of
// lab runs: the run driver, the agent runtime, scenario validation and the CLI use only these.
//
//   Lab  (coordinator side): provision or attach; where the control plane listens and with
//        which credentials; start and stop the agents; the fault catalog (targets, classes,
//        which kinds each target takes on this lab); the rendezvous of the ranks; teardown.
//   Site (agent side): the host's Fabric for the injectors, and start/stop of rank
//        containers.
//
// Implementations: LocalLab (local_lab.h: namespaces on this machine, agents started by the
// coordinator in them), InventoryLab (inventory.h: real hosts whose agents dial in, started by
// systemd), SlurmLab (slurm_lab.h: agents started as one srun step on an allocation).
//
// The contract knows none of its kinds: open_lab.h is the factory over it (OpenLab reads and
// parses a lab file once and asks each kind whether the file is its own; OpenSite does the
// same for an agent's flags).
//
// Thread-safety: a Lab is used by the run driver's thread only, except PollLostAgent (any
// thread, internally locked). A Site allows concurrent const calls; StartRank and Close are
// serialised by the caller. Blocking: every call is bounded by deadlines.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "harness/scenario/scenario_loader.h"
#include "injectors/container_runtime.h"
#include "injectors/fabric.h"

namespace fl::lab {

// One host of the job, as the coordinator sees it. Hosts are in rank order: the ranks of a
// host are consecutive, hosts follow each other.
struct JobHost {
  std::string name;  // the agent's name: "h0", "node01"
  int ranks = 1;
  // What rank i of this host binds, rail order: IPv4 addresses, or interface names
  // ("ens1f0np0") that the worker resolves on its host. Filled after Provision.
  std::vector<std::string> nics;
};

// Where the coordinator's control server listens and how agents prove who they are.
struct ControlPlane {
  std::string listen;      // "IP:PORT" (port 0: the kernel chooses; the agents are told)
  std::string token_file;  // the shared token (0600)
  std::string tls_dir;     // mutual TLS with the certificates there; empty: token only
};

// How the ranks find each other.
struct Rendezvous {
  enum class Kind { kDirectory, kTcp };
  Kind kind = Kind::kDirectory;
  std::string dir;     // kDirectory: a directory every rank sees at this path
  std::string listen;  // kTcp: where the coordinator serves the store ("IP:0" is fine)
};

// What the coordinator hands a lab to start its agents with.
struct AgentLaunch {
  std::string coordinator;  // the address agents dial (host:port), after the server is up
  std::string token_file;   // ControlPlane::token_file
  std::string run_id;
  std::string run_dir;      // this run's directory on the coordinator's machine
  std::string bin_dir;      // where faultline-agent and faultline-worker are
  std::string policy_path;  // agent policy for agents this lab starts ("" = none)
  Nanos lease_ns = 0;
};

// The run a lab is provisioned for.
struct LabRun {
  std::string run_id;
  std::string run_dir;   // this run's directory on the coordinator's machine
  std::string lab_name;  // names a LocalLab's objects ("fl" + the run id's tail)
  // Control-plane options from the command line: mutual TLS with the certificates in tls_dir
  // (default: the lab's own), or no TLS at all. A lab that cannot honour them says so.
  std::string tls_dir;
  bool no_tls = false;
};

class Lab {
 public:
  virtual ~Lab() = default;

  // "local", "inventory" or "slurm": for progress lines and the stored record only.
  virtual std::string_view kind() const = 0;
  virtual const std::string& name() const = 0;
  // The file the lab came from, and its text (stored beside the scenario's, reused by replay).
  virtual const std::string& source() const = 0;
  virtual const std::string& text() const = 0;
  // Whether one run at a time may use it (real hosts: a second run is refused while the
  // first holds the lab, harness/run/lab_claim.h). A lab each run builds for itself is not.
  virtual bool exclusive() const { return true; }
  // Whether a command job's ranks get the Slurm variables too (SLURM_PROCID, SLURM_NTASKS, ...:
  // their agents run inside a Slurm step, as a framework's launcher expects there).
  virtual bool ranks_get_slurm_env() const { return false; }

  // Which fault kinds exist here and the targets of each class. Valid right after OpenLab,
  // before anything is provisioned; a scenario is validated against it.
  virtual const harness::FaultCatalog& catalog() const = 0;
  // The hosts of the job (rank order). Names and rank counts are known after OpenLab (a
  // Slurm allocation's node names only after Provision); NIC addresses after Provision.
  virtual std::vector<JobHost> hosts() const = 0;
  // Whether this lab can run the job at all (InvalidArgument saying why not).
  virtual Status CheckJob(const harness::JobSpec&) const { return OkStatus(); }
  // Whether a fault the catalog accepts can be made here with these parameters
  // (InvalidArgument saying why not: pfc_storm's stall mode needs a switch).
  virtual Status CheckFault(const std::string& /*kind*/,
                            const std::map<std::string, std::string>& /*params*/) const {
    return OkStatus();
  }

  // Whether this process can run the lab at all (the local lab needs root), checked before
  // a run is recorded.
  virtual Status Preflight() const { return OkStatus(); }
  // Runs on a lab that is already up instead of building one (`faultline run --on-lab NAME`;
  // a sweep keeps one lab up across its points): Provision then checks that the lab is as it
  // was built (no fault left behind by an earlier run) instead of building it, and Teardown
  // removes only what the run made (its containers), leaving the lab up. Called before
  // Provision. Labs that are not built per run say so (FailedPrecondition).
  virtual Status UseRunningLab(const std::string& name) {
    return FailedPreconditionError("--on-lab " + name +
                                   ": only a local lab is kept up across runs");
  }
  // Builds the lab (LocalLab) or attaches to it (an allocation, real hosts). Prints progress
  // lines to stderr. On failure removes what it made.
  virtual Status Provision(const LabRun& run) = 0;
  // After Provision: where the control server listens, with which credentials.
  virtual StatusOr<ControlPlane> Control(const LabRun& run) = 0;
  // After the control server is up: starts the agents (LocalLab: processes in its namespaces;
  // SlurmLab: one srun step; InventoryLab: nothing, they dial in by themselves).
  virtual Status StartAgents(const AgentLaunch& launch) = 0;
  // The agents the coordinator waits for, and for how long.
  virtual std::vector<std::string> agent_names() const = 0;
  virtual Nanos agent_wait() const = 0;
  // The agent that acts on a fault of `kind` on `target` (one of agent_names()). Called after
  // Provision. Default: DefaultAgentFor(target, hosts()).
  virtual std::string AgentFor(const std::string& kind, const std::string& target) const;
  // An agent this lab started whose process ended on its own (crash, kill -9): its name and
  // how it ended, once per agent. Labs whose agents it did not start return nullopt (their
  // loss shows as a lapsed session).
  struct LostAgent {
    std::string name;
    std::string how;  // "exit 1", "killed by signal 9"
    // When the lab could revert the dead agent's faults from its journal (a LocalLab: same
    // machine): the handle ids reverted, and what failed. Otherwise recovered is false.
    bool recovered = false;
    std::vector<std::string> reverted;
    std::vector<std::string> failed;
  };
  virtual std::optional<LostAgent> PollLostAgent() = 0;
  // What the lab itself saw happen since the last call (a routed local lab: its switches'
  // route changes), for the run's events table; labs that watch nothing return none.
  struct LabEvent {
    Nanos wall_ns = 0;
    std::string kind;         // "route_change"
    std::string detail_json;  // {"switch": "tor0p1", "prefix": "198.18.0.0/24", ...}
  };
  virtual std::vector<LabEvent> TakeEvents() { return {}; }
  // Ends the agents this lab started (after they were asked to shut down): waits up to the
  // deadline, then ends them by pid (or cancels the Slurm step). Idempotent. Every agent is
  // ended either way; the error names those that had to be (did not exit by the deadline) and
  // a Slurm step still listed after its cancel.
  [[nodiscard]] virtual Status StopAgents(Deadline deadline) = 0;

  virtual Rendezvous RendezvousFor(const LabRun& run) const = 0;

  // Removes everything the lab made for this run (namespaces, an allocation it asked for,
  // a rendezvous folder); idempotent; nothing it did not make.
  virtual Status Teardown() = 0;
};

// The default routing of a fault to an agent: the host the target names ("h0", "h0.nic1"),
// the host of a rank ("rank5", hosts in rank order), else "fabric" (switch-side targets).
std::string DefaultAgentFor(const std::string& target, const std::vector<JobHost>& hosts);

// ---- agent side ------------------------------------------------------------------------

class Site {
 public:
  virtual ~Site() = default;
  // The host this site serves.
  virtual const std::string& host() const = 0;
  // Targets of this host resolved to its own kernel objects (other hosts' are NotFound).
  virtual const injectors::Fabric& fabric() const = 0;
  // Ranks this host runs.
  virtual int ranks() const = 0;
  // Starts local rank `local_rank` of this host in a container; the caller reaps init_pid.
  virtual StatusOr<injectors::ContainerInfo> StartRank(int local_rank,
                                                       const std::vector<std::string>& argv) = 0;
  // Directories the coordinator may point the workers' rendezvous at (the agent policy's
  // worker_dirs is checked as well).
  virtual std::vector<std::string> WorkerDirs() const = 0;
  // After every rank is gone: removes what the site made for them (its cgroup folder).
  virtual void Close() = 0;
  // At agent start: ranks an earlier agent of this host left running (it was killed before
  // it could stop them) are killed and their containers removed. Returns their names.
  virtual std::vector<std::string> KillLeftoverRanks() { return {}; }
  // True when every object of the site was made for the harness (a LocalLab's namespaces):
  // an agent without a policy file may then apply any fault. Real hosts are default-deny.
  virtual bool disposable() const { return false; }
};

// What an agent was told on its command line about where it runs.
struct SiteOptions {
  std::string host;         // --host (for Slurm: empty = SLURMD_NODENAME)
  std::string coordinator;  // --coordinator: the interface routing there is never a target
  std::string local_lab;    // --lab NAME: a host (or "fabric") of a LocalLab on this machine
  std::string inventory;    // --inventory FILE: a host of an inventory
  // --slurm-nics / --slurm-ranks: a node of a `lab: {slurm: ...}` lab (no file on the node).
  std::vector<std::string> slurm_nics;
  int slurm_ranks = 0;

  // The host when --host is not given: a Slurm node's name (SLURMD_NODENAME); else empty.
  std::string DefaultHost() const;
  // Whether the options name any site at all.
  bool named() const { return !local_lab.empty() || !inventory.empty() || !slurm_nics.empty(); }
  // Labs of real hosts speak mutual TLS unless told otherwise; a local lab's agents use the
  // run's own token.
  bool tls_by_default() const { return named() && local_lab.empty(); }
};

}  // namespace fl::lab
