// Thin wrappers over the system facilities the injectors and the local lab need: running a
// tool with an argv array (never a shell string), optionally inside a named network namespace,
// with a deadline; running a function on a thread that has joined a network namespace.
//
// Thread-safety: all functions may be called from any thread. RunCommand forks; the child
// only makes async-signal-safe calls before execve.
// Blocking: RunCommand blocks until the command exits or its deadline passes (the command is
// then killed with SIGKILL and the result is DeadlineExceeded).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace fl::injectors {

// Where named network namespaces live (ip-netns(8) convention).
inline constexpr const char* kNetnsDir = "/run/netns";

struct CommandOptions {
  std::string netns;  // empty: the caller's namespace
  std::string stdin_data;
  Nanos timeout = 10 * kNsPerSec;
};

struct CommandResult {
  int exit_code = -1;  // -1 when killed by a signal
  int term_signal = 0;
  std::string out;
  std::string err;
};

// Runs argv[0] (searched in PATH) with argv. A non-zero exit is not an error here: callers
// decide; use RunChecked when any failure is an error.
StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                   const CommandOptions& options = {});
// RunCommand, and a non-zero exit becomes Internal "<argv...>: exit N: <stderr>".
StatusOr<std::string> RunChecked(const std::vector<std::string>& argv,
                                 const CommandOptions& options = {});

// Runs fn on a fresh thread that has joined /run/netns/<netns>, and waits for it. File
// descriptors (sockets) created there stay bound to that namespace afterwards.
Status RunInNetns(const std::string& netns, const std::function<Status()>& fn);

// True when /run/netns/<name> exists.
bool NetnsExists(const std::string& name);
// Names under /run/netns, sorted.
std::vector<std::string> ListNetns();

// True when the process exists and, when start_time != 0, started at that clock tick
// (/proc/PID/stat field 22): a recycled pid is not mistaken for the original owner.
bool ProcessAlive(int pid, unsigned long long start_time = 0);
// /proc/PID/stat field 22 (start time in clock ticks since boot); 0 when unknown.
unsigned long long ProcessStartTime(int pid);

// The mount point of the cgroup v2 hierarchy, from /proc/self/mountinfo.
StatusOr<std::string> Cgroup2Root();

// True when name is a safe identifier for kernel object names and nft/tc arguments:
// 1..max_len characters from [a-zA-Z0-9_.-], not starting with '-' or '.'.
bool IsSafeName(std::string_view name, size_t max_len = 64);

}  // namespace fl::injectors
