// The one process layer of the project: every program faultline starts (tools such as ip, tc
// and nft, its own agents and workers, suite runs, containers) goes through Spawn or Run here.
//
//   - argv arrays only, never a shell string;
//   - a program name without '/' is resolved once, to an absolute path, from a fixed list of
//     directories (ToolDirs: /usr/sbin, /usr/bin, /sbin, /bin, then the directory of the
//     running binary for faultline's own programs). PATH and the working directory are never
//     consulted, so an executable called `rm` in the caller's directory is never run;
//   - a clean environment: the child gets an explicit allow-list (CleanEnvironment) with a
//     fixed PATH, not the caller's whole environ;
//   - placement: a named network namespace (/run/netns/NAME), a cgroup v2 directory the child
//     starts in (clone3 CLONE_INTO_CGROUP: no instant outside it), its own session or process
//     group, optionally new pid and mount namespaces (containers);
//   - liveness by pid and start time, so a recycled pid is not mistaken for the original.
//
// Thread-safety: all functions may be called from any thread. Spawn prepares everything
// (paths, argv, envp, file descriptors) before it clones; the child only makes
// async-signal-safe system calls before execve and reports a failure over a CLOEXEC pipe.
// Ownership: Spawn's caller owns the child: it must reap it (WaitExit / Stop) or hand the pid
// to whoever does. Blocking: Run and WaitExit are bounded by their deadlines.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace fl {

// The directories ResolveTool searches, in order. Only absolute directories.
const std::vector<std::string>& ToolDirs();

// The PATH a child is given (the system directories of ToolDirs).
inline constexpr const char* kChildPath = "/usr/sbin:/usr/bin:/sbin:/bin";

// An absolute path for a program: a name with '/' must be absolute and executable and is
// returned as is (a relative path is InvalidArgument); a bare name is looked up in
// ToolDirs() (the result is cached per name). NotFound names the directories searched.
StatusOr<std::string> ResolveTool(std::string_view name);

// The environment a child gets: PATH=kChildPath, plus those of the caller's variables that
// are on the allow-list (HOME, USER, LOGNAME, LANG, TZ, TERM, TMPDIR, CUDA_VISIBLE_DEVICES,
// LD_LIBRARY_PATH with only its absolute entries, and the prefixes LC_, FAULTLINE_, FTCCL_,
// NCCL_, FL_). `extra` entries ("K=V") are added or replace what is there.
std::vector<std::string> CleanEnvironment(const std::vector<std::string>& extra = {});

enum class Stdio {
  kInherit,  // the caller's descriptor
  kNull,     // /dev/null
  kPipe,     // a pipe whose other end is returned in Process
  kFile,     // a file (path), opened before the clone: created/truncated for output
};

struct Redirect {
  Stdio kind = Stdio::kInherit;
  std::string path;  // kFile only
};

struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0]: resolved with ResolveTool
  // The whole environment of the child ("K=V"). Empty: CleanEnvironment().
  std::vector<std::string> env;
  std::string cwd;  // empty: the caller's
  Redirect in, out, err;
  std::string netns;   // a name under /run/netns; empty: the caller's namespace
  std::string cgroup;  // absolute cgroup v2 directory the child starts in; empty: the caller's
  bool new_session = false;        // setsid(): a Ctrl-C on our terminal does not reach it
  bool new_process_group = false;  // its own process group (StopGroup kills the group)
  // New pid and mount namespaces: the child is pid 1 of its pid namespace, mounts are
  // private and it gets its own /proc.
  bool container = false;
};

// A started child. The pipe ends (kPipe) are owned here and closed on destruction.
class Process {
 public:
  Process() = default;
  Process(Process&& o) noexcept;
  Process& operator=(Process&& o) noexcept;
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  ~Process();

  int pid() const { return pid_; }
  unsigned long long start_time() const { return start_time_; }
  // -1 when not a pipe. Release: the caller takes ownership.
  int stdin_fd() const { return in_; }
  int stdout_fd() const { return out_; }
  int stderr_fd() const { return err_; }
  int ReleaseStdin();
  void CloseStdin();

 private:
  friend StatusOr<Process> Spawn(const ProcessSpec& spec);
  int pid_ = -1;
  unsigned long long start_time_ = 0;
  int in_ = -1, out_ = -1, err_ = -1;
};

// Starts spec. Errors: InvalidArgument (empty argv, bad netns name, relative program),
// NotFound (no such program), FailedPrecondition (cannot enter the namespace or cgroup, cannot
// open a redirect), Internal (clone failed).
StatusOr<Process> Spawn(const ProcessSpec& spec);

struct ExitStatus {
  int exit_code = -1;  // -1 when killed by a signal
  int term_signal = 0;
  // exit_code, or -signal.
  int Code() const { return term_signal ? -term_signal : exit_code; }
};

// Waits for pid (a child of this process) to exit and reaps it. DeadlineExceeded when it is
// still running at the deadline (it is left running).
StatusOr<ExitStatus> WaitExit(int pid, Deadline deadline);
// Ends a child: SIGTERM, then SIGKILL after grace; reaps it. group: signal its process group
// (-pid; the child must have been started with new_session or new_process_group).
ExitStatus Stop(int pid, Nanos grace, bool group = false);

struct RunOptions {
  std::string netns;
  std::string stdin_data;
  std::vector<std::string> env;  // empty: CleanEnvironment()
  std::string cwd;
  Nanos timeout = 10 * kNsPerSec;
};

struct RunResult {
  int exit_code = -1;  // -1 when killed by a signal
  int term_signal = 0;
  std::string out;
  std::string err;
};

// Runs argv to completion in its own process group, feeding stdin_data and capturing stdout
// and stderr. At the deadline the whole group is SIGKILLed, reaped, and the result is
// DeadlineExceeded. A non-zero exit is not an error here: callers decide.
StatusOr<RunResult> Run(const std::vector<std::string>& argv, const RunOptions& options = {});

// True when the process exists, is not a zombie and, when start_time != 0, started at that
// clock tick (/proc/PID/stat field 22): a recycled pid is not mistaken for the original.
bool ProcessAlive(int pid, unsigned long long start_time = 0);
// /proc/PID/stat field 22 (start time in clock ticks since boot); 0 when unknown.
unsigned long long ProcessStartTime(int pid);

// True when name is a safe identifier for kernel object names and tool arguments:
// 1..max_len characters from [a-zA-Z0-9_.-], not starting with '-' or '.'.
bool IsSafeName(std::string_view name, size_t max_len = 64);

// A word for a POSIX shell: as it is when every character is in [A-Za-z0-9_./:=@,+-] (and it is
// not empty), else in single quotes (a ' inside becomes '\''). For command lines shown to
// people (a replay command) or run by a remote shell (a switch's bash); never for our own
// processes, which get argv arrays.
std::string PosixShellQuote(std::string_view word);

}  // namespace fl
