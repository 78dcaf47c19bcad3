// ChildProcess: a program a test starts (optionally in a network namespace, with its output
// in files) and ends by pid: at destruction it is sent stop_signal, waited for, then killed.
// fork + setns rather than `ip netns exec`, which would also remount /sys and hide the
// cgroup2 mount from the child.
#pragma once

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"

namespace fl::testing {

class ChildProcess {
 public:
  struct Options {
    std::string out;    // stdout to this file (empty: inherited)
    std::string err;    // stderr to this file (empty: same as out, else inherited)
    std::string cwd;    // working directory (empty: ours)
    std::string netns;  // a named network namespace (empty: ours)
    int stop_signal = SIGTERM;
    Nanos stop_grace = 30 * kNsPerSec;
  };

  ChildProcess(std::vector<std::string> argv, Options o) : opts_(std::move(o)) {
    int nsfd = -1, outfd = -1, errfd = -1;
    if (!opts_.netns.empty())
      nsfd = open(("/run/netns/" + opts_.netns).c_str(), O_RDONLY | O_CLOEXEC);
    if (!opts_.out.empty())
      outfd = open(opts_.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (!opts_.err.empty())
      errfd = open(opts_.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    std::vector<char*> a;
    for (auto& s : argv) a.push_back(s.data());
    a.push_back(nullptr);
    bool ready = !argv.empty() && (opts_.netns.empty() || nsfd >= 0) &&
                 (opts_.out.empty() || outfd >= 0) && (opts_.err.empty() || errfd >= 0);
    if (ready) {
      pid_ = fork();
      if (pid_ == 0) {  // only async-signal-safe calls until exec
        if (nsfd >= 0 && setns(nsfd, CLONE_NEWNET) != 0) _exit(127);
        if (!opts_.cwd.empty() && chdir(opts_.cwd.c_str()) != 0) _exit(127);
        if (outfd >= 0) dup2(outfd, 1);
        if (errfd >= 0)
          dup2(errfd, 2);
        else if (outfd >= 0)
          dup2(outfd, 2);
        execv(a[0], a.data());
        _exit(127);
      }
    }
    for (int fd : {nsfd, outfd, errfd})
      if (fd >= 0) close(fd);
  }
  ~ChildProcess() {
    if (pid_ <= 0 || done_) return;
    kill(pid_, opts_.stop_signal);
    if (!Wait(Deadline::After(opts_.stop_grace))) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // The exit code (negative: the signal) once it ended before the deadline.
  std::optional<int> Wait(Deadline d) {
    if (pid_ <= 0) return std::nullopt;
    if (done_) return code_;
    int status = 0;
    if (!WaitUntil([&] { return waitpid(pid_, &status, WNOHANG) == pid_; }, d, 20 * kNsPerMs))
      return std::nullopt;
    done_ = true;
    code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
    return code_;
  }
  // -1 when it could not be started.
  pid_t pid() const { return pid_; }

 private:
  Options opts_;
  pid_t pid_ = -1;
  bool done_ = false;
  int code_ = 0;
};

}  // namespace fl::testing
