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
#include "harness/lab/switch_shim.h"
#include "injectors/journal.h"
#include "injectors/netlink.h"
#include "injectors/switch/ssh_template/ssh_template_driver.h"
#include "injectors/tc_nft.h"

namespace fl::lab {

using injectors::Port;
using injectors::PortSide;
using injectors::RunChecked;

namespace {

constexpr Nanos kToolTimeout = 5 * kNsPerSec;

Status Ip(const std::string& netns, std::vector<std::string> args) {
  std::vector<std::string> argv = {"ip"};
  if (!netns.empty()) argv.insert(argv.end(), {"-n", netns});
  argv.insert(argv.end(), args.begin(), args.end());
  injectors::CommandOptions o;
  o.timeout = kToolTimeout;
  return RunChecked(argv, o).status();
}

std::string LabsDir() { return injectors::StateDir() + "/labs"; }

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
  if (topology_.switch_control == SwitchControl::kSsh) FL_RETURN_IF_ERROR(ProvisionSwitchMgmt());
  if (bgp) FL_RETURN_IF_ERROR(ProvisionFrr());
  FL_LOG(kInfo, "lab") << "lab " << plan_.lab << " is up: " << topology_.hosts << " hosts, "
                       << plan_.nodes.size() << " namespaces, " << plan_.links.size() << " links";
  return OkStatus();
}

Status LocalLab::Teardown() {
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

// ---- The management plane of `switch_control: ssh` -------------------------------------

namespace {

constexpr const char* kSshKeygen = "/usr/bin/ssh-keygen";
// A switch's daemon (sshd, zebra, bgpd) in its namespace and the lab's cgroup (none: ""),
// in a session of its own, stdin and stdout /dev/null, stderr to log.
StatusOr<pid_t> SpawnSwitchDaemon(std::vector<std::string> argv, const std::string& netns,
                                  const std::string& cgroup, const std::string& log) {
  ProcessSpec spec;
  spec.argv = std::move(argv);
  spec.netns = netns;
  spec.cgroup = cgroup;
  spec.in = {Stdio::kNull, ""};
  spec.out = {Stdio::kNull, ""};
  spec.err = {Stdio::kFile, log};
  spec.new_session = true;
  FL_ASSIGN_OR_RETURN(Process proc, Spawn(spec));
  return proc.pid();
}

constexpr const char* kSshd = "/usr/sbin/sshd";
constexpr Nanos kSshdStartTimeout = 10 * kNsPerSec;

std::string Ip4(const std::string& cidr) { return cidr.substr(0, cidr.find('/')); }

// A word for the shell sshd runs a ForceCommand with ('...', with ' as '\'').
std::string ShellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string RealPath(const std::string& path) {
  char buf[PATH_MAX];
  return realpath(path.c_str(), buf) ? std::string(buf) : std::string();
}

// faultline-switch-shim: $FAULTLINE_SWITCH_SHIM when set (an absolute path; anything else is
// not found), else beside this binary, else in ../bin (tests run from build/tests, the binaries
// are in build/bin). "" when not found.
std::string ShimPath() {
  if (const char* env = std::getenv("FAULTLINE_SWITCH_SHIM"); env && *env)
    return env[0] == '/' && access(env, X_OK) == 0 ? std::string(env) : std::string();
  for (const std::string& c :
       {SelfExeDir() + "/faultline-switch-shim", SelfExeDir() + "/../bin/faultline-switch-shim"})
    if (access(c.c_str(), X_OK) == 0) return RealPath(c);
  return "";
}

// The shipped SONiC preset (the shim speaks its commands), found as any preset is.
std::string SonicPresetPath() {
  auto p = injectors::ResolveSwitchPreset("sonic", "");
  return p.ok() ? *p : "";
}

Status WriteSecret(const std::string& path, const std::string& content) {
  FL_RETURN_IF_ERROR(WriteFileAtomic(path, content));
  if (chmod(path.c_str(), 0600) != 0) return ErrnoStatus(errno, "chmod " + path);
  return OkStatus();
}

// "ssh-ed25519 AAAA..." of an OpenSSH public key file (its comment dropped).
StatusOr<std::string> PublicKey(const std::string& path) {
  FL_ASSIGN_OR_RETURN(std::string text, ReadInputFile(path, InputKind::kCertificate));
  size_t sp = text.find(' ');
  size_t end = sp == std::string::npos ? sp : text.find_first_of(" \n", sp + 1);
  if (sp == std::string::npos) return DataLossError(path + ": not an OpenSSH public key");
  return text.substr(0, end);
}

std::string SpeedName(uint64_t bps) {
  if (bps == 0) return "N/A";
  if (bps % 1000000000ull == 0) return std::to_string(bps / 1000000000ull) + "G";
  return std::to_string(bps / 1000000ull) + "M";
}

// A TCP connect to addr:port from the root namespace (the management network's .254 end).
bool TcpAccepts(const std::string& addr, int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = inet_pton(AF_INET, addr.c_str(), &sa.sin_addr) == 1;
  if (ok && connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
    ok = false;
    if (errno == EINPROGRESS) {
      pollfd p = {fd, POLLOUT, 0};
      int err = 0;
      socklen_t len = sizeof err;
      ok = poll(&p, 1, 200) == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 &&
           err == 0;
    }
  }
  close(fd);
  return ok;
}

std::string Tail(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) return "";
  std::string t = *text;
  if (t.size() > 600) t = "..." + t.substr(t.size() - 600);
  while (!t.empty() && t.back() == '\n') t.pop_back();
  return t;
}

}  // namespace

std::string LocalLab::MgmtDir() const { return LabsDir() + "/" + plan_.lab + ".mgmt"; }

std::string LocalLab::SonicPortName(const std::string& node, const std::string& ifname) const {
  for (const auto& [sonic, ifn] : SwitchPorts(plan_, node))
    if (ifn == ifname) return sonic;
  return "";
}

StatusOr<std::shared_ptr<const injectors::SwitchConn>> LocalLab::SwitchConnOf(
    const std::string& node) const {
  if (topology_.switch_control != SwitchControl::kSsh)
    return FailedPreconditionError("lab " + plan_.lab +
                                   " has switch_control: netlink (no switch management plane)");
  std::lock_guard<std::mutex> lock(sw_mu_);
  if (auto it = sw_cache_.find(node); it != sw_cache_.end()) return it->second;
  const LinkObj* mgmt = nullptr;
  for (const auto& l : plan_.links)
    if (l.kind == LinkKind::kMgmt && l.a_node == node && l.host < 0) mgmt = &l;
  if (!mgmt) return NotFoundError("lab " + plan_.lab + " has no switch '" + node + "'");
  auto conn = std::make_shared<injectors::SwitchConn>();
  conn->name = node;
  conn->driver = "ssh-template";
  conn->address = Ip4(mgmt->a_addr);
  conn->port = 22;
  conn->user = "root";
  conn->key_file = MgmtDir() + "/client_key";
  conn->known_hosts = MgmtDir() + "/known_hosts";
  conn->preset = SonicPresetPath();
  if (conn->preset.empty()) {
    conn->preset = "configs/switches/sonic.yaml (not found)";
  } else {
    auto text = ReadInputFile(conn->preset, InputKind::kSwitchPreset);
    if (text.ok()) conn->preset_text = *text;
  }
  sw_cache_[node] = conn;
  return std::shared_ptr<const injectors::SwitchConn>(conn);
}

Status LocalLab::ProvisionSwitchMgmt() {
  const std::string dir = MgmtDir();
  const std::string shim = ShimPath();
  if (shim.empty())
    return FailedPreconditionError(
        "switch_control: ssh needs faultline-switch-shim beside this program, or an "
        "executable absolute path in $FAULTLINE_SWITCH_SHIM");
  for (const char* tool : {kSshKeygen, kSshd})
    if (access(tool, X_OK) != 0)
      return FailedPreconditionError(std::string("switch_control: ssh needs ") + tool +
                                     " (Debian: openssh-client, openssh-server)");
  if (dir.find_first_of("\"'\\ \t\n") != std::string::npos)
    return FailedPreconditionError(
        "switch_control: ssh needs a state directory without blanks "
        "or quotes (sshd's configuration): " +
        dir);
  FL_RETURN_IF_ERROR(MakeDirs(dir + "/switches", 0700));
  if (chmod(dir.c_str(), 0700) != 0) return ErrnoStatus(errno, "chmod " + dir);
  injectors::CommandOptions o;
  o.timeout = kToolTimeout;
  for (const char* key : {"client_key", "host_key"})
    FL_RETURN_IF_ERROR(RunChecked({kSshKeygen, "-q", "-t", "ed25519", "-N", "", "-C",
                                   "faultline-lab-" + plan_.lab + "-" + key, "-f", dir + "/" + key},
                                  o)
                           .status());
  for (const char* f : {"client_key", "host_key", "client_key.pub", "host_key.pub"})
    if (chmod((dir + "/" + f).c_str(), 0600) != 0) return ErrnoStatus(errno, "chmod " + dir + f);
  FL_ASSIGN_OR_RETURN(std::string client_pub, PublicKey(dir + "/client_key.pub"));
  FL_ASSIGN_OR_RETURN(std::string host_pub, PublicKey(dir + "/host_key.pub"));
  FL_RETURN_IF_ERROR(WriteSecret(dir + "/authorized_keys", client_pub + "\n"));

  std::vector<const LinkObj*> switches;
  for (const auto& l : plan_.links)
    if (l.kind == LinkKind::kMgmt && l.host < 0) switches.push_back(&l);
  std::string known;
  for (const LinkObj* l : switches) known += Ip4(l->a_addr) + " " + host_pub + "\n";
  FL_RETURN_IF_ERROR(WriteSecret(dir + "/known_hosts", known));

  // The privilege-separation directory sshd insists on (Debian's is /run/sshd).
  if (access("/run/sshd", F_OK) != 0 && mkdir("/run/sshd", 0755) != 0 && errno != EEXIST)
    return ErrnoStatus(errno, "mkdir /run/sshd");
  // In the lab's cgroup when there is one to be had, so that Teardown's cgroup.kill ends them;
  // without it the namespace sweep still does.
  std::string cgroup = CgroupDir() + "/sshd";
  if (Status cg = MakeDirs(cgroup); !cg.ok()) {
    FL_LOG(kWarn, "lab") << "lab " << plan_.lab
                         << ": switch sshd outside a cgroup: " << cg.ToString();
    cgroup.clear();
  }

  for (const LinkObj* l : switches) {
    const std::string& sw = l->a_node;
    std::vector<ShimPort> ports;
    for (const auto& [sonic, ifname] : SwitchPorts(plan_, sw)) {
      ShimPort p{sonic, ifname, "N/A", topology_.link.mtu};
      for (const auto& k : plan_.links)
        if ((k.b_node == sw && k.b_if == ifname) || (k.a_node == sw && k.a_if == ifname))
          p.speed = SpeedName(k.spec.rate_bps);
      ports.push_back(p);
    }
    const std::string state = dir + "/switches/" + sw + ".json";
    FL_RETURN_IF_ERROR(WriteSecret(state, ShimStateJson(sw, ports)));
    const std::string conf = dir + "/sshd-" + sw + ".conf";
    std::string c;
    c += "# faultline lab " + plan_.lab + ", switch " + sw + " (generated; removed at teardown)\n";
    c += "ListenAddress " + Ip4(l->a_addr) + ":22\n";
    c += "HostKey " + dir + "/host_key\n";
    c += "AuthorizedKeysFile " + dir + "/authorized_keys\n";
    c += "PidFile none\n";
    c += "PermitRootLogin prohibit-password\nAllowUsers root\n";
    c += "AuthenticationMethods publickey\nPubkeyAuthentication yes\n";
    c += "PasswordAuthentication no\nKbdInteractiveAuthentication no\n";
    c += "HostbasedAuthentication no\nUsePAM no\n";
    // The state directory may be under /tmp (tests): sshd's ownership walk up to / would
    // refuse it; the lab's files are 0600 in a 0700 directory of root's.
    c += "StrictModes no\n";
    c += "X11Forwarding no\nAllowAgentForwarding no\nAllowTcpForwarding no\n";
    c += "AllowStreamLocalForwarding no\nPermitTunnel no\nPermitTTY no\n";
    c += "PermitUserEnvironment no\nPrintMotd no\nPrintLastLog no\nUseDNS no\n";
    c += "LogLevel INFO\n";
    // The ForceCommand runs through root's login shell, and bash run by sshd reads ~/.bashrc:
    // a HOME of the lab's own keeps the shim's output and speed free of root's dotfiles.
    c += "SetEnv \"HOME=" + dir + "\"\n";
    c += "ForceCommand " + ShellQuote(shim) + " --switch " + sw + " --state " + ShellQuote(state) +
         "\n";
    FL_RETURN_IF_ERROR(WriteSecret(conf, c));
    FL_RETURN_IF_ERROR(
        Status(RunChecked({kSshd, "-t", "-f", conf}, o).status()).Prepend("sshd -t"));

    FL_ASSIGN_OR_RETURN(pid_t pid, SpawnSwitchDaemon({kSshd, "-D", "-e", "-f", conf}, l->a_netns,
                                                     cgroup, dir + "/sshd-" + sw + ".log"));
    sshd_pids_.push_back(pid);
  }
  // Every sshd accepts before the lab counts as up.
  Deadline deadline = Deadline::After(kSshdStartTimeout);
  for (size_t i = 0; i < switches.size(); ++i) {
    const std::string addr = Ip4(switches[i]->a_addr);
    const std::string& sw = switches[i]->a_node;
    // First its own word that it listens (sshd -e logs "Server listening on ..."), then a
    // connect from the root namespace. A veth that just came up drops what it is given until
    // the kernel's linkwatch activates its queue (up to a second later); the first ARP request
    // is lost that way, and the kernel would hold every later SYN to that address until its
    // next ARP retry, another second: a connect that fails flushes the neighbour entry so that
    // the next one asks again at once.
    const std::string log = dir + "/sshd-" + sw + ".log";
    auto listening = [&] {
      auto text = ReadFile(log);
      return text.ok() && text->find("Server listening") != std::string::npos;
    };
    bool up = WaitUntil(
        [&] {
          if (!ProcessAlive(sshd_pids_[i])) return true;
          if (!listening()) return false;
          if (TcpAccepts(addr, 22)) return true;
          // A stale neighbour entry only slows the probe; the wait retries and has a deadline.
          Ip("", {"neigh", "flush", "to", addr, "dev", plan_.root_mgmt_if}).IgnoreError();
          return false;
        },
        deadline, 5 * kNsPerMs);
    if (!ProcessAlive(sshd_pids_[i]))
      return UnavailableError("sshd of switch " + sw +
                              " exited: " + Tail(dir + "/sshd-" + sw + ".log"));
    if (!up)
      return DeadlineExceededError("sshd of switch " + sw + " does not accept on " + addr +
                                   ":22 after " + FormatDuration(kSshdStartTimeout));
  }
  FL_LOG(kInfo, "lab") << "lab " << plan_.lab << ": sshd up on " << switches.size()
                       << " switches (keys in " << dir << ")";
  return OkStatus();
}

}  // namespace fl::lab

// ---- routing: bgp: FRR (zebra + bgpd) in every ToR and spine ---------------------------

namespace fl::lab {

namespace {

constexpr const char* kZebra = "/usr/lib/frr/zebra";
constexpr const char* kBgpd = "/usr/lib/frr/bgpd";
constexpr const char* kVtysh = "/usr/bin/vtysh";
constexpr Nanos kBgpUpTimeout = 30 * kNsPerSec;

}  // namespace

// Reads RTM_NEWROUTE / RTM_DELROUTE (group RTMGRP_IPV4_ROUTE) from a socket in each switch's
// namespace on a thread of its own and keeps them until TakeEvents.
class LocalLab::RouteMonitor {
 public:
  static StatusOr<std::shared_ptr<RouteMonitor>> Start(
      const std::vector<std::pair<std::string, std::string>>& switches) {
    auto m = std::shared_ptr<RouteMonitor>(new RouteMonitor());
    for (const auto& sw : switches) {
      const std::string& name = sw.first;
      const std::string& netns = sw.second;  // a plain name: lambdas cannot capture bindings
      int fd = -1;
      FL_RETURN_IF_ERROR(injectors::RunInNetns(netns, [&]() -> Status {
        fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
        if (fd < 0) return ErrnoStatus(errno, "netlink socket");
        sockaddr_nl sa{};
        sa.nl_family = AF_NETLINK;
        sa.nl_groups = RTMGRP_IPV4_ROUTE;
        if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) {
          const int e = errno;
          close(fd);
          return ErrnoStatus(e, "netlink bind in " + netns);
        }
        return OkStatus();
      }));
      m->fds_.push_back({fd, name});
    }
    m->thread_ = std::thread([raw = m.get()] { raw->Run(); });
    return m;
  }
  ~RouteMonitor() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    for (const auto& [fd, name] : fds_) close(fd);
  }
  std::vector<Lab::LabEvent> Take() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::exchange(events_, {});
  }

 private:
  RouteMonitor() = default;
  void Run() {
    std::vector<pollfd> pfds;
    for (const auto& [fd, name] : fds_) pfds.push_back({fd, POLLIN, 0});
    std::vector<char> buf(1 << 16);
    while (!stop_) {
      if (poll(pfds.data(), pfds.size(), 50) <= 0) continue;
      for (size_t i = 0; i < pfds.size(); ++i) {
        if (!(pfds[i].revents & POLLIN)) continue;
        ssize_t n;
        while ((n = recv(pfds[i].fd, buf.data(), buf.size(), 0)) > 0)
          Parse(fds_[i].second, buf.data(), n);
      }
    }
  }
  void Parse(const std::string& sw, char* data, ssize_t n) {
    const Nanos now = WallNowNs();
    int len = static_cast<int>(n);
    for (auto* h = reinterpret_cast<nlmsghdr*>(data); NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
      if (h->nlmsg_type != RTM_NEWROUTE && h->nlmsg_type != RTM_DELROUTE) continue;
      auto* rt = static_cast<rtmsg*>(NLMSG_DATA(h));
      if (rt->rtm_family != AF_INET || rt->rtm_table != RT_TABLE_MAIN) continue;
      nlohmann::json d = {{"switch", sw},
                          {"action", h->nlmsg_type == RTM_NEWROUTE ? "add" : "delete"},
                          {"protocol", rt->rtm_protocol == RTPROT_KERNEL ? "kernel" : "bgp"}};
      std::string dst = "0.0.0.0";
      int alen = static_cast<int>(RTM_PAYLOAD(h));
      int nexthops = 0;
      for (rtattr* a = RTM_RTA(rt); RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
        char ip[INET_ADDRSTRLEN] = "";
        if ((a->rta_type == RTA_DST || a->rta_type == RTA_GATEWAY) &&
            RTA_PAYLOAD(a) == sizeof(in_addr))
          inet_ntop(AF_INET, RTA_DATA(a), ip, sizeof ip);
        if (a->rta_type == RTA_DST) dst = ip;
        if (a->rta_type == RTA_GATEWAY) d["gateway"] = ip;
        if (a->rta_type == RTA_NH_ID && RTA_PAYLOAD(a) == sizeof(uint32_t))
          d["nh_id"] = *static_cast<uint32_t*>(RTA_DATA(a));
        if (a->rta_type == RTA_MULTIPATH) {
          int mlen = static_cast<int>(RTA_PAYLOAD(a));
          for (auto* nh = static_cast<rtnexthop*>(RTA_DATA(a)); RTNH_OK(nh, mlen);
               mlen -= NLMSG_ALIGN(nh->rtnh_len), nh = RTNH_NEXT(nh))
            ++nexthops;
        }
        if (a->rta_type == RTA_OIF && RTA_PAYLOAD(a) == sizeof(uint32_t))
          nexthops = std::max(nexthops, 1);
      }
      d["prefix"] = dst + "/" + std::to_string(rt->rtm_dst_len);
      if (nexthops > 0) d["nexthops"] = nexthops;
      std::lock_guard<std::mutex> lock(mu_);
      events_.push_back({now, "route_change", d.dump()});
    }
  }

  std::vector<std::pair<int, std::string>> fds_;  // socket, switch
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mu_;
  std::vector<Lab::LabEvent> events_;
};

std::vector<Lab::LabEvent> LocalLab::TakeEvents() {
  return routes_ ? routes_->Take() : std::vector<LabEvent>{};
}

std::string LocalLab::FrrDir() const { return LabsDir() + "/" + plan_.lab + ".frr"; }

StatusOr<std::string> LocalLab::Vtysh(const std::string& node, const std::string& command) const {
  const NodeObj* n = FindNode(node);
  if (!n || n->asn == 0) return NotFoundError("lab " + plan_.lab + " has no router '" + node + "'");
  injectors::CommandOptions o;
  o.timeout = kToolTimeout;
  return RunChecked({"ip", "netns", "exec", n->netns, kVtysh, "--vty_socket", FrrDir() + "/" + node,
                     "-c", command},
                    o);
}

StatusOr<std::vector<std::pair<std::string, std::string>>> LocalLab::BgpPeers(
    const std::string& node) const {
  FL_ASSIGN_OR_RETURN(std::string out, Vtysh(node, "show bgp summary json"));
  nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
  if (j.is_discarded()) return InternalError("vtysh on " + node + ": not JSON: " + out);
  std::vector<std::pair<std::string, std::string>> peers;
  if (j.contains("ipv4Unicast") && j["ipv4Unicast"].contains("peers"))
    for (const auto& [addr, p] : j["ipv4Unicast"]["peers"].items())
      peers.push_back({p.value("desc", p.value("hostname", addr)), p.value("state", "?")});
  return peers;
}

Status LocalLab::ProvisionFrr() {
  if (access(kZebra, X_OK) != 0 || access(kBgpd, X_OK) != 0 || access(kVtysh, X_OK) != 0)
    return FailedPreconditionError(
        "routing: bgp needs Debian's frr (zebra, bgpd, vtysh): apt-get install frr "
        "(scripts/setup.sh installs it)");
  const std::string dir = FrrDir();
  FL_RETURN_IF_ERROR(MakeDirs(dir, 0700));
  // Both daemons in the lab's cgroup (Teardown's cgroup.kill ends them with the containers;
  // without a cgroup the namespace sweep still does).
  std::string cgroup = CgroupDir() + "/frr";
  if (Status cg = MakeDirs(cgroup); !cg.ok()) {
    FL_LOG(kWarn, "lab") << "lab " << plan_.lab << ": FRR outside a cgroup: " << cg.ToString();
    cgroup.clear();
  }
  std::vector<const NodeObj*> routers;
  for (const auto& n : plan_.nodes)
    if (n.asn != 0) routers.push_back(&n);
  injectors::CommandOptions o;
  o.timeout = kToolTimeout;
  for (const NodeObj* n : routers) {
    // Forwarding, and ECMP hashed on L4 ports so that flows spread over the spines.
    FL_RETURN_IF_ERROR(RunChecked({"ip", "netns", "exec", n->netns, "sysctl", "-q", "-w",
                                   "net.ipv4.ip_forward=1", "net.ipv4.fib_multipath_hash_policy=1"},
                                  o)
                           .status());
    const std::string sw = dir + "/" + n->name;
    FL_RETURN_IF_ERROR(MakeDirs(sw, 0700));
    const std::string conf = sw + "/frr.conf";
    FL_RETURN_IF_ERROR(WriteFileAtomic(conf, FrrConfig(plan_, n->name)));
    for (const char* daemon : {kZebra, kBgpd}) {
      const std::string d = std::filesystem::path(daemon).filename();
      // Root in FRR's vty group (its vty sockets need one); every path in the switch's own
      // directory, so that labs and the host's own FRR do not meet.
      FL_ASSIGN_OR_RETURN(const pid_t pid,
                          SpawnSwitchDaemon({daemon, "-u", "root", "-g", "frrvty", "-f", conf, "-i",
                                             sw + "/" + d + ".pid", "-z", sw + "/zserv.api",
                                             "--vty_socket", sw, "-A", "127.0.0.1", "-P", "0",
                                             "--log", "file:" + sw + "/" + d + ".log"},
                                            n->netns, cgroup, sw + "/" + d + ".out"));
      frr_pids_.push_back(pid);
      // bgpd connects to zebra's socket: zebra first.
      if (daemon == kZebra) {
        const std::string zsock = sw + "/zserv.api";
        WaitUntil([&] { return access(zsock.c_str(), F_OK) == 0 || !ProcessAlive(pid); },
                  Deadline::After(5 * kNsPerSec), 5 * kNsPerMs);
        if (!ProcessAlive(pid))
          return UnavailableError("zebra of switch " + n->name +
                                  " exited: " + Tail(sw + "/zebra.out"));
      }
    }
  }
  // Every session established before the lab counts as up.
  Deadline deadline = Deadline::After(kBgpUpTimeout);
  for (const NodeObj* n : routers) {
    std::string last;
    bool up = WaitUntil(
        [&] {
          auto peers = BgpPeers(n->name);
          if (!peers.ok()) {
            last = peers.status().ToString();
            return false;
          }
          last.clear();
          for (const auto& [peer, state] : *peers)
            if (state != "Established") last += (last.empty() ? "" : ", ") + peer + " " + state;
          return !peers->empty() && last.empty();
        },
        deadline, 100 * kNsPerMs);
    if (!up)
      return DeadlineExceededError("BGP of switch " + n->name + " not established after " +
                                   FormatDuration(kBgpUpTimeout) + ": " + last);
  }
  // And every ToR's kernel has a route to each other ToR's subnet through every spine (an
  // established session has not yet exchanged its routes).
  std::string missing;
  bool converged = WaitUntil(
      [&] {
        missing.clear();
        for (const NodeObj* n : routers) {
          if (n->addr.empty()) continue;
          auto out = RunChecked({"ip", "-n", n->netns, "-j", "route", "show", "proto", "bgp"}, o);
          nlohmann::json j = out.ok() ? nlohmann::json::parse(*out, nullptr, false) : nullptr;
          std::map<std::string, size_t> paths;
          if (j.is_array())
            for (const auto& r : j)
              paths[r.value("dst", "")] = r.contains("nexthops") ? r["nexthops"].size() : 1;
          for (const NodeObj* m : routers) {
            if (m == n || m->addr.empty()) continue;
            const std::string ip = m->addr.substr(0, m->addr.find('/'));
            const std::string dst = ip.substr(0, ip.rfind('.')) + ".0/24";
            if (paths[dst] != static_cast<size_t>(topology_.spines))
              missing += (missing.empty() ? "" : ", ") + n->name + " to " + dst;
          }
        }
        return missing.empty();
      },
      deadline, 50 * kNsPerMs);
  if (!converged)
    return DeadlineExceededError("BGP routes not converged after " + FormatDuration(kBgpUpTimeout) +
                                 ": no ECMP route from " + missing);
  // From here on, every route change of a switch is an event (TakeEvents).
  std::vector<std::pair<std::string, std::string>> watched;
  for (const NodeObj* n : routers) watched.push_back({n->name, n->netns});
  FL_ASSIGN_OR_RETURN(routes_, RouteMonitor::Start(watched));
  FL_LOG(kInfo, "lab") << "lab " << plan_.lab << ": FRR up on " << routers.size()
                       << " switches, every BGP session established, ECMP routes in place (" << dir
                       << ")";
  return OkStatus();
}

}  // namespace fl::lab
