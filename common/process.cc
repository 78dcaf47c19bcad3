#include "common/process.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <utility>

#include "common/enum_names.h"
#include "common/file_util.h"
#include "common/name_chars.h"
#include "common/unique_fd.h"

extern char** environ;

namespace fl {
namespace {

using Fd = UniqueFd;

// The descriptor moved to >= 3 so that dup2 onto 0..2 in the child never clobbers a source.
Status Above2(Fd& fd, const char* what) {
  if (fd.get() < 0 || fd.get() > 2) return OkStatus();
  int n = fcntl(fd.get(), F_DUPFD_CLOEXEC, 3);
  if (n < 0) return ErrnoStatus(errno, what);
  fd = Fd(n);
  return OkStatus();
}

std::string JoinArgv(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

bool IsExecutableFile(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

// What the child reports over the error pipe when it cannot reach execve.
enum ChildStage : int {
  kStageSession = 1,
  kStageCgroup,
  kStageNetns,
  kStageMount,
  kStageStdio,
  kStageCwd,
  kStageExec,
};

constexpr NamedValue<int> kStageNames[] = {{kStageSession, "setsid/setpgid"},
                                           {kStageCgroup, "join cgroup"},
                                           {kStageNetns, "enter network namespace"},
                                           {kStageMount, "mount /proc"},
                                           {kStageStdio, "redirect stdio"},
                                           {kStageCwd, "chdir"},
                                           {kStageExec, "execve"}};

const char* StageName(int stage) { return NameIn(kStageNames, stage, "start").data(); }

// Everything the child needs, prepared before the clone: the child touches only this.
struct ChildPlan {
  const char* path = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  const char* cwd = nullptr;
  int stdio[3] = {-1, -1, -1};  // -1: inherit
  int netns_fd = -1;
  int cgroup_fd = -1;  // only used when clone3 is unavailable (fork fallback)
  bool cgroup_via_clone = false;
  bool new_session = false;
  bool new_process_group = false;
  bool container = false;
  int report_fd = -1;  // CLOEXEC write end: closed by a successful execve
};

[[noreturn]] void ChildFail(const ChildPlan& p, int stage) {
  int msg[2] = {stage, errno};
  ssize_t w = write(p.report_fd, msg, sizeof msg);
  (void)w;
  _exit(127);
}

// Runs in the child between clone and execve: async-signal-safe calls only.
[[noreturn]] void ChildMain(const ChildPlan& p) {
  // Default dispositions (a handler or SIG_IGN of ours must not reach the program), then
  // unblock what Spawn blocked around the clone.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int s = 1; s < NSIG; ++s)
    if (s != SIGKILL && s != SIGSTOP) sigaction(s, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  if (p.new_session) {
    if (setsid() < 0) ChildFail(p, kStageSession);
  } else if (p.new_process_group) {
    if (setpgid(0, 0) != 0) ChildFail(p, kStageSession);
  }
  if (p.cgroup_fd >= 0 && !p.cgroup_via_clone) {
    int fd = openat(p.cgroup_fd, "cgroup.procs", O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, "0", 1) != 1) ChildFail(p, kStageCgroup);
    close(fd);
  }
  if (p.netns_fd >= 0 && setns(p.netns_fd, CLONE_NEWNET) != 0) ChildFail(p, kStageNetns);
  if (p.container) {
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) ChildFail(p, kStageMount);
    if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0)
      ChildFail(p, kStageMount);
  }
  for (int i = 0; i < 3; ++i)
    if (p.stdio[i] >= 0 && dup2(p.stdio[i], i) < 0) ChildFail(p, kStageStdio);
  if (p.cwd && chdir(p.cwd) != 0) ChildFail(p, kStageCwd);
  // Descriptors some library opened without O_CLOEXEC must not leak into the program.
  syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
  execve(p.path, p.argv, p.envp);
  ChildFail(p, kStageExec);
}

// clone3 (so the child starts inside its cgroup); fork when the kernel has no clone3.
long CloneChild(ChildPlan& plan, bool container, int cgroup_fd) {
  clone_args args{};
  args.flags = container ? (CLONE_NEWPID | CLONE_NEWNS) : 0;
  if (cgroup_fd >= 0) {
    args.flags |= CLONE_INTO_CGROUP;
    args.cgroup = static_cast<uint64_t>(cgroup_fd);
  }
  args.exit_signal = SIGCHLD;
  plan.cgroup_via_clone = cgroup_fd >= 0;
  long pid = syscall(SYS_clone3, &args, sizeof args);
  if (pid == 0) ChildMain(plan);
  if (pid >= 0 || errno != ENOSYS || container) return pid;
  plan.cgroup_via_clone = false;  // the child joins through cgroup.procs
  pid = fork();
  if (pid == 0) ChildMain(plan);
  return pid;
}

bool OnAllowList(std::string_view name) {
  static constexpr std::string_view kNames[] = {"HOME", "USER", "LOGNAME", "LANG",
                                                "TZ",   "TERM", "TMPDIR",  "CUDA_VISIBLE_DEVICES"};
  static constexpr std::string_view kPrefixes[] = {"LC_", "FAULTLINE_", "FTCCL_", "NCCL_", "FL_"};
  for (auto n : kNames)
    if (name == n) return true;
  for (auto p : kPrefixes)
    if (name.substr(0, p.size()) == p) return true;
  return false;
}

// LD_LIBRARY_PATH without relative or empty entries (those mean the working directory).
std::string AbsoluteEntries(std::string_view list) {
  std::string kept;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(':', start);
    if (end == std::string_view::npos) end = list.size();
    std::string_view e = list.substr(start, end - start);
    if (!e.empty() && e[0] == '/') kept += (kept.empty() ? "" : ":") + std::string(e);
    start = end + 1;
  }
  return kept;
}

}  // namespace

bool IsSafeName(std::string_view name, size_t max_len) {
  return IsNameOf(name, max_len, "_.-") && name[0] != '-' && name[0] != '.';
}

const std::vector<std::string>& ToolDirs() {
  static const std::vector<std::string> dirs = [] {
    std::vector<std::string> d = {"/usr/sbin", "/usr/bin", "/sbin", "/bin"};
    std::string self = SelfExeDir();
    if (!self.empty() && self[0] == '/') d.push_back(self);
    return d;
  }();
  return dirs;
}

StatusOr<std::string> ResolveTool(std::string_view name) {
  if (name.empty()) return InvalidArgumentError("empty program name");
  std::string n(name);
  if (n.find('/') != std::string::npos) {
    if (n[0] != '/')
      return InvalidArgumentError("program '" + n +
                                  "': a relative path is not allowed (give an absolute one)");
    if (!IsExecutableFile(n)) return NotFoundError("program " + n + " is not an executable file");
    return n;
  }
  static std::mutex mu;
  static std::unordered_map<std::string, std::string> cache;
  {
    std::lock_guard<std::mutex> l(mu);
    auto it = cache.find(n);
    if (it != cache.end()) return it->second;
  }
  std::string searched;
  for (const auto& dir : ToolDirs()) {
    std::string p = dir + "/" + n;
    if (IsExecutableFile(p)) {
      std::lock_guard<std::mutex> l(mu);
      cache.emplace(n, p);
      return p;
    }
    searched += (searched.empty() ? "" : ", ") + dir;
  }
  return NotFoundError("program '" + n + "' not found in " + searched);
}

std::vector<std::string> CleanEnvironment(const std::vector<std::string>& extra) {
  std::vector<std::string> env = {std::string("PATH=") + kChildPath};
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    size_t eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view key = kv.substr(0, eq);
    if (key == "LD_LIBRARY_PATH") {
      std::string kept = AbsoluteEntries(kv.substr(eq + 1));
      if (!kept.empty()) env.push_back("LD_LIBRARY_PATH=" + kept);
    } else if (OnAllowList(key)) {
      env.emplace_back(kv);
    }
  }
  for (const auto& x : extra) {
    std::string key = x.substr(0, x.find('='));
    auto it = std::find_if(env.begin(), env.end(),
                           [&](const std::string& e) { return e.substr(0, e.find('=')) == key; });
    if (it != env.end())
      *it = x;
    else
      env.push_back(x);
  }
  return env;
}

Process::Process(Process&& o) noexcept
    : pid_(std::exchange(o.pid_, -1)),
      start_time_(o.start_time_),
      in_(std::exchange(o.in_, -1)),
      out_(std::exchange(o.out_, -1)),
      err_(std::exchange(o.err_, -1)) {}

Process& Process::operator=(Process&& o) noexcept {
  if (this != &o) {
    this->~Process();
    pid_ = std::exchange(o.pid_, -1);
    start_time_ = o.start_time_;
    in_ = std::exchange(o.in_, -1);
    out_ = std::exchange(o.out_, -1);
    err_ = std::exchange(o.err_, -1);
  }
  return *this;
}

Process::~Process() {
  for (int* fd : {&in_, &out_, &err_}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
}

int Process::ReleaseStdin() { return std::exchange(in_, -1); }

void Process::CloseStdin() {
  if (in_ >= 0) close(in_);
  in_ = -1;
}

StatusOr<Process> Spawn(const ProcessSpec& spec) {
  if (spec.argv.empty()) return InvalidArgumentError("Spawn: empty argv");
  FL_ASSIGN_OR_RETURN(std::string path, ResolveTool(spec.argv[0]));
  const std::string what = JoinArgv(spec.argv);

  Fd netns_fd, cgroup_fd;
  if (!spec.netns.empty()) {
    if (!IsSafeName(spec.netns))
      return InvalidArgumentError("bad network namespace name '" + spec.netns + "'");
    std::string p = "/run/netns/" + spec.netns;
    netns_fd = Fd(open(p.c_str(), O_RDONLY | O_CLOEXEC));
    if (netns_fd.get() < 0) return ErrnoStatus(errno, "cannot open network namespace " + p);
  }
  if (!spec.cgroup.empty()) {
    if (spec.cgroup[0] != '/')
      return InvalidArgumentError("cgroup '" + spec.cgroup + "' is not an absolute path");
    cgroup_fd = Fd(open(spec.cgroup.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (cgroup_fd.get() < 0) return ErrnoStatus(errno, "cannot open cgroup " + spec.cgroup);
  }

  // Child ends of stdio (closed here after the clone) and our ends (kept in Process).
  Fd child_end[3], our_end[3];
  const Redirect* redirects[3] = {&spec.in, &spec.out, &spec.err};
  for (int i = 0; i < 3; ++i) {
    const Redirect& r = *redirects[i];
    switch (r.kind) {
      case Stdio::kInherit:
        break;
      case Stdio::kNull:
        child_end[i] = Fd(open("/dev/null", (i == 0 ? O_RDONLY : O_WRONLY) | O_CLOEXEC));
        if (child_end[i].get() < 0) return ErrnoStatus(errno, "open /dev/null");
        break;
      case Stdio::kFile:
        child_end[i] =
            Fd(i == 0 ? open(r.path.c_str(), O_RDONLY | O_CLOEXEC)
                      : open(r.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
        if (child_end[i].get() < 0)
          return FailedPreconditionError("cannot open " + r.path + " for " + what + ": " +
                                         std::strerror(errno));
        break;
      case Stdio::kPipe: {
        int p[2];
        if (pipe2(p, O_CLOEXEC) != 0) return ErrnoStatus(errno, "pipe");
        Fd rd(p[0]), wr(p[1]);
        child_end[i] = i == 0 ? std::move(rd) : std::move(wr);
        our_end[i] = i == 0 ? std::move(wr) : std::move(rd);
        break;
      }
    }
    FL_RETURN_IF_ERROR(Above2(child_end[i], "fcntl"));
  }
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) return ErrnoStatus(errno, "pipe");
  Fd report_r(report[0]), report_w(report[1]);
  FL_RETURN_IF_ERROR(Above2(report_w, "fcntl"));

  std::vector<char*> argv;
  std::vector<std::string> argv_store = spec.argv;
  for (auto& a : argv_store) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_store = spec.env.empty() ? CleanEnvironment() : spec.env;
  std::vector<char*> envp;
  for (auto& e : env_store) envp.push_back(e.data());
  envp.push_back(nullptr);

  ChildPlan plan;
  plan.path = path.c_str();
  plan.argv = argv.data();
  plan.envp = envp.data();
  plan.cwd = spec.cwd.empty() ? nullptr : spec.cwd.c_str();
  for (int i = 0; i < 3; ++i) plan.stdio[i] = child_end[i].get();
  plan.netns_fd = netns_fd.get();
  plan.cgroup_fd = cgroup_fd.get();
  plan.new_session = spec.new_session;
  plan.new_process_group = spec.new_process_group;
  plan.container = spec.container;
  plan.report_fd = report_w.get();

  // Signals stay blocked from before the clone until the child has reset their handlers.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  long pid = CloneChild(plan, spec.container, cgroup_fd.get());
  int clone_errno = errno;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0) return ErrnoStatus(clone_errno, "cannot start " + what);

  report_w.Reset();
  for (auto& fd : child_end) fd.Reset();
  int msg[2] = {0, 0};
  ssize_t n;
  do {
    n = read(report_r.get(), msg, sizeof msg);
  } while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(sizeof msg)) {
    int status;
    while (waitpid(static_cast<pid_t>(pid), &status, 0) < 0 && errno == EINTR) {
    }
    std::string why =
        std::string("cannot ") + StageName(msg[0]) + " for " + what + ": " + std::strerror(msg[1]);
    if (msg[0] == kStageExec && (msg[1] == ENOENT || msg[1] == EACCES)) return NotFoundError(why);
    return FailedPreconditionError(why);
  }
  Process proc;
  proc.pid_ = static_cast<int>(pid);
  proc.start_time_ = ProcessStartTime(proc.pid_);
  proc.in_ = our_end[0].Release();
  proc.out_ = our_end[1].Release();
  proc.err_ = our_end[2].Release();
  return proc;
}

StatusOr<ExitStatus> WaitExit(int pid, Deadline deadline) {
  if (pid <= 0) return InvalidArgumentError("WaitExit: bad pid " + std::to_string(pid));
  Fd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  while (true) {
    int status = 0;
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) {
      ExitStatus e;
      if (WIFEXITED(status)) e.exit_code = WEXITSTATUS(status);
      if (WIFSIGNALED(status)) e.term_signal = WTERMSIG(status);
      return e;
    }
    if (w < 0 && errno != EINTR) return ErrnoStatus(errno, "waitpid " + std::to_string(pid));
    if (deadline.Expired())
      return DeadlineExceededError("process " + std::to_string(pid) + " still running");
    if (pidfd.get() >= 0) {
      pollfd p = {pidfd.get(), POLLIN, 0};
      poll(&p, 1, std::min(deadline.RemainingMsForPoll(), 1000));
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
}

ExitStatus Stop(int pid, Nanos grace, bool group) {
  auto done = WaitExit(pid, Deadline::After(0));
  if (done.ok()) return *done;
  kill(group ? -pid : pid, SIGTERM);
  done = WaitExit(pid, Deadline::After(grace));
  if (done.ok()) return *done;
  kill(group ? -pid : pid, SIGKILL);
  done = WaitExit(pid, Deadline::After(10 * kNsPerSec));
  return done.ok() ? *done : ExitStatus{};
}

StatusOr<RunResult> Run(const std::vector<std::string>& argv, const RunOptions& options) {
  ProcessSpec spec;
  spec.argv = argv;
  spec.env = options.env;
  spec.cwd = options.cwd;
  spec.netns = options.netns;
  spec.new_process_group = true;  // the deadline ends whatever the command started too
  spec.in.kind = options.stdin_data.empty() ? Stdio::kNull : Stdio::kPipe;
  spec.out.kind = Stdio::kPipe;
  spec.err.kind = Stdio::kPipe;
  Deadline deadline = Deadline::After(options.timeout);
  FL_ASSIGN_OR_RETURN(Process proc, Spawn(spec));
  const int pid = proc.pid();

  Fd in_w(proc.ReleaseStdin());
  if (in_w.get() >= 0) fcntl(in_w.get(), F_SETFL, O_NONBLOCK);
  RunResult result;
  size_t written = 0;
  bool out_open = true, err_open = true, timed_out = false;
  while (out_open || err_open) {
    pollfd fds[3];
    int n = 0, out_i = -1, err_i = -1, in_i = -1;
    if (out_open) {
      fds[n] = {proc.stdout_fd(), POLLIN, 0};
      out_i = n++;
    }
    if (err_open) {
      fds[n] = {proc.stderr_fd(), POLLIN, 0};
      err_i = n++;
    }
    if (in_w.get() >= 0) {
      fds[n] = {in_w.get(), POLLOUT, 0};
      in_i = n++;
    }
    if (deadline.Expired()) {
      timed_out = true;
      break;
    }
    int rc = poll(fds, n, deadline.RemainingMsForPoll());
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) break;
    char buf[8192];
    auto drain = [&](int i, int fd, std::string& into, bool& open) {
      if (i < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) return;
      ssize_t r = read(fd, buf, sizeof buf);
      if (r > 0)
        into.append(buf, static_cast<size_t>(r));
      else if (r == 0 || errno != EINTR)
        open = false;
    };
    drain(out_i, proc.stdout_fd(), result.out, out_open);
    drain(err_i, proc.stderr_fd(), result.err, err_open);
    if (in_i >= 0 && (fds[in_i].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t w = write(in_w.get(), options.stdin_data.data() + written,
                        options.stdin_data.size() - written);
      if (w > 0) written += static_cast<size_t>(w);
      if ((w < 0 && errno != EAGAIN && errno != EINTR) || written == options.stdin_data.size())
        in_w.Reset();
    }
  }
  in_w.Reset();
  StatusOr<ExitStatus> exit = DeadlineExceededError("");
  if (!timed_out) exit = WaitExit(pid, deadline);
  if (!exit.ok()) {
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    // Only reaps the killed child; the timeout is what this call reports either way.
    WaitExit(pid, Deadline::After(10 * kNsPerSec)).status().IgnoreError();
    return DeadlineExceededError(JoinArgv(argv) + ": timed out after " +
                                 std::to_string(options.timeout / kNsPerMs) + " ms");
  }
  result.exit_code = exit->exit_code;
  result.term_signal = exit->term_signal;
  return result;
}

unsigned long long ProcessStartTime(int pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto close_paren = s.rfind(')');
  if (close_paren == std::string::npos || close_paren + 2 > s.size()) return 0;
  std::istringstream rest(s.substr(close_paren + 2));
  std::string field;
  // Fields after the command start at field 3 (state); start time is field 22.
  for (int i = 3; i <= 22; ++i) {
    if (!(rest >> field)) return 0;
  }
  return std::strtoull(field.c_str(), nullptr, 10);
}

bool ProcessAlive(int pid, unsigned long long start_time) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto close_paren = s.rfind(')');
  if (close_paren == std::string::npos) return false;
  if (close_paren + 2 < s.size() && s[close_paren + 2] == 'Z') return false;  // zombie: dead
  return start_time == 0 || ProcessStartTime(pid) == start_time;
}

std::string PosixShellQuote(std::string_view word) {
  if (!word.empty() && AllNameChars(word, "_./:=@,+-")) return std::string(word);
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace fl
