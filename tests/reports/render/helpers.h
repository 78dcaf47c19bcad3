// Helpers of the render tests and bench/report_render.cc: RunProcess runs a program (argv, no
// shell) in its own process group with its output in a file, and kills that process group when
// it exits or when the deadline passes (what the tests start, they stop); ReadAll reads a file.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace fl::reports::testing {

// The file's content; "" when it cannot be read.
inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct ProcessResult {
  bool started = false;
  bool timed_out = false;
  int exit_code = -1;    // -1 when killed by a signal or not started
  double cpu_s = 0;      // user + system CPU time of the program (its waited-for children too)
  long max_rss_kib = 0;  // peak resident set of the program (getrusage ru_maxrss)
};

inline ProcessResult RunProcess(const std::vector<std::string>& argv, const std::string& out_path,
                                std::chrono::seconds timeout) {
  ProcessResult res;
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) return res;
  pid_t pid = fork();
  if (pid < 0) {
    close(out);
    return res;
  }
  if (pid == 0) {
    setpgid(0, 0);
    dup2(out, 1);
    dup2(out, 2);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(out);
  setpgid(pid, pid);  // also here, so the group exists before any kill below
  res.started = true;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (true) {
    // WNOWAIT: the leader stays a zombie until its group is cleaned up below, so its pid
    // (the group id) cannot be reused meanwhile.
    siginfo_t info{};
    if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) < 0) return res;
    if (info.si_pid == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      res.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // What the program left behind in its group (a browser's helpers) goes too.
  kill(-pid, SIGKILL);
  struct rusage ru {};
  wait4(pid, &status, 0, &ru);
  res.cpu_s = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
              static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  res.max_rss_kib = ru.ru_maxrss;
  if (res.timed_out) return res;
  if (WIFEXITED(status)) res.exit_code = WEXITSTATUS(status);
  return res;
}

}  // namespace fl::reports::testing
