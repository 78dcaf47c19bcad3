// LocalLab as a Lab (lab.h): what a run on the embedded lab needs from it besides the
// namespaces themselves (local_lab.cc).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "ccl_under_test/tools/ccl_plugins.h"
#include "common/log.h"
#include "common/narrate.h"
#include "common/process.h"
#include "harness/control/auth.h"
#include "harness/lab/lab_catalog.h"
#include "harness/lab/local_lab.h"
#include "injectors/injector.h"
#include "injectors/journal.h"
#include "injectors/journal_recovery.h"
#include "injectors/sys.h"

namespace fl::lab {

const harness::FaultCatalog& LocalLab::catalog() const {
  if (!catalog_) {
    // Target names do not depend on the lab's name or management subnet.
    catalog_ = std::make_unique<harness::LabFaultCatalog>(topology_, PlanLab(topology_, "check", 0),
                                                          injectors::BuiltinInjectors().Names());
  }
  return *catalog_;
}

std::vector<JobHost> LocalLab::hosts() const {
  std::vector<JobHost> out;
  for (int h = 0; h < topology_.hosts; ++h) {
    JobHost j{"h" + std::to_string(h), topology_.gpus_per_host, {}};
    for (const auto& l : plan_.links)
      if (l.kind == LinkKind::kHost && l.a_node == j.name && !l.a_addr.empty())
        j.nics.push_back(l.a_addr.substr(0, l.a_addr.find('/')));
    out.push_back(std::move(j));
  }
  return out;
}

Status LocalLab::CheckJob(const harness::JobSpec& job) const {
  FL_ASSIGN_OR_RETURN(const ccl::CclPlugin* plugin, ccl::FindCclPlugin(job.ccl));
  if (plugin->needs_gpu)
    return InvalidArgumentError("ccl " + job.ccl + " needs GPUs; the local lab runs CPU ranks");
  return OkStatus();
}

Status LocalLab::Preflight() const {
  if (geteuid() != 0)
    return FailedPreconditionError("the local lab needs root (network namespaces, cgroups)");
  if (access("/proc/self/ns/net", R_OK) != 0)
    return FailedPreconditionError("the local lab needs network namespaces (CONFIG_NET_NS)");
  if (auto cg = injectors::Cgroup2Root(); !cg.ok())
    return FailedPreconditionError("the local lab runs its ranks in cgroups: " +
                                   cg.status().message());
  return OkStatus();
}

namespace {

// The agent side of a LocalLab host (or of its switch-side "fabric" agent).
class LocalSite : public Site {
 public:
  LocalSite(std::unique_ptr<LocalLab> lab, std::string host)
      : lab_(std::move(lab)), host_(std::move(host)) {}
  const std::string& host() const override { return host_; }
  const injectors::Fabric& fabric() const override { return *lab_; }
  int ranks() const override { return host_ == "fabric" ? 0 : lab_->topology().gpus_per_host; }
  StatusOr<injectors::ContainerInfo> StartRank(int local_rank,
                                               const std::vector<std::string>& argv) override {
    if (host_ == "fabric") return FailedPreconditionError("the fabric agent runs no ranks");
    return lab_->StartContainer(host_, local_rank, argv);
  }
  std::vector<std::string> WorkerDirs() const override { return {injectors::StateDir()}; }
  void Close() override {}  // the lab's cgroup folder goes with the lab
  bool disposable() const override { return true; }

 private:
  std::unique_ptr<LocalLab> lab_;
  std::string host_;
};

}  // namespace

StatusOr<std::unique_ptr<Site>> OpenLocalSite(const std::string& lab_name,
                                              const std::string& host) {
  FL_ASSIGN_OR_RETURN(auto lab, LocalLab::Open(lab_name));
  return std::unique_ptr<Site>(std::make_unique<LocalSite>(std::move(lab), host));
}

StatusOr<bool> RemoveLeftoverLocalLab(const std::string& lab_name) {
  auto lab = LocalLab::Open(lab_name);
  if (!lab.ok()) return false;
  FL_RETURN_IF_ERROR((*lab)->Teardown());
  return true;
}

Status LocalLab::Provision(const LabRun& run) {
  if (attached_) {
    Narrate("[provision] lab %s is up (kept across runs): checking it is as built",
            plan_.lab.c_str());
    return CheckClean();
  }
  if (!run.lab_name.empty()) {
    if (!IsValidLabName(run.lab_name))
      return InvalidArgumentError("lab name '" + run.lab_name +
                                  "' must be 1-10 characters [a-z0-9]");
    plan_ = PlanLab(topology_, run.lab_name, mgmt_index_);
  }
  Narrate("[provision] lab %s from %s", plan_.lab.c_str(), topology_.source.c_str());
  return Provision();
}

StatusOr<ControlPlane> LocalLab::Control(const LabRun& run) {
  if (!run.tls_dir.empty())
    return InvalidArgumentError(
        "--tls-dir is for labs of real hosts; the local lab's agents use the run's own token");
  ControlPlane c;
  const std::string& mgmt = plan_.root_mgmt_addr;
  c.listen = mgmt.substr(0, mgmt.find('/')) + ":0";
  c.token_file = run.run_dir + "/token";
  FL_RETURN_IF_ERROR(harness::CreateTokenFile(c.token_file).status());
  return c;
}

std::vector<std::string> LocalLab::agent_names() const {
  std::vector<std::string> names;
  for (int h = 0; h < topology_.hosts; ++h) names.push_back("h" + std::to_string(h));
  names.push_back("fabric");
  return names;
}

Status LocalLab::StartAgents(const AgentLaunch& launch) {
  Narrate("[agents] starting %d agents", topology_.hosts + 1);
  for (const std::string& host : agent_names()) {
    const bool fabric = host == "fabric";
    ProcessSpec spec;
    spec.argv = {launch.bin_dir + "/faultline-agent",
                 "--coordinator",
                 launch.coordinator,
                 "--token-file",
                 launch.token_file,
                 "--host",
                 host,
                 "--lab",
                 plan_.lab,
                 "--run-dir",
                 launch.run_dir,
                 "--worker",
                 launch.bin_dir + "/faultline-worker"};
    // The local lab's own policy unless the user named one (run from the repository).
    std::string policy = launch.policy_path;
    if (policy.empty() && access("configs/policies/local_lab.yaml", R_OK) == 0)
      policy = "configs/policies/local_lab.yaml";
    if (!policy.empty()) spec.argv.insert(spec.argv.end(), {"--policy", policy});
    // Only the network namespace changes: the agent keeps the machine's /sys and cgroup
    // mounts, which it needs for containers (ip netns exec would remount /sys).
    spec.netns = fabric ? "" : NetnsOf(host);
    // Its own session: a Ctrl-C meant for the coordinator must not kill the agents before
    // they revert (the coordinator stops them itself).
    spec.new_session = true;
    // Agents log warnings and errors only, unless the user chose a level: the coordinator's
    // progress lines are what a person reads.
    spec.env = CleanEnvironment(std::getenv("FAULTLINE_LOG")
                                    ? std::vector<std::string>{}
                                    : std::vector<std::string>{"FAULTLINE_LOG=warn"});
    auto proc = fl::Spawn(spec);
    if (!proc.ok()) {
      Status s = proc.status();
      return Status(s.code(), "cannot start agent " + host + ": " + s.message());
    }
    agents_.push_back({host, proc->pid()});
  }
  return OkStatus();
}

// A dead agent cannot revert what it holds, but the journal it wrote before applying each
// fault can: its entries now have a dead owner, and are reverted (and verified) here at once,
// as a restarted agent would at start-up, instead of waiting for the lab's teardown.
std::optional<Lab::LostAgent> LocalLab::PollLostAgent() {
  for (AgentProc& a : agents_) {
    if (a.pid <= 0) continue;
    int status = 0;
    if (waitpid(a.pid, &status, WNOHANG) != a.pid) continue;
    a.pid = -1;
    LostAgent lost;
    lost.name = a.name;
    lost.how = WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                   : "exit " + std::to_string(WEXITSTATUS(status));
    injectors::InjectorRegistry registry("injector");
    if (Status st = injectors::RegisterBuiltinInjectors(registry); st.ok()) {
      injectors::FaultJournal journal;
      injectors::RecoveryReport rec = injectors::RecoverDeadFaults(journal, registry);
      lost.recovered = true;
      lost.reverted = rec.reverted;
      lost.failed = rec.failed;
    } else {
      lost.failed.push_back(st.ToUserString());
    }
    return lost;
  }
  return std::nullopt;
}

Status LocalLab::StopAgents(Deadline deadline) {
  std::string late;
  for (AgentProc& a : agents_) {
    if (a.pid <= 0) continue;
    if (!WaitExit(a.pid, deadline).ok()) {
      ExitStatus e = Stop(a.pid, 5 * kNsPerSec);
      late += (late.empty() ? "" : ", ") + a.name + " (pid " + std::to_string(a.pid) +
              (e.term_signal ? ", ended by signal " + std::to_string(e.term_signal)
                             : ", exit " + std::to_string(e.exit_code)) +
              ")";
    }
    a.pid = -1;
  }
  agents_.clear();
  if (late.empty()) return OkStatus();
  return DeadlineExceededError("agents that did not exit by the deadline were ended: " + late);
}

Rendezvous LocalLab::RendezvousFor(const LabRun& run) const {
  Rendezvous r;
  r.kind = Rendezvous::Kind::kDirectory;
  r.dir = run.run_dir + "/store";
  return r;
}

}  // namespace fl::lab
