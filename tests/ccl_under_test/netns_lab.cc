#include "netns_lab.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace fl::ccl::testing {
namespace {

std::vector<char*> Argv(const std::vector<std::string>& argv) {
  std::vector<char*> v;
  for (const auto& a : argv) v.push_back(const_cast<char*>(a.c_str()));
  v.push_back(nullptr);
  return v;
}

std::string Join(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

}  // namespace

Status RunCommand(const std::vector<std::string>& argv, Nanos timeout, std::string* out) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return ErrnoStatus(errno, "pipe");
  pid_t pid = fork();
  if (pid < 0) return ErrnoStatus(errno, "fork");
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    auto v = Argv(argv);
    execvp(v[0], v.data());
    _exit(127);
  }
  close(fds[1]);
  fcntl(fds[0], F_SETFL, O_NONBLOCK);
  std::string text;
  Deadline d = Deadline::After(timeout);
  int status = 0;
  bool exited = false;
  while (!exited) {
    char buf[4096];
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof(buf))) > 0) text.append(buf, static_cast<size_t>(n));
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      exited = true;
      break;
    }
    if (d.Expired()) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      close(fds[0]);
      return DeadlineExceededError("command timed out: " + Join(argv));
    }
    usleep(1000);
  }
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof(buf))) > 0) text.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  if (out) *out = text;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return InternalError("command failed (" + std::to_string(WEXITSTATUS(status)) +
                         "): " + Join(argv) + ": " + text);
  }
  return OkStatus();
}

Status NetnsLab::Ip(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"ip"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, 10 * kNsPerSec);
}

StatusOr<std::unique_ptr<NetnsLab>> NetnsLab::Create(const LabSpec& spec) {
  if (geteuid() != 0) return FailedPreconditionError("the namespace lab needs root");
  static std::atomic<int> counter{0};
  std::string prefix = "flc" + std::to_string(getpid() % 100000) + "x" + std::to_string(counter++);
  std::unique_ptr<NetnsLab> lab(new NetnsLab(spec, prefix));
  Status s = lab->Build();
  if (!s.ok()) return s;  // the destructor removes what was built
  return lab;
}

Status NetnsLab::Build() {
  for (int k = 0; k < spec_.nics; ++k) {
    FL_RETURN_IF_ERROR(Ip({"netns", "add", TorNs(k)}));
    namespaces_.push_back(TorNs(k));
    FL_RETURN_IF_ERROR(Ip({"-n", TorNs(k), "link", "add", "br0", "type", "bridge"}));
    FL_RETURN_IF_ERROR(Ip({"-n", TorNs(k), "link", "set", "br0", "up"}));
  }
  for (int h = 0; h < spec_.hosts; ++h) {
    FL_RETURN_IF_ERROR(Ip({"netns", "add", HostNs(h)}));
    namespaces_.push_back(HostNs(h));
    FL_RETURN_IF_ERROR(Ip({"-n", HostNs(h), "link", "set", "lo", "up"}));
    // Runs on one lab must not inherit each other's TCP state: the kernel caches ssthresh per
    // destination, and every later connection between the same hosts starts from what an
    // earlier run left behind (bench_ftccl's five 2-NIC runs fell from 115 to 100 MB/s, one
    // after the other, in every series).
    FL_RETURN_IF_ERROR(RunCommand(
        {"ip", "netns", "exec", HostNs(h), "sysctl", "-qw", "net.ipv4.tcp_no_metrics_save=1"},
        10 * kNsPerSec));
    for (int k = 0; k < spec_.nics; ++k) {
      std::string port = "h" + std::to_string(h);
      FL_RETURN_IF_ERROR(Ip({"-n", HostNs(h), "link", "add", NicName(k), "type", "veth", "peer",
                             "name", port, "netns", TorNs(k)}));
      FL_RETURN_IF_ERROR(Ip({"-n", TorNs(k), "link", "set", port, "master", "br0"}));
      FL_RETURN_IF_ERROR(Ip({"-n", TorNs(k), "link", "set", port, "up"}));
      FL_RETURN_IF_ERROR(
          Ip({"-n", HostNs(h), "addr", "add", NicAddr(h, k) + "/24", "dev", NicName(k)}));
      FL_RETURN_IF_ERROR(Ip({"-n", HostNs(h), "link", "set", NicName(k), "up"}));
      if (!spec_.rate.empty()) {
        for (auto [ns, dev] : {std::pair{HostNs(h), NicName(k)}, std::pair{TorNs(k), port}}) {
          FL_RETURN_IF_ERROR(
              RunCommand({"tc", "-n", ns, "qdisc", "add", "dev", dev, "root", "tbf", "rate",
                          spec_.rate, "burst", spec_.burst, "latency", "50ms"},
                         10 * kNsPerSec));
        }
      }
    }
  }
  return OkStatus();
}

NetnsLab::~NetnsLab() {
  KillAll();
  for (auto it = namespaces_.rbegin(); it != namespaces_.rend(); ++it) {
    Ip({"netns", "del", *it}).IgnoreError();
  }
}

void NetnsLab::KillAll() {
  for (pid_t p : pids_) kill(p, SIGKILL);
  for (pid_t p : pids_) {
    int st;
    // SIGKILL cannot be ignored; the wait is bounded by the kernel delivering it.
    Deadline d = Deadline::After(5 * kNsPerSec);
    while (waitpid(p, &st, WNOHANG) == 0 && !d.Expired()) usleep(1000);
  }
  pids_.clear();
}

Status NetnsLab::SetNicUp(int h, int k, bool up) {
  return Ip({"-n", HostNs(h), "link", "set", NicName(k), up ? "up" : "down"});
}

Status NetnsLab::SetBlackhole(int h, int k, bool on) {
  return RunCommand({"ip", "netns", "exec", TorNs(k), "bridge", "link", "set", "dev",
                     "h" + std::to_string(h), "state", on ? "0" : "3"},
                    10 * kNsPerSec);
}

StatusOr<uint64_t> NetnsLab::TxBytes(int h, int k) {
  std::string out;
  FL_RETURN_IF_ERROR(RunCommand({"ip", "netns", "exec", HostNs(h), "cat",
                                 "/sys/class/net/" + NicName(k) + "/statistics/tx_bytes"},
                                10 * kNsPerSec, &out));
  return static_cast<uint64_t>(std::strtoull(out.c_str(), nullptr, 10));
}

StatusOr<pid_t> NetnsLab::Spawn(int h, const std::vector<std::string>& argv,
                                const std::string& log_path) {
  std::vector<std::string> full = {"ip", "netns", "exec", HostNs(h)};
  full.insert(full.end(), argv.begin(), argv.end());
  int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus(errno, "open " + log_path);
  pid_t pid = fork();
  if (pid < 0) {
    close(fd);
    return ErrnoStatus(errno, "fork");
  }
  if (pid == 0) {
    dup2(fd, 1);
    dup2(fd, 2);
    auto v = Argv(full);
    execvp(v[0], v.data());
    _exit(127);
  }
  close(fd);
  pids_.push_back(pid);
  return pid;
}

StatusOr<int> NetnsLab::Wait(pid_t pid, Deadline deadline) {
  int st = 0;
  while (true) {
    pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) {
      for (auto it = pids_.begin(); it != pids_.end(); ++it) {
        if (*it == pid) {
          pids_.erase(it);
          break;
        }
      }
      return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    if (deadline.Expired())
      return DeadlineExceededError("process " + std::to_string(pid) + " still running");
    usleep(2000);
  }
}

}  // namespace fl::ccl::testing
