#include "tests/harness/slurm_cluster.h"

#include "tests/test_util.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "common/file_util.h"

namespace fl::testing {
namespace {

// The address part of "198.19.3.254/24".
std::string Ip(const std::string& cidr) { return cidr.substr(0, cidr.find('/')); }

struct CgroupLayout {
  bool v2 = false;
  std::string mountpoint;  // CgroupMountpoint for slurm
};

// Pure cgroup v2 (the cgroup2 mount at the top and no v1 controllers) or v1/hybrid (v1
// controllers under a tmpfs, maybe a cgroup2 at .../unified): from /proc/self/mountinfo.
CgroupLayout DetectCgroups() {
  std::string v2_mount, v1_base;
  for (const auto& m : ListMounts()) {
    if (m.fstype == "cgroup2" && v2_mount.empty()) v2_mount = m.mountpoint;
    if (m.fstype == "cgroup" && v1_base.empty())
      v1_base = m.mountpoint.substr(0, m.mountpoint.rfind('/'));
  }
  if (v1_base.empty() && !v2_mount.empty()) return {true, v2_mount};
  return {false, v1_base.empty() ? std::string("/sys/fs/cgroup") : v1_base};
}

std::string Tail(const std::string& path, size_t lines) {
  auto text = ReadFile(path);
  if (!text.ok()) return "";
  size_t pos = text->size();
  for (size_t n = 0; n <= lines && pos > 0;) {
    pos = text->rfind('\n', pos - 1);
    if (pos == std::string::npos) {
      pos = 0;
      break;
    }
    ++n;
  }
  return text->substr(pos);
}

// The inode of a network namespace (/run/netns/NAME or /proc/PID/ns/net); 0 when unknown.
ino_t NetnsInode(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

void RemoveTree(const std::string& path) {
  nftw(
      path.c_str(), [](const char* p, const struct stat*, int, struct FTW*) { return ::remove(p); },
      16, FTW_DEPTH | FTW_PHYS);
}

}  // namespace

StatusOr<std::unique_ptr<SlurmCluster>> SlurmCluster::Start(const lab::LocalLab& lab, Nanos timeout,
                                                            const std::string& extra_conf) {
  Deadline deadline = Deadline::After(timeout);
  std::unique_ptr<SlurmCluster> c(new SlurmCluster());
  char tmpl[] = "/tmp/fl_slurm_XXXXXX";
  if (!mkdtemp(tmpl)) return ErrnoStatus(errno, "mkdtemp");
  c->dir_ = tmpl;
  // munged wants every directory on its socket's path searchable by all, and none of its
  // own files readable by others.
  chmod(c->dir_.c_str(), 0711);
  for (const char* sub : {"/state", "/spool", "/log", "/munge"})
    FL_RETURN_IF_ERROR(MakeDirs(c->dir_ + sub, 0700));
  chmod((c->dir_ + "/munge").c_str(), 0711);
  FL_RETURN_IF_ERROR(c->WriteConfig(lab, extra_conf));

  // Our own munged: a fresh key, its own socket (slurm.conf's AuthInfo points there).
  std::string key(1024, '\0');
  if (getrandom(key.data(), key.size(), 0) != static_cast<ssize_t>(key.size()))
    return ErrnoStatus(errno, "getrandom");
  const std::string key_file = c->dir_ + "/munge/munge.key";
  {
    int fd = open(key_file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return ErrnoStatus(errno, "create " + key_file);
    bool ok = write(fd, key.data(), key.size()) == static_cast<ssize_t>(key.size());
    close(fd);
    if (!ok) return InternalError("cannot write " + key_file);
  }
  const std::string m = c->dir_ + "/munge/";
  FL_ASSIGN_OR_RETURN(
      Daemon munged,
      c->StartDaemon(
          "munged",
          {"munged", "--foreground", "--force", "--key-file=" + key_file,
           "--socket=" + c->munge_socket_, "--pid-file=" + m + "munged.pid",
           "--log-file=" + m + "munged.log", "--seed-file=" + m + "munged.seed", "--num-threads=2"},
          ""));
  c->daemons_.push_back(munged);
  if (!WaitUntil([&] { return access(c->munge_socket_.c_str(), F_OK) == 0; },
                 Deadline::After(std::min<Nanos>(deadline.Remaining(), 20 * kNsPerSec)),
                 20 * kNsPerMs))
    return UnavailableError("munged did not create its socket " + c->munge_socket_ + "\n" +
                            c->Logs());

  FL_ASSIGN_OR_RETURN(Daemon ctld,
                      c->StartDaemon("slurmctld", {"slurmctld", "-D", "-f", c->conf_}, ""));
  c->daemons_.push_back(ctld);
  for (size_t i = 0; i < c->nodes_.size(); ++i) {
    FL_ASSIGN_OR_RETURN(
        Daemon d,
        c->StartDaemon("slurmd " + c->nodes_[i],
                       {"slurmd", "-D", "-f", c->conf_, "-N", c->nodes_[i]}, c->netns_[i]));
    c->daemons_.push_back(d);
  }
  FL_RETURN_IF_ERROR(c->WaitIdle(deadline));
  return c;
}

Status SlurmCluster::WriteConfig(const lab::LocalLab& lab, const std::string& extra_conf) {
  const lab::LabPlan& plan = lab.plan();
  const std::string ctl_ip = Ip(plan.root_mgmt_addr);
  std::vector<std::pair<std::string, std::string>> hosts;  // name, management address
  for (const auto& l : plan.links)
    if (l.kind == lab::LinkKind::kMgmt) hosts.push_back({l.a_node, Ip(l.a_addr)});
  if (hosts.empty()) return FailedPreconditionError("lab " + lab.name() + " has no hosts");
  for (const auto& [name, addr] : hosts) {
    nodes_.push_back(name);
    netns_.push_back(lab.NetnsOf(name));
  }
  const int ctld_port = FreeTcpPort(ctl_ip);
  if (ctld_port < 0) return UnavailableError("no free TCP port on " + ctl_ip);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::string short_host(host);
  short_host = short_host.substr(0, short_host.find('.'));
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (cpus < 1) cpus = 1;
  munge_socket_ = dir_ + "/munge/munge.sock";
  conf_ = dir_ + "/slurm.conf";

  std::ostringstream s;
  s << "# written by tests/harness/slurm_cluster.cc for lab " << lab.name() << "\n"
    << "ClusterName=fl" << lab.name() << "\n"
    << "SlurmctldHost=" << short_host << "(" << ctl_ip << ")\n"
    << "SlurmctldPort=" << ctld_port << "\n"
    << "SlurmdPort=6818\n"
    << "SlurmUser=root\nSlurmdUser=root\n"
    << "AuthType=auth/munge\nCredType=cred/munge\n"
    << "AuthInfo=socket=" << munge_socket_ << "\n"
    << "StateSaveLocation=" << dir_ << "/state\n"
    << "SlurmdSpoolDir=" << dir_ << "/spool/%n\n"
    << "SlurmctldPidFile=" << dir_ << "/slurmctld.pid\n"
    << "SlurmdPidFile=" << dir_ << "/slurmd-%n.pid\n"
    << "SlurmctldLogFile=" << dir_ << "/log/slurmctld.log\n"
    << "SlurmdLogFile=" << dir_ << "/log/slurmd-%n.log\n"
    << "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
    << "SelectType=select/cons_tres\nMpiDefault=none\n"
    << "SchedulerType=sched/builtin\nReturnToService=2\n"
    << "AccountingStorageType=accounting_storage/none\nJobAcctGatherType=jobacct_gather/none\n"
    << "JobCompType=jobcomp/none\n"
    // Finished jobs leave squeue quickly; a cancelled task gets SIGKILL 5 s after SIGTERM.
    << "MinJobAge=2\nKillWait=5\n";
  std::string node_names;
  for (const auto& [name, addr] : hosts) {
    s << "NodeName=" << name << " NodeAddr=" << addr << " CPUs=" << cpus << " State=UNKNOWN\n";
    node_names += (node_names.empty() ? "" : ",") + name;
  }
  s << "PartitionName=" << partition_ << " Nodes=" << node_names
    << " Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE\n"
    << extra_conf;
  FL_RETURN_IF_ERROR(WriteFileAtomic(conf_, s.str()));

  // slurmd refuses autodetection and cgroup/v2 on a hybrid machine; a pure v2 one needs v2.
  CgroupLayout cg = DetectCgroups();
  cgroup_v2_ = cg.v2;
  std::ostringstream g;
  g << "CgroupPlugin=" << (cg.v2 ? "cgroup/v2" : "cgroup/v1") << "\n"
    << "CgroupMountpoint=" << cg.mountpoint << "\nIgnoreSystemd=yes\n";
  return WriteFileAtomic(dir_ + "/cgroup.conf", g.str());
}

StatusOr<SlurmCluster::Daemon> SlurmCluster::StartDaemon(const std::string& what,
                                                         std::vector<std::string> argv,
                                                         const std::string& netns) {
  std::string tag = what;
  for (char& ch : tag)
    if (ch == ' ') ch = '-';
  ProcessSpec spec;
  spec.argv = std::move(argv);
  spec.env = Env();
  spec.netns = netns;
  spec.new_process_group = true;
  spec.in.kind = Stdio::kNull;
  spec.out = {Stdio::kFile, dir_ + "/log/" + tag + ".out"};
  spec.err = {Stdio::kFile, dir_ + "/log/" + tag + ".err"};
  FL_ASSIGN_OR_RETURN(Process p, Spawn(spec));
  return Daemon{what, p.pid(), p.start_time(), dir_ + "/log/" + tag + ".err"};
}

Status SlurmCluster::WaitIdle(Deadline deadline) {
  std::string last, died;
  bool idle = WaitUntil(
      [&] {
        for (const auto& d : daemons_)
          if (!ProcessAlive(d.pid, d.start_time)) died = d.what;
        if (!died.empty()) return true;
        auto r = Client({"sinfo", "-h", "-N", "-o", "%N %T"}, 10 * kNsPerSec);
        if (!r.ok()) return false;
        last = r->exit_code == 0 ? r->out : r->err;
        if (r->exit_code != 0) return false;
        std::set<std::string> idle_nodes;
        std::istringstream in(r->out);
        std::string node, state;
        while (in >> node >> state)
          if (state == "idle") idle_nodes.insert(node);
        for (const auto& n : nodes_)
          if (!idle_nodes.count(n)) return false;
        return true;
      },
      deadline, 300 * kNsPerMs);
  if (!died.empty()) return UnavailableError(died + " exited while the cluster started\n" + Logs());
  if (!idle)
    return DeadlineExceededError("Slurm nodes not idle in time; last sinfo:\n" + last + "\n" +
                                 Logs());
  return OkStatus();
}

std::vector<int> SlurmCluster::daemon_pids() const {
  std::vector<int> pids;
  for (const auto& d : daemons_) pids.push_back(d.pid);
  return pids;
}

std::vector<std::string> SlurmCluster::Env() const {
  return CleanEnvironment({"SLURM_CONF=" + conf_});
}

StatusOr<RunResult> SlurmCluster::Client(const std::vector<std::string>& argv,
                                         Nanos timeout) const {
  RunOptions o;
  o.env = Env();
  o.timeout = timeout;
  return Run(argv, o);
}

std::vector<std::string> SlurmCluster::Jobs() const {
  std::vector<std::string> ids;
  auto r = Client({"squeue", "-h", "-o", "%i"});
  if (!r.ok() || r->exit_code != 0) return ids;
  std::istringstream in(r->out);
  std::string id;
  while (in >> id) ids.push_back(id);
  return ids;
}

std::string SlurmCluster::Logs() const {
  std::string out;
  std::vector<std::string> files;
  for (const auto& d : daemons_) files.push_back(d.log);
  files.push_back(dir_ + "/log/slurmctld.log");
  for (const auto& n : nodes_) files.push_back(dir_ + "/log/slurmd-" + n + ".log");
  files.push_back(dir_ + "/munge/munged.log");
  for (const auto& f : files) {
    std::string t = Tail(f, 8);
    if (!t.empty()) out += "--- " + f + "\n" + t + "\n";
  }
  return out;
}

void SlurmCluster::StopAll() {
  // Jobs first (their steps run under the slurmds), bounded.
  bool ctld_up = daemons_.size() >= 2 && ProcessAlive(daemons_[1].pid, daemons_[1].start_time);
  if (ctld_up) {
    for (const auto& id : Jobs()) Client({"scancel", id}).status().IgnoreError();
    WaitUntil([&] { return Jobs().empty(); }, Deadline::After(30 * kNsPerSec), 200 * kNsPerMs);
  }
  // Daemons by pid, newest first (slurmds, slurmctld, munged).
  for (auto it = daemons_.rbegin(); it != daemons_.rend(); ++it)
    if (it->pid > 0) Stop(it->pid, 10 * kNsPerSec, /*group=*/true);
  daemons_.clear();
  // A slurmstepd outlives its slurmd: end any left in the lab's host namespaces (ours only:
  // matched by namespace inode).
  std::set<ino_t> ours;
  for (const auto& ns : netns_)
    if (ino_t i = NetnsInode("/run/netns/" + ns)) ours.insert(i);
  if (DIR* d = opendir("/proc")) {
    while (dirent* e = readdir(d)) {
      int pid = std::atoi(e->d_name);
      if (pid <= 0) continue;
      std::string proc = std::string("/proc/") + e->d_name;
      auto comm = ReadFile(proc + "/comm");
      if (!comm.ok() || comm->rfind("slurmstepd", 0) != 0) continue;
      if (ours.count(NetnsInode(proc + "/ns/net"))) kill(pid, SIGKILL);
    }
    closedir(d);
  }
}

SlurmCluster::~SlurmCluster() {
  StopAll();
  if (!dir_.empty()) RemoveTree(dir_);
}

}  // namespace fl::testing
