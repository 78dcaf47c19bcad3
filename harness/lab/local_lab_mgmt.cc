// LocalLab's management plane for `switch_control: ssh`: per switch an sshd in its namespace,
// the SONiC-like shim behind it, keys and known_hosts, and the SwitchConn a driver dials.
#include "harness/lab/local_lab.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <utility>

#include "common/file_util.h"
#include "common/input_file.h"
#include "common/json_util.h"
#include "common/log.h"
#include "common/process.h"
#include "common/units.h"
#include "harness/lab/local_lab_internal.h"
#include "harness/lab/switch_shim.h"
#include "injectors/switch/ssh_template/ssh_template_driver.h"

namespace fl::lab {

using injectors::RunChecked;
using local_internal::Ip;
using local_internal::kToolTimeout;
using local_internal::LabsDir;
using local_internal::SpawnSwitchDaemon;
using local_internal::Tail;

namespace {

constexpr const char* kSshKeygen = "/usr/bin/ssh-keygen";

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

}  // namespace

namespace local_internal {

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

std::string Tail(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) return "";
  std::string t = *text;
  if (t.size() > 600) t = "..." + t.substr(t.size() - 600);
  while (!t.empty() && t.back() == '\n') t.pop_back();
  return t;
}

}  // namespace local_internal

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
