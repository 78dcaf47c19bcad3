#include "harness/lab/local_lab.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <thread>
#include <utility>

#include "common/file_util.h"
#include "common/input_file.h"
#include "common/json_util.h"
#include "common/log.h"
#include "common/process.h"
#include "common/units.h"
#include "harness/lab/local_lab_internal.h"
#include "harness/lab/switch_shim.h"
#include "injectors/journal.h"
#include "injectors/netlink.h"
#include "injectors/switch/ssh_template/ssh_template_driver.h"
#include "injectors/tc_nft.h"

namespace fl::lab {

using injectors::Port;
using injectors::PortSide;
using injectors::RunChecked;
using local_internal::Ip;
using local_internal::kToolTimeout;
using local_internal::LabsDir;

namespace {

// Management subnets in use: 198.19.<m>.254 in the root namespace, and other labs' state.
std::set<int> UsedMgmtIndexes() {
  std::set<int> used;
  injectors::CommandOptions o;
  o.timeout = kToolTimeout;
  auto out = RunChecked({"ip", "-4", "-j", "addr", "show"}, o);
  if (out.ok()) {
    // ip's output is read without trusting its shape: what is not as expected is skipped.
    auto j = ParseJson(*out, "ip -j addr show");
    if (j.ok() && j->is_array())
      for (const auto& ifc : *j) {
        auto addrs = JsonGetOr<nlohmann::json>(ifc, "addr_info", nlohmann::json::array(), "ip");
        if (!addrs.ok() || !addrs->is_array()) continue;
        for (const auto& a : *addrs) {
          std::string local = JsonGetOr<std::string>(a, "local", "", "ip").value_or("");
          if (local.rfind("198.19.", 0) == 0) used.insert(std::atoi(local.c_str() + 7));
        }
      }
  }
  for (const auto& name : LocalLab::List()) {
    auto j = LoadJsonFile(LabsDir() + "/" + name + ".json", InputKind::kLabState);
    if (!j.ok()) continue;
    auto m = JsonGetInRange<int>(*j, "mgmt_index", 0, 255, name);
    if (m.ok()) used.insert(*m);
  }
  return used;
}

// Two labs built at once must not take the same management subnet: each chooses it from the
// others' state files and the root namespace's addresses, and the root address that shows its
// choice to the next lab comes seconds later. So the choice, up to that address, is made under
// a lock of this network namespace: an abstract unix socket bound to one name (the kernel
// frees it with its holder, killed or not; nothing is left on disk). Waits until deadline.
StatusOr<UniqueFd> LockMgmtChoice(Deadline deadline) {
  static constexpr char kName[] = "faultline-lab-mgmt-choice";
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::copy(kName, kName + sizeof kName - 1, a.sun_path + 1);  // sun_path[0] = 0: abstract
  const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + sizeof kName);
  for (;;) {
    UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (fd.get() < 0) return ErrnoStatus(errno, "socket for the management subnet lock");
    if (bind(fd.get(), reinterpret_cast<const sockaddr*>(&a), len) == 0) return fd;
    if (errno != EADDRINUSE) return ErrnoStatus(errno, "bind the management subnet lock");
    if (deadline.Expired())
      return UnavailableError(
          "another lab has been choosing its management subnet for too long (a process holds "
          "the abstract socket @" +
          std::string(kName) + ": ss -xlp shows it)");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// Inode of /run/netns/<name>, 0 when missing.
ino_t NetnsInode(const std::string& name) {
  struct stat st;
  std::string p = std::string(injectors::kNetnsDir) + "/" + name;
  return stat(p.c_str(), &st) == 0 ? st.st_ino : 0;
}

// Pids whose network namespace is one of inodes.
std::vector<int> PidsInNetns(const std::set<ino_t>& inodes) {
  std::vector<int> pids;
  DIR* d = opendir("/proc");
  if (!d) return pids;
  while (dirent* e = readdir(d)) {
    int pid = std::atoi(e->d_name);
    if (pid <= 0 || pid == getpid()) continue;
    struct stat st;
    std::string p = std::string("/proc/") + e->d_name + "/ns/net";
    if (stat(p.c_str(), &st) == 0 && inodes.count(st.st_ino)) pids.push_back(pid);
  }
  closedir(d);
  return pids;
}

Status KillCgroupTree(const std::string& dir) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) return OkStatus();
  injectors::LocalContainerRuntime rt;
  DIR* d = opendir(dir.c_str());
  std::vector<std::string> children;
  if (d) {
    while (dirent* e = readdir(d))
      if (e->d_type == DT_DIR && e->d_name[0] != '.') children.push_back(dir + "/" + e->d_name);
    closedir(d);
  }
  // cgroup.kill on the lab's directory kills every leaf below it.
  auto populated = injectors::CgroupPopulated(dir);
  if (populated.ok() && *populated)
    FL_RETURN_IF_ERROR(rt.Kill(dir, Deadline::After(3 * kNsPerSec)));
  for (const auto& c : children) FL_RETURN_IF_ERROR(rt.Remove(c));
  return rt.Remove(dir);
}

}  // namespace

namespace local_internal {

Status Ip(const std::string& netns, std::vector<std::string> args) {
  std::vector<std::string> argv = {"ip"};
  if (!netns.empty()) argv.insert(argv.end(), {"-n", netns});
  argv.insert(argv.end(), args.begin(), args.end());
  injectors::CommandOptions o;
  o.timeout = kToolTimeout;
  return RunChecked(argv, o).status();
}

std::string LabsDir() { return injectors::StateDir() + "/labs"; }

}  // namespace local_internal

StatusOr<std::unique_ptr<LocalLab>> LocalLab::Create(const Topology& topology,
                                                     const std::string& lab_name) {
  std::string name = lab_name.empty() ? topology.name : lab_name;
  if (!IsValidLabName(name))
    return InvalidArgumentError("lab name '" + name + "' must be 1-10 characters [a-z0-9]");
  return std::unique_ptr<LocalLab>(new LocalLab(topology, PlanLab(topology, name, 0)));
}

StatusOr<std::unique_ptr<LocalLab>> LocalLab::Open(const std::string& lab_name) {
  if (!IsValidLabName(lab_name)) return InvalidArgumentError("bad lab name '" + lab_name + "'");
  std::string path = LabsDir() + "/" + lab_name + ".json";
  if (access(path.c_str(), F_OK) != 0) {
    std::string known;
    for (const auto& n : List()) known += (known.empty() ? "" : ", ") + n;
    return NotFoundError("no lab named '" + lab_name +
                         "' (running: " + (known.empty() ? "none" : known) + ")");
  }
  FL_ASSIGN_OR_RETURN(nlohmann::json j, LoadJsonFile(path, InputKind::kLabState));
  FL_ASSIGN_OR_RETURN(std::string text, JsonGet<std::string>(j, "topology_text", path));
  FL_ASSIGN_OR_RETURN(std::string source, JsonGet<std::string>(j, "topology", path));
  FL_ASSIGN_OR_RETURN(int mgmt, JsonGetInRange<int>(j, "mgmt_index", 0, 255, path));
  FL_ASSIGN_OR_RETURN(Topology t, ParseTopology(text, source));
  std::unique_ptr<LocalLab> lab(new LocalLab(t, PlanLab(t, lab_name, mgmt)));
  lab->mgmt_index_ = mgmt;
  if (j.contains("clean_fingerprint") && j["clean_fingerprint"].is_string())
    lab->clean_fingerprint_ = j["clean_fingerprint"].get<std::string>();
  return lab;
}

std::vector<std::string> LocalLab::List() {
  std::vector<std::string> names;
  DIR* d = opendir(LabsDir().c_str());
  if (!d) return names;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n.size() > 5 && n.ends_with(".json")) names.push_back(n.substr(0, n.size() - 5));
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

std::string LocalLab::StatePath() const { return LabsDir() + "/" + plan_.lab + ".json"; }

std::string LocalLab::CgroupDir() const {
  auto root = injectors::Cgroup2Root();
  return (root.ok() ? *root : std::string("/sys/fs/cgroup")) + "/faultline/fl-" + plan_.lab;
}

Status LocalLab::Provision() {
  if (access(StatePath().c_str(), F_OK) == 0)
    return FailedPreconditionError("lab '" + plan_.lab + "' is already up (faultline lab down " +
                                   plan_.lab + " removes it)");
  for (const auto& n : plan_.nodes)
    if (injectors::NetnsExists(n.netns))
      return FailedPreconditionError("namespace " + n.netns +
                                     " already exists: another lab "
                                     "named '" +
                                     plan_.lab + "'? (faultline lab down " + plan_.lab + ")");
  // Held until ProvisionSteps has put the root address up (or provisioning failed).
  FL_ASSIGN_OR_RETURN(mgmt_choice_lock_, LockMgmtChoice(Deadline::After(120 * kNsPerSec)));
  std::set<int> used = UsedMgmtIndexes();
  int m = 0;
  while (used.count(m) && m < 256) ++m;
  if (m == 256) return FailedPreconditionError("no free management subnet in 198.19.0.0/16");
  mgmt_index_ = m;
  plan_ = PlanLab(topology_, plan_.lab, m);
  {
    std::lock_guard<std::mutex> lock(sw_mu_);
    sw_cache_.clear();
  }

  // Remembered before anything is created, so that a crash leaves something `lab down` finds.
  FL_RETURN_IF_ERROR(MakeDirs(LabsDir(), 0700));
  nlohmann::json state = {{"name", plan_.lab},
                          {"topology", topology_.source},
                          {"topology_text", topology_.text},
                          {"mgmt_index", m},
                          {"created_wall_ns", WallNowNs()}};
  FL_RETURN_IF_ERROR(WriteFileAtomic(StatePath(), state.dump(2) + "\n"));
  Status s = ProvisionSteps();
  mgmt_choice_lock_.Reset();
  if (s.ok()) {
    // What the lab holds as built: a run on it kept up (UseRunningLab) compares against it.
    // Taken once every link has its carrier: the kernel reports carrier changes in batches
    // (linkwatch, up to a second late), and a host whose management link still has none
    // cannot dial the coordinator yet either.
    auto fp = StateFingerprint();
    for (Deadline d = Deadline::After(3 * kNsPerSec);
         fp.ok() && fp->find("NO-CARRIER") != std::string::npos && !d.Expired();) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      fp = StateFingerprint();
    }
    if (fp.ok()) {
      clean_fingerprint_ = *fp;
      state["clean_fingerprint"] = *fp;
      s = WriteFileAtomic(StatePath(), state.dump(2) + "\n");
    } else {
      s = fp.status();
    }
  }
  if (!s.ok()) {
    FL_LOG(kWarn, "lab") << "provisioning lab " << plan_.lab
                         << " failed, removing it: " << s.ToString();
    // The provisioning error is the one to report; Teardown logs what it cannot remove.
    Teardown().IgnoreError();
  }
  return s;
}

namespace {

// Commands grouped per namespace, run as one `ip -batch` / `tc -batch` each: a batch line is
// an argv for the tool built from validated names (no shell is involved), and one exec per
// namespace instead of one per object makes bringing a lab up several times faster.
class Batches {
 public:
  void Add(const std::string& netns, std::vector<std::string> words) {
    std::string line;
    for (const auto& w : words) line += (line.empty() ? "" : " ") + w;
    for (auto& [ns, text] : batches_)
      if (ns == netns) {
        text += line + "\n";
        return;
      }
    batches_.emplace_back(netns, line + "\n");
  }
  Status Run(const std::string& tool) const {
    for (const auto& [ns, text] : batches_) {
      std::vector<std::string> argv = {tool};
      if (!ns.empty()) argv.insert(argv.end(), {"-n", ns});
      argv.insert(argv.end(), {"-batch", "-"});
      injectors::CommandOptions o;
      o.stdin_data = text;
      o.timeout = kToolTimeout;
      FL_RETURN_IF_ERROR(RunChecked(argv, o).status());
    }
    return OkStatus();
  }

 private:
  std::vector<std::pair<std::string, std::string>> batches_;
};

}  // namespace

Status LocalLab::ProvisionSteps() {
  const bool bgp = topology_.routing == Routing::kBgp;
  Batches netns, bridges, a_side, b_side, tc, routes;
  for (const auto& n : plan_.nodes) {
    netns.Add("", {"netns", "add", n.netns});
    bridges.Add(n.netns, {"link", "set", "lo", "up"});
    if (n.is_switch) {
      // STP off (no loops by construction), no learning delay.
      bridges.Add(n.netns,
                  {"link", "add", "br0", "type", "bridge", "stp_state", "0", "forward_delay", "0"});
      bridges.Add(n.netns, {"link", "set", "br0", "up"});
      if (!n.addr.empty()) bridges.Add(n.netns, {"addr", "add", n.addr, "dev", "br0"});
    }
  }
  for (const auto& l : plan_.links) {
    const std::string mtu = std::to_string(l.spec.mtu);
    a_side.Add(l.a_netns, {"link", "add", l.a_if, "mtu", mtu, "type", "veth", "peer", "name",
                           l.b_if, "mtu", mtu, "netns", l.b_netns});
    // A ToR's uplink is a port of its own bridge as well (l2); with bgp both ends of an
    // uplink are routed ports with a /31 each.
    const bool routed = bgp && l.kind == LinkKind::kUplink;
    if (l.kind == LinkKind::kUplink && !routed)
      a_side.Add(l.a_netns, {"link", "set", l.a_if, "master", "br0"});
    if (!l.a_addr.empty()) a_side.Add(l.a_netns, {"addr", "add", l.a_addr, "dev", l.a_if});
    a_side.Add(l.a_netns, {"link", "set", l.a_if, "up"});
    for (const auto& [prefix, gw] : HostRoutes(topology_, l))
      routes.Add(l.a_netns, {"route", "add", prefix, "via", gw, "dev", l.a_if});
    if (routed)
      b_side.Add(l.b_netns, {"addr", "add", l.b_addr, "dev", l.b_if});
    else
      b_side.Add(l.b_netns, {"link", "set", l.b_if, "master", "br0"});
    b_side.Add(l.b_netns, {"link", "set", l.b_if, "up"});
    if (l.spec.rate_bps) {
      for (const auto& [ns, ifname] : {std::pair{l.a_netns, l.a_if}, std::pair{l.b_netns, l.b_if}})
        tc.Add(ns, {"qdisc", "replace", "dev", ifname, "root", "tbf", "rate",
                    std::to_string(l.spec.rate_bps) + "bit", "burst",
                    std::to_string(l.spec.burst_bytes), "latency", "50ms"});
    }
  }
  FL_RETURN_IF_ERROR(netns.Run("ip"));
  FL_RETURN_IF_ERROR(bridges.Run("ip"));
  FL_RETURN_IF_ERROR(a_side.Run("ip"));
  FL_RETURN_IF_ERROR(b_side.Run("ip"));
  FL_RETURN_IF_ERROR(tc.Run("tc"));
  FL_RETURN_IF_ERROR(routes.Run("ip"));
  // The root namespace's port on the management network (the coordinator's side).
  std::string mgmt_ns = NetnsOf("mgmt");
  FL_RETURN_IF_ERROR(Ip("", {"link", "add", plan_.root_mgmt_if, "type", "veth", "peer", "name",
                             "root", "netns", mgmt_ns}));
  FL_RETURN_IF_ERROR(Ip(mgmt_ns, {"link", "set", "root", "master", "br0"}));
  FL_RETURN_IF_ERROR(injectors::SetLinkUp(mgmt_ns, "root", true));
  FL_RETURN_IF_ERROR(Ip("", {"addr", "add", plan_.root_mgmt_addr, "dev", plan_.root_mgmt_if}));
  FL_RETURN_IF_ERROR(injectors::SetLinkUp("", plan_.root_mgmt_if, true));
  mgmt_choice_lock_.Reset();  // the next lab sees 198.19.<m>.254 now
  if (topology_.switch_control == SwitchControl::kSsh) FL_RETURN_IF_ERROR(ProvisionSwitchMgmt());
  if (bgp) FL_RETURN_IF_ERROR(ProvisionFrr());
  FL_LOG(kInfo, "lab") << "lab " << plan_.lab << " is up: " << topology_.hosts << " hosts, "
                       << plan_.nodes.size() << " namespaces, " << plan_.links.size() << " links";
  return OkStatus();
}

Status LocalLab::Teardown() {
  if (attached_) return TeardownAttached();
  Status result;
  // 0. The switches' sshd this object started: killed and reaped here (no zombie is left);
  // those of another process (`lab up`) are killed below with the cgroup and namespaces.
  for (pid_t pid : sshd_pids_) {
    kill(pid, SIGKILL);
    WaitExit(pid, Deadline::After(3 * kNsPerSec)).status().IgnoreError();
  }
  sshd_pids_.clear();
  // The same for zebra and bgpd (routing bgp).
  for (pid_t pid : frr_pids_) {
    kill(pid, SIGKILL);
    WaitExit(pid, Deadline::After(3 * kNsPerSec)).status().IgnoreError();
  }
  frr_pids_.clear();
  routes_.reset();
  // 1. Containers: SIGKILL whole cgroups, then remove them.
  Status c = KillCgroupTree(CgroupDir());
  if (!c.ok()) result = c;
  auto root = injectors::Cgroup2Root();
  if (root.ok()) rmdir((*root + "/faultline").c_str());  // only succeeds when no lab is left
  // 2. Any other process still inside the lab's namespaces (started in the lab).
  std::set<ino_t> inodes;
  std::vector<std::string> namespaces;
  for (const auto& ns : injectors::ListNetns())
    if (ns.rfind(plan_.prefix, 0) == 0) {
      namespaces.push_back(ns);
      if (ino_t i = NetnsInode(ns)) inodes.insert(i);
    }
  std::vector<int> pids = PidsInNetns(inodes);
  for (int pid : pids) {
    FL_LOG(kInfo, "lab") << "killing pid " << pid << " left in lab " << plan_.lab;
    kill(pid, SIGKILL);
  }
  if (!pids.empty()) {
    WaitUntil([&] { return PidsInNetns(inodes).empty(); }, Deadline::After(3 * kNsPerSec));
  }
  // 3. Namespaces: deleting one removes its links, bridges, qdiscs and nft tables.
  for (const auto& ns : namespaces) {
    Status s = Ip("", {"netns", "del", ns});
    if (!s.ok() && injectors::NetnsExists(ns) && result.ok()) result = s;
  }
  // 4. The root end of the management link goes with its peer; make sure.
  auto st = injectors::GetLink("", plan_.root_mgmt_if);
  if (st.ok()) Ip("", {"link", "del", plan_.root_mgmt_if}).IgnoreError();
  // 5. The management plane's keys and configuration (switch_control ssh).
  std::error_code ec;
  for (const std::string& dir : {MgmtDir(), FrrDir()}) {
    std::filesystem::remove_all(dir, ec);
    if (ec && result.ok()) result = InternalError("cannot remove " + dir + ": " + ec.message());
  }
  if (result.ok()) {
    if (unlink(StatePath().c_str()) != 0 && errno != ENOENT)
      result = ErrnoStatus(errno, "unlink " + StatePath());
  }
  return result;
}

// A run on a lab kept up: only what the run made goes (its containers; the agents were ended
// by StopAgents); the namespaces, the management plane and the switches' daemons stay.
Status LocalLab::TeardownAttached() {
  routes_.reset();
  return KillCgroupTree(CgroupDir());
}

const NodeObj* LocalLab::FindNode(std::string_view name) const {
  for (const auto& n : plan_.nodes)
    if (n.name == name) return &n;
  return nullptr;
}

StatusOr<injectors::CommandResult> LocalLab::RunInHost(const std::string& host,
                                                       const std::vector<std::string>& argv,
                                                       Nanos timeout) const {
  const NodeObj* n = FindNode(host);
  if (!n) return NotFoundError("lab " + plan_.lab + " has no node '" + host + "'");
  injectors::CommandOptions o;
  o.netns = n->netns;
  o.timeout = timeout;
  return injectors::RunCommand(argv, o);
}

StatusOr<int> LocalLab::ExecInteractive(const std::string& host,
                                        const std::vector<std::string>& argv, Nanos timeout) const {
  const NodeObj* n = FindNode(host);
  if (!n) return NotFoundError("lab " + plan_.lab + " has no node '" + host + "'");
  if (argv.empty()) return InvalidArgumentError("no command given");
  // Interactive: the terminal's stdio; the program is resolved by the process layer.
  ProcessSpec spec;
  spec.argv = argv;
  spec.netns = n->netns;
  FL_ASSIGN_OR_RETURN(Process proc, Spawn(spec));
  auto exit = WaitExit(proc.pid(), Deadline::After(timeout));
  if (!exit.ok()) {
    kill(proc.pid(), SIGKILL);
    // Reaping only: the deadline error below is the answer, SIGKILL cannot be refused.
    WaitExit(proc.pid(), Deadline::After(10 * kNsPerSec)).status().IgnoreError();
    return DeadlineExceededError("command in " + host + " ran past its deadline and was killed");
  }
  if (exit->term_signal) return 128 + exit->term_signal;
  return exit->exit_code;
}

StatusOr<injectors::ContainerInfo> LocalLab::StartContainer(const std::string& host, int local_rank,
                                                            const std::vector<std::string>& argv) {
  const NodeObj* n = FindNode(host);
  if (!n || n->is_switch) return NotFoundError("lab " + plan_.lab + " has no host '" + host + "'");
  if (local_rank < 0 || local_rank >= topology_.gpus_per_host)
    return InvalidArgumentError(host + " has ranks 0.." +
                                std::to_string(topology_.gpus_per_host - 1));
  injectors::ContainerSpec spec;
  spec.name = host + ".rank" + std::to_string(local_rank);
  spec.netns = n->netns;
  spec.cgroup_parent = CgroupDir();
  spec.argv = argv;
  injectors::LocalContainerRuntime rt;
  return rt.Start(spec);
}

StatusOr<std::string> LocalLab::AddressOf(const std::string& host,
                                          const std::string& ifname) const {
  for (const auto& l : plan_.links)
    if (l.a_node == host && l.a_if == ifname && !l.a_addr.empty())
      return l.a_addr.substr(0, l.a_addr.find('/'));
  return NotFoundError("no address for " + host + "." + ifname);
}

Port LocalLab::MakePort(const LinkObj& l, bool a_side, bool with_sw) const {
  Port p;
  if (a_side) {
    p = {l.a_name,        l.a_netns,          l.a_if,  l.b_netns, l.b_if,
         l.spec.rate_bps, l.spec.burst_bytes, nullptr, ""};
  } else {
    p = {l.b_name,        l.b_netns,          l.b_if,  l.a_netns, l.a_if,
         l.spec.rate_bps, l.spec.burst_bytes, nullptr, ""};
  }
  if (with_sw && topology_.switch_control == SwitchControl::kSsh) {
    const std::string& node = a_side ? l.a_node : l.b_node;
    const NodeObj* n = FindNode(node);
    if (n && n->is_switch && node != "mgmt") {
      auto conn = SwitchConnOf(node);
      if (conn.ok()) {
        p.sw = *conn;
        p.sw_port = SonicPortName(node, p.ifname);
      }
    }
  }
  return p;
}

StatusOr<std::vector<Port>> LocalLab::HostLinks(std::string_view target, PortSide side) const {
  std::string t(target);
  std::vector<Port> ports;
  for (const auto& l : plan_.links) {
    if (l.kind != LinkKind::kHost) continue;
    bool match = t == l.a_node ||                  // host
                 t == l.a_name ||                  // NIC port
                 (topology_.tors_per_rail == 2 &&  // NIC with two ports
                  t == l.a_node + ".nic" + std::to_string(l.rail)) ||
                 t == "rail" + std::to_string(l.rail) ||  // rail
                 t == l.b_name ||                         // ToR port
                 t == l.b_node;                           // every port of a ToR
    if (match) ports.push_back(MakePort(l, side == PortSide::kHost, true));
  }
  if (ports.empty())
    return NotFoundError("lab " + plan_.lab + ": unknown link target '" + t +
                         "' (use a host like h0, a NIC like h0.nic1, a rail like rail1, a ToR "
                         "port like " +
                         plan_.links.front().b_name + ", or a ToR)");
  return ports;
}

StatusOr<std::vector<Port>> LocalLab::Uplinks(std::string_view target) const {
  std::string t(target);
  std::vector<Port> ports;
  for (const auto& l : plan_.links)
    if (l.kind == LinkKind::kUplink && (t == l.a_name || t == l.a_node))
      ports.push_back(MakePort(l, true, true));
  if (ports.empty()) {
    std::string known;
    for (const auto& l : plan_.links)
      if (l.kind == LinkKind::kUplink) known += (known.empty() ? "" : ", ") + l.a_name;
    return NotFoundError("lab " + plan_.lab + ": unknown uplink '" + t + "' (uplinks: " +
                         (known.empty() ? "none: this topology has no spine" : known) + ")");
  }
  return ports;
}

StatusOr<std::vector<Port>> LocalLab::UpstreamOf(const Port& port) const {
  std::vector<Port> ups;
  for (const auto& l : plan_.links) {
    if (l.kind == LinkKind::kMgmt) continue;
    // Ports of the same switch other than port: their far ends send into this switch.
    // Kernel ports: a PFC storm acts on the far ends' qdiscs (pfc.cc), not through a switch.
    if (l.b_netns == port.netns && l.b_if != port.ifname) ups.push_back(MakePort(l, true, false));
    if (l.kind == LinkKind::kUplink && l.a_netns == port.netns && l.a_if != port.ifname)
      ups.push_back(MakePort(l, false, false));
  }
  return ups;
}

StatusOr<injectors::ContainerRef> LocalLab::Container(std::string_view target) const {
  std::string t(target);
  std::string name = t;
  if (t.rfind("rank", 0) == 0) {
    int r = std::atoi(t.c_str() + 4);
    if (t.size() > 4 && r >= 0 && r < topology_.hosts * topology_.gpus_per_host)
      name = "h" + std::to_string(r / topology_.gpus_per_host) + ".rank" +
             std::to_string(r % topology_.gpus_per_host);
  }
  std::string path = CgroupDir() + "/" + name;
  struct stat st;
  if (!injectors::IsSafeName(name) || stat(path.c_str(), &st) != 0)
    return NotFoundError("lab " + plan_.lab + ": no running container '" + t +
                         "' (containers are named like h0.rank1 or rank3)");
  return injectors::ContainerRef{name, path};
}

StatusOr<LabDescription> LocalLab::Describe() const {
  LabDescription d;
  d.name = plan_.lab;
  d.topology = topology_.source;
  d.mgmt_root = plan_.root_mgmt_addr;
  d.switch_control = topology_.switch_control == SwitchControl::kSsh ? "ssh" : "netlink";
  d.routing = topology_.routing == Routing::kBgp ? "bgp" : "l2";
  if (topology_.switch_control == SwitchControl::kSsh) {
    d.ssh_key = MgmtDir() + "/client_key";
    d.known_hosts = MgmtDir() + "/known_hosts";
  }
  std::map<std::string, size_t> index;
  for (const auto& n : plan_.nodes) {
    index[n.name] = d.nodes.size();
    NodeInfo ni;
    ni.name = n.name;
    ni.netns = n.netns;
    ni.is_switch = n.is_switch;
    ni.ranks = n.is_switch ? 0 : topology_.gpus_per_host;
    if (n.asn != 0) {
      auto peers = BgpPeers(n.name);
      if (!peers.ok()) {
        ni.bgp = "AS " + std::to_string(n.asn) + ": " + peers.status().ToString();
      } else {
        int up = 0;
        std::string list;
        for (const auto& [peer, state] : *peers) {
          if (state == "Established") ++up;
          list += (list.empty() ? "" : ", ") + peer + " " + state;
        }
        ni.bgp = "AS " + std::to_string(n.asn) + ": " + std::to_string(up) + "/" +
                 std::to_string(peers->size()) + " BGP sessions established (" + list + ")";
      }
    }
    d.nodes.push_back(ni);
  }
  auto fill = [](PortInfo& p, const std::string& netns, const std::string& ifname) {
    auto st = injectors::GetLink(netns, ifname);
    if (st.ok()) {
      p.admin_up = st->admin_up;
      p.carrier = st->carrier;
    }
    auto q = injectors::ReadRootQdisc(netns, ifname);
    if (q.ok() && q->kind == "tbf") p.shaped_bps = q->rate_bps;
  };
  for (const auto& l : plan_.links) {
    PortInfo a{l.a_name, l.a_if, l.a_addr, l.b_name, l.spec.rate_bps, 0, false, false, ""};
    PortInfo b{l.b_name, l.b_if, l.b_addr, l.a_name, l.spec.rate_bps, 0, false, false, ""};
    fill(a, l.a_netns, l.a_if);
    fill(b, l.b_netns, l.b_if);
    if (topology_.switch_control == SwitchControl::kSsh) {
      a.sw_port = SonicPortName(l.a_node, l.a_if);
      b.sw_port = SonicPortName(l.b_node, l.b_if);
    }
    if (l.kind == LinkKind::kMgmt) d.nodes[index[l.a_node]].mgmt_addr = l.a_addr;
    d.nodes[index[l.a_node]].ports.push_back(a);
    d.nodes[index[l.b_node]].ports.push_back(b);
  }
  return d;
}

}  // namespace fl::lab
