#include "injectors/sys.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace fl::injectors {
namespace {

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    Reset();
    fd_ = std::exchange(o.fd_, -1);
    return *this;
  }
  ~Fd() { Reset(); }
  void Reset() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }
  int get() const { return fd_; }

 private:
  int fd_ = -1;
};

std::string JoinArgv(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

}  // namespace

bool IsSafeName(std::string_view name, size_t max_len) {
  if (name.empty() || name.size() > max_len || name[0] == '-' || name[0] == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '-';
  });
}

StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                   const CommandOptions& options) {
  if (argv.empty()) return InvalidArgumentError("RunCommand: empty argv");
  Fd ns_fd;
  if (!options.netns.empty()) {
    if (!IsSafeName(options.netns))
      return InvalidArgumentError("bad netns name '" + options.netns + "'");
    std::string path = std::string(kNetnsDir) + "/" + options.netns;
    ns_fd = Fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (ns_fd.get() < 0) return ErrnoStatus(errno, "open " + path);
  }
  int in_p[2], out_p[2], err_p[2];
  if (pipe2(in_p, O_CLOEXEC) != 0) return ErrnoStatus(errno, "pipe");
  Fd in_r(in_p[0]), in_w(in_p[1]);
  if (pipe2(out_p, O_CLOEXEC) != 0) return ErrnoStatus(errno, "pipe");
  Fd out_r(out_p[0]), out_w(out_p[1]);
  if (pipe2(err_p, O_CLOEXEC) != 0) return ErrnoStatus(errno, "pipe");
  Fd err_r(err_p[0]), err_w(err_p[1]);

  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);

  pid_t pid = fork();
  if (pid < 0) return ErrnoStatus(errno, "fork");
  if (pid == 0) {
    // Child: async-signal-safe calls only.
    if (ns_fd.get() >= 0 && setns(ns_fd.get(), CLONE_NEWNET) != 0) _exit(126);
    dup2(in_r.get(), 0);
    dup2(out_w.get(), 1);
    dup2(err_w.get(), 2);
    execvp(cargv[0], cargv.data());
    _exit(127);
  }
  in_r.Reset();
  out_w.Reset();
  err_w.Reset();

  Deadline deadline = Deadline::After(options.timeout);
  CommandResult result;
  size_t written = 0;
  if (options.stdin_data.empty()) in_w.Reset();
  fcntl(in_w.get(), F_SETFL, O_NONBLOCK);
  bool out_open = true, err_open = true;
  bool timed_out = false;
  while (out_open || err_open) {
    pollfd fds[3];
    int n = 0;
    int out_i = -1, err_i = -1, in_i = -1;
    if (out_open) {
      fds[n] = {out_r.get(), POLLIN, 0};
      out_i = n++;
    }
    if (err_open) {
      fds[n] = {err_r.get(), POLLIN, 0};
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
    auto drain = [&](int i, Fd& fd, std::string& into, bool& open) {
      if (i < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) return;
      ssize_t r = read(fd.get(), buf, sizeof buf);
      if (r > 0)
        into.append(buf, r);
      else if (r == 0 || errno != EINTR)
        open = false;
    };
    drain(out_i, out_r, result.out, out_open);
    drain(err_i, err_r, result.err, err_open);
    if (in_i >= 0 && (fds[in_i].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t w = write(in_w.get(), options.stdin_data.data() + written,
                        options.stdin_data.size() - written);
      if (w > 0) written += w;
      if (w < 0 && errno != EAGAIN && errno != EINTR) in_w.Reset();
      if (written == options.stdin_data.size()) in_w.Reset();
    }
  }
  in_w.Reset();
  int status = 0;
  while (true) {
    pid_t w = waitpid(pid, &status, timed_out ? 0 : WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) return ErrnoStatus(errno, "waitpid");
    if (w == 0) {
      if (deadline.Expired()) {
        timed_out = true;
        kill(pid, SIGKILL);
        continue;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    if (timed_out && w != pid) kill(pid, SIGKILL);
  }
  if (timed_out) return DeadlineExceededError(JoinArgv(argv) + ": timed out");
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.term_signal = WTERMSIG(status);
  }
  if (result.exit_code == 126 && !options.netns.empty())
    return FailedPreconditionError("cannot enter network namespace '" + options.netns + "'");
  if (result.exit_code == 127) return NotFoundError("cannot execute '" + argv[0] + "'");
  return result;
}

StatusOr<std::string> RunChecked(const std::vector<std::string>& argv,
                                 const CommandOptions& options) {
  FL_ASSIGN_OR_RETURN(CommandResult r, RunCommand(argv, options));
  if (r.exit_code != 0) {
    std::string err = r.err;
    while (!err.empty() && err.back() == '\n') err.pop_back();
    return InternalError(JoinArgv(argv) +
                         (options.netns.empty() ? "" : " (netns " + options.netns + ")") +
                         ": exit " + std::to_string(r.exit_code) + ": " + err);
  }
  return std::move(r.out);
}

Status RunInNetns(const std::string& netns, const std::function<Status()>& fn) {
  if (!IsSafeName(netns)) return InvalidArgumentError("bad netns name '" + netns + "'");
  std::string path = std::string(kNetnsDir) + "/" + netns;
  Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return ErrnoStatus(errno, "open " + path);
  Status result;
  std::thread t([&] {
    if (setns(fd.get(), CLONE_NEWNET) != 0) {
      result = ErrnoStatus(errno, "setns " + path);
      return;
    }
    result = fn();
  });
  t.join();
  return result;
}

bool NetnsExists(const std::string& name) {
  std::string path = std::string(kNetnsDir) + "/" + name;
  return access(path.c_str(), F_OK) == 0;
}

std::vector<std::string> ListNetns() {
  std::vector<std::string> names;
  DIR* d = opendir(kNetnsDir);
  if (!d) return names;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    names.emplace_back(e->d_name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

unsigned long long ProcessStartTime(int pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  auto close_paren = s.rfind(')');
  if (close_paren == std::string::npos) return 0;
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

StatusOr<std::string> Cgroup2Root() {
  std::ifstream f("/proc/self/mountinfo");
  std::string line;
  while (std::getline(f, line)) {
    // "... mountpoint opts ... - fstype source superopts"
    auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream post(line.substr(dash + 3));
    std::string fstype;
    post >> fstype;
    if (fstype != "cgroup2") continue;
    std::istringstream pre(line.substr(0, dash));
    std::string id, parent, devno, root, mountpoint;
    pre >> id >> parent >> devno >> root >> mountpoint;
    return mountpoint;
  }
  return FailedPreconditionError("no cgroup2 mount in /proc/self/mountinfo");
}

}  // namespace fl::injectors
