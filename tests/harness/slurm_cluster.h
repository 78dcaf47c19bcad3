// SlurmCluster: a real Slurm (Debian's slurm-wlm and munge) on a provisioned LocalLab, for
// root tests: each lab host is a Slurm node, so srun steps run in that host's network
// namespace (../shared/design/CONTEXT.md, "Slurm on the local lab").
//
// Everything lives in a fresh temporary directory: slurm.conf and cgroup.conf (cgroup v1 or
// hybrid machines get cgroup/v1, pure cgroup v2 ones cgroup/v2: detected from the mounts),
// our own munged (own key, socket, pid and seed file; slurm.conf points at the socket with
// AuthInfo=socket=), slurmctld in the root namespace on the lab's management address (a free
// port), one `slurmd -N <host>` per host namespace. Start returns once sinfo shows every node
// idle (bounded). The destructor cancels the cluster's jobs, stops every daemon by pid, ends
// any slurmstepd left in the lab's namespaces, and removes the directory: no process, spool
// or state of ours survives.
//
// Clients reach this cluster with SLURM_CONF=conf() in their environment (Env()).
// Thread-safety: one thread. Needs root.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/process.h"
#include "common/status.h"
#include "harness/lab/local_lab.h"

namespace fl::testing {

class SlurmCluster {
 public:
  // extra_conf: lines appended to slurm.conf (Prolog=, Epilog=, HealthCheckProgram=...).
  static StatusOr<std::unique_ptr<SlurmCluster>> Start(const lab::LocalLab& lab,
                                                       Nanos timeout = 90 * kNsPerSec,
                                                       const std::string& extra_conf = "");
  ~SlurmCluster();
  SlurmCluster(const SlurmCluster&) = delete;
  SlurmCluster& operator=(const SlurmCluster&) = delete;

  const std::string& dir() const { return dir_; }
  const std::string& conf() const { return conf_; }  // slurm.conf: export as SLURM_CONF
  const std::string& partition() const { return partition_; }
  const std::vector<std::string>& nodes() const { return nodes_; }
  bool cgroup_v2() const { return cgroup_v2_; }
  // Pids of the daemons this fixture started (munged, slurmctld, slurmd...).
  std::vector<int> daemon_pids() const;

  // The clean environment plus SLURM_CONF.
  std::vector<std::string> Env() const;
  // Runs a Slurm client (sinfo, squeue, salloc, scancel ...) against this cluster.
  StatusOr<RunResult> Client(const std::vector<std::string>& argv,
                             Nanos timeout = 30 * kNsPerSec) const;
  // Job ids squeue lists (any state it shows).
  std::vector<std::string> Jobs() const;
  // The last lines of every daemon log, for failure messages.
  std::string Logs() const;

 private:
  SlurmCluster() = default;
  struct Daemon {
    std::string what;  // "munged", "slurmctld", "slurmd h0"
    int pid = -1;
    unsigned long long start_time = 0;
    std::string log;
  };
  Status WriteConfig(const lab::LocalLab& lab, const std::string& extra_conf);
  StatusOr<Daemon> StartDaemon(const std::string& what, std::vector<std::string> argv,
                               const std::string& netns);
  Status WaitIdle(Deadline deadline);
  void StopAll();

  std::string dir_, conf_, munge_socket_;
  std::string partition_ = "lab";
  std::vector<std::string> nodes_;
  std::vector<std::string> netns_;  // the host namespaces the slurmds run in
  bool cgroup_v2_ = false;
  std::vector<Daemon> daemons_;  // in start order; stopped in reverse
};

}  // namespace fl::testing
