#include "workloads/command_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include "ccl_under_test/api/events.h"
#include "workloads/progress/formats.h"
#include "workloads/progress/progress.h"

namespace fl::workloads {
namespace {

namespace pg = fl::workloads::progress;

constexpr size_t kMaxLineBytes = 64 * 1024;  // a longer line is cut here
constexpr size_t kStderrTailBytes = 4096;

int OpenLog(const std::string& path) {
  return open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
}

void WriteAll(int fd, const char* p, size_t n) {
  while (fd >= 0 && n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return;  // the log is best effort; the telemetry carries what is measured
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

// Splits a byte stream into lines (without their newline); a line over kMaxLineBytes is cut.
class LineSplitter {
 public:
  template <typename F>
  void Feed(const char* p, size_t n, F&& on_line) {
    for (size_t i = 0; i < n; ++i) {
      if (p[i] == '\n') {
        if (!partial_.empty() && partial_.back() == '\r') partial_.pop_back();
        on_line(partial_);
        partial_.clear();
      } else if (partial_.size() < kMaxLineBytes) {
        partial_.push_back(p[i]);
      }
    }
  }
  template <typename F>
  void Finish(F&& on_line) {
    if (!partial_.empty()) on_line(partial_);
    partial_.clear();
  }

 private:
  std::string partial_;
};

class Runner {
 public:
  Runner(const CommandOptions& o, const pg::ProgressFormat& format, TelemetrySink& sink)
      : o_(o), rows_on_stdout_(format.source == pg::ProgressSource::kStdoutRows), sink_(sink) {}

  void OnOutputLine(const std::string& line, bool is_stdout) {
    if (auto ev = pg::ParseCclLogLine(line)) {
      ccl::Event e{ev->kind == "fault_detected" ? ccl::EventType::kFaultDetected
                                                : ccl::EventType::kCommError};
      e.wall_ns = WallNowNs();
      e.mono_ns = MonoNowNs();
      e.rank = o_.rank;
      e.cause = "log:" + ev->library;
      e.detail = ev->detail;
      sink_.OnEvent(e);
    }
    if (is_stdout && rows_on_stdout_) Report(nccl_.Feed(line));
  }

  void OnProgressLine(const std::string& line) {
    if (line.empty()) return;
    auto p = pg::ParseProgressLine(line);
    if (!p.ok()) {
      if (++bad_progress_ == 1)
        sink_.OnWorkerEvent("progress_line_bad",
                            nlohmann::json{{"reason", p.status().message()}}.dump(
                                -1, ' ', false, nlohmann::json::error_handler_t::replace));
      return;
    }
    Report({*p});
  }

  // Units that ended now (or at their own t=): samples ending one after the other.
  void Report(const std::vector<pg::Progress>& units) {
    if (units.empty()) return;
    const Nanos now = WallNowNs();
    // Ends: a unit's own wall time, else the later unit's start, else now.
    std::vector<Nanos> end(units.size()), start(units.size());
    Nanos next_start = now;
    for (size_t k = units.size(); k-- > 0;) {
      end[k] = units[k].wall_ns > 0 ? units[k].wall_ns : next_start;
      start[k] = units[k].duration_ns > 0 ? end[k] - units[k].duration_ns : 0;
      next_start = start[k] > 0 ? start[k] : end[k];
    }
    for (size_t k = 0; k < units.size(); ++k) {
      if (start[k] <= 0) start[k] = prev_end_;
      start[k] = std::min(start[k], end[k]);
      IterationSample s;
      s.rank = o_.rank;
      s.iteration = units[k].iteration + o_.first_iteration;
      s.start_wall_ns = start[k];
      s.end_wall_ns = end[k];
      s.bytes = units[k].bytes;
      s.verified = units[k].verified_ok.has_value();
      s.mismatch = units[k].verified_ok.has_value() && !*units[k].verified_ok;
      sink_.OnSample(s);
      prev_end_ = std::max(prev_end_, end[k]);
      ++units_;
    }
  }

  const CommandOptions& o_;
  const bool rows_on_stdout_;  // the format's progress is nccl-tests rows on stdout
  TelemetrySink& sink_;
  pg::NcclTestsParser nccl_;
  Nanos prev_end_ = WallNowNs();
  uint64_t units_ = 0;
  uint64_t bad_progress_ = 0;
};

}  // namespace

std::string RankLogPath(const std::string& log_dir, int rank, const std::string& suffix) {
  return log_dir + "/rank-" + std::to_string(rank) + "." + suffix;
}

CommandResult RunCommand(const CommandOptions& o, TelemetrySink& sink,
                         const std::atomic<bool>& stop) {
  CommandResult res;
  auto fail_start = [&](const std::string& why) {
    res.exit_code = 127;
    res.stderr_tail = why;
    sink.OnWorkerEvent("command_exit",
                       nlohmann::json{{"code", 127}, {"started", false}, {"stderr_tail", why}}.dump(
                           -1, ' ', false, nlohmann::json::error_handler_t::replace));
    return res;
  };
  if (o.argv.empty() || o.argv[0].empty() || o.argv[0][0] != '/')
    return fail_start("the command must be an absolute path");
  const pg::ProgressFormat* format = pg::FindProgressFormat(o.progress_format);
  if (!format)
    return fail_start("unknown progress format '" + o.progress_format +
                      "' (known: " + pg::ProgressFormatNames(", ", ", ") + ")");
  if (!o.log_dir.empty()) mkdir(o.log_dir.c_str(), 0755);  // EEXIST is fine
  const std::string dir = o.log_dir.empty() ? "/tmp" : o.log_dir;
  int out_log = OpenLog(RankLogPath(dir, o.rank, "stdout"));
  int err_log = OpenLog(RankLogPath(dir, o.rank, "stderr"));
  const std::string progress_path = RankLogPath(dir, o.rank, "progress");
  int progress_fd = -1;
  {
    int w = OpenLog(progress_path);  // created empty; the command appends
    if (w >= 0) close(w);
    progress_fd = open(progress_path.c_str(), O_RDONLY | O_CLOEXEC);
  }
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return fail_start("pipe: " + std::string(strerror(errno)));
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    return fail_start("pipe: " + std::string(strerror(errno)));
  }
  // Everything the child needs is built before fork (no allocation after it).
  std::map<std::string, std::string> env = o.env;
  env["FAULTLINE_PROGRESS"] = progress_path;
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    std::string key = kv.substr(0, kv.find('='));
    if (env.count(key) == 0) env_strings.push_back(kv);
  }
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, argv;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = o.argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);

  const Nanos start_mono = MonoNowNs();
  pid_t pid = fork();
  if (pid < 0) return fail_start("fork: " + std::string(strerror(errno)));
  if (pid == 0) {
    setpgid(0, 0);
    if (devnull >= 0) dup2(devnull, 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig : {SIGPIPE, SIGTERM, SIGINT, SIGHUP}) signal(sig, SIG_DFL);
    execve(argv[0], argv.data(), envp.data());
    const char* msg = "faultline-worker: cannot execute the command: ";
    WriteAll(2, msg, strlen(msg));
    const char* why = strerror(errno);
    WriteAll(2, why, strlen(why));
    WriteAll(2, "\n", 1);
    _exit(127);
  }
  setpgid(pid, pid);  // also in the parent: no window where a signal misses the group
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (devnull >= 0) close(devnull);
  sink.OnWorkerEvent("command_start",
                     nlohmann::json{{"pid", pid}, {"argv0", o.argv[0]}, {"log_dir", dir}}.dump(
                         -1, ' ', false, nlohmann::json::error_handler_t::replace));

  Runner runner(o, *format, sink);
  LineSplitter out_lines, err_lines, progress_lines;
  std::string tail;
  int fds[2] = {out_pipe[0], err_pipe[0]};
  bool open_fd[2] = {true, true};
  std::optional<int> status;
  Nanos term_sent = 0;  // mono time SIGTERM went to the group
  bool killed = false;
  Nanos exited_mono = 0;
  char buf[16384];
  auto drain_progress = [&] {
    if (progress_fd < 0) return;
    while (true) {
      ssize_t n = read(progress_fd, buf, sizeof buf);
      if (n <= 0) return;
      progress_lines.Feed(buf, static_cast<size_t>(n),
                          [&](const std::string& l) { runner.OnProgressLine(l); });
    }
  };
  while (true) {
    pollfd p[2];
    int np = 0;
    int which[2];
    for (int k = 0; k < 2; ++k)
      if (open_fd[k]) {
        p[np] = {fds[k], POLLIN, 0};
        which[np++] = k;
      }
    if (np > 0) {
      int r = poll(p, static_cast<nfds_t>(np), 10);
      if (r < 0 && errno != EINTR) break;
      for (int i = 0; r > 0 && i < np; ++i) {
        if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        const int k = which[i];
        ssize_t n = read(fds[k], buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
          open_fd[k] = false;
          continue;
        }
        WriteAll(k == 0 ? out_log : err_log, buf, static_cast<size_t>(n));
        if (k == 1) {
          tail.append(buf, static_cast<size_t>(n));
          if (tail.size() > 2 * kStderrTailBytes) tail.erase(0, tail.size() - kStderrTailBytes);
        }
        (k == 0 ? out_lines : err_lines)
            .Feed(buf, static_cast<size_t>(n),
                  [&](const std::string& l) { runner.OnOutputLine(l, k == 0); });
      }
    } else if (status) {
      break;
    } else {
      usleep(10 * 1000);
    }
    drain_progress();
    const Nanos now = MonoNowNs();
    if (!status) {
      siginfo_t info{};
      // Seen but not reaped: the group id cannot be reused until the group is killed.
      if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
          info.si_pid == pid) {
        kill(-pid, SIGKILL);  // whatever the command left in its group
        int st = 0;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
        }
        status = st;
        exited_mono = now;
      }
    }
    const bool want_stop = stop.load() || (o.iterations > 0 && runner.units_ >= o.iterations) ||
                           (o.duration_ns > 0 && now - start_mono >= o.duration_ns);
    if (!status && want_stop && term_sent == 0) {
      res.stopped_by_us = true;
      kill(-pid, SIGTERM);
      term_sent = now;
    }
    if (!status && term_sent > 0 && !killed && now - term_sent >= o.stop_grace_ns) {
      kill(-pid, SIGKILL);
      killed = true;
    }
    // After the exit, output a left-behind process holds open is read for at most 500 ms.
    if (status && (np == 0 || now - exited_mono > 500 * kNsPerMs)) break;
  }
  if (!status) {  // the loop broke on a poll error: end the command regardless
    kill(-pid, SIGKILL);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    status = st;
  }
  drain_progress();
  out_lines.Finish([&](const std::string& l) { runner.OnOutputLine(l, true); });
  err_lines.Finish([&](const std::string& l) { runner.OnOutputLine(l, false); });
  progress_lines.Finish([&](const std::string& l) { runner.OnProgressLine(l); });
  for (int fd : {out_pipe[0], err_pipe[0], out_log, err_log, progress_fd})
    if (fd >= 0) close(fd);

  if (tail.size() > kStderrTailBytes) tail.erase(0, tail.size() - kStderrTailBytes);
  res.stderr_tail = tail;
  res.progress_units = runner.units_;
  nlohmann::json d = {{"stopped_by_runner", res.stopped_by_us},
                      {"progress_units", res.progress_units},
                      {"stderr_tail", tail}};
  if (WIFEXITED(*status)) {
    res.command_code = WEXITSTATUS(*status);
    d["code"] = res.command_code;
    res.exit_code = res.command_code;
  } else if (WIFSIGNALED(*status)) {
    res.command_signal = WTERMSIG(*status);
    d["signal"] = res.command_signal;
    res.exit_code = 128 + res.command_signal;
  }
  if (res.stopped_by_us) res.exit_code = 0;
  if (runner.rows_on_stdout_) {
    const auto& sum = runner.nccl_.summary();
    d["nccl_tests"] = {{"rows", sum.rows}, {"malformed", sum.malformed}};
    if (sum.out_of_bounds) d["nccl_tests"]["out_of_bounds"] = *sum.out_of_bounds;
    if (sum.avg_busbw_gbs) d["nccl_tests"]["avg_busbw_gbs"] = *sum.avg_busbw_gbs;
  }
  if (runner.bad_progress_ > 0) d["bad_progress_lines"] = runner.bad_progress_;
  sink.OnWorkerEvent("command_exit",
                     d.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  return res;
}

}  // namespace fl::workloads
