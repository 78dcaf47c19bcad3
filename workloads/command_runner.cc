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
#include "common/log.h"
#include "common/process.h"
#include "common/unique_fd.h"
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

// A log of the command's output (rank-N.stdout, .stderr). A failed write is not silent: the
// first error is said on the worker's stderr (its rank log), kept for the command_exit event,
// and nothing more is written to that file; the telemetry carries what is measured.
class LogFile {
 public:
  explicit LogFile(std::string path) : path_(std::move(path)), fd_(OpenLog(path_)) {}
  bool ok() const { return fd_.get() >= 0; }
  const std::string& error() const { return error_; }
  void Write(const char* p, size_t n) {
    while (error_.empty() && n > 0) {
      ssize_t w = write(fd_.get(), p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        error_ = "cannot write " + path_ + ": " + (w < 0 ? std::strerror(errno) : "no progress");
        FL_LOG(kError, "command") << error_ << " (the rest of the command's output is not kept)";
        return;
      }
      p += w;
      n -= static_cast<size_t>(w);
    }
  }

 private:
  std::string path_;
  UniqueFd fd_;
  std::string error_;
};

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
  // The command's output is kept with the run: without its files the job is not started.
  const std::string out_path = RankLogPath(dir, o.rank, "stdout");
  const std::string err_path = RankLogPath(dir, o.rank, "stderr");
  const std::string progress_path = RankLogPath(dir, o.rank, "progress");
  auto cannot_open = [&](const std::string& path) {
    return fail_start("cannot open " + path + ": " + std::strerror(errno));
  };
  LogFile out_log(out_path), err_log(err_path);
  if (!out_log.ok()) return cannot_open(out_path);
  if (!err_log.ok()) return cannot_open(err_path);
  UniqueFd progress_fd;
  {
    UniqueFd w(OpenLog(progress_path));  // created empty; the command appends
    if (w.get() < 0) return cannot_open(progress_path);
    progress_fd = UniqueFd(open(progress_path.c_str(), O_RDONLY | O_CLOEXEC));
    if (progress_fd.get() < 0) return cannot_open(progress_path);
  }
  // The runner's whole environment, then the rank's (not CleanEnvironment: the command is the
  // job's, and gets what the job's launcher gave the worker).
  std::map<std::string, std::string> env = o.env;
  env["FAULTLINE_PROGRESS"] = progress_path;
  ProcessSpec spec;
  spec.argv = o.argv;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv = *e;
    if (env.count(kv.substr(0, kv.find('='))) == 0) spec.env.push_back(std::move(kv));
  }
  for (const auto& [k, v] : env) spec.env.push_back(k + "=" + v);
  spec.in.kind = Stdio::kNull;
  spec.out.kind = Stdio::kPipe;
  spec.err.kind = Stdio::kPipe;
  spec.new_process_group = true;  // Spawn returns after the child's setpgid: no window

  const Nanos start_mono = MonoNowNs();
  StatusOr<Process> child = Spawn(spec);
  if (!child.ok()) {
    const std::string why = "cannot execute the command: " + child.status().message();
    const std::string line = "faultline-worker: " + why + "\n";
    err_log.Write(line.data(), line.size());
    return fail_start(why);
  }
  const pid_t pid = child->pid();
  sink.OnWorkerEvent("command_start",
                     nlohmann::json{{"pid", pid}, {"argv0", o.argv[0]}, {"log_dir", dir}}.dump(
                         -1, ' ', false, nlohmann::json::error_handler_t::replace));

  Runner runner(o, *format, sink);
  LineSplitter out_lines, err_lines, progress_lines;
  std::string tail;
  int fds[2] = {child->stdout_fd(), child->stderr_fd()};
  bool open_fd[2] = {true, true};
  std::optional<int> status;
  Nanos term_sent = 0;  // mono time SIGTERM went to the group
  bool killed = false;
  Nanos exited_mono = 0;
  char buf[16384];
  auto drain_progress = [&] {
    while (true) {
      ssize_t n = read(progress_fd.get(), buf, sizeof buf);
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
        (k == 0 ? out_log : err_log).Write(buf, static_cast<size_t>(n));
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
  *child = Process();  // closes the pipes

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
  for (const LogFile* log : {&out_log, &err_log})
    if (!log->error().empty()) d["log_errors"].push_back(log->error());
  sink.OnWorkerEvent("command_exit",
                     d.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  return res;
}

}  // namespace fl::workloads
